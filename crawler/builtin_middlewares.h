// The built-in middlewares, in Scrapy's order, as the engine installs them from the settings.
//
// Downloader middlewares, by Scrapy's priority: Offsite (50, redirects to other hosts),
// DefaultHeaders (400), UserAgent (500), Retry (550), Redirect (600, only to schemes the page may
// lead to), HttpCache (900, with HTTPCACHE_ENABLED, see http_cache.h); the downloader itself
// counts `downloader/*` stats (Scrapy's DownloaderStats, 850), so responses from the cache are not
// in them. Spider middlewares, by priority: Scheme (ours, first: DOWNLOAD_SCHEMES, see
// scheme_policy.h), HttpError (50), Offsite (500), Referer (700), UrlLength (800), Depth (900).
#pragma once

#include <memory>
#include <vector>

#include "config/settings.h"
#include "config/stats.h"
#include "crawler/middleware.h"
#include "crawler/spider.h"

namespace crawler {

/// The built-in downloader middlewares the settings enable, in process_request order.
std::vector<std::unique_ptr<downloader_middleware>> default_downloader_middlewares(
    const settings& settings, stats& stats, const spider& spider);
/// The built-in spider middlewares, in process_spider_input order.
std::vector<std::unique_ptr<spider_middleware>> default_spider_middlewares(const settings& settings,
                                                                           stats& stats,
                                                                           const spider& spider);

}  // namespace crawler
