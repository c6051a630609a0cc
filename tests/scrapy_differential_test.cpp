// The differential suite, with Scrapy 2.8 as the oracle: one crawl file (tests/fixtures/
// scrapy_differential/) run by `crawler run` and by Debian's Scrapy itself (scrapy_crawl_file.py
// maps it to a CrawlSpider, its rules and item loader processors, as README says it maps), over a
// site served on loopback by Python's http.server; the two crawls' feeds (JSON lines, JSON, CSV,
// XML) compared page by page, field by field and record by record (compare_feeds.py). The corpus
// is one nobody here wrote: the HTML of Debian's python3-doc (530 pages of Sphinx).
//
// Every difference found is either fixed or listed in docs/scrapy-differences.md with its reason;
// each scenario's differences must be exactly the ones listed for it, so a fixed difference
// whose row stays fails too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "redis_server.h"
#include "scrapy_oracle.h"
#include "tree_paths.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using crawler::fixtures::child_process;

const fs::path python = crawler::fixtures::debian_python;
// Debian's python3-doc (python3.11-doc) installs the HTML here.
const fs::path python_docs = "/usr/share/doc/python3.11/html";

// A directory served over HTTP by Python's http.server, or by `server`, a script that serves a
// directory as it does.
crawler::fixtures::python_server static_site(const fs::path& root, const fs::path& server) {
  if (server.empty()) {
    return crawler::fixtures::python_server(
        {"-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", root.string()});
  }
  return crawler::fixtures::python_server({server.string(), root.string()});
}

// Runs `name`'s crawl file on a site of `root` with us (and `our_settings`) and with Scrapy, and
// compares what they wrote.
crawler::fixtures::compared run_both(const std::string& name, const fs::path& root,
                                     const std::vector<std::string>& our_settings = {},
                                     const fs::path& server = {}) {
  if (!fs::is_directory(root)) {
    throw std::runtime_error(root.string() +
                             " is missing: install Debian's python3-doc (apt-get install "
                             "python3-doc), as .ci/packages.txt does");
  }
  auto site = static_site(root, server);
  crawler::fixtures::temp_dir dir;
  auto text = crawler::fixtures::slurp(crawler::fixtures::fixtures_dir() / "scrapy_differential" /
                                       (name + ".json"));
  text = std::regex_replace(text, std::regex("BASE"), site.host());
  auto file = dir.path() / (name + ".json");
  std::ofstream(file) << text;

  std::vector<std::string> ours{crawler::fixtures::crawler_binary(), "run", file.string()};
  std::vector<std::string> theirs{
      python.string(), (crawler::fixtures::fixtures_dir() / "scrapy_crawl_file.py").string()};
  theirs.push_back(file.string());
  for (const char* format : {"jsonl", "json", "csv", "xml"}) {
    ours.insert(ours.end(), {"-O", (dir.path() / "ours.").string() + format});
    theirs.push_back((dir.path() / "theirs.").string() + format);
  }
  for (const auto& setting : our_settings) ours.insert(ours.end(), {"-s", setting});
  // A server that tells clients apart by their user agent (messy_server.py) sees two.
  auto file_settings = nlohmann::json::parse(text)["settings"];
  if (file_settings.contains("USER_AGENT")) {
    ours.insert(ours.end(),
                {"-s", "USER_AGENT=" + file_settings["USER_AGENT"].get<std::string>() + " (ours)"});
  }
  child_process our_crawl(ours);
  child_process scrapy(theirs);
  EXPECT_EQ(our_crawl.wait(240s), 0) << our_crawl.stderr_text();
  EXPECT_EQ(scrapy.wait(240s), 0) << scrapy.stderr_text();

  return crawler::fixtures::compare_feeds(dir.path() / "ours", dir.path() / "theirs");
}

// One rule over every page of the docs, ten fields of every kind a crawl file has (text, an
// element's text, attributes, a regex, all matches, XPath, input and output processors).
TEST(scrapy_differential, python_docs_every_page_and_field_as_scrapy_crawls_them) {
  auto found = run_both("pydoc", python_docs);
  EXPECT_GE(found.items, 450u) << "the docs' pages were not all crawled";
  crawler::fixtures::expect_only_the_listed_differences("pydoc", found);
}

// The same crawl parsed by libxml2 (HTML_PARSER): its tree, not Gumbo's, under the selectors.
TEST(scrapy_differential, python_docs_parsed_by_libxml2_as_scrapy_crawls_them) {
  auto found = run_both("pydoc", python_docs, {"HTML_PARSER=libxml2"});
  EXPECT_GE(found.items, 450u) << "the docs' pages were not all crawled";
  crawler::fixtures::expect_only_the_listed_differences("pydoc with HTML_PARSER=libxml2", found);
}

// Four rules, each taking its links its own way (restrict_css, allow and deny, <link> tags,
// restrict_xpaths with deny_extensions), three callbacks, FEED_EXPORT_FIELDS choosing the
// columns: which page each rule takes, and so which callback makes its item, must agree. The
// rules' URLs do not overlap, so which rule takes a page does not hang on which page found it
// first, an order the two crawls need not share.
TEST(scrapy_differential, python_docs_through_four_rules_as_scrapy_crawls_them) {
  auto found = run_both("pydoc_rules", python_docs);
  EXPECT_GE(found.items, 300u) << "the rules took too few pages";
  crawler::fixtures::expect_only_the_listed_differences("pydoc_rules", found);
}

// A generated site of untidy HTML (tests/fixtures/messy_site.py: end tags left out, misnested
// tags, tables without <tbody>, entities, windows-1252 pages, <base href>, links of every
// spelling, redirects and pages that answer 503 before they answer; messy_server.py serves
// it), 30 fields over it. The crawls go by different user agents, so each meets each 503. Gumbo builds the tree a browser builds (HTML5), lxml the one
// libxml2's parser builds: where the two trees differ, the table lists it.
crawler::fixtures::compared crawl_the_generated_site(const std::vector<std::string>& our_settings,
                                  const std::string& name = "messy") {
  crawler::fixtures::temp_dir site;
  child_process generate({python.string(),
                          (crawler::fixtures::fixtures_dir() / "messy_site.py").string(),
                          site.path().string(), "60", "1"});
  EXPECT_EQ(generate.wait(60s), 0) << generate.stderr_text();
  return run_both(name, site.path(), our_settings,
                  crawler::fixtures::fixtures_dir() / "messy_server.py");
}

TEST(scrapy_differential, a_generated_untidy_site_as_scrapy_crawls_it_but_for_html5s_trees) {
  auto found = crawl_the_generated_site({});
  EXPECT_GE(found.items, 150u) << "the generated site was not all crawled";
  crawler::fixtures::expect_only_the_listed_differences("messy", found);
}

// libxml2 builds the tree lxml builds: then nothing differs.
TEST(scrapy_differential, a_generated_untidy_site_parsed_by_libxml2_as_scrapy_crawls_it) {
  auto found = crawl_the_generated_site({"HTML_PARSER=libxml2"});
  EXPECT_GE(found.items, 150u) << "the generated site was not all crawled";
  crawler::fixtures::expect_only_the_listed_differences("messy with HTML_PARSER=libxml2", found);
}

// The generated site from its sitemaps, as Scrapy's SitemapSpider reads them: a robots.txt's
// Sitemap: line, a sitemap index, a plain sitemap and a gzipped one; each page they list a start
// page with its item (parse_start_url), each once.
TEST(scrapy_differential, a_generated_sites_sitemaps_as_scrapy_reads_them) {
  auto found = crawl_the_generated_site({}, "messy_sitemap");
  EXPECT_EQ(found.items, 40u) << "the sitemaps list 40 pages";
  crawler::fixtures::expect_only_the_listed_differences("messy_sitemap", found);
}

}  // namespace
