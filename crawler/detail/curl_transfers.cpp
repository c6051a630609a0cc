#include "crawler/detail/curl_transfers.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cmath>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "config/ascii.h"
#include "config/log.h"
#include "config/redact.h"
#include "request/http_syntax.h"

namespace crawler::detail {
namespace {

namespace asio = boost::asio;

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct transfer {
  CURL* easy = nullptr;
  crawler::request request;
  transfer_done done;
  std::string body;
  header_list headers;
  std::string protocol;
  int status = 0;
  curl_slist* header_fields = nullptr;
  char error[CURL_ERROR_SIZE] = {};
  std::size_t maxsize = 0;
  std::size_t warnsize = 0;
  std::size_t body_limit = 0;
  bool warned = false;
  bool too_big = false;
  bool cut = false;  // stopped at body_limit: nobody reads past it
  std::shared_ptr<spdlog::logger> logger;
  std::string jar;  // the meta "cookiejar" key whose jar it uses; "" for the crawl's own or none

  ~transfer() { curl_slist_free_all(header_fields); }
};

struct socket_watch {
  explicit socket_watch(const asio::any_io_executor& executor) : descriptor(executor) {}
  asio::posix::stream_descriptor descriptor;
  int wanted = 0;
  bool reading = false;
  bool writing = false;
  bool removed = false;
};

// The URL a response of `requested` carries: an HTTP response's without the fragment (the part
// the server never saw), as Scrapy's HTTP/1.1 handler makes it from urldefrag(request.url); a
// file's as requested, as Scrapy's file handler keeps it.
std::string url_of_response(const std::string& requested) {
  auto scheme_end = requested.find(':');
  auto scheme = ascii_lower(requested.substr(0, scheme_end == std::string::npos ? 0 : scheme_end));
  if (scheme != "http" && scheme != "https") return requested;
  return requested.substr(0, requested.find('#'));
}

// Scrapy's names for download failures, so stats and retry reasons read as they do in Scrapy.
const char* error_type(CURLcode code) {
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return "TimeoutError";
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return "DNSLookupError";
    case CURLE_COULDNT_CONNECT:
      return "ConnectionRefusedError";
    case CURLE_GOT_NOTHING:
      return "ResponseNeverReceived";
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return "ConnectionLost";
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
      return "SSLError";
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
      return "NotSupported";
    case CURLE_FILE_COULDNT_READ_FILE:
      return "FileNotFoundError";
    case CURLE_BAD_CONTENT_ENCODING:
      return "DecodingError";
    default:
      return "DownloadError";
  }
}

}  // namespace

struct curl_transfers::state : std::enable_shared_from_this<state> {
  state(asio::any_io_executor executor_, stats& stats_)
      : executor(executor_), stats(stats_), timer(executor_), logger(get_logger("downloader")) {}

  asio::any_io_executor executor;
  crawler::stats& stats;
  using clock = asio::steady_timer::clock_type;
  asio::steady_timer timer;
  bool timer_waiting = false;  // a wait on `timer` is pending
  bool expiry_posted = false;  // an expire() for a 0 ms timeout is queued on the loop
  std::optional<clock::time_point> deadline;  // curl's timeout, if it wants one
  std::shared_ptr<spdlog::logger> logger;
  CURLM* multi = nullptr;
  CURLSH* share = nullptr;       // DNS, and the crawl's cookie jar when cookies are on
  CURLSH* no_cookies = nullptr;  // DNS only: dont_merge_cookies, or cookies off
  bool closed = false;
  bool cookies = false;
  // The jars meta "cookiejar" names (by its JSON text), as Scrapy's CookiesMiddleware keeps them;
  // at most max_jars, the least recently used idle one dropped to make room.
  struct cookie_jar {
    CURLSH* share = nullptr;
    std::size_t transfers = 0;  // using it now: it stays while they run
    std::uint64_t last_used = 0;
  };
  std::map<std::string, cookie_jar, std::less<>> jars;
  std::uint64_t jar_uses = 0;
  std::size_t max_jars = 0;
  std::unordered_map<curl_socket_t, std::shared_ptr<socket_watch>> watches;
  // Sockets curl opened for a connection: each is closed through on_close_socket, so its watch
  // may outlive a transfer. Others (the threaded resolver's socket pair) curl closes itself.
  std::unordered_set<curl_socket_t> connections;
  std::unordered_map<CURL*, std::unique_ptr<transfer>> transfers;
  std::vector<CURL*> idle_handles;

  void open(bool share_cookies, std::size_t jar_limit, std::size_t kept_connections) {
    cookies = share_cookies;
    max_jars = jar_limit;
    global_init();
    multi = curl_multi_init();
    share = curl_share_init();
    no_cookies = share_cookies ? curl_share_init() : share;
    if (!multi || !share || !no_cookies)
      throw std::runtime_error("libcurl: cannot create a multi handle");
    // A share with cookies turns on one cookie jar for every transfer of the crawl that uses it.
    if (share_cookies) curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_COOKIE);
    curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    if (no_cookies != share) curl_share_setopt(no_cookies, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, &state::on_socket);
    curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, &state::on_timer);
    curl_multi_setopt(multi, CURLMOPT_TIMERDATA, this);
    // curl's own default keeps 4 connections per transfer under way, so a crawl that runs fewer
    // transfers for a moment (a fleet worker between takes, a host frontier waiting for a turn)
    // closed the connections it was about to need again: a fleet worker reconnected to its site
    // every fourth page. A fixed size keeps them.
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, long(kept_connections));
  }

  void close() {
    if (closed) return;
    closed = true;
    timer.cancel();
    for (auto& [easy, t] : transfers) {
      curl_multi_remove_handle(multi, easy);
      curl_easy_cleanup(easy);
    }
    transfers.clear();
    for (auto* easy : idle_handles) curl_easy_cleanup(easy);
    idle_handles.clear();
    curl_multi_cleanup(multi);  // closes cached connections through on_close_socket
    for (auto& [fd, watch] : watches) drop(*watch);
    watches.clear();
    for (auto& [key, jar] : jars) curl_share_cleanup(jar.share);
    jars.clear();
    if (no_cookies != share) curl_share_cleanup(no_cookies);
    curl_share_cleanup(share);
  }

  // The share `t`'s request uses, and whether its cookie engine is on: the crawl's jar, the one
  // its meta "cookiejar" names, or none for meta "dont_merge_cookies" (Scrapy's meaning: nothing
  // from a jar is sent, nothing the response sets is kept).
  std::pair<CURLSH*, bool> share_for(transfer& t) {
    const auto& meta = t.request.meta;
    if (!cookies) return {no_cookies, false};
    auto dont_merge = meta.find("dont_merge_cookies");
    if (dont_merge != meta.end() && dont_merge->is_boolean() && dont_merge->get<bool>())
      return {no_cookies, false};
    auto named = meta.find("cookiejar");
    if (named == meta.end() || named->is_null()) return {share, true};
    t.jar = named->dump();
    auto found = jars.find(t.jar);
    if (found == jars.end()) {
      if (jars.size() >= max_jars) drop_idlest_jar();
      cookie_jar jar;
      jar.share = curl_share_init();
      if (!jar.share) return {no_cookies, false};
      curl_share_setopt(jar.share, CURLSHOPT_SHARE, CURL_LOCK_DATA_COOKIE);
      curl_share_setopt(jar.share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
      found = jars.emplace(t.jar, jar).first;
      stats.inc_value("cookies/jars_created");
    }
    ++found->second.transfers;
    found->second.last_used = ++jar_uses;
    return {found->second.share, true};
  }

  // Puts the request's own cookies (Scrapy's Request.cookies) in the jar `easy` uses, for the
  // request's host (or the domain a cookie names, when the host is in it) and the directory of
  // its path (or the path a cookie names), as Python's cookiejar would store them.
  void add_request_cookies(CURL* easy, const crawler::request& r) {
    CURLU* parsed = curl_url();
    char* host = nullptr;
    char* path = nullptr;
    if (curl_url_set(parsed, CURLUPART_URL, r.url.c_str(), 0) == CURLUE_OK) {
      curl_url_get(parsed, CURLUPART_HOST, &host, 0);
      curl_url_get(parsed, CURLUPART_PATH, &path, 0);
    }
    std::string request_host = host ? host : "", request_path = path ? path : "/";
    curl_free(host);
    curl_free(path);
    curl_url_cleanup(parsed);
    if (request_host.empty()) return;
    auto directory = request_path.substr(0, request_path.rfind('/'));
    if (directory.empty()) directory = "/";
    auto text = [](const nlohmann::json& v) {
      return v.is_string() ? v.get<std::string>() : v.dump();
    };
    auto add = [&](const std::string& name, const std::string& value, std::string domain,
                   std::string cookie_path, bool secure) {
      // A cookie is a line of tab-separated fields: nothing in it may break the line.
      for (const std::string* field :
           std::initializer_list<const std::string*>{&name, &value, &domain, &cookie_path}) {
        if (field->find_first_of("\t\r\n") != std::string::npos) {
          logger->warn("Cookie {} of {} not sent: it holds a tab or a line break",
                       quoted_for_log(name, 60), r.describe());
          return;
        }
      }
      bool subdomains = false;
      if (domain.empty()) {
        domain = request_host;
      } else {
        subdomains = true;
        if (domain.starts_with('.')) domain.erase(0, 1);
        bool matches = ascii_lower(request_host) == ascii_lower(domain) ||
                       ascii_lower(request_host).ends_with("." + ascii_lower(domain));
        if (!matches) {
          logger->warn("Cookie {} of {} not sent: its domain {} is not the request's host's",
                       quoted_for_log(name, 60), r.describe(), quoted_for_log(domain, 100));
          return;
        }
      }
      auto line = (subdomains ? "." : "") + domain + "\t" + (subdomains ? "TRUE" : "FALSE") + "\t" +
                  (cookie_path.empty() ? directory : cookie_path) + "\t" +
                  (secure ? "TRUE" : "FALSE") + "\t0\t" + name + "\t" + value;
      curl_easy_setopt(easy, CURLOPT_COOKIELIST, line.c_str());
    };
    if (r.cookies.is_object()) {
      for (const auto& [name, value] : r.cookies.items()) add(name, text(value), "", "", false);
    } else if (r.cookies.is_array()) {
      for (const auto& cookie : r.cookies) {
        if (!cookie.is_object() || !cookie.contains("name") || !cookie.contains("value")) continue;
        add(text(cookie["name"]), text(cookie["value"]), cookie.value("domain", ""),
            cookie.value("path", ""), cookie.value("secure", false));
      }
    }
  }

  // Makes room for a new jar: the least recently used one no transfer uses goes, its cookies
  // with it. When every jar is in use the limit gives way until one is free.
  void drop_idlest_jar() {
    auto idlest = jars.end();
    for (auto it = jars.begin(); it != jars.end(); ++it) {
      if (it->second.transfers == 0 &&
          (idlest == jars.end() || it->second.last_used < idlest->second.last_used))
        idlest = it;
    }
    if (idlest == jars.end()) return;
    logger->debug("Dropping the cookie jar {} (COOKIES_MAX_JARS = {} reached)", idlest->first,
                  max_jars);
    curl_share_cleanup(idlest->second.share);
    jars.erase(idlest);
    stats.inc_value("cookies/jars_dropped");
  }

  // Gives `easy` back to the idle handles, out of its transfer's named jar (which a handle still
  // attached to would keep from being dropped).
  void release_handle(CURL* easy, transfer& t) {
    if (!t.jar.empty()) {
      curl_easy_setopt(easy, CURLOPT_SHARE, nullptr);
      if (auto found = jars.find(t.jar); found != jars.end()) --found->second.transfers;
      t.jar.clear();
    }
    idle_handles.push_back(easy);
  }

  static void drop(socket_watch& watch) {
    watch.removed = true;
    boost::system::error_code ignored;
    watch.descriptor.cancel(ignored);
    watch.descriptor.release();
  }

  void forget(curl_socket_t fd) {
    auto found = watches.find(fd);
    if (found == watches.end()) return;
    drop(*found->second);
    watches.erase(found);
  }

  // Wants nothing more of a kept connection, without letting it go: its registration with the
  // reactor stays for the next transfer, as it stays while one transfer's wants change (a wait
  // still pending acts once, and curl ignores a socket it wants nothing of).
  void idle(curl_socket_t fd) {
    if (auto found = watches.find(fd); found != watches.end()) found->second->wanted = 0;
  }

  static int on_socket(CURL*, curl_socket_t fd, int what, void* userp, void*) {
    auto* self = static_cast<state*>(userp);
    if (what == CURL_POLL_REMOVE) {
      // A connection curl keeps for the next transfer stays watched, idle: forgetting it and
      // watching it again cost two epoll_ctl and an ioctl a page on a loaded machine (where
      // the next transfer is not yet queued), over a third of the crawl thread's system calls.
      if (self->connections.contains(fd)) {
        self->idle(fd);
      } else {
        self->forget(fd);
      }
      return 0;
    }
    auto& watch = self->watches[fd];
    if (!watch) {
      watch = std::make_shared<socket_watch>(self->executor);
      boost::system::error_code error;
      watch->descriptor.assign(fd, error);
      if (error) {
        self->logger->error("cannot watch socket {}: {}", fd, error.message());
        self->watches.erase(fd);
        return -1;
      }
    }
    watch->wanted = what;
    self->arm(fd, watch);
    return 0;
  }

  void arm(curl_socket_t fd, const std::shared_ptr<socket_watch>& watch) {
    if (closed || watch->removed) return;
    if ((watch->wanted & CURL_POLL_IN) && !watch->reading) wait(fd, watch, false);
    if ((watch->wanted & CURL_POLL_OUT) && !watch->writing) wait(fd, watch, true);
  }

  // One wait for readiness; when it fires curl acts on the socket and the wait is re-armed for
  // whatever curl wants by then.
  void wait(curl_socket_t fd, const std::shared_ptr<socket_watch>& watch, bool write) {
    (write ? watch->writing : watch->reading) = true;
    watch->descriptor.async_wait(
        write ? asio::posix::stream_descriptor::wait_write
              : asio::posix::stream_descriptor::wait_read,
        [self = shared_from_this(), watch, fd, write](boost::system::error_code error) {
          (write ? watch->writing : watch->reading) = false;
          if (error || watch->removed || self->closed) return;
          self->act(fd, write ? CURL_CSELECT_OUT : CURL_CSELECT_IN);
          self->arm(fd, watch);
        });
  }

  // curl asks for a new timeout whenever a transfer is added or ends. Re-arming the Asio timer
  // each time costs a timerfd_settime system call (11% of a links-only crawl's CPU), so the
  // deadline curl wants is only recorded: a 0 ms timeout is posted to the loop, and the timer is
  // re-armed only for a deadline earlier than its pending wait. A wait that fires before curl's
  // deadline (which has moved later meanwhile) waits again; one that fires after curl withdrew
  // its timeout does nothing.
  static int on_timer(CURLM*, long timeout_ms, void* userp) {
    auto* self = static_cast<state*>(userp);
    if (self->closed) return 0;
    if (timeout_ms < 0) {
      self->deadline.reset();
      return 0;
    }
    // curl must not be re-entered from this callback; even a 0 ms timeout goes through the loop.
    self->deadline = clock::now() + std::chrono::milliseconds(timeout_ms);
    if (timeout_ms == 0) {
      if (!self->expiry_posted) {
        self->expiry_posted = true;
        asio::post(self->executor, [weak = self->weak_from_this()] {
          auto self = weak.lock();
          if (!self) return;
          self->expiry_posted = false;
          self->expire();
        });
      }
    } else if (!self->timer_waiting || self->timer.expiry() > *self->deadline) {
      self->wait_until(*self->deadline);
    }
    return 0;
  }

  void wait_until(clock::time_point when) {
    timer_waiting = true;
    timer.expires_at(when);  // a pending wait ends with operation_aborted
    timer.async_wait([weak = weak_from_this()](boost::system::error_code error) {
      auto self = weak.lock();
      if (error == asio::error::operation_aborted || !self) return;
      self->timer_waiting = false;
      self->expire();
    });
  }

  // Runs curl's timeout if it is due, or waits for it if it moved later.
  void expire() {
    if (closed || !deadline) return;
    if (*deadline > clock::now()) {
      if (!timer_waiting || timer.expiry() > *deadline) wait_until(*deadline);
      return;
    }
    deadline.reset();
    act(CURL_SOCKET_TIMEOUT, 0);
  }

  static curl_socket_t on_open_socket(void* clientp, curlsocktype, curl_sockaddr* address) {
    auto fd = ::socket(address->family, address->socktype, address->protocol);
    if (fd == CURL_SOCKET_BAD) return fd;
    auto* self = static_cast<state*>(clientp);
    self->forget(fd);  // a watch left on the number by a socket closed without on_close_socket
    self->connections.insert(fd);
    return fd;
  }

  static int on_close_socket(void* clientp, curl_socket_t fd) {
    auto* self = static_cast<state*>(clientp);
    self->forget(fd);
    self->connections.erase(fd);
    return ::close(fd);
  }

  static std::size_t on_body(char* data, std::size_t size, std::size_t count, void* userp) {
    auto* t = static_cast<transfer*>(userp);
    auto bytes = size * count;
    if (t->maxsize && t->body.size() + bytes > t->maxsize) {
      t->too_big = true;
      return 0;  // aborts the transfer with CURLE_WRITE_ERROR
    }
    if (t->body_limit && t->body.size() + bytes > t->body_limit) {
      // Decompressed as it comes: a gzip bomb stops here, not at DOWNLOAD_MAXSIZE.
      t->body.append(data, t->body_limit - t->body.size());
      t->cut = true;
      return 0;
    }
    t->body.append(data, bytes);
    if (t->warnsize && !t->warned && t->body.size() > t->warnsize) {
      t->warned = true;
      t->logger->warn("Received more bytes than download warn size ({}) in request {}.",
                      t->warnsize, t->request.describe());
    }
    return bytes;
  }

  static std::size_t on_header(char* data, std::size_t size, std::size_t count, void* userp) {
    auto* t = static_cast<transfer*>(userp);
    std::string_view line(data, size * count);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    if (line.starts_with("HTTP/")) {
      // A new status line: an earlier one was a 100 Continue or a proxy's CONNECT answer.
      t->headers.clear();
      t->protocol = std::string(line.substr(0, line.find(' ')));
    } else if (auto colon = line.find(':'); colon != std::string_view::npos) {
      auto value = line.substr(colon + 1);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
        value.remove_prefix(1);
      t->headers.emplace_back(line.substr(0, colon), value);
    }
    return size * count;
  }

  CURL* take_handle() {
    CURL* easy;
    if (idle_handles.empty()) {
      easy = curl_easy_init();
      if (!easy) return nullptr;
    } else {
      easy = idle_handles.back();
      idle_handles.pop_back();
      // libcurl 7.88's curl_easy_reset drops the cookie file list without freeing it (curl
      // issue 10694); clearing it first keeps a long crawl from leaking one list per transfer.
      if (cookies) curl_easy_setopt(easy, CURLOPT_COOKIEFILE, nullptr);
      curl_easy_reset(easy);
    }
    return easy;
  }

  void start(crawler::request request, const transfer_options& options, transfer_done done) {
    auto t = std::make_unique<transfer>();
    t->request = std::move(request);
    t->done = std::move(done);
    t->maxsize = options.maxsize;
    t->warnsize = options.warnsize;
    t->body_limit = options.body_limit;
    t->logger = logger;
    // Whatever made the request (a queue entry, a setting, spider code, a middleware), a CR or
    // LF never reaches the connection: it would end a header and start the sender's own.
    if (auto problem = request_syntax_problem(t->request); !problem.empty()) {
      auto message = t->request.describe() + " not sent: " + problem;
      return fail_now(std::move(t), "ValueError", std::move(message));
    }
    auto* easy = t->easy = take_handle();
    if (!easy) {
      return fail_now(std::move(t), "DownloadError", "libcurl: cannot create a handle");
    }
    const auto& r = t->request;
    curl_easy_setopt(easy, CURLOPT_URL, r.url.c_str());
    curl_easy_setopt(easy, CURLOPT_PRIVATE, t.get());
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &state::on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, t.get());
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &state::on_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, t.get());
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, t->error);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, &state::on_open_socket);
    curl_easy_setopt(easy, CURLOPT_OPENSOCKETDATA, this);
    curl_easy_setopt(easy, CURLOPT_CLOSESOCKETFUNCTION, &state::on_close_socket);
    curl_easy_setopt(easy, CURLOPT_CLOSESOCKETDATA, this);
    auto [jar_share, cookie_engine] = share_for(*t);
    curl_easy_setopt(easy, CURLOPT_SHARE, jar_share);
    // "" reads no file: it turns on the cookie engine, whose jar the share holds.
    if (cookie_engine) curl_easy_setopt(easy, CURLOPT_COOKIEFILE, "");
    if (cookie_engine && !r.cookies.empty()) add_request_cookies(easy, r);
    // Whatever the URL says, curl speaks only the crawl's schemes, and never follows a redirect
    // itself (the redirect middleware does, through the scheduler); should it ever, only to
    // http(s).
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, options.protocols.c_str());
    curl_easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
    // meta "download_timeout" comes from spider code: keep it within what curl can count.
    double timeout_seconds = std::isfinite(options.timeout_seconds)
                                 ? std::clamp(options.timeout_seconds, 0.001, 86400.0)
                                 : 180.0;
    auto timeout_ms = static_cast<long>(timeout_seconds * 1000);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout_ms);
    double connect_seconds = std::clamp(options.connect_timeout_seconds, 0.001, timeout_seconds);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connect_seconds * 1000));
    // Scrapy does not verify certificates: a crawler wants the page, whoever signed it.
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
    if (options.compression) curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");
    if (options.maxsize) {
      curl_easy_setopt(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(options.maxsize));
    }
    if (!options.proxy_enabled) {
      curl_easy_setopt(easy, CURLOPT_PROXY, "");
    } else if (auto proxy = r.meta.find("proxy"); proxy != r.meta.end() && proxy->is_string()) {
      const auto& proxy_url = proxy->get_ref<const std::string&>();
      remember_url_secrets(proxy_url);  // curl's messages may quote the proxy
      curl_easy_setopt(easy, CURLOPT_PROXY, proxy_url.c_str());
    }
    if (r.method == "HEAD") {
      curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
    } else if (r.method != "GET" || !r.body.empty()) {
      if (r.method != "POST") curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, r.method.c_str());
      curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(r.body.size()));
      curl_easy_setopt(easy, CURLOPT_COPYPOSTFIELDS, r.body.c_str());
    }
    for (const auto& [name, value] : r.headers) {
      // "Name;" is curl's spelling of a header sent with an empty value.
      auto field = value.empty() ? name + ";" : name + ": " + value;
      t->header_fields = curl_slist_append(t->header_fields, field.c_str());
    }
    t->header_fields = curl_slist_append(t->header_fields, "Expect:");
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, t->header_fields);

    if (auto code = curl_multi_add_handle(multi, easy); code != CURLM_OK) {
      return fail_now(std::move(t), "DownloadError", curl_multi_strerror(code));
    }
    transfers.emplace(easy, std::move(t));
  }

  // Completes a transfer that never reached curl, through the loop like every other completion.
  void fail_now(std::unique_ptr<transfer> t, std::string type, std::string message) {
    download_result result{std::move(t->request)};
    result.error_type = std::move(type);
    result.error_message = std::move(message);
    if (t->easy) release_handle(t->easy, *t);
    asio::post(executor, [done = std::move(t->done), result = std::move(result)]() mutable {
      done(std::move(result), 0.0);
    });
  }

  void act(curl_socket_t fd, int events) {
    int running = 0;
    curl_multi_socket_action(multi, fd, events, &running);
    collect_finished();
  }

  void collect_finished() {
    int pending = 0;
    while (CURLMsg* message = curl_multi_info_read(multi, &pending)) {
      if (message->msg != CURLMSG_DONE) continue;
      finish(message->easy_handle, message->data.result);
      if (closed) return;
    }
  }

  void finish(CURL* easy, CURLcode code) {
    auto found = transfers.find(easy);
    if (found == transfers.end()) return;
    auto t = std::move(found->second);
    transfers.erase(found);
    curl_multi_remove_handle(multi, easy);

    download_result result{std::move(t->request)};
    long request_size = 0, header_size = 0, status = 0;
    curl_off_t first_byte_us = 0;
    curl_easy_getinfo(easy, CURLINFO_REQUEST_SIZE, &request_size);
    curl_easy_getinfo(easy, CURLINFO_HEADER_SIZE, &header_size);
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(easy, CURLINFO_STARTTRANSFER_TIME_T, &first_byte_us);
    result.request_bytes = std::size_t(request_size);
    if (code == CURLE_OK || t->cut) {
      crawler::response response;
      response.url = url_of_response(result.request.url);
      response.status = status == 0 ? 200 : int(status);  // file:// has no status
      response.headers = std::move(t->headers);
      response.body = std::move(t->body);
      response.protocol = std::move(t->protocol);
      response.request = result.request;
      if (t->cut) response.flags.push_back("truncated");
      result.response_bytes = std::size_t(header_size) + response.body.size();
      result.response = std::move(response);
    } else if (t->too_big || code == CURLE_FILESIZE_EXCEEDED) {
      result.error_type = "CancelledError";
      result.error_message = "Cancelling download of " + result.request.url +
                             ": response size larger than download max size (" +
                             std::to_string(t->maxsize) + ")";
      logger->warn("{}.", result.error_message);
    } else {
      result.error_type = error_type(code);
      result.error_message = t->error[0] ? t->error : curl_easy_strerror(code);
      if (code == CURLE_OPERATION_TIMEDOUT) {
        result.error_message =
            "Getting " + result.request.url + " took too long: " + result.error_message;
      }
    }
    release_handle(easy, *t);
    t->done(std::move(result), double(first_byte_us) / 1e6);
  }

  std::vector<crawler::request> abort_all() {
    std::vector<crawler::request> requests;
    for (auto& [easy, t] : transfers) {
      curl_multi_remove_handle(multi, easy);
      release_handle(easy, *t);
      requests.push_back(std::move(t->request));
    }
    transfers.clear();
    return requests;
  }
};

curl_transfers::curl_transfers(asio::any_io_executor executor, stats& stats, bool cookies,
                               std::size_t max_jars, std::size_t kept_connections)
    : state_(std::make_shared<state>(executor, stats)) {
  state_->open(cookies, max_jars, kept_connections);
}

curl_transfers::~curl_transfers() {
  state_->close();
}

void curl_transfers::start(request request, const transfer_options& options, transfer_done done) {
  state_->start(std::move(request), options, std::move(done));
}

std::vector<request> curl_transfers::abort_all() {
  return state_->abort_all();
}

}  // namespace crawler::detail
