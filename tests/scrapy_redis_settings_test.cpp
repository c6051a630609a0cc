// The settings a scrapy-redis user copies from its README into ours mean what they mean there;
// what this crawler cannot honour (a custom serializer, a Python pipeline) is an error naming it,
// never a silent substitute.
#include <gtest/gtest.h>

#include <string>

#include "config/settings.h"
#include "redis/endpoint.h"
#include "request/fingerprint.h"
#include "scheduler/fleet/redis_queue.h"
#include "scheduler/scheduler.h"

namespace {

crawler::settings with(std::initializer_list<const char*> overrides) {
  crawler::settings settings;
  for (const char* override : overrides) settings.set_from_string(override);
  return settings;
}

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const crawler::settings_error& error) {
    return error.what();
  }
  return "no error";
}

TEST(scrapy_redis_settings, its_scheduler_class_path_shares_the_python_workers_queue_form) {
  EXPECT_EQ(crawler::redis_queue_form_from(with({"SCHEDULER=redis"})),
            crawler::queue_entry_form::json);
  EXPECT_EQ(crawler::redis_queue_form_from(with({"SCHEDULER=scrapy_redis.scheduler.Scheduler"})),
            crawler::queue_entry_form::pickle);
  EXPECT_EQ(crawler::redis_queue_form_from(
                with({"SCHEDULER=scrapy_redis.scheduler.Scheduler", "SCHEDULER_SERIALIZER=json"})),
            crawler::queue_entry_form::json);
  EXPECT_EQ(crawler::redis_queue_form_from(
                with({"SCHEDULER=redis", "SCHEDULER_SERIALIZER=scrapy_redis.picklecompat"})),
            crawler::queue_entry_form::pickle);
  EXPECT_EQ(error_of([] {
              crawler::redis_queue_form_from(with({"SCHEDULER_SERIALIZER=myproject.msgpack"}));
            }),
            "SCHEDULER_SERIALIZER: \"myproject.msgpack\" is a Python module this crawler cannot "
            "run; it reads and writes \"json\" (its own form) and \"scrapy_redis.picklecompat\" "
            "(scrapy-redis's default, to share its queue)");
}

TEST(scrapy_redis_settings, its_queue_class_paths_are_the_same_layouts) {
  EXPECT_EQ(crawler::redis_queue_order_from(
                with({"SCHEDULER_QUEUE_CLASS=scrapy_redis.queue.PriorityQueue"})),
            "priority");
  EXPECT_EQ(
      crawler::redis_queue_order_from(with({"SCHEDULER_QUEUE_CLASS=scrapy_redis.queue.FifoQueue"})),
      "fifo");
  EXPECT_EQ(crawler::redis_queue_order_from(
                with({"SCHEDULER_QUEUE_CLASS=scrapy_redis.queue.SpiderStack"})),
            "lifo");
  EXPECT_NE(error_of([] {
              crawler::redis_queue_order_from(with({"SCHEDULER_QUEUE_CLASS=myproject.Queue"}));
            }).find("SCHEDULER_QUEUE_CLASS: unknown queue \"myproject.Queue\""),
            std::string::npos);
}

TEST(scrapy_redis_settings, its_dupefilter_class_path_brings_its_fingerprint_and_key_name) {
  EXPECT_EQ(crawler::dedup::fingerprint_scheme_from(with({})),
            crawler::dedup::fingerprint_scheme::scrapy_2_7);
  EXPECT_EQ(crawler::dedup::fingerprint_scheme_from(
                with({"DUPEFILTER_CLASS=scrapy_redis.dupefilter.RFPDupeFilter"})),
            crawler::dedup::fingerprint_scheme::scrapy_redis_0_8);
  EXPECT_EQ(crawler::dedup::fingerprint_scheme_from(
                with({"SCHEDULER_DUPEFILTER_CLASS=scrapy_redis_bf.dupefilter.RFPDupeFilter"})),
            crawler::dedup::fingerprint_scheme::scrapy_redis_0_8);
  // Set explicitly, the scheme is the user's.
  EXPECT_EQ(crawler::dedup::fingerprint_scheme_from(
                with({"DUPEFILTER_CLASS=scrapy_redis.dupefilter.RFPDupeFilter",
                      "REQUEST_FINGERPRINTER_IMPLEMENTATION=2.6"})),
            crawler::dedup::fingerprint_scheme::scrapy_2_6);
  auto settings = with({"SCHEDULER_DUPEFILTER_KEY=%(spider)s:seen"});
  EXPECT_EQ(settings.get_string("DUPEFILTER_KEY"), "%(spider)s:seen");
  crawler::settings from_file;
  from_file.merge_json({{"SCHEDULER_DUPEFILTER_CLASS", "redis_set"}});
  EXPECT_EQ(from_file.get_string("DUPEFILTER_CLASS"), "redis_set");
}

TEST(scrapy_redis_settings, its_redis_pipeline_stores_items) {
  EXPECT_FALSE(crawler::stores_items_in_redis(with({})));
  crawler::settings settings;
  settings.merge_json({{"ITEM_PIPELINES", {{"scrapy_redis.pipelines.RedisPipeline", 300}}}});
  EXPECT_TRUE(crawler::stores_items_in_redis(settings));
  settings.merge_json({{"ITEM_PIPELINES", {{"scrapy_redis.pipelines.RedisPipeline", nullptr}}}});
  EXPECT_FALSE(crawler::stores_items_in_redis(settings));  // None disables it, as in Scrapy
  settings.merge_json({{"ITEM_PIPELINES",
                        {{"myproject.pipelines.Clean", 100},
                         {"scrapy_redis.pipelines.RedisPipeline", 300}}}});
  EXPECT_TRUE(crawler::stores_items_in_redis(settings));
  EXPECT_NE(error_of([] {
              crawler::stores_items_in_redis(
                  with({"REDIS_PIPELINE=true", "REDIS_ITEMS_SERIALIZER=myproject.dumps"}));
            }).find("REDIS_ITEMS_SERIALIZER: \"myproject.dumps\" is a Python function"),
            std::string::npos);
  EXPECT_TRUE(crawler::stores_items_in_redis(
      with({"REDIS_PIPELINE=true", "REDIS_ITEMS_SERIALIZER=json.dumps"})));
}

TEST(scrapy_redis_settings, redis_encoding_other_than_utf8_is_refused_by_name) {
  EXPECT_NO_THROW(crawler::redis::endpoint_from(with({"REDIS_ENCODING=UTF-8"})));
  EXPECT_NE(error_of([] { crawler::redis::endpoint_from(with({"REDIS_ENCODING=latin-1"})); })
                .find("settings.REDIS_ENCODING: \"latin-1\": this crawler reads and writes Redis "
                      "strings as UTF-8"),
            std::string::npos);
}

TEST(scrapy_redis_settings, start_urls_as_a_set_and_a_sorted_set_at_once_is_refused) {
  EXPECT_EQ(crawler::start_urls_type_from(with({"REDIS_START_URLS_AS_ZSET=true"})), "zset");
  EXPECT_NE(error_of([] {
              crawler::start_urls_type_from(
                  with({"REDIS_START_URLS_AS_ZSET=true", "REDIS_START_URLS_AS_SET=true"}));
            }).find("not both"),
            std::string::npos);
}

}  // namespace
