#include "crawler/builtin_middlewares.h"

#include <algorithm>
#include <boost/url/parse.hpp>
#include <set>

#include "config/ascii.h"
#include "config/log.h"
#include "config/redact.h"
#include "crawler/basic_auth.h"
#include "crawler/files_pipeline.h"
#include "crawler/http_cache.h"
#include "crawler/middleware.h"
#include "crawler/parse/link_extractor.h"
#include "crawler/parse/meta_refresh.h"
#include "crawler/parse/plain_url.h"
#include "crawler/scheme_policy.h"
#include "request/http_syntax.h"
#include "scheduler/shared_request.h"

namespace crawler {

namespace {

// Reads a list setting of HTTP statuses, naming the setting when an entry is not a status.
std::vector<int> status_list(const settings& settings, std::string_view key) {
  std::vector<int> statuses;
  for (const auto& value : settings.get(key)) {
    int status = value.is_number_integer() ? value.get<int>()
                 : value.is_string()       ? std::atoi(value.get<std::string>().c_str())
                                           : 0;
    if (status < 100 || status > 999) {
      throw settings_error(std::string(key) + ": " + value.dump() + " is not an HTTP status");
    }
    statuses.push_back(status);
  }
  return statuses;
}

bool contains(const std::vector<int>& statuses, int status) {
  return std::find(statuses.begin(), statuses.end(), status) != statuses.end();
}

bool meta_flag(const request& request, const char* key) {
  auto found = request.meta.find(key);
  return found != request.meta.end() && found->is_boolean() && found->get<bool>();
}

std::int64_t meta_int(const nlohmann::json& meta, const char* key, std::int64_t fallback) {
  auto found = meta.find(key);
  return found != meta.end() && found->is_number_integer() ? found->get<std::int64_t>() : fallback;
}

bool meta_lists_status(const request& request, int status) {
  if (meta_flag(request, "handle_httpstatus_all")) return true;
  auto list = request.meta.find("handle_httpstatus_list");
  if (list == request.meta.end() || !list->is_array()) return false;
  return std::any_of(list->begin(), list->end(), [status](const auto& value) {
    return value.is_number_integer() && value.template get<int>() == status;
  });
}

void count_scheme_filtered(stats& stats, spdlog::logger& logger, std::string_view from,
                           const request& request) {
  stats.inc_value("scheme/filtered");
  logger.debug("Filtered request to a scheme {} may not lead to: {}", from, request.describe());
}

// Scrapy's HttpAuthMiddleware: with spider arguments http_user / http_pass (`-a`, or set_argument
// in a spider's constructor), requests to http_auth_domain (and its subdomains) carry Basic
// credentials. Unset, the domain is the first request's host, as Scrapy 2.5.1 on; given empty,
// every domain gets them. A request with its own Authorization keeps it.
class http_auth_middleware : public downloader_middleware {
 public:
  explicit http_auth_middleware(const spider& spider) {
    auto user = spider.argument("http_user");
    auto password = spider.argument("http_pass");
    if (user.empty() && password.empty()) return;
    remember_secret(password);
    header_ = basic_authorization(user, password);
    remember_secret(header_.substr(6));
    domain_set_ = spider.has_argument("http_auth_domain");
    if (domain_set_) domain_ = ascii_lower(spider.argument("http_auth_domain"));
  }

  void process_request(request& request) override {
    if (header_.empty() || !find_header(request.headers, "Authorization").empty()) return;
    auto url = boost::urls::parse_uri(request.url);
    std::string host = url ? ascii_lower(url->host()) : std::string();
    if (!domain_set_) {
      domain_ = host;
      domain_set_ = true;
    }
    if (domain_.empty() || host_in_domains(host, {domain_})) {
      request.headers.emplace_back("Authorization", header_);
    }
  }

 private:
  std::string header_;
  std::string domain_;
  bool domain_set_ = false;
};

class default_headers_middleware : public downloader_middleware {
 public:
  explicit default_headers_middleware(const settings& settings) {
    for (const auto& [name, value] : settings.get("DEFAULT_REQUEST_HEADERS").items()) {
      if (!value.is_string()) {
        throw settings_error("DEFAULT_REQUEST_HEADERS." + name + ": must be a string");
      }
      auto problem = field_name_problem(name);
      if (problem.empty()) problem = field_value_problem(value.get<std::string>());
      if (!problem.empty())
        throw settings_error("DEFAULT_REQUEST_HEADERS." + name + ": " + problem);
      headers_.emplace_back(name, value.get<std::string>());
    }
  }
  void process_request(request& request) override {
    for (const auto& [name, value] : headers_) {
      if (find_header(request.headers, name).empty()) request.headers.emplace_back(name, value);
    }
  }

 private:
  header_list headers_;
};

class user_agent_middleware : public downloader_middleware {
 public:
  explicit user_agent_middleware(const settings& settings)
      : user_agent_(settings.get_string("USER_AGENT")) {
    if (auto problem = field_value_problem(user_agent_); !problem.empty()) {
      throw settings_error("USER_AGENT: " + problem);
    }
  }
  void process_request(request& request) override {
    if (!user_agent_.empty() && find_header(request.headers, "User-Agent").empty()) {
      request.headers.emplace_back("User-Agent", user_agent_);
    }
  }

 private:
  std::string user_agent_;
};

// Scrapy's RetryMiddleware and get_retry_request.
class retry_middleware : public downloader_middleware {
 public:
  retry_middleware(const settings& settings, stats& stats)
      : stats_(stats),
        max_retry_times_(settings.get_int("RETRY_TIMES")),
        priority_adjust_(int(settings.get_int("RETRY_PRIORITY_ADJUST"))),
        retry_codes_(status_list(settings, "RETRY_HTTP_CODES")),
        logger_(get_logger("retry")) {}

  std::optional<request> process_response(const request& request,
                                          const response& response) override {
    if (meta_flag(request, "dont_retry") || !contains(retry_codes_, response.status)) {
      return std::nullopt;
    }
    return retry(request, status_message(response.status));
  }

  std::optional<request> process_exception(const request& request,
                                           const download_result& failure) override {
    static const std::vector<std::string_view> retried = {
        "TimeoutError",   "DNSLookupError",        "ConnectionRefusedError",
        "ConnectionLost", "ResponseNeverReceived", "SSLError"};
    if (meta_flag(request, "dont_retry") ||
        std::find(retried.begin(), retried.end(), failure.error_type) == retried.end()) {
      return std::nullopt;
    }
    return retry(request, failure.error_type);
  }

 private:
  std::optional<request> retry(const request& request, const std::string& reason) {
    auto times = meta_int(request.meta, "retry_times", 0) + 1;
    auto max_times = meta_int(request.meta, "max_retry_times", max_retry_times_);
    if (times > max_times) {
      stats_.inc_value("retry/max_reached");
      logger_->error("Gave up retrying {} (failed {} times): {}", request.describe(), times,
                     reason);
      return std::nullopt;
    }
    logger_->debug("Retrying {} (failed {} times): {}", request.describe(), times, reason);
    auto again = request;
    again.meta["retry_times"] = times;
    again.dont_filter = true;
    again.priority += priority_adjust_;
    stats_.inc_value("retry/count");
    stats_.inc_value("retry/reason_count/" + reason);
    return again;
  }

  stats& stats_;
  std::int64_t max_retry_times_;
  int priority_adjust_;
  std::vector<int> retry_codes_;
  std::shared_ptr<spdlog::logger> logger_;
};

// Scrapy's RedirectMiddleware: the target goes back through the scheduler and the dupefilter.
// What Scrapy's redirect middlewares share (BaseRedirectMiddleware): the scheme check, the
// REDIRECT_MAX_TIMES budget, the redirect_* meta and the priority adjustment.
class redirecting_middleware : public downloader_middleware {
 protected:
  redirecting_middleware(const settings& settings, stats& stats)
      : schemes_(settings),
        stats_(stats),
        max_times_(settings.get_int("REDIRECT_MAX_TIMES")),
        priority_adjust_(int(settings.get_int("REDIRECT_PRIORITY_ADJUST"))),
        logger_(get_logger("redirect")) {}

  /// `request` sent on to `target` for `reason` (a status, or "meta refresh"); with `as_get`,
  /// as a GET without the body. Throws ignore_request when it may not go there.
  request redirect(const request& request, const std::string& target, const nlohmann::json& reason,
                   bool as_get) {
    if (!schemes_.may_follow(request.url, target)) {
      // As Scrapy 2.11.2 (GHSA-23j4-mw76-5v7h): a site cannot redirect the crawler to file://,
      // gopher:// and the like.
      count_scheme_filtered(stats_, *logger_, request.url, crawler::request{target});
      throw ignore_request("redirect to a scheme " + request.url + " may not lead to: " + target);
    }
    auto ttl = meta_int(request.meta, "redirect_ttl", max_times_);
    auto times = meta_int(request.meta, "redirect_times", 0) + 1;
    if (ttl <= 0 || times > max_times_) {
      logger_->debug("Discarding {}: max redirections reached", request.describe());
      throw ignore_request("max redirections reached");
    }
    auto redirected = request;
    redirected.url = target;
    redirected.meta["redirect_times"] = times;
    redirected.meta["redirect_ttl"] = ttl - 1;
    auto& urls = redirected.meta["redirect_urls"];
    if (!urls.is_array()) urls = nlohmann::json::array();
    urls.push_back(request.url);
    auto& reasons = redirected.meta["redirect_reasons"];
    if (!reasons.is_array()) reasons = nlohmann::json::array();
    reasons.push_back(reason);
    redirected.priority += priority_adjust_;
    if (as_get) {
      redirected.method = "GET";
      redirected.body.clear();
      std::erase_if(redirected.headers, [](const auto& field) {
        return !find_header({field}, "Content-Type").empty() ||
               !find_header({field}, "Content-Length").empty();
      });
    }
    logger_->debug("Redirecting ({}) to {} from {}",
                   reason.is_string() ? reason.get<std::string>() : reason.dump(),
                   redirected.describe(), request.describe());
    return redirected;
  }

 private:
  scheme_policy schemes_;
  stats& stats_;
  std::int64_t max_times_;
  int priority_adjust_;
  std::shared_ptr<spdlog::logger> logger_;
};

// Scrapy's RedirectMiddleware: 301, 302, 303, 307 and 308 are followed through the scheduler.
class redirect_middleware : public redirecting_middleware {
 public:
  redirect_middleware(const settings& settings, stats& stats)
      : redirecting_middleware(settings, stats) {}

  std::optional<request> process_response(const request& request,
                                          const response& response) override {
    int status = response.status;
    bool redirect_status =
        status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
    if (!redirect_status || meta_flag(request, "dont_redirect") ||
        meta_lists_status(request, status)) {
      return std::nullopt;
    }
    auto location = response.header("Location");
    if (location.empty()) return std::nullopt;
    std::string target;
    try {
      target = response.urljoin(location);
    } catch (const link_error& error) {
      throw ignore_request(std::string("bad redirect location: ") + error.what());
    }
    return redirect(request, target, status,
                    (status == 302 || status == 303) && request.method != "HEAD");
  }
};

// Scrapy's MetaRefreshMiddleware (METAREFRESH_ENABLED): an HTML page whose
// <meta http-equiv="refresh"> asks for another URL within METAREFRESH_MAXDELAY seconds is
// followed as a redirect (a GET), reason "meta refresh".
class meta_refresh_middleware : public redirecting_middleware {
 public:
  meta_refresh_middleware(const settings& settings, stats& stats)
      : redirecting_middleware(settings, stats),
        max_delay_(settings.get_double("METAREFRESH_MAXDELAY")),
        ignore_tags_(settings.get_list("METAREFRESH_IGNORE_TAGS")) {}

  std::optional<request> process_response(const request& request,
                                          const response& response) override {
    if (meta_flag(request, "dont_redirect") || request.method == "HEAD" || !is_html(response)) {
      return std::nullopt;
    }
    auto refresh = find_meta_refresh(response.body, response.url, ignore_tags_);
    if (!refresh || !(refresh->delay < max_delay_)) return std::nullopt;
    return redirect(request, refresh->url, "meta refresh", true);
  }

 private:
  // Scrapy's HtmlResponse: what the Content-Type (or, without one, the URL's extension) says.
  static bool is_html(const response& response) {
    auto type = ascii_lower(response.header("Content-Type"));
    if (!type.empty()) {
      return type.find("text/html") != std::string::npos ||
             type.find("application/xhtml+xml") != std::string::npos;
    }
    auto path = std::string_view(response.url).substr(0, response.url.find_first_of("?#"));
    return path.ends_with(".html") || path.ends_with(".htm");
  }

  double max_delay_;
  std::vector<std::string> ignore_tags_;
};

// Scrapy's HttpErrorMiddleware: only 2xx reach callbacks unless the spider asks for more.
class http_error_middleware : public spider_middleware {
 public:
  http_error_middleware(const settings& settings, stats& stats)
      : stats_(stats),
        allow_all_(settings.get_bool("HTTPERROR_ALLOW_ALL")),
        allowed_(status_list(settings, "HTTPERROR_ALLOWED_CODES")),
        logger_(get_logger("httperror")) {}

  std::optional<failure> process_spider_input(const response& response) override {
    int status = response.status;
    if ((status >= 200 && status < 300) || allow_all_ || contains(allowed_, status) ||
        meta_lists_status(response.request, status)) {
      return std::nullopt;
    }
    stats_.inc_value("httperror/response_ignored_count");
    stats_.inc_value("httperror/response_ignored_status_count/" + std::to_string(status));
    logger_->info("Ignoring response <{} {}>: HTTP status code is not handled or not allowed",
                  status, response.url);
    return failure{response.request, "HttpError",
                   "Ignoring non-200 response (" + status_message(status) + ")", response};
  }

 private:
  stats& stats_;
  bool allow_all_;
  std::vector<int> allowed_;
  std::shared_ptr<spdlog::logger> logger_;
};

// Scrapy's offsite rules: a host outside allowed_domains is filtered (each such host logged
// once). The domains are read on first use, once the start requests are made, as Scrapy reads
// them at spider_opened, so a spider may set them from its arguments. The spider middleware
// (links) and the downloader middleware (redirects) have one each, as in Scrapy.
class offsite_rules {
 public:
  offsite_rules(const spider& spider, stats& stats)
      : spider_(spider), stats_(stats), logger_(get_logger("offsite")) {}

  /// True when `request` goes to an allowed host (or the spider allows every host); otherwise
  /// counts it in offsite/filtered.
  bool allows(const request& request) {
    read_domains();
    if (domains_.empty()) return true;
    std::string host;
    if (auto plain = split_plain_url(request.url)) {  // every link passes here: skip the parser
      host = ascii_lower(plain->host);
    } else if (auto url = boost::urls::parse_uri(request.url)) {
      host = ascii_lower(url->host());
    }
    if (host_in_domains(host, domains_)) return true;
    if (seen_.insert(host).second) {
      logger_->debug("Filtered offsite request to '{}': {}", host, request.describe());
      stats_.inc_value("offsite/domains");
    }
    stats_.inc_value("offsite/filtered");
    return false;
  }

  void read_domains() {
    if (read_) return;
    read_ = true;
    for (const auto& domain : spider_.allowed_domains) {
      if (domain.find(':') != std::string::npos || domain.find('/') != std::string::npos) {
        logger_->warn(
            "allowed_domains accepts only domains, not URLs or ports. Ignoring entry "
            "{} in allowed_domains.",
            domain);
        continue;
      }
      domains_.push_back(ascii_lower(domain));
    }
  }

 private:
  const spider& spider_;
  stats& stats_;
  bool read_ = false;
  std::vector<std::string> domains_;
  std::set<std::string> seen_;
  std::shared_ptr<spdlog::logger> logger_;
};

// Scrapy's OffsiteMiddleware (spider side): links to other hosts are dropped unless dont_filter.
class offsite_middleware : public spider_middleware {
 public:
  offsite_middleware(const spider& spider, stats& stats) : rules_(spider, stats) {}

  void process_start_requests(output&) override { rules_.read_domains(); }

  void process_spider_output(const response&, output& out) override {
    std::erase_if(out.requests, [this](const request& request) {
      return !request.dont_filter && !rules_.allows(request);
    });
  }

 private:
  offsite_rules rules_;
};

// Scrapy's downloader-side OffsiteMiddleware, for what never passes the spider: a redirect (of a
// page or of a robots.txt) to another host is dropped, even when its request was dont_filter (a
// start request or a retry), since the site chose the target, not the spider. meta
// "allow_offsite" lets one through, as in Scrapy. A request read from a shared queue (a fleet's
// Redis, which others can write) is checked whatever it says: its writer is not the spider.
class offsite_redirect_middleware : public downloader_middleware {
 public:
  offsite_redirect_middleware(const spider& spider, stats& stats) : rules_(spider, stats) {}

  void process_request(request& request) override {
    bool redirected = request.meta.contains("redirect_urls");
    bool spiders_own = request.origin == request_origin::local;
    if (spiders_own &&
        ((!redirected && request.dont_filter) || meta_flag(request, "allow_offsite")))
      return;
    if (!rules_.allows(request)) throw ignore_request("Filtered offsite request");
  }

 private:
  offsite_rules rules_;
};

// Only the schemes of DOWNLOAD_SCHEMES leave a page, and file:// never leaves an http(s) one
// (scheme_policy.h says why). Runs before every other spider middleware, dont_filter or not.
class scheme_middleware : public spider_middleware {
 public:
  scheme_middleware(const scheme_policy& schemes, stats& stats)
      : schemes_(schemes), stats_(stats), logger_(get_logger("scheme")) {}

  void process_spider_output(const response& response, output& out) override {
    std::erase_if(out.requests, [&](const request& request) {
      if (schemes_.may_follow(response.url, request.url)) return false;
      // A callback that built a URL without a scheme has a bug: an error, as Scrapy's
      // Request raises one, never a guess at a host or a local path.
      if (auto missing = missing_scheme_problem(request.url); !missing.empty()) {
        logger_->error("{} (yielded by the callback of {})", missing, response.url);
      }
      count_scheme_filtered(stats_, *logger_, response.url, request);
      return true;
    });
  }

 private:
  scheme_policy schemes_;
  stats& stats_;
  std::shared_ptr<spdlog::logger> logger_;
};

// Scrapy's RefererMiddleware (default policy without the https-to-http rule): a followed link
// carries the page it was found on.
class referer_middleware : public spider_middleware {
 public:
  void process_spider_output(const response& response, output& out) override {
    auto referer = std::string_view(response.url);
    referer = referer.substr(0, referer.find('#'));
    for (auto& request : out.requests) {
      if (find_header(request.headers, "Referer").empty()) {
        request.headers.emplace_back("Referer", referer);
      }
    }
  }
};

class url_length_middleware : public spider_middleware {
 public:
  url_length_middleware(const settings& settings, stats& stats)
      : stats_(stats),
        limit_(settings.get_int("URLLENGTH_LIMIT")),
        logger_(get_logger("urllength")) {}

  void process_spider_output(const response&, output& out) override { filter(out); }
  void process_start_requests(output& out) override { filter(out); }

 private:
  void filter(output& out) {
    if (limit_ <= 0) return;
    std::erase_if(out.requests, [this](const request& request) {
      if (std::int64_t(request.url.size()) <= limit_) return false;
      logger_->info("Ignoring link (url length > {}): {}", limit_, request.url);
      stats_.inc_value("urllength/request_ignored_count");
      return true;
    });
  }

  stats& stats_;
  std::int64_t limit_;
  std::shared_ptr<spdlog::logger> logger_;
};

// Scrapy's DepthMiddleware: depth = the response's depth + 1, DEPTH_PRIORITY, DEPTH_LIMIT.
class depth_middleware : public spider_middleware {
 public:
  depth_middleware(const settings& settings, stats& stats)
      : stats_(stats),
        limit_(settings.get_int("DEPTH_LIMIT")),
        priority_(settings.get_int("DEPTH_PRIORITY")),
        verbose_(settings.get_bool("DEPTH_STATS_VERBOSE")),
        logger_(get_logger("depth")) {}

  void process_start_requests(output& out) override {
    for (auto& request : out.requests) {
      if (!request.meta.contains("depth")) request.meta["depth"] = 0;
    }
    if (verbose_ && !out.requests.empty()) {
      stats_.inc_value("request_depth_count/0", std::int64_t(out.requests.size()));
    }
    stats_.max_value("request_depth_max", 0);
  }

  void process_spider_output(const response& response, output& out) override {
    auto depth = meta_int(response.meta(), "depth", 0) + 1;
    std::size_t kept = 0;
    std::erase_if(out.requests, [&](request& request) {
      request.meta["depth"] = depth;
      if (priority_) request.priority -= int(depth * priority_);
      if (limit_ > 0 && depth > limit_) {
        logger_->debug("Ignoring link (depth > {}): {}", limit_, request.url);
        return true;
      }
      ++kept;
      return false;
    });
    // Every request of the page has the same depth: the stats are told once, not once each.
    if (kept == 0) return;
    if (verbose_)
      stats_.inc_value("request_depth_count/" + std::to_string(depth), std::int64_t(kept));
    stats_.max_value("request_depth_max", depth);
  }

 private:
  stats& stats_;
  std::int64_t limit_;
  std::int64_t priority_;
  bool verbose_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace

// Each built-in under Scrapy's class path; its order is in the _BASE settings' defaults
// (config/settings.cpp), and its own switch (RETRY_ENABLED, ...) still holds.
void register_builtin_middlewares() {
  static const bool registered = [] {
    auto downloader = [](std::string name, component_factory<downloader_middleware> make) {
      register_component<downloader_middleware>("scrapy.downloadermiddlewares." + name,
                                                std::move(make));
    };
    auto spider = [](std::string name, component_factory<spider_middleware> make) {
      register_component<spider_middleware>("scrapy.spidermiddlewares." + name, std::move(make));
    };
    using made_downloader = std::unique_ptr<downloader_middleware>;
    using made_spider = std::unique_ptr<spider_middleware>;
    // Scrapy's, whose work the downloader and the engine do themselves (switched by their own
    // settings, or by null in DOWNLOADER_MIDDLEWARES: downloader.cpp, engine.cpp): named in a
    // Scrapy project's settings, they add nothing to the chain.
    for (const char* inside : {"robotstxt.RobotsTxtMiddleware",
                               "downloadtimeout.DownloadTimeoutMiddleware",
                               "ajaxcrawl.AjaxCrawlMiddleware",
                               "httpcompression.HttpCompressionMiddleware",
                               "cookies.CookiesMiddleware", "httpproxy.HttpProxyMiddleware",
                               "stats.DownloaderStats"}) {
      downloader(inside, [](crawl_context&) -> made_downloader { return nullptr; });
    }
    downloader("offsite.OffsiteMiddleware", [](crawl_context& crawl) -> made_downloader {
      return std::make_unique<offsite_redirect_middleware>(crawl.spider, crawl.stats);
    });
    downloader("httpauth.HttpAuthMiddleware", [](crawl_context& crawl) -> made_downloader {
      return std::make_unique<http_auth_middleware>(crawl.spider);
    });
    downloader("defaultheaders.DefaultHeadersMiddleware",
               [](crawl_context& crawl) -> made_downloader {
                 return std::make_unique<default_headers_middleware>(crawl.settings);
               });
    downloader("useragent.UserAgentMiddleware", [](crawl_context& crawl) -> made_downloader {
      return std::make_unique<user_agent_middleware>(crawl.settings);
    });
    downloader("retry.RetryMiddleware", [](crawl_context& crawl) -> made_downloader {
      if (!crawl.settings.get_bool("RETRY_ENABLED")) return nullptr;
      return std::make_unique<retry_middleware>(crawl.settings, crawl.stats);
    });
    // Responses come back through the chain in reverse: 3xx redirects (600) before meta
    // refreshes (580).
    downloader("redirect.MetaRefreshMiddleware", [](crawl_context& crawl) -> made_downloader {
      if (!crawl.settings.get_bool("METAREFRESH_ENABLED")) return nullptr;
      return std::make_unique<meta_refresh_middleware>(crawl.settings, crawl.stats);
    });
    downloader("redirect.RedirectMiddleware", [](crawl_context& crawl) -> made_downloader {
      if (!crawl.settings.get_bool("REDIRECT_ENABLED")) return nullptr;
      return std::make_unique<redirect_middleware>(crawl.settings, crawl.stats);
    });
    downloader("httpcache.HttpCacheMiddleware", [](crawl_context& crawl) -> made_downloader {
      if (!crawl.settings.get_bool("HTTPCACHE_ENABLED")) return nullptr;
      return std::make_unique<http_cache_middleware>(crawl.settings, crawl.stats, crawl.spider);
    });
    spider("httperror.HttpErrorMiddleware", [](crawl_context& crawl) -> made_spider {
      return std::make_unique<http_error_middleware>(crawl.settings, crawl.stats);
    });
    spider("offsite.OffsiteMiddleware", [](crawl_context& crawl) -> made_spider {
      return std::make_unique<offsite_middleware>(crawl.spider, crawl.stats);
    });
    spider("referer.RefererMiddleware", [](crawl_context& crawl) -> made_spider {
      if (!crawl.settings.get_bool("REFERER_ENABLED")) return nullptr;
      return std::make_unique<referer_middleware>();
    });
    spider("urllength.UrlLengthMiddleware", [](crawl_context& crawl) -> made_spider {
      return std::make_unique<url_length_middleware>(crawl.settings, crawl.stats);
    });
    spider("depth.DepthMiddleware", [](crawl_context& crawl) -> made_spider {
      return std::make_unique<depth_middleware>(crawl.settings, crawl.stats);
    });
    register_component<item_pipeline>(
        "scrapy.pipelines.files.FilesPipeline",
        [](crawl_context& crawl) -> std::unique_ptr<item_pipeline> {
          return std::make_unique<files_pipeline>(crawl, "FILES");
        });
    register_component<item_pipeline>(
        "scrapy.pipelines.images.ImagesPipeline",
        [](crawl_context& crawl) -> std::unique_ptr<item_pipeline> {
          return std::make_unique<files_pipeline>(crawl, "IMAGES");
        });
    // scrapy-redis's pipeline is REDIS_PIPELINE, which the fleet's scheduler runs
    // (scheduler_factory.cpp turns the one into the other): nothing to build here.
    register_component<item_pipeline>(
        "scrapy_redis.pipelines.RedisPipeline",
        [](crawl_context&) -> std::unique_ptr<item_pipeline> { return nullptr; });
    return true;
  }();
  (void)registered;
}

std::unique_ptr<spider_middleware> scheme_spider_middleware(const settings& settings,
                                                            stats& stats) {
  return std::make_unique<scheme_middleware>(scheme_policy(settings), stats);
}

}  // namespace crawler
