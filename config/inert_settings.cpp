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
