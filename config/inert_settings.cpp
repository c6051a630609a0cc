#include "config/inert_settings.h"

#include <algorithm>

namespace crawler {
namespace {

// What a Scrapy project's settings.py most often holds that means nothing here. Advice shared by
// several names is written once.
constexpr std::string_view python_code =
    "Python code does not run here; a C++ component is registered by name and enabled from "
    "settings (crawler/components.h)";
constexpr std::string_view no_telnet =
    "there is no telnet console; the progress line (PROGRESS), METRICS_PORT and `crawler status` "
    "show a running crawl";
constexpr std::string_view extensions =
    "the built-in extensions are switched by their own settings (CLOSESPIDER_*, MEMUSAGE_*, "
    "AUTOTHROTTLE_ENABLED, LOGSTATS_INTERVAL); C++ ones are enabled by EXTENSIONS "
    "(crawler/components.h)";
constexpr std::string_view modules =
    "spiders are compiled in (`crawler list`) or crawl files (`crawler run FILE.json`)";
constexpr std::string_view event_loop =
    "the downloader runs libcurl on one Boost.Asio event loop; there is no reactor to choose";
constexpr std::string_view dns_cache =
    "libcurl keeps its own name cache for the crawl; DNS_TIMEOUT bounds a lookup";
constexpr std::string_view tls = "TLS is libcurl's (OpenSSL), with certificates not verified";
constexpr std::string_view feed_storage =
    "feeds go to local files and standard output; a storage for another URI scheme is "
    "registered in C++ (crawler/feed_storage.h)";

constexpr std::string_view local_store =
    "FILES_STORE and IMAGES_STORE are local folders; another store is a pipeline registered in "
    "C++ (crawler/components.h)";
constexpr std::string_view ftp =
    "ftp:// URLs are fetched by libcurl when DOWNLOAD_SCHEMES lists ftp; credentials go in the URL";
constexpr std::string_view no_mail = "no mail is sent";
constexpr std::string_view images_as_files =
    "the ImagesPipeline stores images as downloaded: no thumbnails, no size filter";

constexpr inert_setting inert_table[] = {
    {"TELNETCONSOLE_ENABLED", no_telnet},
    {"TELNETCONSOLE_PORT", no_telnet},
    {"TELNETCONSOLE_HOST", no_telnet},
    {"TELNETCONSOLE_USERNAME", no_telnet},
    {"TELNETCONSOLE_PASSWORD", no_telnet},
    {"EXTENSIONS_BASE", extensions},
    {"ITEM_PIPELINES_BASE", python_code},
    {"CONCURRENT_ITEMS",
     "items go through the pipelines as the callback yields them, on the crawl's one thread; "
     "those an async pipeline holds (files to download) wait side by side, their pages counted "
     "in CONCURRENT_REQUESTS"},
    {"IMAGES_THUMBS", images_as_files},
    {"IMAGES_MIN_HEIGHT", images_as_files},
    {"IMAGES_MIN_WIDTH", images_as_files},
    {"SPIDER_MODULES", modules},
    {"NEWSPIDER_MODULE", modules},
    {"COMMANDS_MODULE", modules},
    {"SPIDER_LOADER_CLASS", modules},
    {"SPIDER_LOADER_WARN_ONLY", modules},
    {"TEMPLATES_DIR", "genspider's templates are built in (-t basic, crawl, cpp)"},
    {"TWISTED_REACTOR", event_loop},
    {"ASYNCIO_EVENT_LOOP", event_loop},
    {"REACTOR_THREADPOOL_MAXSIZE", event_loop},
    {"DNSCACHE_ENABLED", dns_cache},
    {"DNSCACHE_SIZE", dns_cache},
    {"DNS_RESOLVER", dns_cache},
    {"DOWNLOADER_CLIENTCONTEXTFACTORY", tls},
    {"DOWNLOADER_CLIENT_TLS_METHOD", tls},
    {"DOWNLOADER_CLIENT_TLS_CIPHERS", tls},
    {"DOWNLOADER_CLIENT_TLS_VERBOSE_LOGGING", tls},
    {"DOWNLOADER_HTTPCLIENTFACTORY", tls},
    {"DOWNLOAD_HANDLERS", "libcurl fetches every scheme DOWNLOAD_SCHEMES allows"},
    {"DOWNLOAD_HANDLERS_BASE", "libcurl fetches every scheme DOWNLOAD_SCHEMES allows"},
    {"DOWNLOADER", python_code},
    {"STATS_CLASS", python_code},
    {"ITEM_PROCESSOR", python_code},
    {"LOG_FORMATTER", python_code},
    {"SCHEDULER_PRIORITY_QUEUE", "SCHEDULER and SCHEDULER_QUEUE_CLASS choose the queue"},
    {"SCHEDULER_DISK_QUEUE",
     "with JOBDIR, the queue is journaled to disk in its own format (README: JOBDIR)"},
    {"SCHEDULER_DEBUG", "the scheduler logs what it drops at DEBUG (-L DEBUG)"},
    {"FEED_STORAGES", feed_storage},
    {"FEED_STORAGES_BASE", feed_storage},
    {"FEED_EXPORTERS", "feed formats are built in: jsonlines, json, csv, xml (-o FILE:FORMAT)"},
    {"FEED_EXPORTERS_BASE",
     "feed formats are built in: jsonlines, json, csv, xml (-o FILE:FORMAT)"},
    {"FEED_TEMPDIR", feed_storage},
    {"SPIDER_CONTRACTS", "`crawler check` checks crawl files; there are no contracts to run"},
    {"SPIDER_CONTRACTS_BASE", "`crawler check` checks crawl files; there are no contracts to run"},
    {"MEMDEBUG_ENABLED", "MEMUSAGE_* and the memusage/max stat watch memory"},
    {"MEMDEBUG_NOTIFY", "MEMUSAGE_* and the memusage/max stat watch memory"},
    {"MEMUSAGE_NOTIFY_MAIL", "no mail is sent; MEMUSAGE_WARNING_MB logs a WARNING"},
    {"STATSMAILER_RCPTS", "no mail is sent; STATS_FILE writes the stats as JSON"},
    {"EDITOR", "there is no `edit` command"},
    {"DEFAULT_ITEM_CLASS", python_code},
    {"FEED_URI_PARAMS", python_code, "null"},
    {"FEED_STORAGE_FTP_ACTIVE", feed_storage},
    {"FEED_STORAGE_S3_ACL", feed_storage},
    {"FEED_STORAGE_GCS_ACL", feed_storage},
    {"GCS_PROJECT_ID", feed_storage},
    {"FILES_STORE_S3_ACL", local_store},
    {"FILES_STORE_GCS_ACL", local_store},
    {"IMAGES_STORE_S3_ACL", local_store},
    {"IMAGES_STORE_GCS_ACL", local_store},
    {"FTP_USER", ftp},
    {"FTP_PASSWORD", ftp},
    {"FTP_PASSIVE_MODE", ftp},
    {"MAIL_HOST", no_mail},
    {"MAIL_PORT", no_mail},
    {"MAIL_FROM", no_mail},
    {"MAIL_USER", no_mail},
    {"MAIL_PASS", no_mail},
    {"COOKIES_DEBUG", "cookies sent and received are not logged; -L DEBUG logs each request"},
    {"HTTPPROXY_AUTH_ENCODING",
     "proxy credentials are sent as the bytes of the proxy URL (percent-escapes decoded)"},
    {"SCRAPER_SLOT_MAX_ACTIVE_SIZE",
     "responses wait for their callback within CONCURRENT_REQUESTS; MEMUSAGE_* bounds memory"},
    {"HTTPCACHE_DBM_MODULE", "the HTTP cache is stored in files (HTTPCACHE_DIR), never in a DBM"},
    // What this crawler always does, said in Scrapy's words: its default alone is honoured.
    {"AJAXCRAWL_ENABLED", "pages are not rewritten for AJAX crawlable URLs (#!)", "false"},
    {"DOWNLOADER_STATS", "the downloader/ stats are always kept", "true"},
    {"DOWNLOAD_FAIL_ON_DATALOSS",
     "a body shorter than its Content-Length always fails its download (libcurl's partial file)",
     "true"},
    {"STATS_DUMP", "the stats are always logged at the end of a crawl (and STATS_FILE writes them)",
     "true"},
    {"LOG_STDOUT",
     "the log goes to standard error or LOG_FILE; -o - writes items to standard output", "false"},
    {"LOG_ENCODING", "the log is written in UTF-8", "\"utf-8\""},
    {"REQUEST_FINGERPRINTER_CLASS",
     "REQUEST_FINGERPRINTER_IMPLEMENTATION chooses the fingerprint (2.7, 2.6, scrapy-redis-0.8)",
     "\"scrapy.utils.request.RequestFingerprinter\""},
    {"REFERRER_POLICY",
     "the Referer is sent as Scrapy's default policy sends it (REFERER_ENABLED turns it off)",
     "\"scrapy.spidermiddlewares.referer.DefaultReferrerPolicy\""},
    {"ROBOTSTXT_PARSER",
     "robots.txt is read by this crawler's RFC 9309 parser (README: where it differs from Protego)",
     "\"scrapy.robotstxt.ProtegoRobotParser\""},
    {"HTTPCACHE_POLICY",
     "the cache stores every response and serves it while fresh (HTTPCACHE_EXPIRATION_SECS), as "
     "Scrapy's DummyPolicy",
     "\"scrapy.extensions.httpcache.DummyPolicy\""},
    {"HTTPCACHE_STORAGE", "the cache is files under HTTPCACHE_DIR, as Scrapy's filesystem storage",
     "\"scrapy.extensions.httpcache.FilesystemCacheStorage\""},
    {"HTTPCACHE_GZIP", "cached responses are stored as received, not compressed", "false"},
    {"HTTPCACHE_ALWAYS_STORE", "the cache stores every response, as Scrapy's DummyPolicy", "false"},
    {"HTTPCACHE_IGNORE_RESPONSE_CACHE_CONTROLS",
     "Cache-Control is not read: the cache stores every response, as Scrapy's DummyPolicy", "[]"},
};

}  // namespace

std::span<const inert_setting> inert_settings() {
  return inert_table;
}

const inert_setting* find_inert_setting(std::string_view name) {
  auto found = std::find_if(std::begin(inert_table), std::end(inert_table),
                            [&](const inert_setting& entry) { return entry.name == name; });
  return found == std::end(inert_table) ? nullptr : found;
}

}  // namespace crawler
