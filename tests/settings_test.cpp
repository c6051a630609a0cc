#include "config/settings.h"

#include <gtest/gtest.h>

#include <algorithm>

using crawler::settings;
using crawler::settings_error;

namespace {

std::string error_of(auto&& action) {
  try {
    action();
  } catch (const settings_error& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

TEST(settings, starts_with_scrapy_defaults) {
  settings s;
  EXPECT_EQ(s.get_int("CONCURRENT_REQUESTS"), 16);
  EXPECT_EQ(s.get_int("CONCURRENT_REQUESTS_PER_DOMAIN"), 8);
  EXPECT_EQ(s.get_string("DUPEFILTER_CLASS"), "set");
  EXPECT_EQ(s.get_int("BLOOMFILTER_BIT"), 30);
  EXPECT_EQ(s.get_int("BLOOMFILTER_HASH_NUMBER"), 6);
  EXPECT_FALSE(s.has("JOBDIR"));
}

TEST(settings, command_line_overrides_win_over_the_file) {
  settings s;
  s.merge_json({{"DUPEFILTER_CLASS", "bloom"}, {"BLOOMFILTER_ERRORRATE", 0.01}});
  s.set_from_string("DUPEFILTER_CLASS=redis_set");
  EXPECT_EQ(s.get_string("DUPEFILTER_CLASS"), "redis_set");
  EXPECT_DOUBLE_EQ(s.get_double("BLOOMFILTER_ERRORRATE"), 0.01);
}

TEST(settings, command_line_values_are_read_by_the_declared_type) {
  settings s;
  s.set_from_string("DUPEFILTER_DEBUG=True");
  s.set_from_string("BLOOMFILTER_BIT=20");
  s.set_from_string("RETRY_HTTP_CODES=500,503");
  s.set_from_string("JOBDIR=/tmp/job");
  EXPECT_TRUE(s.get_bool("DUPEFILTER_DEBUG"));
  EXPECT_EQ(s.get_int("BLOOMFILTER_BIT"), 20);
  EXPECT_EQ(s.get("RETRY_HTTP_CODES"), nlohmann::json::array({500, 503}));
  EXPECT_EQ(s.get_string("JOBDIR"), "/tmp/job");
}

// PERIODIC_LOG_STATS and _DELTA take True as Scrapy users write it, or an object of options.
TEST(settings, a_flag_or_object_setting_takes_either_and_names_anything_else) {
  settings s;
  s.set_from_string("PERIODIC_LOG_STATS=True");
  s.set_from_string(R"(PERIODIC_LOG_DELTA={"include": ["scheduler/"]})");
  EXPECT_EQ(s.get("PERIODIC_LOG_STATS"), true);
  EXPECT_EQ(s.get("PERIODIC_LOG_DELTA")["include"], nlohmann::json::array({"scheduler/"}));
  s.merge_json({{"PERIODIC_LOG_STATS", false}}, "settings");
  EXPECT_EQ(s.get("PERIODIC_LOG_STATS"), false);
  EXPECT_EQ(error_of([&] { s.set_from_string("PERIODIC_LOG_STATS=yes"); }),
            "-s PERIODIC_LOG_STATS: expected a boolean or an object, got 'yes'");
  EXPECT_EQ(error_of([&] { s.merge_json({{"PERIODIC_LOG_DELTA", "all"}}, "settings"); }),
            "settings.PERIODIC_LOG_DELTA: expected a boolean or an object, got string \"all\"");
}

TEST(settings, unknown_key_is_refused_with_a_suggestion_and_its_path) {
  settings s;
  EXPECT_EQ(error_of([&] {
              s.merge_json({{"DUPEFILTER_CLAS", "bloom"}}, "settings");
            }),
            "settings: unknown setting 'DUPEFILTER_CLAS' (did you mean 'DUPEFILTER_CLASS'?)");
  EXPECT_EQ(error_of([&] { s.set_from_string("bloomfilter_bit=3"); }),
            "-s: unknown setting 'bloomfilter_bit' (did you mean 'BLOOMFILTER_BIT'?)");
}

TEST(settings, wrong_type_names_the_key_path_and_expected_type) {
  settings s;
  EXPECT_EQ(error_of([&] {
              s.merge_json({{"BLOOMFILTER_BIT", "thirty"}}, "settings");
            }),
            "settings.BLOOMFILTER_BIT: expected an integer, got string \"thirty\"");
  EXPECT_EQ(error_of([&] { s.set_from_string("BLOOMFILTER_BIT=3x"); }),
            "-s BLOOMFILTER_BIT: expected an integer, got '3x'");
  EXPECT_EQ(error_of([&] { s.set_from_string("DUPEFILTER_DEBUG=maybe"); }),
            "-s DUPEFILTER_DEBUG: expected a boolean, got 'maybe'");
  EXPECT_EQ(error_of([&] { s.set_from_string("NOEQUALS"); }),
            "-s NOEQUALS: expected KEY=VALUE, e.g. -s DUPEFILTER_CLASS=bloom");
}

TEST(settings, non_finite_numbers_are_refused_naming_the_setting_and_the_range) {
  for (const char* given : {"nan", "inf", "-inf"}) {
    settings s;
    auto error = error_of([&] { s.set_from_string(std::string("DOWNLOAD_DELAY=") + given); });
    EXPECT_EQ(
        error,
        std::string("-s DOWNLOAD_DELAY: expected a finite number >= 0 and <= 86400, got ") + given);
  }
}

TEST(settings, out_of_range_values_are_refused_from_the_file_and_the_command_line) {
  settings s;
  EXPECT_EQ(error_of([&] { s.set_from_string("DOWNLOAD_DELAY=1e9"); }),
            "-s DOWNLOAD_DELAY: expected a finite number >= 0 and <= 86400, got 1000000000.0");
  for (const char* timeout : {"0", "-1"}) {
    EXPECT_NE(error_of([&] {
                s.set_from_string(std::string("DOWNLOAD_TIMEOUT=") + timeout);
              }).find("-s DOWNLOAD_TIMEOUT: expected a finite number > 0 and <= 86400"),
              std::string::npos);
  }
  EXPECT_EQ(error_of([&] {
              s.merge_json({{"CONCURRENT_REQUESTS", 0}});
            }),
            "settings.CONCURRENT_REQUESTS: expected an integer >= 1 and <= 1000000, got 0");
  EXPECT_EQ(error_of([&] {
              s.merge_json({{"BLOOMFILTER_ERRORRATE", 1}});
            }),
            "settings.BLOOMFILTER_ERRORRATE: expected a finite number > 0 and < 1, got 1");
  EXPECT_EQ(error_of([&] { s.set_from_string("RETRY_TIMES=-1"); }),
            "-s RETRY_TIMES: expected an integer >= 0 and <= 1000, got -1");
  // A fleet's queue in no shards, or past the 1,024 a marker records, is no fleet's.
  for (const char* shards : {"0", "1025"}) {
    EXPECT_EQ(error_of([&] { s.set_from_string(std::string("SCHEDULER_SHARDS=") + shards); }),
              std::string("-s SCHEDULER_SHARDS: expected an integer >= 1 and <= 1024, got ") +
                  shards);
  }
  s.set_from_string("SCHEDULER_SHARDS=1");
  s.set_from_string("SCHEDULER_SHARDS=1024");
  // Values inside the range, the bounds included, are taken.
  s.set_from_string("DOWNLOAD_DELAY=86400");
  s.set_from_string("DOWNLOAD_TIMEOUT=0.5");
  s.set_from_string("RETRY_TIMES=0");
  EXPECT_DOUBLE_EQ(s.get_double("DOWNLOAD_TIMEOUT"), 0.5);
}

TEST(settings, every_numeric_default_is_inside_its_own_range) {
  settings s;
  for (const auto& spec : crawler::known_settings()) {
    EXPECT_NO_THROW(s.set(spec.name, spec.default_value, "defaults")) << spec.name;
  }
}

// A Scrapy project's settings.py carries over: what means nothing here is taken and named once.
TEST(settings, scrapy_settings_without_effect_here_are_warnings_not_errors) {
  settings s;
  s.merge_json({{"TELNETCONSOLE_ENABLED", false},
                {"ITEM_PIPELINES_BASE", {{"myproject.pipelines.Clean", 300}}},
                {"SPIDER_MODULES", {"myproject.spiders"}},
                {"CONCURRENT_ITEMS", 100}},
               "settings");
  s.set_from_string("TELNETCONSOLE_ENABLED=False");
  s.set_from_string("EXTENSIONS_BASE={\"scrapy.extensions.telnet.TelnetConsole\": null}");
  auto warnings = s.warnings();
  ASSERT_EQ(warnings.size(), 5u);  // TELNETCONSOLE_ENABLED once, though set twice
  EXPECT_EQ(warnings[0],
            "TELNETCONSOLE_ENABLED has no effect here: there is no telnet console; the progress "
            "line (PROGRESS), METRICS_PORT and `crawler status` show a running crawl");
  auto said = [&](std::string_view start) {
    return std::count_if(warnings.begin(), warnings.end(),
                         [&](const std::string& line) { return line.starts_with(start); });
  };
  EXPECT_EQ(said("ITEM_PIPELINES_BASE has no effect here: Python code does not run here"), 1);
  EXPECT_EQ(said("SPIDER_MODULES has no effect here: spiders are compiled in"), 1);
  EXPECT_EQ(said("CONCURRENT_ITEMS has no effect here: items go through the pipelines as the callback"), 1);
  EXPECT_EQ(said("EXTENSIONS_BASE has no effect here"), 1);
  EXPECT_TRUE(settings{}.warnings().empty());
  // Only the exact names pass: a typo of ours is still refused.
  EXPECT_EQ(error_of([&] { s.set_from_string("CONCURENT_REQUESTS=3"); }),
            "-s: unknown setting 'CONCURENT_REQUESTS' (did you mean 'CONCURRENT_REQUESTS'?)");
}

// Scrapy's name for what this crawler always does: Scrapy's default is taken without a word, in
// a file or with -s as Python spells it; another value asks for what does not happen here, and
// is refused naming the setting and the one value honoured.
TEST(settings, a_scrapy_setting_whose_default_is_what_happens_here_takes_that_value_only) {
  settings s;
  s.merge_json({{"DOWNLOADER_STATS", true},
                {"HTTPCACHE_POLICY", "scrapy.extensions.httpcache.DummyPolicy"},
                {"HTTPCACHE_IGNORE_RESPONSE_CACHE_CONTROLS", nlohmann::json::array()},
                {"FEED_URI_PARAMS", nullptr}},
               "settings");
  s.set_from_string("DOWNLOADER_STATS=True");
  s.set_from_string("LOG_STDOUT=False");
  s.set_from_string("LOG_ENCODING=utf-8");
  EXPECT_TRUE(s.warnings().empty());
  EXPECT_EQ(error_of([&] { s.set_from_string("DOWNLOADER_STATS=False"); }),
            "-s DOWNLOADER_STATS: false cannot be honoured here, only true: the downloader/ stats "
            "are always kept");
  EXPECT_EQ(error_of([&] { s.merge_json({{"HTTPCACHE_GZIP", true}}, "settings"); }),
            "settings.HTTPCACHE_GZIP: true cannot be honoured here, only false: cached responses "
            "are stored as received, not compressed");
  EXPECT_EQ(error_of([&] {
              s.merge_json({{"HTTPCACHE_POLICY", "scrapy.extensions.httpcache.RFC2616Policy"}},
                           "settings");
            }),
            "settings.HTTPCACHE_POLICY: \"scrapy.extensions.httpcache.RFC2616Policy\" cannot be "
            "honoured here, only \"scrapy.extensions.httpcache.DummyPolicy\": the cache stores "
            "every response and serves it while fresh (HTTPCACHE_EXPIRATION_SECS), as Scrapy's "
            "DummyPolicy");
  EXPECT_NE(error_of([&] { s.set_from_string("LOG_ENCODING=latin-1"); })
                .find("\"latin-1\" cannot be honoured here, only \"utf-8\""),
            std::string::npos);
  // Scrapy's None for a list whose default is empty is that default.
  s.merge_json({{"FEED_EXPORT_FIELDS", nullptr}}, "settings");
  EXPECT_EQ(s.get("FEED_EXPORT_FIELDS"), nlohmann::json::array());
}

TEST(settings, a_users_own_setting_is_declared_by_its_default_and_then_typed) {
  settings s;
  s.declare("MYPROJECT_API", "https://api.example", "user_settings");
  s.declare("MYPROJECT_PAGES", 10, "user_settings");
  s.declare("MYPROJECT_DEBUG", false, "user_settings");
  EXPECT_EQ(s.get_string("MYPROJECT_API"), "https://api.example");
  s.set_from_string("MYPROJECT_PAGES=25");
  s.merge_json({{"MYPROJECT_DEBUG", true}}, "settings");
  EXPECT_EQ(s.get_int("MYPROJECT_PAGES"), 25);
  EXPECT_TRUE(s.get_bool("MYPROJECT_DEBUG"));
  EXPECT_EQ(error_of([&] { s.set_from_string("MYPROJECT_PAGES=many"); }),
            "-s MYPROJECT_PAGES: expected an integer, got 'many'");
  EXPECT_EQ(error_of([&] { s.merge_json({{"MYPROJECT_API", 3}}, "settings"); }),
            "settings.MYPROJECT_API: expected a string, got number 3");
  // A null default declares a string that may be unset (null) again, as Scrapy's None.
  s.declare("MYPROJECT_PROXY", nullptr, "user_settings");
  EXPECT_FALSE(s.has("MYPROJECT_PROXY"));
  s.set_from_string("MYPROJECT_PROXY=http://proxy:3128");
  EXPECT_EQ(s.get_string("MYPROJECT_PROXY"), "http://proxy:3128");
  s.merge_json({{"MYPROJECT_PROXY", nullptr}}, "settings");
  EXPECT_FALSE(s.has("MYPROJECT_PROXY"));
  EXPECT_EQ(error_of([&] { s.merge_json({{"MYPROJECT_PROXY", 3128}}, "settings"); }),
            "settings.MYPROJECT_PROXY: expected a string or null, got number 3128");
  // A copy keeps what was declared.
  settings copy = s;
  copy.set_from_string("MYPROJECT_API=http://other");
  EXPECT_EQ(copy.get_string("MYPROJECT_API"), "http://other");
  EXPECT_EQ(error_of([&] { s.declare("DOWNLOAD_DELAY", 1, "user_settings"); }),
            "user_settings.DOWNLOAD_DELAY: is already a setting; a setting of your own needs a "
            "name of its own (a prefix such as MYPROJECT_ keeps it apart)");
  EXPECT_EQ(error_of([&] { settings{}.set_from_string("MYPROJECT_PAGES=2"); }),
            "-s: unknown setting 'MYPROJECT_PAGES' (a setting of the spider's own is declared in "
            "its user_settings)");
}

TEST(settings, dns_timeout_keeps_scrapys_default) {
  EXPECT_DOUBLE_EQ(settings{}.get_double("DNS_TIMEOUT"), 60);
}
