#include "config/settings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "config/ascii.h"
#include "config/inert_settings.h"

namespace crawler {
namespace {

using json = nlohmann::json;
using enum setting_type;

// Ranges. Times are capped at a day (a delay or timeout longer than that is a typo, and it would
// outlast a Ctrl-C); counts at what a machine can hold; priorities where int arithmetic is safe.
constexpr double day = 86400;
constexpr double huge_count = 9007199254740992.0;  // 2^53: every integer below is exact
constexpr setting_range any_count{0, huge_count};
constexpr setting_range at_least_one{1, 1e6};
constexpr setting_range seconds{0, day};
constexpr setting_range positive_seconds{0, day, true};
constexpr setting_range priority{-1e6, 1e6};
constexpr setting_range retries{0, 1000};

// One flat table of documented defaults, as Scrapy's default_settings.py.
const std::vector<setting_spec>& table() {
  static const std::vector<setting_spec> specs = {
      {"BOT_NAME", string, "scrapybot", "The bot's name, used in the default User-Agent."},
      {"USER_AGENT", string, "crawler/0.1 (+https://github.com/crawler-cpp)", "User-Agent header."},
      {"CONCURRENT_REQUESTS", integer, 16, "Requests in flight at once, in all.", at_least_one},
      {"CONCURRENT_REQUESTS_PER_DOMAIN", integer, 8, "Requests in flight at once per domain.",
       at_least_one},
      {"CONCURRENT_REQUESTS_PER_IP", integer, 0,
       "Requests in flight at once per server address; 0: per domain instead.", any_count},
      {"DOWNLOAD_DELAY", number, 0, "Seconds between requests to one slot.", seconds},
      {"RANDOMIZE_DOWNLOAD_DELAY", boolean, true, "Wait 0.5x to 1.5x DOWNLOAD_DELAY."},
      {"DOWNLOAD_TIMEOUT", number, 180, "Seconds before a download is abandoned.",
       positive_seconds},
      {"DNS_TIMEOUT", number, 60,
       "Seconds a connection may take to be set up: the name lookup (which libcurl times only "
       "with the rest), the TCP and the TLS handshakes.",
       positive_seconds},
      {"DOWNLOAD_MAXSIZE", integer, 1073741824, "Largest body in bytes, after decompression.",
       any_count},
      {"DOWNLOAD_SCHEMES", list, json::array({"http", "https", "file"}),
       "URL schemes the crawler fetches; file:// only from start requests and file:// pages."},
      {"HTML_MAX_SIZE",
       integer,
       33554432,
       "Largest page in bytes that is parsed as HTML; larger ones are skipped.",
       {1, huge_count}},
      {"HTML_PARSER", string, "gumbo",
       "gumbo (HTML5, as browsers) or libxml2 (the tree Scrapy's selectors see, faster)."},
      {"HTML_MAX_DEPTH",
       integer,
       2000,
       "Deepest element nesting parsed as HTML; deeper pages are skipped.",
       {1, 1e6}},
      {"RETRY_ENABLED", boolean, true, "Retry failed downloads."},
      {"RETRY_TIMES", integer, 2, "Retries after the first attempt.", retries},
      {"DOWNLOAD_WARNSIZE", integer, 33554432, "Warn about bodies larger than this many bytes.",
       any_count},
      {"COOKIES_ENABLED", boolean, true, "Keep cookies for the whole crawl, as a browser would."},
      {"COOKIES_MAX_JARS",
       integer,
       10000,
       "At most this many meta[\"cookiejar\"] sessions keep their cookies; the least recently "
       "used idle one is dropped for a new one.",
       {1, huge_count}},
      {"COMPRESSION_ENABLED", boolean, true, "Ask for and decode gzip, deflate and br bodies."},
      {"HTTPPROXY_ENABLED", boolean, true,
       "Use the proxy in meta \"proxy\" or the http_proxy/https_proxy environment."},
      {"RETRY_PRIORITY_ADJUST", integer, -1, "Added to a retried request's priority.", priority},
      {"REDIRECT_PRIORITY_ADJUST", integer, 2, "Added to a redirected request's priority.",
       priority},
      {"HTTPERROR_ALLOW_ALL", boolean, false, "Pass every status to callbacks."},
      {"DEPTH_STATS_VERBOSE", boolean, false, "Count requests per depth (request_depth_count/N)."},
      {"REFERER_ENABLED", boolean, true, "Send the page a link was found on as Referer."},
      {"SCHEDULER_MEMORY_QUEUE", string, "lifo",
       "Order within a priority: lifo (depth-first, Scrapy's default) or fifo."},
      {"SCHEDULER_MEMORY_QUEUE_LIMIT",
       integer,
       0,
       "Requests the memory scheduler keeps in memory at most; the rest wait in files (in "
       "JOBDIR/queue-segments, or a temporary folder), in the same order. 0: no limit.",
       {0, huge_count}},
      {"RETRY_HTTP_CODES", list, json::array({500, 502, 503, 504, 522, 524, 408, 429}),
       "Statuses that are retried."},
      {"REDIRECT_ENABLED", boolean, true, "Follow redirects through the scheduler."},
      {"REDIRECT_MAX_TIMES", integer, 20, "Redirects followed per request.", retries},
      {"METAREFRESH_ENABLED", boolean, true, "Follow <meta http-equiv=\"refresh\"> redirects."},
      {"METAREFRESH_MAXDELAY", number, 100, "Longest meta refresh delay followed, in seconds.",
       seconds},
      {"METAREFRESH_IGNORE_TAGS", list, json::array(),
       "Elements whose content is not searched for a meta refresh (e.g. noscript)."},
      {"ROBOTSTXT_OBEY", boolean, false, "Honour robots.txt."},
      {"ROBOTSTXT_USER_AGENT", optional_string, nullptr,
       "User agent matched against robots.txt; the User-Agent header when unset."},
      {"DEPTH_LIMIT", integer, 0, "Deepest request allowed; 0 means no limit.", any_count},
      {"DEPTH_PRIORITY", integer, 0, "Priority adjustment per depth level.", priority},
      {"CLOSESPIDER_TIMEOUT", number, 0, "Close the spider after this many seconds.", {0, 1e9}},
      {"CLOSESPIDER_ITEMCOUNT", integer, 0, "Close the spider after this many items.", any_count},
      {"CLOSESPIDER_PAGECOUNT", integer, 0, "Close the spider after this many responses.",
       any_count},
      {"CLOSESPIDER_ERRORCOUNT", integer, 0, "Close the spider after this many errors.", any_count},
      {"AUTOTHROTTLE_ENABLED", boolean, false, "Adapt delays to the server's latency."},
      {"AUTOTHROTTLE_START_DELAY", number, 5.0, "Initial download delay.", seconds},
      {"AUTOTHROTTLE_MAX_DELAY", number, 60.0, "Largest download delay.", seconds},
      {"AUTOTHROTTLE_TARGET_CONCURRENCY",
       number,
       1.0,
       "Requests in parallel per server.",
       {0, 1e6, true}},
      {"AUTOTHROTTLE_DEBUG", boolean, false, "Log every throttling decision."},
      {"DEFAULT_REQUEST_HEADERS", dict,
       json{{"Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
            {"Accept-Language", "en"}},
       "Headers sent with every request (applied at fetch time; never written to JOBDIR, Redis "
       "or HTTPCACHE)."},
      {"SENSITIVE_HEADERS", list,
       json::array({"Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key", "Api-Key",
                    "X-Auth-Token", "X-Access-Token", "X-Amz-Security-Token"}),
       "Request headers that are secrets: never written to JOBDIR, Redis or HTTPCACHE."},
      {"HTTPERROR_ALLOWED_CODES", list, json::array(), "Non-2xx statuses passed to callbacks."},
      {"URLLENGTH_LIMIT", integer, 2083, "Longest URL allowed.", any_count},
      {"LOG_LEVEL", string, "DEBUG", "DEBUG, INFO, WARNING, ERROR or CRITICAL."},
      {"LOG_ENABLED", boolean, true, "Log at all."},
      {"LOG_FILE", optional_string, nullptr, "Log to this file instead of standard error."},
      {"LOG_FILE_APPEND", boolean, true, "Append to LOG_FILE; false starts it afresh."},
      {"LOG_FORMAT", string, "%(asctime)s [%(name)s] %(levelname)s: %(message)s",
       "A log line, in Python's logging fields: asctime, name, levelname, message, process, "
       "thread."},
      {"LOG_DATEFORMAT", string, "%Y-%m-%d %H:%M:%S", "%(asctime)s, in strftime's directives."},
      {"LOG_SHORT_NAMES", boolean, false, "Name every line's component \"crawler\"."},
      {"LOGSTATS_INTERVAL", number, 60.0, "Seconds between progress lines.", seconds},
      {"METRICS_PORT",
       integer,
       0,
       "Serve the crawl's stats for Prometheus at http://METRICS_HOST:METRICS_PORT/metrics; 0: "
       "off.",
       {0, 65535}},
      {"METRICS_HOST", string, "127.0.0.1",
       "The address METRICS_PORT listens on (0.0.0.0: every interface)."},
      {"PROGRESS", boolean, true,
       "A live status line under the log when standard error is a terminal."},
      {"PERIODIC_LOG_STATS", flag_or_dict, nullptr,
       "Every LOGSTATS_INTERVAL, log the stats as JSON: true, or {\"include\": [...], "
       "\"exclude\": [...]} of substrings of their names."},
      {"PERIODIC_LOG_DELTA", flag_or_dict, nullptr,
       "The same for how much each numeric stat changed since the last line."},
      {"PERIODIC_LOG_TIMING_ENABLED", boolean, false,
       "Add start time, now, elapsed and real interval to the periodic stats line."},
      {"MEMUSAGE_ENABLED", boolean, true, "Track peak memory in memusage/* stats."},
      {"MEMUSAGE_LIMIT_MB",
       integer,
       0,
       "Close with memusage_exceeded past this many MiB of peak memory; 0: no limit.",
       {0, 1e9}},
      {"MEMUSAGE_WARNING_MB", integer, 0, "Warn once past this many MiB; 0: never.", {0, 1e9}},
      {"MEMUSAGE_CHECK_INTERVAL_SECONDS", number, 60.0, "Seconds between memory checks.",
       positive_seconds},
      {"HTTPCACHE_ENABLED", boolean, false,
       "Keep every response on disk and answer repeated requests from it."},
      {"HTTPCACHE_DIR", string, "httpcache",
       "Folder of the HTTP cache; a relative one is under .crawler/."},
      {"HTTPCACHE_EXPIRATION_SECS",
       number,
       0,
       "Seconds a cached response is served; 0: forever.",
       {0, huge_count}},
      {"HTTPCACHE_IGNORE_HTTP_CODES", list, json::array(), "Statuses never cached."},
      {"HTTPCACHE_IGNORE_MISSING", boolean, false,
       "Drop requests not in the cache instead of downloading them."},
      {"HTTPCACHE_IGNORE_SCHEMES", list, json::array({"file"}), "URL schemes never cached."},
      {"FILES_STORE", optional_string, nullptr,
       "Folder the FilesPipeline stores files in (full/<SHA-1 of the URL><extension>)."},
      {"FILES_URLS_FIELD", string, "file_urls", "Item field listing the files to download."},
      {"FILES_RESULT_FIELD", string, "files", "Item field the FilesPipeline writes results to."},
      {"FILES_EXPIRES",
       number,
       90,
       "Days a stored file stays up to date; older ones are downloaded again.",
       {0, huge_count}},
      {"IMAGES_STORE", optional_string, nullptr,
       "Folder the ImagesPipeline stores images in, as downloaded (no conversion, no thumbs)."},
      {"IMAGES_URLS_FIELD", string, "image_urls", "Item field listing the images to download."},
      {"IMAGES_RESULT_FIELD", string, "images", "Item field the ImagesPipeline writes results to."},
      {"IMAGES_EXPIRES",
       number,
       90,
       "Days a stored image stays up to date; older ones are downloaded again.",
       {0, huge_count}},
      {"MEDIA_ALLOW_REDIRECTS", boolean, false,
       "Let the files and images pipelines follow redirects."},
      {"FEEDS", dict, json::object(), "Item feeds: URI -> options."},
      {"FEED_EXPORT_FIELDS", list, json::array(),
       "Item fields every feed writes, in this order (CSV columns); empty: each item's own."},
      {"FEED_EXPORT_ENCODING", optional_string, nullptr,
       "utf-8: JSON feeds write text as UTF-8; unset: non-ASCII as \\uXXXX escapes."},
      {"FEED_EXPORT_INDENT",
       integer,
       0,
       "Spaces per level in .json feeds; 0: an item per line.",
       {0, 64}},
      {"FEED_EXPORT_BATCH_ITEM_COUNT",
       integer,
       0,
       "Items per feed file: past it, a feed starts its next file (its URI names %(batch_id)d "
       "or %(batch_time)s); 0: one file.",
       {0, 1e9}},
      {"FEED_STORE_EMPTY", boolean, false,
       "Write a feed that got no item as an empty JSON array or XML root; false: its file "
       "stays empty."},
      {"STATS_FILE", optional_string, nullptr, "Write the final stats here as JSON."},
      {"JOBDIR", optional_string, nullptr, "Folder that keeps a crawl's state between runs."},
      {"JOBDIR_FSYNC", boolean, false,
       "fsync JOBDIR's request journal at every write: a crawl survives a power cut, not only a "
       "killed process, at the cost of one disk flush per page."},
      {"REQUEST_FINGERPRINTER_IMPLEMENTATION", optional_string, nullptr,
       "Fingerprint scheme: 2.7, 2.6 or scrapy-redis-0.8. Unset: 2.7, or scrapy-redis-0.8 when "
       "DUPEFILTER_CLASS is a scrapy-redis class path (as the Python dupefilter computes)."},
      {"DUPEFILTER_CLASS", string, "set",
       "set, bloom, redis_set, redis_bitmap or redisbloom (or the Python class path)."},
      {"DUPEFILTER_DEBUG", boolean, false, "Log every filtered duplicate, not only the first."},
      {"DUPEFILTER_KEY", string, "%(spider)s:dupefilter", "Redis key of the redis_set backend."},
      {"BLOOMFILTER_KEY", string, "%(spider)s:bloomfilter", "Redis key of the Bloom backends."},
      {"BLOOMFILTER_CAPACITY",
       integer,
       10000000,
       "Expected distinct requests (bloom, redisbloom).",
       {1, huge_count}},
      {"BLOOMFILTER_ERRORRATE",
       number,
       0.001,
       "False-positive rate at capacity (bloom, redisbloom).",
       {0, 1, true, true}},
      {"BLOOMFILTER_BIT", integer, 30, "redis_bitmap: m = 2^BLOOMFILTER_BIT bits.", {3, 32}},
      {"BLOOMFILTER_HASH_NUMBER", integer, 6, "redis_bitmap: number of hash functions k.", {1, 64}},
      {"BLOOMFILTER_HASH", string, "sha1_double",
       "redis_bitmap bit positions: sha1_double, or scrapy_redis_bloomfilter for Python fleets."},
      {"REDIS_URL", optional_string, nullptr,
       "redis://[:password@]host[:port][/db]; wins over host/port."},
      {"REDIS_HOST", string, "localhost", "Redis host when REDIS_URL is unset."},
      {"REDIS_PORT", integer, 6379, "Redis port when REDIS_URL is unset.", {1, 65535}},
      {"REDIS_CLUSTER_NODES", list, json::array(),
       "Seed nodes (host:port) of a Redis Cluster to use instead of one Redis; the client learns "
       "the rest and routes each command to its slot's node."},
      {"REDIS_PARAMS", dict, json::object(),
       "Client options: socket_timeout, socket_connect_timeout (seconds), password, db."},
      {"SCHEDULER", string, "memory", "memory or redis (or scrapy-redis's class path)."},
      {"SCHEDULER_SERIALIZER", optional_string, nullptr,
       "SCHEDULER=redis: the queue entries' form: json (ours) or scrapy_redis.picklecompat "
       "(scrapy-redis's, to share its queue). Unset: picklecompat when SCHEDULER is "
       "scrapy_redis.scheduler.Scheduler, json otherwise."},
      {"SCHEDULER_IDLE_BEFORE_CLOSE", number, 0,
       "scrapy-redis's blocking-pop timeout, accepted from its settings files; workers here poll "
       "instead, and MAX_IDLE_TIME_BEFORE_CLOSE decides when an idle one closes.",
       seconds},
      {"SCHEDULER_QUEUE_CLASS", string, "priority",
       "SCHEDULER=redis: priority (sorted set), fifo or lifo (lists), as scrapy-redis lays them "
       "out; or host, with either SCHEDULER: a queue per host, each fetched no faster than "
       "DOWNLOAD_DELAY and no more at once than CONCURRENT_REQUESTS_PER_DOMAIN across the whole "
       "fleet."},
      {"SCHEDULER_QUEUE_KEY", string, "%(spider)s:requests", "SCHEDULER=redis: the queue's key."},
      {"SCHEDULER_LEASE_TIME",
       number,
       60.0,
       "SCHEDULER=redis: seconds a worker holds a request without renewing it; a dead worker's "
       "requests go back to the queue after this.",
       {1, day}},
      {"SCHEDULER_HEARTBEAT_INTERVAL",
       number,
       10.0,
       "SCHEDULER=redis: seconds between lease renewals (at most a third of the lease time).",
       {0.05, day}},
      {"SCHEDULER_MAX_ENTRY_SIZE",
       integer,
       1048576,
       "SCHEDULER=redis: bytes a queue entry or start URL may have; a larger one is set aside in "
       "its :bad key, never sent to a worker.",
       {256, 512 * 1048576.0}},
      {"SCHEDULER_ENTRY_FIELDS", list, json::array({"method", "body", "headers", "cookies"}),
       "SCHEDULER=redis: what of a request besides its URL an unsigned queue entry or start URL "
       "may set (method other than GET, body, headers, cookies); one that sets another is set "
       "aside. [] keeps unsigned entries to plain GETs."},
      {"SCHEDULER_MAX_DELIVERIES", integer, 10,
       "SCHEDULER=redis: times a request may be taken by workers that stop before settling it; "
       "then it goes to <queue>:dead (crawler status shows them, crawler requeue puts them "
       "back). 0: no limit.",
       any_count},
      {"SCHEDULER_SHARDS",
       integer,
       1,
       "SCHEDULER=redis: shards of the fleet's queue and dupefilter, each with its own keys "
       "(<spider>:<i>:requests ...; on a Redis Cluster its own hash slot); a request's shard "
       "follows from its host. 1 keeps one set of keys. Every worker of a fleet must give the "
       "same number.",
       {1, 1024}},
      {"SCHEDULER_PERSIST", boolean, false, "Keep the Redis queue and dupefilter at close."},
      {"SCHEDULER_FLUSH_ON_START", boolean, false,
       "Delete the Redis queue and dupefilter at open (once per fleet with SCHEDULER=redis)."},
      {"MAX_IDLE_TIME_BEFORE_CLOSE",
       integer,
       0,
       "Seconds idle before a Redis spider closes.",
       {0, 1e9}},
      {"REDIS_FAILURE_TIMEOUT", number, 300.0,
       "Seconds Redis may fail every attempt to store outcomes (or, SCHEDULER=redis, to take "
       "requests) before the spider closes with finish_reason redis_unavailable; 0 retries "
       "forever.",
       seconds},
      {"REDIS_PIPELINE", boolean, false,
       "Store items in REDIS_ITEMS_KEY (as scrapy-redis's RedisPipeline), in the same step that "
       "settles their page (SCHEDULER=redis)."},
      {"REDIS_ITEMS_KEY", string, "%(spider)s:items", "The Redis list REDIS_PIPELINE fills."},
      {"REDIS_START_URLS_KEY", string, "%(name)s:start_urls", "Redis key of start URLs."},
      {"REDIS_START_URLS_AS_SET", boolean, false, "Start URLs are a set, not a list."},
      {"REDIS_START_URLS_AS_ZSET", boolean, false,
       "Start URLs are a sorted set, taken highest score first (scrapy-redis)."},
      {"REDIS_ITEMS_SERIALIZER", optional_string, nullptr,
       "How REDIS_PIPELINE writes items: unset or json.dumps, as scrapy-redis's default."},
      {"REDIS_ENCODING", string, "utf-8", "The encoding of Redis strings: utf-8 only."},
      {"ITEM_PIPELINES", dict, json::object(),
       "Item pipelines by registered name -> order, lowest first (crawler/components.h); "
       "scrapy_redis.pipelines.RedisPipeline turns on REDIS_PIPELINE."},
      {"DOWNLOADER_MIDDLEWARES", dict, json::object(),
       "Downloader middlewares by registered name -> order, over DOWNLOADER_MIDDLEWARES_BASE; "
       "null leaves one out."},
      {"DOWNLOADER_MIDDLEWARES_BASE", dict,
       json{{"scrapy.downloadermiddlewares.offsite.OffsiteMiddleware", 50},
            {"scrapy.downloadermiddlewares.httpauth.HttpAuthMiddleware", 300},
            {"scrapy.downloadermiddlewares.defaultheaders.DefaultHeadersMiddleware", 400},
            {"scrapy.downloadermiddlewares.useragent.UserAgentMiddleware", 500},
            {"scrapy.downloadermiddlewares.retry.RetryMiddleware", 550},
            {"scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware", 580},
            {"scrapy.downloadermiddlewares.redirect.RedirectMiddleware", 600},
            {"scrapy.downloadermiddlewares.httpcache.HttpCacheMiddleware", 900}},
       "The built-in downloader middlewares and their orders, as Scrapy's."},
      {"SPIDER_MIDDLEWARES", dict, json::object(),
       "Spider middlewares by registered name -> order, over SPIDER_MIDDLEWARES_BASE; null "
       "leaves one out."},
      {"SPIDER_MIDDLEWARES_BASE", dict,
       json{{"scrapy.spidermiddlewares.httperror.HttpErrorMiddleware", 50},
            {"scrapy.spidermiddlewares.offsite.OffsiteMiddleware", 500},
            {"scrapy.spidermiddlewares.referer.RefererMiddleware", 700},
            {"scrapy.spidermiddlewares.urllength.UrlLengthMiddleware", 800},
            {"scrapy.spidermiddlewares.depth.DepthMiddleware", 900}},
       "The built-in spider middlewares and their orders, as Scrapy's."},
      {"EXTENSIONS", dict, json::object(),
       "Extensions by registered name -> order (crawler/components.h)."},
      {"REDIS_START_URLS_BATCH_SIZE",
       integer,
       0,
       "Start URLs a worker moves into the queue at a time; 0: CONCURRENT_REQUESTS, as "
       "scrapy-redis.",
       {0, 1e6}},
  };
  return specs;
}

// scrapy-redis's names for settings that Scrapy (and we) name otherwise: the same setting.
constexpr std::pair<std::string_view, std::string_view> aliases[] = {
    {"SCHEDULER_DUPEFILTER_KEY", "DUPEFILTER_KEY"},
    {"SCHEDULER_DUPEFILTER_CLASS", "DUPEFILTER_CLASS"},
};

std::string_view canonical_name(std::string_view key) {
  for (const auto& [alias, name] : aliases) {
    if (key == alias) return name;
  }
  return key;
}

const setting_spec* find_spec(std::string_view key) {
  key = canonical_name(key);
  for (const auto& spec : table()) {
    if (spec.name == key) return &spec;
  }
  return nullptr;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1u : 0u)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string unknown_key_message(std::string_view where, std::string_view key) {
  std::string upper(key);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  std::vector<std::string_view> names;
  for (const auto& spec : table()) names.push_back(spec.name);
  std::string message = std::string(where) + ": unknown setting '" + std::string(key) + "'";
  if (upper == "SCHEDULER_SIGNING_KEY") {
    return message +
           ": the fleet's signing key is read from the environment variable "
           "SCHEDULER_SIGNING_KEY only, so it never lands in a crawl file, a shell "
           "history or a log";
  }
  if (auto best = nearest_name(upper, names); !best.empty()) {
    message += " (did you mean '" + std::string(best) + "'?)";
  } else {
    message += " (a setting of the spider's own is declared in its user_settings)";
  }
  return message;
}

// A -s word as Python's settings.py or JSON spells a value: True/False/None, a number, a list or
// an object; anything else is the string itself.
json python_literal(const std::string& word) {
  if (word == "True") return true;
  if (word == "False") return false;
  if (word == "None") return nullptr;
  auto parsed = json::parse(word, nullptr, false);
  return parsed.is_discarded() ? json(word) : parsed;
}

bool has_type(const json& value, setting_type type) {
  switch (type) {
    case boolean:
      return value.is_boolean();
    case integer:
      return value.is_number_integer();
    case number:
      return value.is_number();
    case string:
      return value.is_string();
    case optional_string:
      return value.is_string() || value.is_null();
    case list:
      return value.is_array();
    case dict:
      return value.is_object();
    case flag_or_dict:
      return value.is_boolean() || value.is_object() || value.is_null();
  }
  return false;
}

// "a finite number >= 0 and <= 86400", as the range error states what is accepted.
std::string describe_range(const setting_spec& spec) {
  auto number = [&](double value) {
    if (spec.type == integer || value == std::floor(value))
      return std::to_string(std::int64_t(value));
    auto text = std::to_string(value);
    while (text.back() == '0') text.pop_back();
    return text;
  };
  const auto& range = spec.range;
  return std::string(spec.type == integer ? "an integer " : "a finite number ") +
         (range.min_exclusive ? "> " : ">= ") + number(range.min) + " and " +
         (range.max_exclusive ? "< " : "<= ") + number(range.max);
}

bool in_range(const json& value, const setting_range& range) {
  double number = value.get<double>();
  if (!std::isfinite(number)) return false;
  if (range.min_exclusive ? number <= range.min : number < range.min) return false;
  return range.max_exclusive ? number < range.max : number <= range.max;
}

std::string origin(std::string_view where, std::string_view key) {
  if (where.empty()) return std::string(key);
  if (where.starts_with("-s")) return std::string(where) + " " + std::string(key);
  return std::string(where) + "." + std::string(key);
}

// Reads a command-line word as the declared type wants it.
json parse_word(std::string_view text, setting_type type, const std::string& where) {
  auto fail = [&] {
    return settings_error(where + ": expected " + std::string(describe(type)) + ", got '" +
                          std::string(text) + "'");
  };
  switch (type) {
    case boolean: {
      std::string word = ascii_lower(text);
      if (word == "true" || word == "1") return true;
      if (word == "false" || word == "0") return false;
      throw fail();
    }
    case integer: {
      std::int64_t value = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc() || end != text.data() + text.size()) throw fail();
      return value;
    }
    case number: {
      double value = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc() || end != text.data() + text.size()) throw fail();
      return value;
    }
    case string:
      return std::string(text);
    case optional_string:
      return text.empty() ? json(nullptr) : json(std::string(text));
    case list: {
      if (text.starts_with("[")) {
        json parsed = json::parse(text, nullptr, false);
        if (parsed.is_discarded() || !parsed.is_array()) throw fail();
        return parsed;
      }
      json items = json::array();
      std::size_t start = 0;
      while (start <= text.size() && !text.empty()) {
        std::size_t comma = text.find(',', start);
        std::string_view word = text.substr(start, comma - start);
        std::int64_t number = 0;
        auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), number);
        if (ec == std::errc() && end == word.data() + word.size()) {
          items.push_back(number);
        } else {
          items.push_back(std::string(word));
        }
        if (comma == std::string_view::npos) break;
        start = comma + 1;
      }
      return items;
    }
    case dict: {
      json parsed = json::parse(text, nullptr, false);
      if (parsed.is_discarded() || !parsed.is_object()) throw fail();
      return parsed;
    }
    case flag_or_dict:
      try {
        return parse_word(text, text.starts_with("{") ? dict : boolean, where);
      } catch (const settings_error&) {
        throw fail();
      }
  }
  throw fail();
}

}  // namespace

std::span<const setting_spec> known_settings() {
  return table();
}

std::string_view nearest_name(std::string_view name, std::span<const std::string_view> candidates) {
  std::string_view best;
  std::size_t best_distance = 0;
  for (auto candidate : candidates) {
    std::size_t d = edit_distance(name, candidate);
    if (best.empty() || d < best_distance) best = candidate, best_distance = d;
  }
  if (!best.empty() && best_distance <= std::max<std::size_t>(2, name.size() / 3)) return best;
  return {};
}

std::string spider_key(std::string_view key_template, std::string_view spider) {
  std::string key(key_template);
  for (std::string_view placeholder : {"%(spider)s", "%(name)s"}) {
    for (std::size_t at; (at = key.find(placeholder)) != std::string::npos;)
      key.replace(at, placeholder.size(), spider);
  }
  return key;
}

std::string key_spider_name(const settings& settings, std::string_view spider) {
  if (settings.get("REDIS_CLUSTER_NODES").empty()) return std::string(spider);
  return "{" + std::string(spider) + "}";
}

std::string_view describe(setting_type type) {
  switch (type) {
    case boolean:
      return "a boolean";
    case integer:
      return "an integer";
    case number:
      return "a number";
    case string:
      return "a string";
    case optional_string:
      return "a string or null";
    case list:
      return "a list";
    case dict:
      return "an object";
    case flag_or_dict:
      return "a boolean or an object";
  }
  return "a value";
}

settings::settings() {
  for (const auto& spec : table()) values_.emplace(spec.name, spec.default_value);
}

void settings::merge_json(const json& object, std::string_view path) {
  if (!object.is_object()) {
    throw settings_error(std::string(path) + ": expected an object of settings, got " +
                         object.type_name());
  }
  for (const auto& [key, value] : object.items()) set(key, value, path);
}

void settings::set_from_string(std::string_view key_equals_value) {
  std::size_t equals = key_equals_value.find('=');
  if (equals == std::string_view::npos || equals == 0) {
    throw settings_error("-s " + std::string(key_equals_value) +
                         ": expected KEY=VALUE, e.g. -s DUPEFILTER_CLASS=bloom");
  }
  std::string_view key = key_equals_value.substr(0, equals);
  std::string_view word = key_equals_value.substr(equals + 1);
  if (find_inert_setting(key)) return set(key, std::string(word), "-s");
  auto spec = spec_of(key);
  if (!spec) throw settings_error(unknown_key_message("-s", key));
  set(key, parse_word(word, spec->type, origin("-s", key)), "-s");
}

std::optional<setting_spec> settings::spec_of(std::string_view key) const {
  if (const setting_spec* spec = find_spec(key)) return *spec;
  if (auto declared = declared_.find(key); declared != declared_.end()) {
    return setting_spec{declared->first, declared->second, nullptr, "declared by the user"};
  }
  return std::nullopt;
}

void settings::set(std::string_view key, json value, std::string_view where) {
  if (const auto* inert = find_inert_setting(key)) {
    if (inert->honoured.empty()) {
      values_.insert_or_assign(std::string(key), std::move(value));
      return;
    }
    // -s gives a word: read it as Python or JSON would spell the value.
    if (value.is_string() && where.starts_with("-s"))
      value = python_literal(value.get<std::string>());
    auto honoured = json::parse(inert->honoured);
    if (value != honoured) {
      throw settings_error(origin(where, key) + ": " + value.dump() +
                           " cannot be honoured here, only " + honoured.dump() + ": " +
                           std::string(inert->instead));
    }
    return;  // what this crawler does anyway: nothing to warn about
  }
  auto spec = spec_of(key);
  if (!spec) throw settings_error(unknown_key_message(where.empty() ? "settings" : where, key));
  // Scrapy's None for a list whose default is empty (FEED_EXPORT_FIELDS): that default.
  if (value.is_null() && spec->type == list && spec->default_value == json::array()) {
    value = json::array();
  }
  if (!has_type(value, spec->type)) {
    throw settings_error(origin(where, key) + ": expected " + std::string(describe(spec->type)) +
                         ", got " + value.type_name() + " " + value.dump());
  }
  // A folder or file named by "" would be the working directory, or nothing at all.
  static constexpr std::string_view paths[] = {"JOBDIR",       "HTTPCACHE_DIR", "FILES_STORE",
                                               "IMAGES_STORE", "LOG_FILE",      "STATS_FILE"};
  if (value == "" && std::find(std::begin(paths), std::end(paths), spec->name) != std::end(paths)) {
    throw settings_error(origin(where, key) + ": an empty path; leave it out (or null) for none");
  }
  if ((spec->type == integer || spec->type == number) && !in_range(value, spec->range)) {
    // json dumps nan and inf as null; say what was given.
    double number = value.get<double>();
    std::string given = std::isnan(number)   ? "nan"
                        : std::isinf(number) ? (number > 0 ? "inf" : "-inf")
                                             : value.dump();
    throw settings_error(origin(where, key) + ": expected " + describe_range(*spec) + ", got " +
                         given);
  }
  values_.insert_or_assign(std::string(spec->name), std::move(value));
}

const json& settings::get(std::string_view key) const {
  auto it = values_.find(key);
  if (it == values_.end()) throw settings_error(unknown_key_message("settings", key));
  return it->second;
}

bool settings::get_bool(std::string_view key) const {
  return get(key).get<bool>();
}
std::int64_t settings::get_int(std::string_view key) const {
  return get(key).get<std::int64_t>();
}
double settings::get_double(std::string_view key) const {
  return get(key).get<double>();
}

std::string settings::get_string(std::string_view key) const {
  const json& value = get(key);
  return value.is_null() ? std::string() : value.get<std::string>();
}

std::vector<std::string> settings::get_list(std::string_view key) const {
  std::vector<std::string> out;
  for (const auto& item : get(key))
    out.push_back(item.is_string() ? item.get<std::string>() : item.dump());
  return out;
}

bool settings::has(std::string_view key) const {
  return !get(key).is_null();
}

void settings::declare(std::string_view name, json default_value, std::string_view where) {
  if (find_spec(name) || find_inert_setting(name) || declared_.contains(name)) {
    throw settings_error(origin(where, name) +
                         ": is already a setting; a setting of your own needs a name of its "
                         "own (a prefix such as MYPROJECT_ keeps it apart)");
  }
  if (name.empty()) throw settings_error(std::string(where) + ": a setting needs a name");
  using value_t = json::value_t;
  setting_type type = string;
  switch (default_value.type()) {
    case value_t::boolean:
      type = boolean;
      break;
    case value_t::number_integer:
    case value_t::number_unsigned:
      type = integer;
      break;
    case value_t::number_float:
      type = number;
      break;
    case value_t::string:
      type = string;
      break;
    case value_t::null:
      type = optional_string;
      break;
    case value_t::array:
      type = list;
      break;
    case value_t::object:
      type = dict;
      break;
    default:
      throw settings_error(origin(where, name) + ": cannot hold " + default_value.type_name());
  }
  declared_.emplace(std::string(name), type);
  values_.insert_or_assign(std::string(name), std::move(default_value));
}

std::vector<std::string> settings::warnings() const {
  std::vector<std::string> lines;
  for (const auto& inert : inert_settings()) {
    if (values_.contains(inert.name)) {
      lines.push_back(std::string(inert.name) +
                      " has no effect here: " + std::string(inert.instead));
    }
  }
  return lines;
}

json settings::to_json() const {
  json out = json::object();
  for (const auto& [key, value] : values_) out[key] = value;
  return out;
}

bool removes_component(const settings& settings, std::string_view setting, std::string_view name) {
  const auto& components = settings.get(setting);
  auto found = components.find(std::string(name));
  return found != components.end() && found->is_null();
}

}  // namespace crawler
