// Config-driven crawls: validation errors with their JSON path, and `crawler run` end to end.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <hiredis/hiredis.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "child_process.h"
#include "crawler/config_spider.h"
#include "crawler/run_crawl.h"
#include "http_server.h"
#include "redis_server.h"
#include "tree_paths.h"

namespace {

using crawler::fixtures::child_process;
using crawler::fixtures::count_of;
using crawler::fixtures::crawler_binary;
using crawler::fixtures::http_server;
using crawler::fixtures::run_on_a_terminal;
using crawler::fixtures::temp_dir;
using json = nlohmann::json;

// config/examples/: the crawl files and the offline books site shipped as examples.
std::filesystem::path examples() {
  return crawler::fixtures::source_dir() / "config" / "examples";
}

json books_config() {
  return json::parse(R"json({
    "settings": {"CONCURRENT_REQUESTS": 8},
    "spider": {
      "name": "pages",
      "start_urls": ["http://127.0.0.1/site/0"],
      "rules": [{"allow": ["/site/\\d+$"], "callback": "page", "follow": true}],
      "callbacks": {"page": {"fields": {"url": "$url", "title": "title::text"}}}
    }
  })json");
}

std::string error_of(const json& document) {
  try {
    crawler::load_crawl_config(document);
  } catch (const crawler::config_error& error) {
    return error.what();
  }
  return "no error";
}

TEST(crawl_config, a_valid_file_builds_a_spider_with_its_rules) {
  auto config = crawler::load_crawl_config(books_config());
  EXPECT_EQ(config.spider->name(), "pages");
  EXPECT_EQ(config.spider->rules.size(), 1u);
  EXPECT_EQ(config.settings["CONCURRENT_REQUESTS"], 8);
}

TEST(crawl_config, errors_name_the_json_path) {
  auto document = books_config();
  document["spider"]["rules"][0]["allow"] = {"ok", "(unclosed"};
  EXPECT_TRUE(
      error_of(document).starts_with("spider.rules[0].allow[1]: invalid regex \"(unclosed\""))
      << error_of(document);

  // Regexes run on RE2, in time linear in the text: what needs backtracking is refused, saying so.
  document = books_config();
  document["spider"]["callbacks"]["page"]["fields"]["price"] = {{"css", "p::text"},
                                                                {"re", "(\\d+)(?=EUR)"}};
  EXPECT_EQ(error_of(document),
            "spider.callbacks.page.fields.price.re: invalid regex \"(\\d+)(?=EUR)\": invalid "
            "perl operator: (?= (lookahead, lookbehind and backreferences are not supported: "
            "regexes run in time linear in the text)");

  document = books_config();
  document["spider"]["rules"][0]["alow"] = {"x"};
  EXPECT_EQ(error_of(document),
            "spider.rules[0].alow: unknown key \"alow\" (did you mean \"allow\"?)");

  document = books_config();
  document["spider"]["callbacks"]["page"]["fields"]["title"] = "title::txt";
  EXPECT_TRUE(error_of(document).starts_with(
      "spider.callbacks.page.fields.title: invalid CSS selector \"title::txt\""))
      << error_of(document);

  document = books_config();
  document["spider"]["rules"][0]["callback"] = "pgae";
  EXPECT_EQ(error_of(document),
            "spider.rules[0].callback: no callback \"pgae\" in spider.callbacks (did you mean "
            "\"page\"?)");

  document = books_config();
  document["spider"]["callbacks"]["page"]["fields"]["url"] = "$uri";
  EXPECT_EQ(error_of(document),
            "spider.callbacks.page.fields.url: unknown variable \"$uri\" (did you mean "
            "\"$url\"?); $url, $status and $depth exist");

  document = books_config();
  document["spider"]["rules"][0]["follow"] = "yes";
  EXPECT_EQ(error_of(document), "spider.rules[0].follow: must be true or false");

  document = books_config();
  document["spider"].erase("start_urls");
  EXPECT_EQ(error_of(document),
            "spider.start_urls: is required, unless settings.SCHEDULER is \"redis\" (workers "
            "that wait for URLs pushed with crawler push)");

  // Never taken for a path (a queue entry or pushed URL could name a local file that way).
  document = books_config();
  document["spider"]["start_urls"] = {"books/index.html"};
  EXPECT_EQ(error_of(document),
            "spider.start_urls[0]: Missing scheme in request url: books/index.html (a file "
            "beside the crawl file is file:PATH)");
  document["spider"]["start_urls"] = {{{"sitemap", "example.com/sitemap.xml"}}};
  EXPECT_EQ(error_of(document),
            "spider.start_urls[0].sitemap: Missing scheme in request url: "
            "example.com/sitemap.xml");

  document = books_config();
  document["spidr"] = document["spider"];
  EXPECT_EQ(error_of(document), "spidr: unknown key \"spidr\" (did you mean \"spider\"?)");
}

TEST(crawl_config, a_file_that_is_not_json_names_the_line_and_column) {
  temp_dir dir;
  auto path = (dir.path() / "broken.json").string();
  std::ofstream(path) << "{\n  \"spider\": {\n    \"name\": \"x\",,\n  }\n}\n";
  try {
    crawler::load_crawl_config_file(path);
    FAIL() << "no error";
  } catch (const crawler::config_error& error) {
    EXPECT_TRUE(std::string(error.what()).starts_with(path + ":3:17: not valid JSON"))
        << error.what();
  }
}

// What a crawl file cannot make the loader do: read without end (/dev/zero, a FIFO nobody writes),
// take a number no double holds without saying where it is, or keep a JOBDIR of "".
TEST(crawl_config, a_file_that_is_not_a_small_regular_file_or_holds_an_unusable_value_is_named) {
  temp_dir dir;
  auto error_of_file = [](const std::string& path) {
    try {
      crawler::load_crawl_config_file(path);
    } catch (const crawler::config_error& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of_file("/dev/zero"),
            "/dev/zero: not a regular file; a crawl file is a JSON file");
  auto fifo = (dir.path() / "fifo.json").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(error_of_file(fifo), fifo + ": not a regular file; a crawl file is a JSON file");
  auto huge = (dir.path() / "huge.json").string();
  std::ofstream(huge).close();
  std::filesystem::resize_file(huge, (16 << 20) + 1);
  EXPECT_EQ(error_of_file(huge), huge + ": 16777217 bytes, over the 16 MiB a crawl file may hold");
  // At the limit a file is read: a crawl file padded with spaces to exactly 16 MiB loads, one
  // byte under too.
  for (std::uintmax_t size : {std::uintmax_t{16} << 20, (std::uintmax_t{16} << 20) - 1}) {
    auto padded = (dir.path() / "padded.json").string();
    auto text = books_config().dump();
    ASSERT_LT(text.size(), size);
    text.append(size - text.size(), ' ');
    std::ofstream(padded, std::ios::binary | std::ios::trunc) << text;
    ASSERT_EQ(std::filesystem::file_size(padded), size);
    EXPECT_EQ(error_of_file(padded), "no error") << size << " bytes";
  }
  auto overflow = (dir.path() / "overflow.json").string();
  std::ofstream(overflow) << "{\n  \"settings\": {\"DOWNLOAD_DELAY\": 1e400}\n}\n";
  EXPECT_EQ(error_of_file(overflow),
            overflow +
                ":2:34: the number 1e400 is out of range: settings and fields take finite "
                "numbers");
  auto document = books_config();
  document["settings"]["JOBDIR"] = "";
  EXPECT_EQ(error_of(document), "settings.JOBDIR: an empty path; leave it out (or null) for none");
  // A name becomes folders, files and Redis keys: 200 characters at most, and a longer one is
  // not quoted back.
  document = books_config();
  document["spider"]["name"] = std::string(200, 'a');
  EXPECT_EQ(error_of(document), "no error");
  document["spider"]["name"] = std::string(20 << 20, 'a');
  EXPECT_EQ(error_of(document),
            "spider.name: is 20971520 characters long; a spider's name is at most 200 (it names "
            "folders, files and Redis keys)");
  document["spider"]["name"] = std::string(201, 'a');
  EXPECT_NE(error_of(document).find("is 201 characters long"), std::string::npos);
}

std::string write_config(const temp_dir& dir, json document) {
  auto path = (dir.path() / "crawl.json").string();
  std::ofstream(path) << document.dump(2);
  return path;
}

// The built-in middlewares run in Scrapy's order, so a project's own middleware at 543 runs
// where it ran in Scrapy: each one both have is at the order Scrapy 2.8's default_settings gives
// it, read from Debian's Scrapy at test time.
TEST(crawler_run, built_in_middlewares_have_the_orders_of_scrapys_default_settings) {
  child_process python({"/usr/bin/python3", "-c",
                        "import json\n"
                        "from scrapy.settings import default_settings as d\n"
                        "print(json.dumps({'DOWNLOADER_MIDDLEWARES_BASE': "
                        "d.DOWNLOADER_MIDDLEWARES_BASE, "
                        "'SPIDER_MIDDLEWARES_BASE': d.SPIDER_MIDDLEWARES_BASE}))\n"});
  ASSERT_EQ(python.wait(), 0) << python.stderr_text();
  auto scrapys = json::parse(python.stdout_text());
  crawler::settings ours;
  std::size_t shared = 0;
  for (const char* base : {"DOWNLOADER_MIDDLEWARES_BASE", "SPIDER_MIDDLEWARES_BASE"}) {
    for (const auto& [name, order] : ours.get(base).items()) {
      if (!scrapys[base].contains(name)) continue;  // newer than Scrapy 2.8
      ++shared;
      EXPECT_EQ(order, scrapys[base][name]) << base << " " << name;
    }
  }
  EXPECT_GE(shared, 11u);
}

// Spider arguments in a crawl file's start URLs, as `-a` sets a Scrapy spider's attributes: the
// run given -a start=... crawls from there; one without it stops before anything is fetched,
// naming the argument; `check` takes -a too.
// A Scrapy project's settings carried over whole: every name of Scrapy 2.8's default_settings,
// read from Debian's Scrapy at test time, at Scrapy's default value, in one crawl file. Each name
// is a setting of ours, inert (one warning that says what to use instead) or Scrapy's word for
// what happens here anyway (taken silently); `check` passes and the crawl runs.
TEST(crawler_run, every_setting_of_scrapys_default_settings_at_its_default_runs) {
  http_server site({.site_pages = 3});
  temp_dir dir;
  child_process python({"/usr/bin/python3", "-c",
                        "import json\n"
                        "from scrapy.settings import default_settings as d\n"
                        "print(json.dumps({k: getattr(d, k) for k in dir(d) if k.isupper()}))\n"});
  ASSERT_EQ(python.wait(), 0) << python.stderr_text();
  auto scrapy_defaults = json::parse(python.stdout_text());
  ASSERT_GT(scrapy_defaults.size(), 150u);
  json crawl{{"settings", scrapy_defaults},
             {"spider",
              {{"name", "carried_over"},
               {"start_urls", {site.url("/site/0")}},
               {"callbacks", {{"parse_start_url", {{"fields", {{"url", "$url"}}}}}}}}}};
  auto file = dir.path() / "carried_over.json";
  std::ofstream(file) << crawl.dump(2);
  child_process check({crawler_binary(), "check", file.string()});
  EXPECT_EQ(check.wait(), 0) << check.stdout_text() << check.stderr_text();
  child_process run({crawler_binary(), "run", file.string(), "-O",
                     (dir.path() / "items.jsonl").string(), "-L", "WARNING"});
  ASSERT_EQ(run.wait(), 0) << run.stderr_text();
  auto log = run.stderr_text();
  EXPECT_EQ(log.find(" ERROR: "), std::string::npos) << log;
  EXPECT_EQ(site.hits("/site/0"), 1u);
  std::ifstream items(dir.path() / "items.jsonl");
  std::string item;
  std::getline(items, item);
  EXPECT_EQ(item, "{\"url\": \"" + site.url("/site/0") + "\"}");
  // Each name that means nothing here is said once; Scrapy's defaults that are ours are not.
  EXPECT_EQ(count_of(log, "TELNETCONSOLE_ENABLED has no effect here"), 1u);
  EXPECT_EQ(count_of(log, "MAIL_HOST has no effect here: no mail is sent"), 1u);
  EXPECT_EQ(log.find("DOWNLOADER_STATS"), std::string::npos) << log;
  EXPECT_EQ(log.find("HTTPCACHE_POLICY"), std::string::npos) << log;
}

TEST(crawler_run, start_urls_name_spider_arguments_given_with_dash_a) {
  http_server server;
  temp_dir dir;
  auto document = books_config();
  document["spider"]["start_urls"] = {"%(start)s", {{"sitemap", "%(start)s/sitemap.xml"}}};
  document["spider"].erase("rules");
  document["spider"]["callbacks"] = {{"parse_start_url", {{"fields", {{"url", "$url"}}}}}};
  auto file = write_config(dir, document);
  auto feed = (dir.path() / "items.jsonl").string();
  auto start = server.url("/s?wd=1");
  child_process run({crawler_binary(), "run", file, "-a", "start=" + start, "-O", feed, "--nolog"});
  ASSERT_EQ(run.wait(), 0) << run.stderr_text();
  std::ifstream in(feed);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(json::parse(line)["url"], start);
  EXPECT_EQ(server.hits("/s?wd=1"), 1u);
  auto hits_before = server.total_hits();  // the page and its (missing) sitemap

  child_process missing({crawler_binary(), "run", file, "--nolog"});
  EXPECT_EQ(missing.wait(), 2);
  EXPECT_EQ(missing.stderr_text(),
            "crawler run: " + file +
                ": spider.start_urls[0]: %(start)s names a spider argument this run was not "
                "given (-a start=VALUE)\n" +
                file +
                ": spider.start_urls[1].sitemap: %(start)s names a spider argument this run was "
                "not given (-a start=VALUE)\n");
  EXPECT_EQ(server.total_hits(), hits_before);

  child_process check({crawler_binary(), "check", file, "-a", "start=" + start});
  EXPECT_EQ(check.wait(), 0) << check.stderr_text();
}

TEST(crawler_run, crawls_a_generated_site_through_rules_and_extracts_known_values) {
  constexpr std::size_t pages = 2000;
  http_server server({.site_pages = pages});
  temp_dir dir;
  auto document = json::parse(R"json({
    "settings": {"CONCURRENT_REQUESTS": 16, "DUPEFILTER_CLASS": "bloom"},
    "spider": {
      "name": "pages",
      "allowed_domains": ["127.0.0.1"],
      "rules": [{"allow": ["/site/\\d+$"], "callback": "page", "follow": true}],
      "callbacks": {"page": {"fields": {
        "url": "$url", "depth": "$depth", "status": "$status",
        "title": "title::text",
        "number": {"css": "h1::text", "re": "Page (\\d+)"},
        "links": {"css": "p a::attr(href)", "all": true},
        "missing": "div.nothing::text"}}}
    }
  })json");
  document["spider"]["start_urls"] = {server.url("/site/0")};
  auto items_path = (dir.path() / "items.jsonl").string();
  auto stats_path = (dir.path() / "stats.json").string();
  child_process run({crawler_binary(), "run", write_config(dir, document), "-O", items_path, "-s",
                     "STATS_FILE=" + stats_path, "-L", "INFO"});
  ASSERT_EQ(run.wait(), 0) << run.stderr_text();

  std::ifstream in(items_path);
  std::set<std::size_t> numbers;
  std::size_t count = 0;
  for (std::string line; std::getline(in, line); ++count) {
    auto item = json::parse(line);
    auto number = std::stoul(item["number"].get<std::string>());
    numbers.insert(number);
    ASSERT_EQ(item["url"], server.url("/site/" + std::to_string(number)));
    ASSERT_EQ(item["title"], "Page " + std::to_string(number));
    ASSERT_EQ(item["status"], 200);
    ASSERT_TRUE(item["missing"].is_null());
    std::vector<std::string> links;
    for (auto link : http_server::site_links(number, pages)) {
      links.push_back("/site/" + std::to_string(link));
    }
    ASSERT_EQ(item["links"], json(links));
  }
  EXPECT_EQ(count, pages);
  EXPECT_EQ(numbers.size(), pages);
  // As in Scrapy, a start URL is dont_filter and so never recorded: the link back to page 0
  // fetches it a second time, through the rule this time.
  EXPECT_EQ(server.hits("/site/0"), 2u);
  for (std::size_t page = 1; page < pages; ++page) {
    ASSERT_EQ(server.hits("/site/" + std::to_string(page)), 1u) << page;
  }
  auto stats = json::parse(std::ifstream(stats_path));
  EXPECT_EQ(stats["finish_reason"], "finished");
}

// `crawler run` of a spider that only follows sitemaps, started from `start`; returns the stats.
json crawl_from_sitemap(const std::string& start, const std::vector<std::string>& settings = {}) {
  temp_dir dir;
  auto document = json::parse(R"json({
    "spider": {
      "name": "sitemap",
      "callbacks": {"page": {"fields": {"url": "$url"}}},
      "rules": [{"allow": ["/nothing-follows"]}]
    }
  })json");
  document["spider"]["start_urls"] = {{{"sitemap", start}}};
  auto stats_path = (dir.path() / "stats.json").string();
  std::vector<std::string> argv{
      crawler_binary(),           "run",    write_config(dir, document), "-s",
      "STATS_FILE=" + stats_path, "--nolog"};
  for (const auto& setting : settings) argv.insert(argv.end(), {"-s", setting});
  child_process run(argv);
  EXPECT_EQ(run.wait(), 0) << run.stderr_text();
  return json::parse(std::ifstream(stats_path));
}

// A Scrapy item keeps the order its spider gave its fields, and so does every exporter: a
// callback's fields come out in the crawl file's order, not sorted (before: price, title, url).
TEST(crawler_run, item_fields_keep_the_crawl_files_order_in_every_feed_format) {
  http_server server({.site_pages = 1});
  temp_dir dir;
  auto path = (dir.path() / "crawl.json").string();
  std::ofstream(path) << R"json({
    "spider": {
      "name": "ordered",
      "start_urls": [")json"
                      << server.url("/site/0") << R"json("],
      "callbacks": {"parse_start_url": {"fields": {
        "title": "title::text", "url": "$url", "price": {"css": "h1::text", "re": "\\d+"}}}}
    }
  })json";
  auto out = [&](const char* name) { return (dir.path() / name).string(); };
  child_process run({crawler_binary(), "run", path, "-o", out("items.jsonl"), "-o",
                     out("items.json"), "-o", out("items.csv"), "-o", out("items.xml"), "--nolog"});
  ASSERT_EQ(run.wait(), 0) << run.stderr_text();
  auto slurp = [](const std::string& file) {
    std::ifstream in(file);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  auto url = server.url("/site/0");
  EXPECT_EQ(slurp(out("items.jsonl")), R"({"title": "Page 0", "url": ")" + url +
                                           R"(", "price": "0"})"
                                           "\n");
  EXPECT_EQ(slurp(out("items.json")),
            "[\n"
            R"({"title": "Page 0", "url": ")" +
                url +
                R"(", "price": "0"})"
                "\n]");
  EXPECT_EQ(slurp(out("items.csv")), "title,url,price\r\nPage 0," + url + ",0\r\n");
  EXPECT_NE(slurp(out("items.xml"))
                .find("<item><title>Page 0</title><url>" + url + "</url><price>0</price></item>"),
            std::string::npos)
      << slurp(out("items.xml"));
}

// A field cleans its values as an item loader does: "input" functions on each match (as
// MapCompose), "output" making the field of them (TakeFirst, Identity, Join).
TEST(crawler_run, fields_clean_their_values_with_input_and_output_processors) {
  http_server server({.pages = {{"/book",
                                 "<h1>  A <b>Light</b> in the Attic </h1>"
                                 "<ul><li> poetry </li><li>classics</li></ul>"
                                 "<p>  </p><p> first words </p>"}}});
  temp_dir dir;
  auto path = (dir.path() / "crawl.json").string();
  std::ofstream(path) << R"json({
    "spider": {
      "name": "cleaned",
      "start_urls": [")json"
                      << server.url("/book") << R"json("],
      "callbacks": {"parse_start_url": {"fields": {
        "title": {"css": "h1", "input": ["remove_tags", "strip"]},
        "tags": {"css": "li::text", "input": ["strip"], "output": {"Join": ", "}},
        "all_tags": {"css": "li::text", "input": ["strip"], "output": "Identity"},
        "summary": {"css": "p::text", "input": ["strip"]},
        "joined": {"css": "h1 ::text", "output": {"Join": ""}},
        "raw": {"css": "h1", "output": "TakeFirst"},
        "no_input": {"css": "h1 ::text", "input": []}}}}
    }
  })json";
  auto items = (dir.path() / "items.jsonl").string();
  child_process run({crawler_binary(), "run", path, "-o", items, "--nolog"});
  ASSERT_EQ(run.wait(), 0) << run.stderr_text();
  std::ifstream in(items);
  std::string line;
  std::getline(in, line);
  // "summary": the first match is blank; TakeFirst, the default output, skips the "" it becomes.
  // With processors nothing is trimmed before them and an element is its HTML, as Scrapy's
  // ItemLoader.add_css gives them (the expected values are its output on the same page).
  EXPECT_EQ(line, R"({"title": "A Light in the Attic", "tags": "poetry, classics", )"
                  R"("all_tags": ["poetry", "classics"], "summary": "first words", )"
                  R"("joined": "  A Light in the Attic ", )"
                  R"("raw": "<h1>  A <b>Light</b> in the Attic </h1>", "no_input": "  A "})");
}

TEST(crawl_config, a_fields_processors_are_checked_by_name) {
  auto document = books_config();
  auto& fields = document["spider"]["callbacks"]["page"]["fields"];
  fields["title"] = {{"css", "h1"}, {"input", {"strip", "remove_tag"}}};
  EXPECT_EQ(error_of(document),
            "spider.callbacks.page.fields.title.input[1]: unknown function \"remove_tag\" (did "
            "you mean \"remove_tags\"?); the functions are strip, remove_tags, "
            "replace_escape_chars");
  fields["title"] = {{"css", "h1"}, {"output", "First"}};
  EXPECT_EQ(error_of(document),
            "spider.callbacks.page.fields.title.output: must be \"TakeFirst\", \"Identity\", "
            "\"Join\" or {\"Join\": separator}");
}

// A Scrapy user's XPath works in a crawl file: the books example with every field and the
// catalogue rule written in XPath gives the items the CSS one gives.
TEST(crawler_run, the_books_example_in_xpath_gives_the_items_of_the_css_one) {
  temp_dir dir;
  auto books = (examples() / "books").string();
  auto path = (dir.path() / "books-xpath.json").string();
  std::ofstream(path) << R"json({
    "settings": {"DUPEFILTER_CLASS": "bloom"},
    "spider": {
      "name": "books",
      "start_urls": ["file://)json"
                      << books << R"json(/index.html"],
      "rules": [
        {"allow": ["/catalogue/page-\\d+\\.html$"], "follow": true},
        {"allow": ["/catalogue/[^/]+/index\\.html$"], "callback": "book",
         "restrict_xpaths": ["//article[contains(@class, 'product_pod')]"]}
      ],
      "callbacks": {
        "book": {
          "fields": {
            "url": "$url",
            "title": "//h1/text()",
            "price": {"xpath": "//div[@class='product_main']/p[@class='price_color']/text()",
                      "re": "[\\d.]+"},
            "availability": "//p[contains(@class, 'availability')]/text()",
            "tags": {"xpath": "//ul[@class='tags']//a/text()", "all": true},
            "rating": "//p[contains(@class, 'star-rating')]/@class"
          }
        }
      }
    }
  })json";
  auto run = [&](const std::string& file, const std::string& feed) {
    child_process crawl({crawler_binary(), "run", file, "-O", feed, "--nolog"});
    EXPECT_EQ(crawl.wait(), 0) << crawl.stderr_text();
    std::ifstream in(feed);
    std::set<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.insert(line);
    return lines;
  };
  auto by_css = run((examples() / "books.json").string(), (dir.path() / "css.jsonl").string());
  auto by_xpath = run(path, (dir.path() / "xpath.jsonl").string());
  EXPECT_EQ(by_css.size(), 12u);
  EXPECT_EQ(by_xpath, by_css);
}

// A field or a rule's XPath is checked before anything is fetched, naming its path.
TEST(crawl_config, a_bad_xpath_in_a_field_or_a_rule_names_its_path) {
  auto document = books_config();
  document["spider"]["callbacks"]["page"]["fields"]["title"] = "//title[";
  document["spider"]["callbacks"]["page"]["fields"]["h1"] = {{"xpath", "count("}};
  document["spider"]["rules"][0]["restrict_xpaths"] = {"//div["};
  auto error = error_of(document);
  EXPECT_NE(error.find("spider.callbacks.page.fields.title: invalid XPath expression \"//title[\""),
            std::string::npos)
      << error;
  EXPECT_NE(
      error.find("spider.callbacks.page.fields.h1.xpath: invalid XPath expression \"count(\""),
      std::string::npos)
      << error;
  EXPECT_NE(error.find("restrict_xpaths[0]: invalid XPath expression \"//div[\""),
            std::string::npos)
      << error;
}

TEST(crawler_run, a_sitemap_index_with_a_gzip_sitemap_reaches_every_page) {
  constexpr std::size_t pages = 50;
  http_server server({.site_pages = pages});
  crawl_from_sitemap(server.url("/sitemap.xml"));
  for (std::size_t page = 0; page < pages; ++page) {
    ASSERT_EQ(server.hits("/site/" + std::to_string(page)), 1u) << page;
  }
  EXPECT_EQ(server.hits("/sitemap-odd.xml.gz"), 1u);
}

// A crawl file reads its pages through their documents only: a download stops one byte past
// HTML_MAX_SIZE, as it is decompressed, and the page is skipped as too large, as it would be
// whole. A gzip bomb of 64 MiB (DOWNLOAD_MAXSIZE is 1 GiB) costs a few KiB. Its sitemaps, which
// the sitemap reader takes whole, are fetched whole however large.
TEST(crawler_run, a_page_is_downloaded_no_further_than_html_max_size_and_a_sitemap_whole) {
  constexpr std::size_t pages = 50;
  http_server server({.site_pages = pages});
  temp_dir dir;
  auto document = json::parse(R"json({
    "spider": {
      "name": "sitemap",
      "callbacks": {"parse_start_url": {"fields": {"url": "$url", "title": "title::text"}}},
      "rules": [{"allow": ["/nothing-follows"]}]
    }
  })json");
  document["spider"]["start_urls"] = {{{"sitemap", server.url("/sitemap.xml")}},
                                      server.url("/bomb?mb=64")};
  auto stats_path = (dir.path() / "stats.json").string();
  auto items_path = (dir.path() / "items.jsonl").string();
  // Each sitemap of 25 pages is larger than 1000 bytes, each site page smaller.
  child_process run({crawler_binary(), "run", write_config(dir, document), "-s",
                     "HTML_MAX_SIZE=1000", "-s", "STATS_FILE=" + stats_path, "-O", items_path,
                     "--nolog"});
  ASSERT_EQ(run.wait(), 0) << run.stderr_text();
  auto stats = json::parse(std::ifstream(stats_path));
  for (std::size_t page = 0; page < pages; ++page) {
    EXPECT_EQ(server.hits("/site/" + std::to_string(page)), 1u) << page;
  }
  std::ifstream items(items_path);
  std::size_t lines = 0;
  for (std::string line; std::getline(items, line);) ++lines;
  EXPECT_EQ(lines, pages);
  EXPECT_EQ(stats.value("html/skipped_reason_count/too_large", 0), 1) << stats;
  EXPECT_EQ(stats.value("downloader/exception_count", 0), 0) << stats;
  EXPECT_LT(stats.value("downloader/response_bytes", 0), 200000) << stats;
}

TEST(crawler_run, sitemap_entries_on_other_hosts_are_offsite) {
  http_server server(
      {.pages = {{"/own.xml",
                  "<urlset><url><loc>http://127.0.0.1:{port}/s?wd=here</loc></url>"
                  "<url><loc>http://localhost:{port}/s?wd=away</loc></url></urlset>"},
                 {"/index.xml",
                  "<sitemapindex><sitemap><loc>http://localhost:{port}/own.xml</loc>"
                  "</sitemap></sitemapindex>"}}});
  temp_dir dir;
  auto document =
      json::parse(R"json({"spider": {"name": "sitemap", "allowed_domains": ["127.0.0.1"],
    "callbacks": {"page": {"fields": {"url": "$url"}}}, "rules": [{"allow": ["/nothing"]}]}})json");
  document["spider"]["start_urls"] = {{{"sitemap", server.url("/own.xml")}},
                                      {{"sitemap", server.url("/index.xml")}}};
  auto stats_path = (dir.path() / "stats.json").string();
  child_process run({crawler_binary(), "run", write_config(dir, document), "-s",
                     "STATS_FILE=" + stats_path, "--nolog"});
  ASSERT_EQ(run.wait(), 0) << run.stderr_text();
  auto stats = json::parse(std::ifstream(stats_path));
  EXPECT_EQ(server.hits("/s?wd=here"), 1u);
  EXPECT_EQ(server.hits("/s?wd=away"), 0u);
  EXPECT_EQ(stats["offsite/filtered"], 2);  // the page and the nested sitemap on localhost
}

TEST(crawler_run, robots_txt_sitemap_lines_start_a_crawl_that_obeys_its_rules) {
  constexpr std::size_t pages = 50;
  http_server server({.site_pages = pages,
                      .robots_txt =
                          "User-agent: *\nDisallow: /site/7$\n"
                          "Sitemap: /sitemap.xml  # relative, resolved as Scrapy does\n"});
  auto stats = crawl_from_sitemap(server.url("/robots.txt"), {"ROBOTSTXT_OBEY=true"});
  for (std::size_t page = 0; page < pages; ++page) {
    ASSERT_EQ(server.hits("/site/" + std::to_string(page)), page == 7 ? 0u : 1u) << page;
  }
  EXPECT_EQ(stats["robotstxt/forbidden"], 1);
  // The start URL and the gate's own fetch.
  EXPECT_EQ(server.hits("/robots.txt"), 2u);
}

// Layers, lowest first: defaults, the crawl file's "settings", -s. One page at a time: the limit
// is reached with at most the next page already on its way.
TEST(crawler_run, settings_on_the_command_line_win_over_the_files) {
  http_server server({.site_pages = 50});
  temp_dir dir;
  auto document = json::parse(R"json({
    "settings": {"CLOSESPIDER_PAGECOUNT": 5, "CONCURRENT_REQUESTS": 1},
    "spider": {"name": "layers", "rules": [{"follow": true}]}
  })json");
  document["spider"]["start_urls"] = {server.url("/site/0")};
  auto file = write_config(dir, document);
  auto pages = [&](std::vector<std::string> extra) {
    auto stats_path = (dir.path() / "stats.json").string();
    std::vector<std::string> argv{crawler_binary(),           "run",    file, "-s",
                                  "STATS_FILE=" + stats_path, "--nolog"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    child_process run(argv);
    EXPECT_EQ(run.wait(), 0) << run.stderr_text();
    return json::parse(std::ifstream(stats_path))["response_received_count"].get<int>();
  };
  auto from_file = pages({});
  EXPECT_TRUE(from_file == 5 || from_file == 6) << from_file;
  auto from_command_line = pages({"-s", "CLOSESPIDER_PAGECOUNT=3"});
  EXPECT_TRUE(from_command_line == 3 || from_command_line == 4) << from_command_line;
}

// A Scrapy project's settings carry over: what means nothing here is a WARNING at start, once per
// setting, naming what to use instead; the file's own settings, declared in user_settings, are
// set like ours and still typed; a typo of ours still stops the run.
TEST(crawler_run, scrapy_only_settings_warn_and_the_files_own_settings_are_declared) {
  http_server server({.site_pages = 3});
  temp_dir dir;
  auto document = json::parse(R"json({
    "user_settings": {"MYPROJECT_PAGES": 10},
    "settings": {"TELNETCONSOLE_ENABLED": false, "CONCURRENT_ITEMS": 50, "MYPROJECT_PAGES": 20,
                 "SPIDER_MODULES": ["myproject.spiders"], "LOG_LEVEL": "INFO"},
    "spider": {"name": "carried", "rules": [{"follow": true}]}
  })json");
  document["spider"]["start_urls"] = {server.url("/site/0")};
  auto file = write_config(dir, document);
  child_process run({crawler_binary(), "run", file, "-s", "MYPROJECT_PAGES=30", "-s",
                     "TELNETCONSOLE_PORT=[6023, 6073]"});
  ASSERT_EQ(run.wait(), 0) << run.stderr_text();
  auto log = run.stderr_text();
  for (const char* line :
       {"WARNING: TELNETCONSOLE_ENABLED has no effect here: there is no telnet console",
        "WARNING: TELNETCONSOLE_PORT has no effect here", "WARNING: CONCURRENT_ITEMS has no effect",
        "WARNING: SPIDER_MODULES has no effect here: spiders are compiled in"}) {
    auto at = log.find(line);
    EXPECT_NE(at, std::string::npos) << line << "\n" << log;
    EXPECT_EQ(log.find(line, at + 1), std::string::npos) << "said twice: " << line;
    EXPECT_LT(at, log.find("Spider opened")) << line;
  }
  EXPECT_NE(log.find("\"MYPROJECT_PAGES\": 30"), std::string::npos) << "an overridden setting";
  EXPECT_GE(server.total_hits(), 3u);  // the crawl ran

  child_process typed({crawler_binary(), "run", file, "-s", "MYPROJECT_PAGES=many"});
  EXPECT_EQ(typed.wait(), 2);
  EXPECT_NE(typed.stderr_text().find("-s MYPROJECT_PAGES: expected an integer, got 'many'"),
            std::string::npos)
      << typed.stderr_text();
  child_process typo({crawler_binary(), "run", file, "-s", "TELNETCONSOLE_ENABLE=false"});
  EXPECT_EQ(typo.wait(), 2);
  EXPECT_NE(typo.stderr_text().find("unknown setting 'TELNETCONSOLE_ENABLE'"), std::string::npos)
      << typo.stderr_text();
}

TEST(crawler_run, offsite_links_are_counted_and_not_followed) {
  http_server server({.site_pages = 10});
  temp_dir dir;
  auto document = json::parse(R"json({
    "spider": {"name": "offsite", "allowed_domains": ["example.com"],
               "rules": [{"follow": true}]}
  })json");
  document["spider"]["start_urls"] = {server.url("/site/0")};
  auto stats_path = (dir.path() / "stats.json").string();
  child_process run({crawler_binary(), "run", write_config(dir, document), "-s",
                     "STATS_FILE=" + stats_path, "--nolog"});
  ASSERT_EQ(run.wait(), 0) << run.stderr_text();
  auto stats = json::parse(std::ifstream(stats_path));
  EXPECT_EQ(stats["offsite/domains"], 1);
  // Page 0 links to /site/1 (three times), /site/5, and to itself as #top and #again: four
  // distinct links, as Scrapy 2.8's LinkExtractor finds on the same page, each a request filtered
  // as offsite.
  EXPECT_EQ(stats["offsite/filtered"], 4);
  EXPECT_EQ(server.total_hits(), 1u);  // the start page only
}

TEST(crawler_run, a_bad_file_exits_2_with_the_path_before_fetching_anything) {
  http_server server;
  temp_dir dir;
  auto document = books_config();
  document["spider"]["start_urls"] = {server.url("/s?wd=1")};
  document["spider"]["rules"][0]["restrict_css"] = {"div["};
  child_process run({crawler_binary(), "run", write_config(dir, document)});
  EXPECT_EQ(run.wait(), 2);
  auto error = run.stderr_text();
  EXPECT_NE(error.find("spider.rules[0].restrict_css[0]: invalid CSS selector"), std::string::npos)
      << error;
  EXPECT_EQ(server.total_hits(), 0u);
}

// `crawler check` lists every problem of a crawl file in one pass, a line each with its file and
// JSON path, and exits 1; a good file gets one OK line and 0. Nothing is fetched either way.
TEST(crawler_check, lists_every_problem_with_its_path_and_fetches_nothing) {
  http_server server;
  temp_dir dir;
  auto document = books_config();
  document["spider"]["start_urls"] = {server.url("/s?wd=1")};
  document["settings"]["DOWNLOAD_DELAY"] = -1;
  document["settings"]["CONCURENT_REQUESTS"] = 2;
  document["spider"]["rules"][0]["allow"] = {"(unclosed"};
  // A misspelt key does not hide the same rule's bad callback.
  document["spider"]["rules"].push_back({{"alow", {"x"}}, {"callback", "pgae"}});
  document["spider"]["callbacks"]["page"]["fields"]["title"] = "title::txet";
  document["spider"]["allowed_domain"] = {"127.0.0.1"};
  // What `crawler run` would refuse before fetching comes in the same pass: components by name
  // and feed options, beside the file's other problems.
  document["settings"]["ITEM_PIPELINES"] = {{"myproject.Clean", 300}};
  document["settings"]["FEEDS"] = {{"items.jsonl", {{"fromat", "csv"}}}};
  auto file = write_config(dir, document);
  child_process check({crawler_binary(), "check", file});
  EXPECT_EQ(check.wait(), 1);
  EXPECT_EQ(check.stdout_text(), "");
  std::istringstream lines(check.stderr_text());
  std::vector<std::string> problems;
  for (std::string line; std::getline(lines, line);) {
    EXPECT_TRUE(line.starts_with(file + ": ")) << line;
    problems.push_back(line.substr(file.size() + 2));
  }
  std::vector<std::string> starts{
      "settings: unknown setting 'CONCURENT_REQUESTS' (did you mean 'CONCURRENT_REQUESTS'?)",
      "settings.DOWNLOAD_DELAY: expected a finite number >= 0",
      "spider.allowed_domain: unknown key \"allowed_domain\" (did you mean \"allowed_domains\"?)",
      "spider.callbacks.page.fields.title",
      "spider.rules[0].allow[0]: invalid regex",
      "spider.rules[1].alow: unknown key \"alow\" (did you mean \"allow\"?)",
      "spider.rules[1].callback: no callback \"pgae\" in spider.callbacks "
      "(did you mean \"page\"?)",
      "settings.ITEM_PIPELINES[\"myproject.Clean\"]: no item pipeline is registered",
      "settings.FEEDS.items.jsonl.fromat: unknown feed option (did you mean \"format\"?)"};
  ASSERT_EQ(problems.size(), starts.size()) << check.stderr_text();
  for (std::size_t i = 0; i < starts.size(); ++i) {
    EXPECT_TRUE(problems[i].starts_with(starts[i])) << problems[i];
  }
  EXPECT_EQ(server.total_hits(), 0u);

  auto good = books_config();
  good["spider"]["start_urls"] = {server.url("/s?wd=1")};
  child_process ok({crawler_binary(), "check", write_config(dir, good)});
  EXPECT_EQ(ok.wait(), 0) << ok.stderr_text();
  EXPECT_EQ(ok.stdout_text(),
            dir.path().string() + "/crawl.json: OK: spider \"pages\", 1 start URL, 1 rule\n");
  EXPECT_EQ(server.total_hits(), 0u);
}

// A callback no request reaches never runs: a crawl file whose only callback is parse scraped
// nothing while `check` said OK. Now `check` names each such callback (parse with what to call it
// instead), a callback named by a rule or parse_start_url is not one, and `run` warns first.
TEST(crawler_check, a_callback_no_request_reaches_is_a_problem_and_run_warns_of_it) {
  http_server server({.site_pages = 2});
  temp_dir dir;
  auto document = books_config();
  document["spider"]["start_urls"] = {server.url("/site/0")};
  document["spider"]["callbacks"]["parse"] = {{"fields", {{"url", "$url"}}}};
  document["spider"]["callbacks"]["orphan"] = {{"fields", {{"url", "$url"}}}};
  document["spider"]["callbacks"]["parse_start_url"] = {{"fields", {{"start", "$url"}}}};
  auto file = write_config(dir, document);
  child_process check({crawler_binary(), "check", file});
  EXPECT_EQ(check.wait(), 1);
  EXPECT_EQ(check.stderr_text(),
            file + ": spider.callbacks.orphan: no rule names it (rules[].callback), and the "
                   "start pages go to parse_start_url, so it never runs\n" +
                file + ": spider.callbacks.parse: no rule names it (rules[].callback), and the start "
                       "pages go to parse_start_url, so it never runs (a CrawlSpider keeps parse "
                       "for itself, as Scrapy's does: name the start pages' callback "
                       "parse_start_url)\n");

  // `run` crawls as before, saying why first.
  child_process run({crawler_binary(), "run", file, "-o", (dir.path() / "items.jsonl").string()});
  EXPECT_EQ(run.wait(), 0) << run.stderr_text();
  EXPECT_NE(run.stderr_text().find("[crawler] WARNING: " + file +
                                   ": spider.callbacks.orphan: no rule names it"),
            std::string::npos)
      << run.stderr_text();

  document["spider"]["callbacks"].erase("parse");
  document["spider"]["rules"].push_back({{"allow", {"/nothing"}}, {"callback", "orphan"}});
  child_process ok({crawler_binary(), "check", write_config(dir, document)});
  EXPECT_EQ(ok.wait(), 0) << ok.stderr_text();
}

// `crawler genspider` writes a crawl file that passes `crawler check` and runs: basic makes an item
// of the start page, crawl a rule and its callback. It does not overwrite without --force.
TEST(crawler_genspider, writes_crawl_files_that_check_and_run) {
  http_server server({.pages = {{"/", "<html><head><title>Home</title></head></html>"}}});
  temp_dir dir;
  auto generate = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv{crawler_binary(), "genspider", "-d", dir.path().string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::make_unique<child_process>(argv);
  };
  auto basic = generate({"home", server.url("/")});
  ASSERT_EQ(basic->wait(), 0) << basic->stderr_text();
  auto file = (dir.path() / "home.json").string();
  EXPECT_EQ(basic->stdout_text(), "Created spider 'home' using template 'basic' in " + file + "\n");
  auto items = dir.path() / "items.jsonl";
  child_process run({crawler_binary(), "run", file, "-O", items.string(), "--nolog"});
  ASSERT_EQ(run.wait(), 0) << run.stderr_text();
  std::ifstream in(items);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(json::parse(line), (json{{"url", server.url("/")}, {"title", "Home"}}));

  auto crawl = generate({"-t", "crawl", "shop", "shop.example"});
  ASSERT_EQ(crawl->wait(), 0) << crawl->stderr_text();
  child_process check({crawler_binary(), "check", (dir.path() / "shop.json").string()});
  EXPECT_EQ(check.wait(), 0) << check.stderr_text();
  EXPECT_NE(check.stdout_text().find("OK: spider \"shop\", 1 start URL, 1 rule"),
            std::string::npos);

  auto again = generate({"home", "other.example"});
  EXPECT_EQ(again->wait(), 1);
  EXPECT_EQ(again->stderr_text(),
            "crawler genspider: " + file + " already exists (--force replaces it)\n");
  auto forced = generate({"--force", "home", "other.example"});
  EXPECT_EQ(forced->wait(), 0);
  EXPECT_EQ(json::parse(std::ifstream(file))["spider"]["start_urls"][0], "https://other.example/");
  auto bad = generate({"9lives", "x.example"});
  EXPECT_EQ(bad->wait(), 2);
}

// genspider given a bare host writes https://, as Scrapy's does; on a plain-http site the
// robots.txt fetch fails on TLS and RFC 9309 forbids the whole host. The crawl then says so at its
// end, with the reason and what to do, not only in DEBUG lines; and its periodic log starts after
// "Spider opened".
TEST(crawler_genspider, a_robots_txt_that_cannot_be_fetched_is_the_reason_given_for_no_items) {
  http_server server({.pages = {{"/", "<html><head><title>Home</title></head></html>"}}});
  temp_dir dir;
  auto host = server.url("/").substr(std::string_view("http://").size());
  host.pop_back();  // 127.0.0.1:PORT
  child_process generate({crawler_binary(), "genspider", "-d", dir.path().string(), "home", host});
  ASSERT_EQ(generate.wait(), 0) << generate.stderr_text();
  auto stats_path = (dir.path() / "stats.json").string();
  child_process run({crawler_binary(), "run", (dir.path() / "home.json").string(), "-s",
                     "STATS_FILE=" + stats_path, "-L", "INFO"});
  ASSERT_EQ(run.wait(), 0) << run.stderr_text();
  auto log = run.stderr_text();
  EXPECT_NE(log.find("WARNING: No item was scraped: robots.txt forbade 1 request, 1 of them on "
                     "hosts whose robots.txt could not be fetched (SSLError: 1) and RFC 9309 "
                     "allows nothing until it is fetched again (ROBOTSTXT_OBEY=false skips "
                     "robots.txt; check the start URL's scheme)"),
            std::string::npos)
      << log;
  EXPECT_LT(log.find("Spider opened"), log.find("Crawled 0 pages")) << log;
  auto stats = json::parse(std::ifstream(stats_path));
  EXPECT_EQ(stats["robotstxt/forbidden/unreachable"], 1);

  // Given its scheme, genspider keeps it, and the same page gives its item.
  child_process plain({crawler_binary(), "genspider", "--force", "-d", dir.path().string(), "home",
                       server.url("/")});
  ASSERT_EQ(plain.wait(), 0) << plain.stderr_text();
  child_process again({crawler_binary(), "run", (dir.path() / "home.json").string()});
  ASSERT_EQ(again.wait(), 0) << again.stderr_text();
  EXPECT_EQ(again.stderr_text().find("No item was scraped"), std::string::npos);
}

// Pages over the parser's budgets never reach a callback: the end of a crawl without items says
// how many and why, and keeps the selectors' hint for the pages that were parsed, when some were.
TEST(crawler_run, pages_skipped_unparsed_are_the_reason_given_for_no_items) {
  http_server server({.pages = {{"/big", "<html><title>big</title><body>" + std::string(600, 'x')},
                                {"/small", "<html><title>small</title></html>"}}});
  temp_dir dir;
  auto run_on = [&](std::vector<std::string> paths) {
    auto document = json::parse(R"json({"spider": {"name": "pages",
      "rules": [{"allow": ["/nothing"], "callback": "page"}],
      "callbacks": {"page": {"fields": {"title": "title::text"}}}}})json");
    for (const auto& path : paths) document["spider"]["start_urls"].push_back(server.url(path));
    child_process run({crawler_binary(), "run", write_config(dir, document), "-s",
                       "HTML_MAX_SIZE=500", "-L", "WARNING"});
    EXPECT_EQ(run.wait(), 0) << run.stderr_text();
    return run.stderr_text();
  };
  const std::string skipped = "1 page was skipped unparsed (too_large: 1; HTML_MAX_SIZE and "
                              "HTML_MAX_DEPTH are the budgets)";
  const std::string hint = "pages were crawled and the callbacks yielded no item";
  auto only_big = run_on({"/big"});
  EXPECT_NE(only_big.find("No item was scraped: " + skipped + "\n"), std::string::npos)
      << only_big;
  auto both = run_on({"/big", "/small"});
  EXPECT_NE(both.find("No item was scraped: " + skipped +
                      "; 1 page was crawled and the callbacks yielded no item from them"),
            std::string::npos)
      << both;
  EXPECT_EQ(only_big.find(hint), std::string::npos);
  auto only_small = run_on({"/small"});  // nothing skipped: the hint alone
  EXPECT_NE(only_small.find("No item was scraped: 1 page was crawled and the callbacks yielded no "
                            "item from them (try the selectors"),
            std::string::npos)
      << only_small;
}

// `crawler parse` runs one page through a callback (or the rule that takes its URL) and prints
// what it yields, a block per level as `scrapy parse` does; --depth follows the requests.
TEST(crawler_parse, prints_the_items_and_requests_of_one_page_a_block_per_level) {
  http_server server({.site_pages = 50});
  temp_dir dir;
  auto document = books_config();
  document["spider"]["start_urls"] = {server.url("/site/0")};
  auto file = write_config(dir, document);
  auto parse = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv{crawler_binary(), "parse", server.url("/site/3"), "-c", file,
                                  "--nolog"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::make_unique<child_process>(argv);
  };
  auto one = parse({"--callback", "page"});
  ASSERT_EQ(one->wait(), 0) << one->stderr_text();
  json item = {{"title", "Page 3"}, {"url", server.url("/site/3")}};
  EXPECT_EQ(one->stdout_text(), ">>> STATUS DEPTH LEVEL 1 <<<\n# Scraped Items  " +
                                    std::string(60, '-') + "\n" + item.dump() + "\n\n# Requests  " +
                                    std::string(65, '-') + "\n\n");
  // Through the rule: its callback's item, and the links it follows (site_links(3): 22, 44, 4).
  auto ruled = parse({"--rules", "--depth", "2"});
  ASSERT_EQ(ruled->wait(), 0) << ruled->stderr_text();
  auto text = ruled->stdout_text();
  auto level2 = text.find(">>> STATUS DEPTH LEVEL 2 <<<");
  ASSERT_NE(level2, std::string::npos) << text;
  for (const char* page : {"/site/22>", "/site/44>", "/site/4>"}) {
    EXPECT_NE(text.find("<GET " + server.url(page)), std::string::npos) << page << text;
  }
  EXPECT_EQ(count_of(text.substr(level2), "{\"title\":\"Page "), 3u) << text;
  EXPECT_EQ(server.hits("/site/22"), 1u);
  EXPECT_EQ(count_of(text, ">>> STATUS DEPTH LEVEL 3"), 0u);  // --depth 2 stops there

  auto unknown = parse({"--callback", "nope"});
  EXPECT_EQ(unknown->wait(), 2);
  EXPECT_EQ(unknown->stderr_text(), "crawler parse: spider pages has no callback \"nope\"\n");

  // Its items go to the terminal, not to a feed: with the log on, parse never warns that the
  // crawl scraped no item.
  child_process logged({crawler_binary(), "parse", server.url("/site/3"), "-c", file,
                        "--callback", "page", "-L", "INFO"});
  ASSERT_EQ(logged.wait(), 0) << logged.stderr_text();
  EXPECT_NE(logged.stderr_text().find("Spider closed (finished)"), std::string::npos)
      << logged.stderr_text();
  EXPECT_EQ(logged.stderr_text().find("No item was scraped"), std::string::npos)
      << logged.stderr_text();
}

// `crawler shell` fed by a pipe: selections as JSON lists, the links each rule takes, a bad
// selector's error (the shell goes on), a fetched 404 becoming the page; nothing after quit.
TEST(crawler_shell, a_piped_session_selects_lists_links_and_survives_errors) {
  http_server server({.site_pages = 50});
  temp_dir dir;
  auto document = books_config();
  document["spider"]["rules"] =
      json::parse(R"([{"allow": ["/site/4$"], "callback": "page"}, {"allow": ["/site/\\d+$"]}])");
  auto file = write_config(dir, document);
  std::ofstream(dir.path() / "input")
      << "h1::text\na::attr(href)\nlinks\ntitle::[\n"
      << "fetch " << server.url("/status/404") << "\nstatus\nh1::text\nquit\nh1::text\n";
  child_process shell({crawler_binary(), "shell", server.url("/site/3"), "-c", file},
                      dir.path() / "input");
  ASSERT_EQ(shell.wait(), 0) << shell.stderr_text();
  auto page = [&](const char* path) { return server.url(path); };
  auto output = shell.stdout_text();
  auto first_line = output.substr(0, output.find('\n') + 1);
  EXPECT_TRUE(first_line.starts_with("[200] " + page("/site/3") + " (")) << output;
  EXPECT_EQ(output.substr(first_line.size()),
            "[\"Page 3\"]\n"
            "[\"/site/22\",\"/site/44\",\"/site/4\",\"/site/4\",\"#top\",\"/site/3#again\"]\n" +
                page("/site/4") + "  [rule 0 page]\n" + page("/site/22") + "  [rule 1]\n" +
                page("/site/44") + "  [rule 1]\n[404] " + page("/status/404") +
                " (0 bytes)\n404\n[]\n");
  EXPECT_NE(shell.stderr_text().find("invalid CSS selector \"title::[\" at position"),
            std::string::npos)
      << shell.stderr_text();
}

// A Scrapy user types XPath in the shell as in Scrapy's: each line that can only be XPath is
// evaluated as XPath, a bad one says why, and CSS still works beside it.
TEST(crawler_shell, xpath_lines_are_evaluated_as_xpath) {
  http_server server;
  temp_dir dir;
  std::ofstream(dir.path() / "input")
      << "//title/text()\ncount(//h1)\nh1::text\n//h1[\nnormalize-space(//h1)\n";
  child_process shell({crawler_binary(), "shell", server.url("/site/3")}, dir.path() / "input");
  ASSERT_EQ(shell.wait(), 0) << shell.stderr_text();
  auto out = shell.stdout_text();
  auto title = out.find("[\"Page 3\"]\n[\"1.0\"]\n[\"Page 3\"]\n[\"Page 3\"]\n");
  EXPECT_NE(title, std::string::npos) << out;
  EXPECT_NE(shell.stderr_text().find("invalid XPath expression \"//h1[\""), std::string::npos)
      << shell.stderr_text();
}

// `view` writes the page to a temporary file with a <base> so its relative links resolve in a
// browser, and prints the path and its file:// URL.
TEST(crawler_shell, view_writes_the_page_with_a_base_for_a_browser) {
  http_server server;
  temp_dir dir;
  std::ofstream(dir.path() / "input") << "view\n";
  child_process shell({crawler_binary(), "shell", server.url("/site/3")}, dir.path() / "input");
  ASSERT_EQ(shell.wait(), 0) << shell.stderr_text();
  std::istringstream lines(shell.stdout_text());
  std::string fetched, path, url;
  std::getline(lines, fetched);
  std::getline(lines, path);
  std::getline(lines, url);
  EXPECT_EQ(url, "file://" + path);
  std::ifstream file(path);
  std::string written((std::istreambuf_iterator<char>(file)), {});
  std::filesystem::remove(path);
  EXPECT_NE(written.find("<head><base href=\"" + server.url("/site/3") + "\"><title>Page 3"),
            std::string::npos)
      << written;
}

// Each `view` lets its file go once written: a long session under a low limit of open files
// views the page as often as asked.
TEST(crawler_shell, views_as_often_as_asked_under_a_low_open_file_limit) {
  http_server server;
  temp_dir dir;
  {
    std::ofstream input(dir.path() / "input");
    for (int i = 0; i < 100; ++i) input << "view\n";
  }
  child_process shell({"/bin/bash", "-c", "ulimit -n 40 && exec \"$0\" shell \"$1\"",
                       crawler_binary(), server.url("/site/3")},
                      dir.path() / "input");
  ASSERT_EQ(shell.wait(), 0) << shell.stderr_text();
  EXPECT_EQ(shell.stderr_text().find("view: cannot"), std::string::npos) << shell.stderr_text();
  std::istringstream lines(shell.stdout_text());
  std::size_t viewed = 0;
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("file://")) continue;
    ++viewed;
    std::filesystem::remove(line.substr(std::string_view("file://").size()));
  }
  EXPECT_EQ(viewed, 100u);
}

// On a terminal lines are edited and remembered: the up arrow brings back the last selector.
// Without a page, a selector says what to do first.
TEST(crawler_shell, on_a_terminal_the_up_arrow_recalls_the_last_line) {
  http_server server;
  auto [status, output] = run_on_a_terminal({crawler_binary(), "shell", server.url("/site/3")},
                                            "h1::text\n\x1b[A\nquit\n");
  ASSERT_EQ(status, 0) << output;
  EXPECT_EQ(count_of(output, "[\"Page 3\"]"), 2u) << output;
  EXPECT_NE(output.find(">>> "), std::string::npos) << output;

  auto [empty_status, empty] = run_on_a_terminal({crawler_binary(), "shell"}, "h1::text\nquit\n");
  EXPECT_EQ(empty_status, 0);
  EXPECT_NE(empty.find("no page yet: fetch URL first"), std::string::npos) << empty;
}

TEST(crawl_config, every_example_file_is_valid) {
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(examples())) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    auto config = crawler::load_crawl_config_file(entry.path().string());
    EXPECT_NO_THROW(crawler::settings_for(*config.spider, {}, config.settings)) << entry.path();
  }
  EXPECT_EQ(files, 6u);
}

// The example as its README runs it: the offline books served over HTTP (a fleet fetches only
// http(s)), here by the test's server on its own port instead of 8000.
TEST(crawler_run, the_fleet_example_runs_as_two_workers_on_one_redis) {
  const auto books = examples() / "books";
  http_server::options served;
  for (const auto& file : std::filesystem::recursive_directory_iterator(books)) {
    if (!file.is_regular_file()) continue;
    std::ifstream in(file.path());
    served.pages["/" + file.path().lexically_relative(books).generic_string()] =
        std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  http_server site(served);
  temp_dir dir;
  auto example = json::parse(std::ifstream(examples() / "books-fleet.json"));
  ASSERT_EQ(example["spider"]["start_urls"], json::array({"http://127.0.0.1:8000/index.html"}));
  example["spider"]["start_urls"] = json::array({site.url("/index.html")});
  auto crawl_file = dir.path() / "books-fleet.json";
  std::ofstream(crawl_file) << example.dump(2);
  crawler::fixtures::redis_server redis;
  std::vector<std::unique_ptr<child_process>> workers;
  for (int i = 0; i < 2; ++i) {
    workers.push_back(std::make_unique<child_process>(std::vector<std::string>{
        crawler_binary(), "run", crawl_file.string(), "-s", "REDIS_URL=" + redis.url(), "-s",
        "MAX_IDLE_TIME_BEFORE_CLOSE=1", "--nolog"}));
  }
  for (auto& worker : workers) ASSERT_EQ(worker->wait(), 0) << worker->stderr_text();
  child_process stats({crawler_binary(), "stats", "books_fleet", "-s", "REDIS_URL=" + redis.url()});
  ASSERT_EQ(stats.wait(), 0) << stats.stderr_text();
  auto fleet = json::parse(stats.stdout_text());
  EXPECT_EQ(fleet["item_scraped_count"], 12);  // the books of the offline site, once
  EXPECT_EQ(fleet["response_received_count"], fleet["downloader/response_count"]);
}

// "$depth" gives the request's meta depth as stored: a request read from a shared queue may carry
// any number there, and one past int's range or with a fraction reaches the item unchanged.
TEST(crawler_run, a_depth_field_gives_a_shared_requests_depth_as_it_was_queued) {
  http_server site;
  temp_dir dir;
  auto document = json::parse(R"json({
    "settings": {"SCHEDULER": "redis", "SCHEDULER_QUEUE_CLASS": "fifo",
                 "DUPEFILTER_CLASS": "redis_set", "MAX_IDLE_TIME_BEFORE_CLOSE": 1},
    "spider": {"name": "depths",
               "callbacks": {"page": {"fields": {"url": "$url", "depth": "$depth"}}}}
  })json");
  auto crawl_file = dir.path() / "depths.json";
  std::ofstream(crawl_file) << document.dump();
  crawler::fixtures::redis_server redis;
  auto* context = redisConnect("127.0.0.1", redis.port());
  ASSERT_TRUE(context && !context->err);
  const std::vector<std::string> depths{"3", "1.5", "-1.1e+57", "1e+300", "4294967296"};
  for (std::size_t i = 0; i < depths.size(); ++i) {
    auto entry = "000000000000000" + std::to_string(i) + "|" +
                 json{{"url", site.url("/s?wd=" + std::to_string(i))}, {"callback", "page"},
                      {"meta", {{"depth", json::parse(depths[i])}}}}
                     .dump();
    freeReplyObject(redisCommand(context, "LPUSH depths:requests %s", entry.c_str()));
  }
  redisFree(context);
  auto items_path = dir.path() / "items.jsonl";
  child_process run({crawler_binary(), "run", crawl_file.string(), "-s", "REDIS_URL=" + redis.url(),
                     "-O", items_path.string(), "--nolog"});
  ASSERT_EQ(run.wait(), 0) << run.stderr_text();
  std::map<std::string, json> depth_of;
  std::ifstream in(items_path);
  for (std::string line; std::getline(in, line);) {
    auto item = json::parse(line);
    depth_of[item["url"]] = item["depth"];
  }
  ASSERT_EQ(depth_of.size(), depths.size());
  for (std::size_t i = 0; i < depths.size(); ++i) {
    EXPECT_EQ(depth_of[site.url("/s?wd=" + std::to_string(i))], json::parse(depths[i])) << i;
  }
}

TEST(crawler_run, the_books_example_runs_offline) {
  temp_dir dir;
  auto items = (dir.path() / "books.csv").string();
  child_process run(
      {crawler_binary(), "run", (examples() / "books.json").string(), "-O", items, "--nolog"});
  ASSERT_EQ(run.wait(), 0) << run.stderr_text();
  std::ifstream in(items);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header, "url,title,price,availability,tags,rating\r");  // the file's order
  std::size_t rows = 0;
  bool found = false;
  for (std::string line; std::getline(in, line); ++rows) {
    if (line.find(",Tipping the Velvet,53.74,In stock,\"historical,fiction\",") !=
        std::string::npos)
      found = true;
  }
  EXPECT_EQ(rows, 12u);
  EXPECT_TRUE(found);
}

}  // namespace
