// What the FEED_EXPORT_* settings and a feed's own options put in the file. Expected texts are
// Scrapy 2.8's exporters' (JsonLinesItemExporter, JsonItemExporter, CsvItemExporter,
// XmlItemExporter) on the same items.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <regex>
#include <sstream>

#include "crawler/feed_storage.h"
#include "crawler/feeds.h"
#include "crawler/spider.h"
#include "redis_server.h"

namespace {

using json = nlohmann::json;

const json first_item = {{"url", "http://x/"}, {"title", "Caf\u00e9 \u2615"}, {"n", 3}};
const json second_item = {{"url", "u2"}};

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Writes both items to one feed at `uri` with `options` and the FEED_EXPORT_* `overrides`.
void export_items(const std::string& uri, json options, std::vector<std::string> overrides = {},
                  const crawler::feed_exporter::uri_parameters& parameters = {}) {
  if (options.is_null()) options = json::object();  // `{}` at a call: no options
  overrides.push_back("FEEDS=" + json{{uri, options}}.dump());
  crawler::settings settings;
  for (const auto& override : overrides) settings.set_from_string(override);
  crawler::stats stats;
  crawler::feed_exporter feeds(settings, stats, parameters);
  ASSERT_TRUE(feeds.export_item(first_item));
  ASSERT_TRUE(feeds.export_item(second_item));
  ASSERT_TRUE(feeds.close());
}

// Python's json puts ", " and ": " inside nested containers too, and empty ones stay "[]" and
// "{}", a ", " or ": " inside a string untouched. Not as Python: a NaN or an infinity is null
// (README), where Python writes NaN or Infinity, which no JSON reader takes.
// `items` through one feed at `path` with `options` and the FEED_EXPORT_* `overrides`; what the
// file then holds.
std::string exported(const std::string& path, const std::vector<crawler::item>& items,
                     json options = json::object(), std::vector<std::string> overrides = {}) {
  overrides.push_back("FEEDS=" + json{{path, options}}.dump());
  crawler::settings settings;
  for (const auto& override : overrides) settings.set_from_string(override);
  crawler::stats stats;
  crawler::feed_exporter feeds(settings, stats, {});
  for (const auto& item : items) EXPECT_TRUE(feeds.export_item(item));
  EXPECT_TRUE(feeds.close());
  return read_file(path);
}

TEST(feed_export, json_lines_write_nested_values_as_pythons_json_does_and_non_finite_numbers_null) {
  crawler::fixtures::temp_dir dir;
  crawler::item item = crawler::item::object();
  item["nan"] = std::numeric_limits<double>::quiet_NaN();
  item["up"] = std::numeric_limits<double>::infinity();
  item["down"] = -std::numeric_limits<double>::infinity();
  item["nested"] = crawler::item::object();
  item["nested"]["a"] = crawler::item::array({1, 2.5, crawler::item::array(), "x, y: z"});
  item["nested"]["b"] = crawler::item::object();
  EXPECT_EQ(exported((dir.path() / "items.jsonl").string(), {item}),
            R"({"nan": null, "up": null, "down": null, )"
            R"("nested": {"a": [1, 2.5, [], "x, y: z"], "b": {}}})"
            "\n");
}

TEST(feed_export, fields_choose_and_order_what_json_lines_write_and_escape_non_ascii_by_default) {
  crawler::fixtures::temp_dir dir;
  auto path = (dir.path() / "items.jsonl").string();
  export_items(path, {{"format", "jsonlines"}},
               {R"(FEED_EXPORT_FIELDS=["title","url","missing"])"});
  EXPECT_EQ(read_file(path),
            "{\"title\": \"Caf\\u00e9 \\u2615\", \"url\": \"http://x/\"}\n{\"url\": \"u2\"}\n");
}

TEST(feed_export, utf8_encoding_writes_text_as_it_is) {
  crawler::fixtures::temp_dir dir;
  auto path = (dir.path() / "items.jsonl").string();
  export_items(path, {{"format", "jsonlines"}}, {"FEED_EXPORT_ENCODING=utf-8"});
  EXPECT_EQ(read_file(path),
            "{\"n\": 3, \"title\": \"Caf\u00e9 \u2615\", \"url\": \"http://x/\"}\n"
            "{\"url\": \"u2\"}\n");
}

TEST(feed_export, indent_spreads_each_json_item_over_lines) {
  crawler::fixtures::temp_dir dir;
  auto path = (dir.path() / "items.json").string();
  export_items(path, {{"format", "json"}, {"fields", {"title", "n"}}}, {"FEED_EXPORT_INDENT=2"});
  EXPECT_EQ(read_file(path), "[\n{\n  \"title\": \"Caf\\u00e9 \\u2615\",\n  \"n\": 3\n},\n{}\n]");
}

TEST(feed_export, a_feeds_own_options_win_over_the_settings) {
  crawler::fixtures::temp_dir dir;
  auto path = (dir.path() / "items.jsonl").string();
  export_items(path, {{"encoding", "UTF-8"}, {"fields", {"url"}}},
               {R"(FEED_EXPORT_FIELDS=["title"])", "FEED_EXPORT_INDENT=4"});
  EXPECT_EQ(read_file(path), "{\"url\": \"http://x/\"}\n{\"url\": \"u2\"}\n");
}

TEST(feed_export, fields_are_the_csv_columns_with_missing_values_empty) {
  crawler::fixtures::temp_dir dir;
  auto path = (dir.path() / "items.csv").string();
  export_items(path, {}, {R"(FEED_EXPORT_FIELDS=["title","url","missing"])"});
  EXPECT_EQ(read_file(path), "title,url,missing\r\nCaf\u00e9 \u2615,http://x/,\r\n,u2,\r\n");
}

// Each cell as Scrapy's CsvItemExporter writes it (the expected text is its output for the same
// item): a list of strings joined by ",", empty strings kept; another list or a dict as Python's
// repr(); False as Python spells it, None an empty cell.
TEST(feed_export, csv_cells_hold_lists_dicts_and_scalars_as_scrapys_csv_exporter_writes_them) {
  crawler::fixtures::temp_dir dir;
  crawler::item item = crawler::item::object();
  item["empties"] = crawler::item::array({"", "a", ""});
  item["mixed"] = crawler::item::array({1, "a", nullptr, true, 2.5});
  item["object"] = crawler::item::object();
  item["object"]["k"] = "it's";
  item["object"]["n"] = crawler::item::array({1});
  item["flag"] = false;
  item["none"] = nullptr;
  item["real"] = 1e16;
  item["quote"] = "say \"x\"";
  item["tab"] = crawler::item::array({"a\tb", "c\\d"});
  EXPECT_EQ(exported((dir.path() / "items.csv").string(), {item}),
            "empties,mixed,object,flag,none,real,quote,tab\r\n"
            R"(",a,","[1, 'a', None, True, 2.5]","{'k': ""it's"", 'n': [1]}",False,,1e+16,)"
            "\"say \"\"x\"\"\",\"a\tb,c\\d\"\r\n");
}

// As Scrapy 2.8's exporters: a feed that got no item leaves its file empty (FEED_STORE_EMPTY
// false, the default); with store_empty, a JSON feed is an empty array and an XML feed an empty
// root, byte for byte as Scrapy writes them; a feed's own option wins over the setting either
// way; one item is the same with either.
TEST(feed_export, a_feed_of_no_item_is_empty_unless_store_empty_says_to_write_it) {
  crawler::fixtures::temp_dir dir;
  auto written = [&](const std::string& name, json options, std::vector<std::string> overrides,
                     bool with_an_item) {
    return exported(
        (dir.path() / name).string(),
        with_an_item ? std::vector<crawler::item>{second_item} : std::vector<crawler::item>{},
        std::move(options), std::move(overrides));
  };
  EXPECT_EQ(written("a.json", json::object(), {}, false), "");
  EXPECT_EQ(written("b.xml", json::object(), {}, false), "");
  EXPECT_EQ(written("c.csv", json::object(), {"FEED_EXPORT_FIELDS=[\"url\"]"}, false), "");
  EXPECT_EQ(written("d.json", json::object(), {"FEED_STORE_EMPTY=true"}, false), "[\n\n]");
  EXPECT_EQ(written("e.xml", {{"store_empty", true}}, {}, false),
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<items>\n</items>");
  EXPECT_EQ(written("f.json", {{"store_empty", false}}, {"FEED_STORE_EMPTY=true"}, false), "");
  EXPECT_EQ(written("g.json", json::object(), {}, true), "[\n{\"url\": \"u2\"}\n]");
  EXPECT_EQ(written("h.json", {{"store_empty", true}}, {}, true), "[\n{\"url\": \"u2\"}\n]");
}

// Each of Scrapy's feed options is honoured or stops the crawl naming it: those that name Python
// code say why, a misspelt one gets the nearest name.
TEST(feed_export, a_feed_option_that_cannot_be_honoured_is_refused_by_name) {
  auto refusal = [](json options) {
    crawler::settings settings;
    settings.set_from_string("FEEDS=" + json{{"items.jsonl", options}}.dump());
    crawler::stats stats;
    try {
      crawler::feed_exporter feeds(settings, stats, {});
    } catch (const crawler::settings_error& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal({{"fromat", "csv"}}),
            "FEEDS.items.jsonl.fromat: unknown feed option (did you mean \"format\"?); the "
            "options are format, overwrite, fields, encoding, indent, batch_item_count and "
            "store_empty");
  for (const char* option :
       {"item_classes", "item_filter", "item_export_kwargs", "uri_params", "postprocessing"}) {
    auto said = refusal({{option, nullptr}});
    EXPECT_TRUE(said.starts_with(std::string("FEEDS.items.jsonl.") + option +
                                 ": Scrapy's feed option " + option + " cannot be honoured"))
        << said;
  }
  EXPECT_NE(refusal({{"postprocessing", {"scrapy.extensions.postprocessing.GzipPlugin"}}})
                .find("gzip items.jsonl"),
            std::string::npos);
  EXPECT_EQ(refusal({{"store_empty", "yes"}}),
            "FEEDS.items.jsonl.store_empty: must be true or false");
}

TEST(feed_export, the_uri_names_the_spider_the_time_and_spider_arguments) {
  crawler::fixtures::temp_dir dir;
  crawler::spider spider("books");
  spider.set_argument("category", "poetry");
  auto parameters = crawler::feed_exporter::parameters_for(spider);
  export_items((dir.path() / "%(name)s-%(category)s-%(time)s-100%%.jsonl").string(), {}, {},
               parameters);
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    names.push_back(entry.path().filename().string());
  }
  ASSERT_EQ(names.size(), 1u);
  EXPECT_TRUE(std::regex_match(
      names[0], std::regex(R"(books-poetry-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-100%\.jsonl)")))
      << names[0];
}

// Each bad option stops the crawl before anything is written, naming where it was set.
// Byte for byte what Scrapy 2.8's XmlItemExporter writes for the same items: the fields chosen
// (a missing one left out), Python's True and None, lists as <value> runs, objects nested, text
// escaped as character data, and no newline after </items>.
TEST(feed_export, xml_is_what_scrapys_xml_item_exporter_writes) {
  crawler::fixtures::temp_dir dir;
  auto path = (dir.path() / "items.xml").string();
  export_items(path, {}, {R"(FEED_EXPORT_FIELDS=["title","url","missing"])"});
  EXPECT_EQ(read_file(path),
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<items>\n"
            "<item><title>Caf\u00e9 \u2615</title><url>http://x/</url></item>\n"
            "<item><url>u2</url></item>\n</items>");

  auto odd = (dir.path() / "odd.xml").string();
  crawler::settings settings;
  settings.set_from_string("FEEDS=" + json{{odd, json::object()}}.dump());
  crawler::stats stats;
  crawler::feed_exporter feeds(settings, stats, {});
  ASSERT_TRUE(feeds.export_item({{"flag", true},
                                 {"none", nullptr},
                                 {"n", 3},
                                 {"f", 0.5},
                                 {"esc", "a<b>&\"c'"},
                                 {"nested", {{"k", json::array({1, json::array({2, 3})})}}}}));
  ASSERT_TRUE(feeds.close());
  EXPECT_EQ(read_file(odd),
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<items>\n"
            "<item><flag>True</flag><none>None</none><n>3</n><f>0.5</f>"
            "<esc>a&lt;b&gt;&amp;\"c'</esc><nested><k><value>1</value><value><value>2</value>"
            "<value>3</value></value></k></nested></item>\n</items>");
}

TEST(feed_export, bad_feed_options_name_their_setting) {
  crawler::fixtures::temp_dir dir;
  auto path = (dir.path() / "items.jsonl").string();
  auto error_of = [&](const std::string& uri, json options, std::vector<std::string> overrides) {
    try {
      export_items(uri, std::move(options), std::move(overrides));
    } catch (const crawler::settings_error& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of(path, {{"encoding", "latin-1"}}, {}),
            "FEEDS." + path +
                ".encoding: unsupported encoding \"latin-1\"; feeds are written as utf-8 (or, "
                "unset, JSON with \\u escapes)");
  EXPECT_EQ(error_of(path, {}, {"FEED_EXPORT_ENCODING=cp1252"}).substr(0, 44),
            "FEED_EXPORT_ENCODING: unsupported encoding \"");
  EXPECT_EQ(error_of(path, {}, {R"(FEED_EXPORT_FIELDS=["a",1])"}),
            "FEED_EXPORT_FIELDS[1]: must be a field name (a string)");
  EXPECT_EQ(error_of(path, {{"indent", -1}}, {}),
            "FEEDS." + path + ".indent: must be a whole number of spaces, 0 or more");
  EXPECT_EQ(error_of("out/%(nope)s.jsonl", {}, {}),
            "FEEDS.out/%(nope)s.jsonl: no parameter \"nope\"; a feed URI may name %(name)s, "
            "%(time)s, %(batch_id)d, %(batch_time)s and spider arguments");
  EXPECT_EQ(error_of(path, {{"batch_item_count", -2}}, {}),
            "FEEDS." + path + ".batch_item_count: must be a whole number of items, 0 or more");
  EXPECT_EQ(error_of("out/%(name.jsonl", {}, {}),
            "FEEDS.out/%(name.jsonl: \"%(\" at offset 4 must be followed by a name and \")s\"");
  EXPECT_FALSE(std::filesystem::exists("out"));
}

}  // namespace

namespace {

// Exports `count` items {"n": i} to one feed at `uri` with `options` and `overrides`; returns how
// many files it stored (feedexport/success_count/FileFeedStorage).
nlohmann::json export_numbered(const std::string& uri, const json& options, int count,
                               std::vector<std::string> overrides = {}) {
  overrides.push_back("FEEDS=" + json{{uri, options}}.dump());
  crawler::settings settings;
  for (const auto& override : overrides) settings.set_from_string(override);
  crawler::stats stats;
  crawler::feed_exporter feeds(settings, stats, {});
  for (int i = 0; i < count; ++i) EXPECT_TRUE(feeds.export_item({{"n", i}}));
  EXPECT_TRUE(feeds.close());
  return stats.get_value("feedexport/success_count/FileFeedStorage").value_or(0);
}

}  // namespace

TEST(feed_export, batches_split_a_feed_into_files_named_by_batch_id) {
  crawler::fixtures::temp_dir dir;
  auto uri = (dir.path() / "part-%(batch_id)03d.json").string();
  auto stored = export_numbered(uri, {{"format", "json"}}, 30, {"FEED_EXPORT_BATCH_ITEM_COUNT=12"});
  // Each file is a whole JSON array; the last batch holds the rest, and no empty one follows.
  std::vector<std::size_t> sizes;
  int next = 0;
  for (const char* name : {"part-001.json", "part-002.json", "part-003.json"}) {
    auto items = json::parse(read_file(dir.path() / name));
    sizes.push_back(items.size());
    for (const auto& item : items) EXPECT_EQ(item["n"], next++);
  }
  EXPECT_EQ(sizes, (std::vector<std::size_t>{12, 12, 6}));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "part-004.json"));
  EXPECT_EQ(stored, 3);
}

TEST(feed_export, a_feeds_own_batch_size_and_batch_time_name_each_batch_apart) {
  crawler::fixtures::temp_dir dir;
  auto uri = (dir.path() / "%(batch_time)s.jsonl").string();
  export_numbered(uri, {{"format", "jsonlines"}, {"batch_item_count", 2}}, 5);
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    names.push_back(entry.path().filename().string());
  }
  ASSERT_EQ(names.size(), 3u);
  for (const auto& name : names) {
    EXPECT_TRUE(
        std::regex_match(name, std::regex(R"(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{6}\.jsonl)")))
        << name;
  }
}

TEST(feed_export, a_batched_feed_whose_uri_names_no_batch_is_refused) {
  crawler::fixtures::temp_dir dir;
  auto uri = (dir.path() / "items.jsonl").string();
  crawler::settings settings;
  settings.set_from_string("FEEDS=" + json{{uri, {{"batch_item_count", 10}}}}.dump());
  crawler::stats stats;
  try {
    crawler::feed_exporter feeds(settings, stats, {});
    FAIL() << "a batched feed into one file was accepted";
  } catch (const crawler::settings_error& error) {
    EXPECT_EQ(std::string(error.what()),
              "FEEDS." + uri +
                  ": a feed in batches of 10 items (batch_item_count, "
                  "FEED_EXPORT_BATCH_ITEM_COUNT) needs %(batch_time)s or %(batch_id)d in its "
                  "URI, a file per batch");
  }
  EXPECT_FALSE(std::filesystem::exists(uri));
}

namespace {

// A storage of one's own, as an S3 or FTP one would be: the bytes kept aside until the feed is
// stored, then "uploaded" (here, to a map; the "broken" scheme's upload fails).
std::map<std::string, std::string>& uploaded() {
  static std::map<std::string, std::string> files;
  return files;
}

class memory_storage : public crawler::feed_storage {
 public:
  explicit memory_storage(const crawler::feed_target& target) : uri_(target.uri) {}
  std::ostream& stream() override { return buffer_; }
  bool store() override {
    if (uri_.starts_with("broken://")) return false;
    uploaded()[uri_] = buffer_.str();
    return true;
  }
  std::string_view stats_name() const override { return "MemoryFeedStorage"; }

 private:
  std::string uri_;
  std::ostringstream buffer_;
};
CRAWLER_REGISTER_FEED_STORAGE(memory_storage, "memory");

class broken_storage : public memory_storage {
  using memory_storage::memory_storage;
};
CRAWLER_REGISTER_FEED_STORAGE(broken_storage, "broken");

}  // namespace

TEST(feed_export, a_storage_registered_for_a_scheme_gets_the_feed_when_it_is_stored) {
  crawler::settings settings;
  settings.set_from_string(R"(FEEDS={"memory://bucket/%(name)s.jsonl": {}})");
  crawler::stats stats;
  crawler::feed_exporter feeds(settings, stats, {{"name", "books"}});
  ASSERT_TRUE(feeds.export_item(first_item));
  ASSERT_TRUE(feeds.export_item(second_item));
  EXPECT_FALSE(uploaded().contains("memory://bucket/books.jsonl")) << "stored before the end";
  ASSERT_TRUE(feeds.close());
  EXPECT_EQ(uploaded()["memory://bucket/books.jsonl"],
            R"({"n": 3, "title": "Caf\u00e9 \u2615", "url": "http://x/"})"
            "\n"
            R"({"url": "u2"})"
            "\n");
  EXPECT_EQ(stats.get_value("feedexport/success_count/MemoryFeedStorage").value_or(0), 1);
}

TEST(feed_export, a_storage_that_cannot_store_fails_the_feed_and_counts_it) {
  crawler::settings settings;
  settings.set_from_string(R"(FEEDS={"broken://bucket/items.jsonl": {}})");
  crawler::stats stats;
  crawler::feed_exporter feeds(settings, stats, {});
  ASSERT_TRUE(feeds.export_item(first_item));
  EXPECT_FALSE(feeds.close());
  EXPECT_EQ(stats.get_value("feedexport/failed_count/MemoryFeedStorage").value_or(0), 1);
}

TEST(feed_export, a_uri_whose_scheme_has_no_storage_is_refused_naming_the_registered_ones) {
  crawler::settings settings;
  settings.set_from_string(R"(FEEDS={"s3://bucket/items.jsonl": {}})");
  crawler::stats stats;
  try {
    crawler::feed_exporter feeds(settings, stats, {});
    FAIL() << "an s3:// feed was taken with no storage for it";
  } catch (const crawler::settings_error& error) {
    EXPECT_EQ(std::string(error.what()),
              "FEEDS.s3://bucket/items.jsonl: no feed storage is registered for \"s3\" URIs "
              "(registered: broken, file, memory, stdout); one is registered in C++ with "
              "CRAWLER_REGISTER_FEED_STORAGE (crawler/feed_storage.h)");
  }
}
