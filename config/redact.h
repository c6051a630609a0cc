// Credentials never reach a log line, an error message or a printout.
//
//   crawler::redact_url("redis://:hunter2@db:6379/0")      // "redis://:***@db:6379/0"
//   crawler::redacted_settings(settings)                    // REDIS_URL, REDIS_PARAMS.password,
//                                                           // Authorization/Cookie headers: ***
//   crawler::remember_secrets(settings);                    // then, anywhere:
//   crawler::redact("cannot reach redis://:hunter2@db")      // "cannot reach redis://:***@db"
//
// A crawl's settings carry secrets (a Redis password, a proxy's credentials, an Authorization
// header) and its logs end up in files, CI output and bug reports. Two layers keep them out:
// what prints settings prints redacted_settings(), and every log line and command-line error
// passes through redact(), which replaces each secret remember_secrets() has seen. The second
// layer catches what the first cannot know about, e.g. a library's error message quoting a URL.
// Thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace crawler {

class settings;

/// What a secret is replaced by.
inline constexpr std::string_view redaction = "***";

/// `url` with the password of its userinfo (`user:password@`) replaced by ***; other text as is.
std::string redact_url(std::string_view url);

/// Every setting, with credentials replaced by *** (see the file comment).
nlohmann::json redacted_settings(const nlohmann::json& settings);

/// Remembers the credentials found in `settings` (as redacted_settings finds them) and in the
/// http_proxy / https_proxy / all_proxy environment variables, for redact().
void remember_secrets(const settings& settings);
/// Remembers one secret. Ignores "".
void remember_secret(std::string_view secret);
/// Remembers the password of every URL in `text` (e.g. the proxy a request's meta names).
void remember_url_secrets(std::string_view text);

/// `text` with the password of every URL in it, and every remembered secret of four characters or
/// more, replaced by ***. (A shorter secret would blank every word that holds its letters; in a
/// URL it is replaced whatever its length.)
std::string redact(std::string_view text);

}  // namespace crawler
