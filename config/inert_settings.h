// Scrapy settings that mean nothing to this crawler, so that a Scrapy project's settings.py can be
// carried over as it is. They are accepted with any value and have no effect; the crawl names each
// one it was given, once, at start, with what to use instead:
//
//   WARNING: TELNETCONSOLE_ENABLED has no effect here: there is no telnet console; the progress
//   line, METRICS_PORT and `crawler status` show a running crawl
//
// Some of them are Scrapy's way of saying what this crawler always does (DOWNLOADER_STATS = True,
// HTTPCACHE_POLICY = DummyPolicy): Scrapy's default value is accepted without a word, and any
// other value is refused, naming the setting, since it asks for what does not happen here.
//
// A typo of one of our own settings is still an error (settings.h): only these exact names are
// let through.
#pragma once

#include <span>
#include <string_view>

namespace crawler {

/// A Scrapy setting this crawler accepts and ignores, and what a user should do instead.
struct inert_setting {
  std::string_view name;
  std::string_view instead;
  /// The one value this crawler behaves as (JSON text, Scrapy's default); empty: any value is
  /// accepted, with a warning.
  std::string_view honoured = {};
};

/// Every such setting, in no particular order.
std::span<const inert_setting> inert_settings();

/// The entry for `name` (exact spelling), or nullptr when `name` is not one of them.
const inert_setting* find_inert_setting(std::string_view name);

}  // namespace crawler
