// The FilesPipeline (crawler/files_pipeline.h), enabled from a crawl file as a Scrapy user enables
// scrapy.pipelines.files.FilesPipeline, against a loopback server that counts what is fetched.
#include <openssl/evp.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "crawler/files_pipeline.h"
#include "child_process.h"
#include "http_server.h"
#include "in_process_crawl.h"

namespace {

namespace fs = std::filesystem;
namespace fixtures = crawler::fixtures;
using crawler::fixtures::child_process;
using crawler::fixtures::http_server;
using crawler::fixtures::temp_dir;
using json = nlohmann::json;

std::string hex_digest(const EVP_MD* algorithm, std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, algorithm, nullptr);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    static constexpr char digits[] = "0123456789abcdef";
    hex += digits[digest[i] >> 4];
    hex += digits[digest[i] & 15];
  }
  return hex;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Ten catalog pages, page P naming files 10P..10P+9 and, every one of them, file 0; the files'
// bodies are "file N". `extra` adds links of the test's own to page 0.
http_server::options catalog(const std::string& extra = "") {
  http_server::options options;
  for (int page = 0; page < 10; ++page) {
    std::string body = "<html><body><h1>Catalog " + std::to_string(page) + "</h1>";
    for (int file = page * 10; file < page * 10 + 10; ++file) {
      body += "<a class=file href=\"http://127.0.0.1:{port}/files/" + std::to_string(file) +
              ".pdf\">f</a>";
    }
    if (page != 0) body += "<a class=file href=\"http://127.0.0.1:{port}/files/0.pdf\">f</a>";
    if (page == 0) body += extra;
    options.pages["/catalog/" + std::to_string(page)] = body + "</body></html>";
  }
  for (int file = 0; file < 100; ++file) {
    options.pages["/files/" + std::to_string(file) + ".pdf"] = "file " + std::to_string(file);
  }
  return options;
}

// A crawl file whose items are the catalog pages, with their file links as file_urls.
json catalog_crawl(const http_server& server, json settings, int pages = 10) {
  json start = json::array();
  for (int page = 0; page < pages; ++page) start.push_back(server.url("/catalog/" + std::to_string(page)));
  settings["ITEM_PIPELINES"] = {{"scrapy.pipelines.files.FilesPipeline", 1}};
  return {{"settings", std::move(settings)},
          {"spider",
           {{"name", "catalog"},
            {"start_urls", start},
            {"callbacks",
             {{"parse_start_url",
               {{"fields",
                 {{"url", "$url"}, {"file_urls", {{"css", "a.file::attr(href)"}, {"all", true}}}}}}}}}}}};
}

TEST(files_pipeline, stores_a_file_where_scrapy_does) {
  // Printed by Scrapy 2.8's FilesPipeline.file_path on Debian 12.
  EXPECT_EQ(crawler::files_pipeline::file_path("http://example.org/report.pdf"),
            "full/c5108234686a33975fdb149527b38835a6f7898a.pdf");
  EXPECT_EQ(crawler::files_pipeline::file_path("http://example.org/a/IMAGE.JPG"),
            "full/b59bfcd3d4a923a277160221df9b73d3a779aab9.jpg");
  EXPECT_EQ(crawler::files_pipeline::file_path("http://example.org/doc.pdf?x=1"),
            "full/04fef79d6a251988e838dadf3cef74e3db283385");
  EXPECT_EQ(crawler::files_pipeline::file_path("http://example.org/dir/"),
            "full/9d9e690b4dbba80cfd361b3e2aa5843d9c856cbd");
  EXPECT_EQ(crawler::files_pipeline::file_path("http://example.org/archive.tar.gz"),
            "full/91aa457767be0396ec20447350fd1c7ad3f8ee3e.gz");
  EXPECT_EQ(crawler::files_pipeline::file_path("http://example.org/noext"),
            "full/01e1bc11e2c5c0c119e83343a0d690578ceee424");
}

TEST(files_pipeline, downloads_100_files_once_each_across_two_crawls) {
  http_server server(catalog());
  temp_dir store;
  json settings = {{"FILES_STORE", store.path().string()}};

  auto first = fixtures::run_crawl_document(catalog_crawl(server, settings));
  ASSERT_EQ(first.status, 0);
  ASSERT_EQ(first.items.size(), 10u);
  for (int file = 0; file < 100; ++file) {
    ASSERT_EQ(server.hits("/files/" + std::to_string(file) + ".pdf"), 1u)
        << "file " << file << ", named by " << (file == 0 ? 10 : 1) << " items";
  }
  EXPECT_EQ(first.stats.value("file_count", 0), 100);
  EXPECT_EQ(first.stats.value("file_status_count/downloaded", 0), 100);
  for (const auto& item : first.items) {
    ASSERT_EQ(item["files"].size(), item["file_urls"].size()) << item.dump();
    for (std::size_t i = 0; i < item["files"].size(); ++i) {
      const auto& file = item["files"][i];
      auto url = item["file_urls"][i].get<std::string>();
      EXPECT_EQ(file["url"], url) << "results in the order the item named the files";
      auto path = file["path"].get<std::string>();
      EXPECT_EQ(path, "full/" + hex_digest(EVP_sha1(), url) + ".pdf");
      auto body = "file " + url.substr(url.rfind('/') + 1, url.size() - url.rfind('/') - 5);
      EXPECT_EQ(read_file(store.path() / path), body);
      EXPECT_EQ(file["checksum"], hex_digest(EVP_md5(), body));
      // File 0 of pages 1..9 was the crawl's already: downloaded once, the same result.
      EXPECT_EQ(file["status"], "downloaded");
    }
  }

  auto second = fixtures::run_crawl_document(catalog_crawl(server, settings));
  ASSERT_EQ(second.status, 0);
  ASSERT_EQ(second.items.size(), 10u);
  for (int file = 0; file < 100; ++file) {
    EXPECT_EQ(server.hits("/files/" + std::to_string(file) + ".pdf"), 1u) << "file " << file;
  }
  EXPECT_EQ(second.stats.value("file_status_count/uptodate", 0), 100);
  EXPECT_FALSE(second.stats.contains("file_status_count/downloaded"));
  for (const auto& item : second.items) {
    for (const auto& file : item["files"]) {
      EXPECT_EQ(file["status"], "uptodate");
      auto url = file["url"].get<std::string>();
      auto body = "file " + url.substr(url.rfind('/') + 1, url.size() - url.rfind('/') - 5);
      EXPECT_EQ(file["checksum"], hex_digest(EVP_md5(), body));
    }
  }
}

TEST(files_pipeline, a_link_planted_in_the_store_is_replaced_and_its_target_left_alone) {
  // Whoever can write FILES_STORE plants links where a file will go, and at the names a writer
  // that numbers its temporary files would use: none of them is written through.
  http_server server(catalog());
  temp_dir store, elsewhere;
  auto victim = elsewhere.path() / "victim";
  std::ofstream(victim) << "the victim's own bytes";
  fs::create_directories(store.path() / "full");
  auto url = server.url("/files/0.pdf");
  auto place = store.path() / crawler::files_pipeline::file_path(url);
  fs::create_symlink(victim, place);
  for (int n = 0; n < 10; ++n) {
    for (const auto& suffix : {".tmp" + std::to_string(::getpid()) + "-" + std::to_string(n),
                               ".tmp-" + std::to_string(n)}) {
      fs::create_symlink(victim, place.string() + suffix);
    }
  }
  json settings = {{"FILES_STORE", store.path().string()}};
  auto crawl = fixtures::run_crawl_document(catalog_crawl(server, settings, 1));
  ASSERT_EQ(crawl.status, 0);
  EXPECT_EQ(read_file(victim), "the victim's own bytes");
  EXPECT_FALSE(fs::is_symlink(place));
  EXPECT_EQ(read_file(place), "file 0");
}

TEST(files_pipeline, a_file_older_than_files_expires_or_not_a_plain_file_is_downloaded_again) {
  http_server server(catalog());
  temp_dir store;
  json settings = {{"FILES_STORE", store.path().string()}};
  ASSERT_EQ(fixtures::run_crawl_document(catalog_crawl(server, settings, 1)).status, 0);
  ASSERT_EQ(server.hits("/files/3.pdf"), 1u);

  auto path_of = [&](int file) {
    return store.path() / crawler::files_pipeline::file_path(
                              server.url("/files/" + std::to_string(file) + ".pdf"));
  };
  // File 3 stored 91 days ago, past the default 90; file 4 replaced by a link to a file of the
  // machine's (what the store holds is input, not trusted); file 5 is a folder.
  fs::last_write_time(path_of(3), fs::file_time_type::clock::now() - std::chrono::hours(24 * 91));
  temp_dir elsewhere;
  std::ofstream(elsewhere.path() / "secret") << "not a crawled file";
  fs::remove(path_of(4));
  fs::create_symlink(elsewhere.path() / "secret", path_of(4));
  fs::remove(path_of(5));
  fs::create_directory(path_of(5));

  testing::internal::CaptureStderr();
  auto again = fixtures::run_crawl_document(catalog_crawl(server, settings, 1));
  auto log = testing::internal::GetCapturedStderr();
  ASSERT_EQ(again.status, 0);
  EXPECT_EQ(server.hits("/files/3.pdf"), 2u) << "expired";
  EXPECT_EQ(server.hits("/files/4.pdf"), 2u) << "a link is not a stored file";
  EXPECT_EQ(server.hits("/files/5.pdf"), 2u) << "a folder is not a stored file";
  // Nor is a folder replaced: it may be someone's. The file is left out, the folder named.
  EXPECT_NE(log.find("File (error): Error processing file from <GET " +
                     server.url("/files/5.pdf") + "> referred in <None>: cannot write " +
                     path_of(5).string() + ": Is a directory"),
            std::string::npos)
      << log;
  ASSERT_EQ(again.items.size(), 1u);
  EXPECT_EQ(again.items[0]["files"].size(), 9u);
  EXPECT_EQ(server.hits("/files/6.pdf"), 1u) << "up to date";
  EXPECT_EQ(read_file(path_of(3)), "file 3");
  EXPECT_FALSE(fs::is_symlink(path_of(4))) << "the link is replaced, its target left alone";
  EXPECT_EQ(read_file(path_of(4)), "file 4");
  EXPECT_EQ(read_file(elsewhere.path() / "secret"), "not a crawled file");
  EXPECT_EQ(again.stats.value("file_status_count/downloaded", 0), 2) << again.stats.dump();
  EXPECT_EQ(again.stats.value("file_status_count/uptodate", 0), 7) << again.stats.dump();

  // FILES_EXPIRES 0: nothing stored is up to date.
  settings["FILES_EXPIRES"] = 0;
  ASSERT_EQ(fixtures::run_crawl_document(catalog_crawl(server, settings, 1)).status, 0);
  EXPECT_EQ(server.hits("/files/6.pdf"), 2u);
}

TEST(files_pipeline, a_file_that_cannot_be_had_is_left_out_and_logged) {
  auto options = catalog(
      "<a class=file href=\"http://127.0.0.1:{port}/status/404\">gone</a>"
      "<a class=file href=\"http://127.0.0.1:{port}/moved/302?to=/files/7.pdf\">moved</a>"
      "<a class=file href=\"http://127.0.0.1:{port}/status/200\">empty</a>");
  http_server server(options);
  temp_dir store;
  testing::internal::CaptureStderr();
  auto run = fixtures::run_crawl_document(catalog_crawl(server, {{"FILES_STORE", store.path().string()}}, 1));
  auto log = testing::internal::GetCapturedStderr();
  ASSERT_EQ(run.status, 0);
  ASSERT_EQ(run.items.size(), 1u);
  const auto& item = run.items[0];
  EXPECT_EQ(item["file_urls"].size(), 13u);
  EXPECT_EQ(item["files"].size(), 10u) << "the ten files, without the three that failed";
  EXPECT_NE(log.find("File (code: 404): Error downloading file from <GET " +
                     server.url("/status/404") + "> referred in <None>"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("File (code: 302)"), std::string::npos) << "redirects are not followed";
  EXPECT_NE(log.find("File (empty-content): Empty file from <GET " + server.url("/status/200")),
            std::string::npos)
      << log;
  EXPECT_EQ(server.hits("/files/7.pdf"), 1u) << "fetched as itself only";

  // MEDIA_ALLOW_REDIRECTS: the redirect leads to the file, stored under the URL the item named.
  temp_dir other;
  run = fixtures::run_crawl_document(catalog_crawl(
      server, {{"FILES_STORE", other.path().string()}, {"MEDIA_ALLOW_REDIRECTS", true}}, 1));
  ASSERT_EQ(run.items.size(), 1u);
  EXPECT_EQ(run.items[0]["files"].size(), 11u);
  auto moved = server.url("/moved/302?to=/files/7.pdf");
  EXPECT_EQ(read_file(other.path() / crawler::files_pipeline::file_path(moved)), "file 7");
}

// Files come through the downloader middlewares: the HTTP cache answers the second crawl's.
TEST(files_pipeline, a_file_the_http_cache_answers_is_cached) {
  http_server server(catalog());
  temp_dir cache, first_store, second_store;
  json settings = {{"HTTPCACHE_ENABLED", true}, {"HTTPCACHE_DIR", cache.path().string()}};
  settings["FILES_STORE"] = first_store.path().string();
  auto first = fixtures::run_crawl_document(catalog_crawl(server, settings, 1));
  ASSERT_EQ(first.status, 0);
  EXPECT_EQ(first.stats.value("file_status_count/downloaded", 0), 10);
  settings["FILES_STORE"] = second_store.path().string();
  auto second = fixtures::run_crawl_document(catalog_crawl(server, settings, 1));
  ASSERT_EQ(second.status, 0);
  ASSERT_EQ(second.items.size(), 1u);
  EXPECT_EQ(second.stats.value("file_status_count/cached", 0), 10) << second.stats.dump();
  EXPECT_EQ(second.items[0]["files"][0]["status"], "cached");
  EXPECT_EQ(server.hits("/files/3.pdf"), 1u);
  EXPECT_EQ(read_file(second_store.path() / second.items[0]["files"][3]["path"].get<std::string>()),
            "file 3");
}

// Scrapy's media requests pass RobotsTxtMiddleware: a file robots.txt forbids is not fetched.
TEST(files_pipeline, obeys_robots_txt_as_the_crawl_does) {
  auto options = catalog("<a class=file href=\"http://127.0.0.1:{port}/private/secret.pdf\">s</a>");
  options.pages["/private/secret.pdf"] = "secret";
  options.robots_txt = "User-agent: *\nDisallow: /private/\n";
  http_server server(options);
  temp_dir store;
  testing::internal::CaptureStderr();
  auto run = fixtures::run_crawl_document(catalog_crawl(
      server, {{"FILES_STORE", store.path().string()}, {"ROBOTSTXT_OBEY", true}}, 1));
  auto log = testing::internal::GetCapturedStderr();
  ASSERT_EQ(run.status, 0);
  ASSERT_EQ(run.items.size(), 1u);
  EXPECT_EQ(run.items[0]["files"].size(), 10u);
  EXPECT_EQ(server.hits("/private/secret.pdf"), 0u);
  EXPECT_EQ(server.hits("/files/3.pdf"), 1u);
  EXPECT_NE(log.find("/private/secret.pdf> referred in <None>: IgnoreRequest: Forbidden by robots.txt"),
            std::string::npos)
      << log;
}

// An item's file URLs come from a crawled page: one naming a local file or a scheme the crawl does
// not fetch gets a warning, not the file.
TEST(files_pipeline, a_page_cannot_make_it_store_a_local_file) {
  temp_dir secret_dir;
  auto secret = secret_dir.path() / "secret.pdf";
  std::ofstream(secret) << "the machine's own";
  http_server server(catalog("<a class=file href=\"file://" + secret.string() +
                             "\">s</a><a class=file href=\"gopher://127.0.0.1:6379/_x\">g</a>"));
  temp_dir store;
  testing::internal::CaptureStderr();
  auto run = fixtures::run_crawl_document(
      catalog_crawl(server, {{"FILES_STORE", store.path().string()}}, 1));
  auto log = testing::internal::GetCapturedStderr();
  ASSERT_EQ(run.status, 0) << log;
  ASSERT_EQ(run.items.size(), 1u);
  EXPECT_EQ(run.items[0]["files"].size(), 10u);
  EXPECT_FALSE(fs::exists(store.path() / crawler::files_pipeline::file_path("file://" + secret.string())));
  EXPECT_NE(log.find("File (refused-scheme): Not downloading <GET file://" + secret.string()),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("File (refused-scheme): Not downloading <GET gopher://"), std::string::npos)
      << log;
}

TEST(files_pipeline, an_item_whose_file_urls_is_not_a_list_of_urls_is_an_item_error) {
  http_server server(catalog());
  temp_dir store;
  auto document = catalog_crawl(server, {{"FILES_STORE", store.path().string()}}, 1);
  // A field of one value, not a list: Scrapy would try each of its characters as a URL.
  document["spider"]["callbacks"]["parse_start_url"]["fields"]["file_urls"] = "a.file::attr(href)";
  testing::internal::CaptureStderr();
  auto run = fixtures::run_crawl_document(document);
  auto log = testing::internal::GetCapturedStderr();
  ASSERT_EQ(run.status, 0) << log;
  EXPECT_TRUE(run.items.empty());
  EXPECT_NE(log.find("the item's \"file_urls\" must be a list of URLs, got \"http://127.0.0.1:"),
            std::string::npos)
      << log;
  EXPECT_EQ(server.hits("/files/0.pdf"), 0u);
}

// FILES_STORE as a file:// URI holds its path after the "file://", as Scrapy's FSFilesStore
// reads it: an absolute one, or one relative to the crawl's folder.
TEST(files_pipeline, a_file_uri_store_is_the_folder_its_path_names_absolute_or_relative) {
  http_server server(catalog());
  temp_dir absolute;
  auto relative = "files-store-" + std::to_string(::getpid());
  for (const auto& [uri, folder] : std::vector<std::pair<std::string, fs::path>>{
           {"file://" + absolute.path().string(), absolute.path()},
           {"file://" + relative, fs::current_path() / relative}}) {
    auto run = fixtures::run_crawl_document(catalog_crawl(server, {{"FILES_STORE", uri}}, 1));
    ASSERT_EQ(run.status, 0) << uri;
    EXPECT_EQ(read_file(folder / crawler::files_pipeline::file_path(server.url("/files/3.pdf"))),
              "file 3")
        << uri;
  }
  fs::remove_all(fs::current_path() / relative);
  fs::remove_all(fs::path("/") / relative);  // where a store read one byte short would go
}

TEST(files_pipeline, files_store_unset_or_not_a_local_folder_stops_the_crawl_naming_it) {
  http_server server(catalog());
  testing::internal::CaptureStderr();
  auto run = fixtures::run_crawl_document(catalog_crawl(server, json::object(), 1));
  auto log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(log.find("FILES_STORE: not set"), std::string::npos) << log;

  testing::internal::CaptureStderr();
  run = fixtures::run_crawl_document(catalog_crawl(server, {{"FILES_STORE", "s3://bucket/files"}}, 1));
  log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(log.find("FILES_STORE: \"s3://bucket/files\": only a local folder"), std::string::npos)
      << log;
  EXPECT_EQ(server.hits("/catalog/0"), 0u);
}

TEST(files_pipeline, the_images_pipeline_takes_its_own_settings) {
  http_server server(catalog());
  temp_dir store;
  auto document = catalog_crawl(server, {{"IMAGES_STORE", store.path().string()}}, 1);
  document["settings"]["ITEM_PIPELINES"] = {{"scrapy.pipelines.images.ImagesPipeline", 1}};
  auto& fields = document["spider"]["callbacks"]["parse_start_url"]["fields"];
  fields["image_urls"] = fields["file_urls"];
  fields.erase("file_urls");
  auto run = fixtures::run_crawl_document(document);
  ASSERT_EQ(run.status, 0);
  ASSERT_EQ(run.items.size(), 1u);
  EXPECT_EQ(run.items[0]["images"].size(), 10u);
  EXPECT_FALSE(run.items[0].contains("files"));
  EXPECT_EQ(run.stats.value("file_status_count/downloaded", 0), 10);
  // Stored as downloaded, under the URL's own extension: no conversion to JPEG.
  const auto& first = run.items[0]["images"][0];
  EXPECT_EQ(first["path"], crawler::files_pipeline::file_path(first["url"].get<std::string>()));
  EXPECT_TRUE(first["path"].get<std::string>().ends_with(".pdf"));
  EXPECT_EQ(read_file(store.path() / first["path"].get<std::string>()), "file 0");
}

// Files still downloading when a second Ctrl-C stops the crawl at once: with JOBDIR the page that
// named them goes back to the queue, its item unexported, and the resume crawls it whole. Without
// that, the item would have been exported without its files, or the page lost.
TEST(files_pipeline, a_page_whose_files_a_forced_stop_cut_off_is_crawled_again_on_resume) {
  auto options = catalog(
      "<a class=file href=\"http://127.0.0.1:{port}/slow?ms=1500&amp;n=1\">a</a>"
      "<a class=file href=\"http://127.0.0.1:{port}/slow?ms=1500&amp;n=2\">b</a>");
  options.pages["/index"] = "<html><body><a href=\"/catalog/0\">catalog</a></body></html>";
  http_server server(options);
  temp_dir dir;
  // The page is reached by a link, not a start URL: a resume sends the start requests again, as
  // Scrapy's does (they are dont_filter), which would crawl it twice anyway.
  auto document = catalog_crawl(server, {{"FILES_STORE", (dir.path() / "files").string()},
                                         {"JOBDIR", (dir.path() / "job").string()}},
                                1);
  document["spider"]["start_urls"] = {server.url("/index")};
  document["spider"]["rules"] = {{{"allow", {"/catalog/"}}, {"callback", "catalog"}}};
  document["spider"]["callbacks"]["catalog"] = document["spider"]["callbacks"]["parse_start_url"];
  document["spider"]["callbacks"].erase("parse_start_url");
  std::ofstream(dir.path() / "crawl.json") << document.dump();
  auto argv = [&](int run) {
    return std::vector<std::string>{crawler::fixtures::crawler_binary(), "run",
                                    (dir.path() / "crawl.json").string(), "-o",
                                    (dir.path() / "items.jsonl").string(), "-s",
                                    "STATS_FILE=" + (dir.path() / ("stats" + std::to_string(run) +
                                                                   ".json")).string()};
  };
  {
    child_process first(argv(1));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    auto slow_hits = [&] {
      return server.hits("/slow?ms=1500&n=1") + server.hits("/slow?ms=1500&n=2");
    };
    while (slow_hits() < 2 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(slow_hits(), 2u) << first.stderr_text();
    first.signal(SIGINT);
    while (first.stderr_text().find("shutting down gracefully") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    first.signal(SIGINT);
    ASSERT_EQ(first.wait(), 0) << first.stderr_text();
    EXPECT_NE(first.stderr_text().find("forcing unclean shutdown"), std::string::npos)
        << first.stderr_text();
    EXPECT_NE(first.stderr_text().find("its items were still in the item pipelines"),
              std::string::npos)
        << first.stderr_text();
    EXPECT_EQ(read_file(dir.path() / "items.jsonl"), "") << "no item without its files";
  }
  child_process second(argv(2));
  ASSERT_EQ(second.wait(), 0) << second.stderr_text();
  std::ifstream lines(dir.path() / "items.jsonl");
  std::vector<json> items;
  for (std::string line; std::getline(lines, line);) items.push_back(json::parse(line));
  ASSERT_EQ(items.size(), 1u) << second.stderr_text();
  EXPECT_EQ(items[0]["files"].size(), 12u) << items[0].dump();
  EXPECT_EQ(server.hits("/catalog/0"), 2u);
}

}  // namespace
