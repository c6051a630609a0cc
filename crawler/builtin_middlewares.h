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
#include "crawler/components.h"
#include "crawler/middleware.h"
#include "crawler/spider.h"

namespace crawler {

/// Registers the built-in middlewares (components.h) under Scrapy's class paths, once; the
/// engine and `crawler components` call it before they look components up.
void register_builtin_middlewares();

/// The check of DOWNLOAD_SCHEMES on what callbacks yield (scheme_policy.h): not a component, so
/// no setting can leave it out; the engine puts it first, where it sees their final output.
std::unique_ptr<spider_middleware> scheme_spider_middleware(const settings& settings, stats& stats);

}  // namespace crawler
