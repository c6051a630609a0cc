// Downloading, against a real loopback HTTP server: retries, redirects and meta refresh, timeouts,
// size limits and compression, connection failures, credentials, proxies and cookies.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "crawl_fixture.h"
#include "redis_server.h"
#include "refusing_port.h"

namespace {

using namespace crawler::fixtures;

TEST(crawl, a_status_in_retry_http_codes_is_retried_until_it_succeeds) {
  http_server server;
  recording_spider spider({get(server.url("/flaky/a?fail=2"))});
  auto result = crawl(spider);
  ASSERT_EQ(spider.responses.size(), 1u);
  EXPECT_EQ(spider.responses[0].body, "recovered");
  EXPECT_EQ(stat(result, "retry/count"), 2);
  EXPECT_EQ(stat(result, "retry/reason_count/500 Internal Server Error"), 2);
  EXPECT_EQ(stat(result, "downloader/response_status_count/500"), 2);
  EXPECT_EQ(stat(result, "downloader/response_status_count/200"), 1);
  EXPECT_EQ(server.hits("/flaky/a?fail=2"), 3u);
}

TEST(crawl, retries_stop_at_retry_times_and_the_status_reaches_the_errback) {
  http_server server;
  recording_spider spider({get(server.url("/status/503"))});
  auto result = crawl(spider, {"RETRY_TIMES=1"});
  EXPECT_TRUE(spider.responses.empty());
  ASSERT_EQ(spider.failures.size(), 1u);
  EXPECT_EQ(spider.failures[0].type, "HttpError");
  EXPECT_EQ(stat(result, "retry/max_reached"), 1);
  EXPECT_EQ(stat(result, "downloader/request_count"), 2);
  EXPECT_EQ(stat(result, "httperror/response_ignored_status_count/503"), 1);
}

TEST(crawl, a_redirect_chain_is_followed_through_the_scheduler) {
  http_server server;
  recording_spider spider({get(server.url("/redirect/3"))});
  auto result = crawl(spider);
  ASSERT_EQ(spider.responses.size(), 1u);
  EXPECT_EQ(spider.responses[0].url, server.url("/redirect/0"));
  EXPECT_EQ(spider.responses[0].body, "arrived");
  EXPECT_EQ(spider.responses[0].meta()["redirect_times"], 3);
  EXPECT_EQ(stat(result, "downloader/response_status_count/302"), 3);
  EXPECT_EQ(stat(result, "scheduler/enqueued"), 4);  // the start request and three targets
}

// As Scrapy's download handlers: an HTTP response's url is what the server was asked for, without
// the fragment (so `$url` and response.url name the page once, whichever #anchor led to it), while
// a file's keeps what was requested; the request itself keeps its fragment.
TEST(crawl, an_http_responses_url_leaves_the_fragment_out_and_a_files_keeps_it) {
  http_server server;
  temp_dir dir;
  std::ofstream(dir.path() / "page.html") << "<p>here</p>";
  auto file = "file://" + (dir.path() / "page.html").string() + "#here";
  recording_spider spider({get(server.url("/redirect/0#part")), get(file)});
  crawl(spider);
  ASSERT_EQ(spider.responses.size(), 2u);
  std::map<std::string, std::string> requested;
  for (const auto& response : spider.responses) requested[response.url] = response.request.url;
  EXPECT_EQ(requested,
            (std::map<std::string, std::string>{
                {server.url("/redirect/0"), server.url("/redirect/0#part")}, {file, file}}));
}

// As Scrapy's RedirectMiddleware: a 302 or 303 turns a POST into a GET without its body, while a
// 301, 307 or 308 repeats the request as it was; a HEAD stays a HEAD whatever the status.
TEST(crawl, a_redirect_keeps_the_method_and_body_unless_302_or_303_turns_them_into_a_get) {
  http_server server;
  auto moved = [&](int status, const char* method) {
    auto request = get(server.url("/moved/" + std::to_string(status) + "?to=/echo"));
    request.method = method;
    if (request.method == "POST") request.body = "a=1";
    request.dont_filter = true;
    return request;
  };
  recording_spider spider({moved(301, "POST"), moved(302, "POST"), moved(303, "POST"),
                           moved(307, "POST"), moved(308, "POST"), moved(302, "HEAD")});
  crawl(spider, {"CONCURRENT_REQUESTS=1"});
  std::map<std::string, int> arrived;  // "METHOD BODY" (or the HEAD's method) -> how many
  for (const auto& response : spider.responses) {
    auto method = std::string(response.header("X-Method"));
    ++arrived[method == "HEAD" ? method : std::string(response.text())];
  }
  EXPECT_EQ(arrived, (std::map<std::string, int>{{"POST a=1", 3}, {"GET ", 2}, {"HEAD", 1}}));
}

// METAREFRESH_ENABLED (on, as in Scrapy): a page whose <meta http-equiv="refresh"> points
// elsewhere within METAREFRESH_MAXDELAY seconds is followed as a redirect, "meta refresh" among
// its redirect_reasons; a longer delay is not, nor a refresh to a scheme the page may not reach.
TEST(crawl, a_meta_refresh_is_followed_as_a_redirect_within_metarefresh_maxdelay) {
  http_server server(
      {.pages = {
           {"/soon",
            R"(<html><head><meta http-equiv="refresh" content="2; url=/s?wd=soon"></head>)"},
           {"/late", R"(<meta http-equiv="refresh" content="200; url=/s?wd=late">)"},
           // METAREFRESH_MAXDELAY (100) itself is not within it: Scrapy follows a delay below it.
           {"/at_max", R"(<meta http-equiv="refresh" content="100; url=/s?wd=at_max">)"},
           {"/local", R"(<meta http-equiv="refresh" content="0; url=file:///etc/passwd">)"},
           {"/noscript",
            R"(<noscript><meta http-equiv="refresh" content="0; url=/s?wd=js"></noscript>)"}}});
  std::vector<crawler::request> start{get(server.url("/soon")), get(server.url("/late")),
                                      get(server.url("/at_max")), get(server.url("/local"))};
  recording_spider spider(start);
  auto result = crawl(spider, {"CONCURRENT_REQUESTS=1", "SCHEDULER_MEMORY_QUEUE=fifo"});
  std::map<std::string, nlohmann::json> reached;
  for (const auto& response : spider.responses) reached[response.url] = response.meta();
  ASSERT_EQ(reached.size(), 3u) << testing::PrintToString(spider.responses.size());
  auto soon = reached.at(server.url("/s?wd=soon"));
  EXPECT_EQ(soon["redirect_reasons"], nlohmann::json::array({"meta refresh"}));
  EXPECT_EQ(soon["redirect_urls"], nlohmann::json::array({server.url("/soon")}));
  EXPECT_TRUE(reached.contains(server.url("/late")));  // 200 s: past METAREFRESH_MAXDELAY
  EXPECT_EQ(server.hits("/s?wd=late"), 0u);
  EXPECT_TRUE(reached.contains(server.url("/at_max")));
  EXPECT_EQ(server.hits("/s?wd=at_max"), 0u);
  ASSERT_EQ(spider.failures.size(), 1u);  // file:// from an http page: refused, as a 302 would be
  EXPECT_EQ(spider.failures[0].request.url, server.url("/local"));
  EXPECT_EQ(stat(result, "scheme/filtered"), 1);

  // METAREFRESH_IGNORE_TAGS: a refresh inside <noscript> is for browsers without scripts.
  recording_spider ignoring({get(server.url("/noscript"))});
  crawl(ignoring, {R"(METAREFRESH_IGNORE_TAGS=["noscript"])"});
  EXPECT_EQ(server.hits("/s?wd=js"), 0u);
  recording_spider following({get(server.url("/noscript"))});
  crawl(following);
  EXPECT_EQ(server.hits("/s?wd=js"), 1u);

  recording_spider unrefreshed({get(server.url("/soon"))});
  crawl(unrefreshed, {"METAREFRESH_ENABLED=false"});
  ASSERT_EQ(unrefreshed.responses.size(), 1u);
  EXPECT_EQ(unrefreshed.responses[0].url, server.url("/soon"));
  EXPECT_EQ(server.hits("/s?wd=soon"), 1u);
}

// As Scrapy's MetaRefreshMiddleware, each of its reasons alone leaves a refresh unfollowed: the
// request's meta dont_redirect, or a response that is not HTML (here application/xml). The same
// refresh in an HTML page asked for plainly is followed.
TEST(crawl, a_meta_refresh_is_not_followed_with_dont_redirect_or_from_a_page_that_is_not_html) {
  const std::string refresh = R"(<meta http-equiv="refresh" content="0; url=/s?wd=)";
  http_server server({.pages = {{"/html", refresh + R"(from-html">)"},
                                {"/held", refresh + R"(held">)"},
                                {"/feed.xml", refresh + R"(from-xml">)"}}});
  auto held = get(server.url("/held"));
  held.meta["dont_redirect"] = true;
  recording_spider spider({get(server.url("/html")), held, get(server.url("/feed.xml"))});
  crawl(spider);
  EXPECT_EQ(server.hits("/s?wd=from-html"), 1u);
  EXPECT_EQ(server.hits("/s?wd=held"), 0u);
  EXPECT_EQ(server.hits("/s?wd=from-xml"), 0u);
  std::set<std::string> reached;
  for (const auto& response : spider.responses) reached.insert(response.url);
  EXPECT_EQ(reached, (std::set<std::string>{server.url("/s?wd=from-html"), server.url("/held"),
                                            server.url("/feed.xml")}));
}

TEST(crawl, a_redirect_loop_ends_at_the_dupefilter) {
  http_server server;
  recording_spider spider({get(server.url("/loop/a"))});
  auto result = crawl(spider);
  EXPECT_TRUE(spider.responses.empty());
  EXPECT_EQ(stat(result, "dupefilter/filtered"), 1);
  EXPECT_EQ(server.hits("/loop/a"), 1u);
  EXPECT_EQ(server.hits("/loop/b"), 1u);
}

TEST(crawl, an_unfiltered_redirect_loop_stops_at_redirect_max_times) {
  http_server server;
  auto start = get(server.url("/loop/a"));
  start.dont_filter = true;
  recording_spider spider({start});
  crawl(spider, {"REDIRECT_MAX_TIMES=5"});
  ASSERT_EQ(spider.failures.size(), 1u);
  EXPECT_EQ(spider.failures[0].type, "IgnoreRequest");
  EXPECT_EQ(spider.failures[0].message, "max redirections reached");
  EXPECT_EQ(server.hits("/loop/a") + server.hits("/loop/b"), 6u);
}

// Eight slow pages at once, then twelve quick ones one at a time, then eight slow ones at once.
struct eight_then_one_then_eight : crawler::spider {
  static constexpr int chain = 12;
  explicit eight_then_one_then_eight(const http_server& server)
      : spider("eight_then_one_then_eight"), server(server) {}
  void start_requests(crawler::output& out) override { wave(out, "a"); }
  void parse(const crawler::response&, crawler::output& out) override {
    ++responses;
    if (responses >= 8 && responses < 8 + chain) {
      out.request(get(server.url("/echo?step=" + std::to_string(responses))));
    } else if (responses == 8 + chain) {
      wave(out, "b");
    }
  }
  void wave(crawler::output& out, const std::string& name) {
    for (int i = 0; i < 8; ++i) {
      out.request(get(server.url("/slow?ms=200&wave=" + name + "&i=" + std::to_string(i))));
    }
  }
  const http_server& server;
  int responses = 0;
};

// Scrapy's connection pool keeps a connection alive while it is idle; curl's own cache shrinks
// to four connections per transfer under way, so a crawl that ran one transfer for a while
// reconnected to a site it had eight connections to (a fleet worker between takes did, every
// fourth page).
TEST(crawl, connections_stay_open_for_reuse_while_fewer_transfers_run) {
  http_server server;
  eight_then_one_then_eight spider(server);
  crawl(spider, {"CONCURRENT_REQUESTS=8", "CONCURRENT_REQUESTS_PER_DOMAIN=8"});
  EXPECT_EQ(spider.responses, 8 + eight_then_one_then_eight::chain + 8);
  EXPECT_EQ(server.connections_accepted(), 8u);
}

// A connection curl keeps between transfers stays watched while idle. Over one connection, to a
// host reached by name (through curl's resolver, whose own sockets come and go), a run of GETs
// and then POSTs of bodies larger than the socket takes at once (curl waits to write on a
// connection that went idle) each arrive whole, none waiting out DOWNLOAD_TIMEOUT.
TEST(crawl, one_kept_connection_carries_gets_and_then_posts_larger_than_a_send_buffer) {
  http_server server;
  auto named = "http://localhost:" + std::to_string(server.port());
  std::vector<crawler::request> start;
  for (int i = 0; i < 20; ++i) start.push_back(get(named + "/echo?get=" + std::to_string(i)));
  for (int i = 0; i < 3; ++i) {
    auto post = get(named + "/echo?post=" + std::to_string(i));
    post.method = "POST";
    post.body = std::string(900'000, char('a' + i));
    start.push_back(post);
  }
  recording_spider spider(start);
  auto result = crawl(spider, {"CONCURRENT_REQUESTS=1", "SCHEDULER_MEMORY_QUEUE=fifo",
                               "DOWNLOAD_TIMEOUT=30", "RETRY_ENABLED=false"});
  ASSERT_EQ(spider.responses.size(), 23u) << spider.failures.size();
  std::map<std::string, std::string> bodies;
  for (const auto& response : spider.responses) bodies[response.url] = response.text();
  for (int i = 0; i < 20; ++i) EXPECT_EQ(bodies[named + "/echo?get=" + std::to_string(i)], "GET ");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(bodies[named + "/echo?post=" + std::to_string(i)],
              "POST " + std::string(900'000, char('a' + i)));
  }
  EXPECT_EQ(server.connections_accepted(), 1u);
  EXPECT_EQ(stat(result, "downloader/response_count"), 23);
}

// The server answers after 3 s: a TimeoutError says DOWNLOAD_TIMEOUT cut the download before,
// with no bound on the wall time the crawl took.
TEST(crawl, a_slow_response_times_out_after_download_timeout) {
  http_server server;
  recording_spider spider({get(server.url("/slow?ms=3000"))});
  auto result = crawl(spider, {"DOWNLOAD_TIMEOUT=0.3", "RETRY_ENABLED=false"});
  ASSERT_EQ(spider.failures.size(), 1u);
  EXPECT_EQ(spider.failures[0].type, "TimeoutError");
  EXPECT_NE(spider.failures[0].message.find("took too long"), std::string::npos)
      << spider.failures[0].message;
  EXPECT_EQ(stat(result, "downloader/exception_type_count/TimeoutError"), 1);
  EXPECT_EQ(spider.responses.size(), 0u);
}

// A server that takes the TCP connection (the kernel's backlog does) and never answers the TLS
// handshake: the connection phase, which DNS_TIMEOUT bounds as it bounds the name lookup in it.
TEST(crawl, a_connection_that_cannot_be_set_up_times_out_after_dns_timeout) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), length), 0);
  ASSERT_EQ(::listen(listener, 8), 0);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  recording_spider spider(
      {get("https://127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + "/")});
  crawl(spider, {"DNS_TIMEOUT=0.3", "DOWNLOAD_TIMEOUT=30", "RETRY_ENABLED=false"});
  ::close(listener);
  ASSERT_EQ(spider.failures.size(), 1u);
  EXPECT_EQ(spider.failures[0].type, "TimeoutError");
  // The connection phase's timeout, not DOWNLOAD_TIMEOUT's ("Operation timed out after 30000
  // milliseconds"): no bound on the wall time is needed to tell them apart.
  EXPECT_NE(spider.failures[0].message.find("connection timeout"), std::string::npos)
      << spider.failures[0].message;
}

TEST(crawl, timeouts_are_retried) {
  http_server server;
  recording_spider spider({get(server.url("/slow?ms=3000"))});
  auto result = crawl(spider, {"DOWNLOAD_TIMEOUT=0.2", "RETRY_TIMES=2"});
  EXPECT_EQ(stat(result, "retry/reason_count/TimeoutError"), 2);
  EXPECT_EQ(stat(result, "retry/max_reached"), 1);
  EXPECT_EQ(server.hits("/slow?ms=3000"), 3u);
}

TEST(crawl, a_body_larger_than_download_maxsize_is_cancelled) {
  http_server server;
  recording_spider spider({get(server.url("/big?bytes=300000"))});
  auto result = crawl(spider, {"DOWNLOAD_MAXSIZE=100000"});
  EXPECT_TRUE(spider.responses.empty());
  ASSERT_EQ(spider.failures.size(), 1u);
  EXPECT_EQ(spider.failures[0].type, "CancelledError");
  EXPECT_EQ(stat(result, "retry/count"), 0);
}

TEST(crawl, a_large_body_under_the_limit_arrives_whole) {
  http_server server;
  recording_spider spider({get(server.url("/big?bytes=5000000"))});
  crawl(spider);
  ASSERT_EQ(spider.responses.size(), 1u);
  EXPECT_EQ(spider.responses[0].body.size(), 5000000u);
}

TEST(crawl, gzip_bodies_are_decoded) {
  http_server server;
  recording_spider spider({get(server.url("/gzip"))});
  crawl(spider);
  ASSERT_EQ(spider.responses.size(), 1u);
  EXPECT_EQ(spider.responses[0].body, "<html><body>compressed page</body></html>");
}

TEST(crawl, a_gzip_bomb_is_cut_off_at_download_maxsize_after_decompression) {
  http_server server;
  recording_spider spider({get(server.url("/bomb?mb=64"))});
  auto result = crawl(spider, {"DOWNLOAD_MAXSIZE=1048576"});
  EXPECT_TRUE(spider.responses.empty());
  ASSERT_EQ(spider.failures.size(), 1u);
  EXPECT_EQ(spider.failures[0].type, "CancelledError");
  EXPECT_EQ(stat(result, "downloader/exception_type_count/CancelledError"), 1);
}

// fetch's body_limit: a body of exactly the limit comes whole; one byte more is cut at the limit
// and flagged "truncated", with its status and headers, where DOWNLOAD_MAXSIZE (the smaller of
// the two wins) cancels the download. A gzip body is cut as it is decompressed.
TEST(downloader, a_body_past_its_limit_is_cut_there_and_flagged_unless_download_maxsize_cancels_it) {
  http_server server({.pages = {{"/thousand", std::string(1000, 'x')}}});
  struct fetched {
    std::size_t body_size = 0;
    bool truncated = false;
    std::string error;
  };
  auto fetch = [&](const std::string& path, std::size_t body_limit, std::int64_t maxsize) {
    boost::asio::io_context io;
    crawler::settings settings;
    settings.set("DOWNLOAD_MAXSIZE", maxsize);
    crawler::stats stats;
    crawler::downloader downloader(io.get_executor(), settings, stats);
    fetched out;
    bool done = false;
    downloader.fetch(
        get(server.url(path)),
        [&](crawler::download_result result) {
          done = true;
          out.error = result.error_type;
          if (!result.response) return;
          EXPECT_EQ(result.response->status, 200);
          out.body_size = result.response->body.size();
          const auto& flags = result.response->flags;
          out.truncated = std::find(flags.begin(), flags.end(), "truncated") != flags.end();
        },
        body_limit);
    while (!done) io.run_one();
    return out;
  };
  auto whole = fetch("/thousand", 1000, 0);
  EXPECT_EQ(whole.body_size, 1000u);
  EXPECT_FALSE(whole.truncated);
  auto cut = fetch("/thousand", 999, 0);
  EXPECT_EQ(cut.error, "");
  EXPECT_EQ(cut.body_size, 999u);
  EXPECT_TRUE(cut.truncated);
  EXPECT_EQ(fetch("/thousand", 999, 500).error, "CancelledError");
  auto under_maxsize = fetch("/thousand", 999, 2000);
  EXPECT_EQ(under_maxsize.body_size, 999u);
  EXPECT_TRUE(under_maxsize.truncated);
  EXPECT_EQ(fetch("/thousand", 0, 0).body_size, 1000u);  // 0: no limit
  auto bomb = fetch("/bomb?mb=64", 4096, 0);
  EXPECT_EQ(bomb.body_size, 4096u);
  EXPECT_TRUE(bomb.truncated);
}

TEST(crawl, a_reset_connection_is_retried_then_reported) {
  http_server server;
  recording_spider spider({get(server.url("/reset"))});
  auto result = crawl(spider, {"RETRY_TIMES=1"});
  ASSERT_EQ(spider.failures.size(), 1u);
  EXPECT_TRUE(spider.failures[0].type == "ConnectionLost" ||
              spider.failures[0].type == "ResponseNeverReceived")
      << spider.failures[0].type;
  EXPECT_EQ(stat(result, "retry/count"), 1);
  EXPECT_EQ(server.hits("/reset"), 2u);
}

TEST(crawl, a_refused_connection_is_an_error_not_a_silent_drop) {
  crawler::fixtures::refusing_port refusing;
  recording_spider spider({get("http://127.0.0.1:" + std::to_string(refusing.port()) + "/")});
  auto result = crawl(spider, {"RETRY_ENABLED=false"});
  ASSERT_EQ(spider.failures.size(), 1u);
  EXPECT_EQ(spider.failures[0].type, "ConnectionRefusedError");
  EXPECT_EQ(stat(result, "log_count/ERROR"), 1);
}

// Spider arguments http_user / http_pass send Basic credentials, as Scrapy's HttpAuthMiddleware:
// to http_auth_domain, or without it to the first request's host only (a link to another host
// must not carry them); an empty http_auth_domain sends them everywhere.
TEST(crawl, http_user_and_pass_authenticate_to_http_auth_domain_only) {
  http_server server;
  auto elsewhere = "http://localhost:" + std::to_string(server.port()) + "/auth";
  auto statuses = [&](std::optional<std::string> domain) {
    recording_spider spider({get(server.url("/auth")), get(elsewhere)});
    spider.set_argument("http_user", "user");
    spider.set_argument("http_pass", "pass");
    if (domain) spider.set_argument("http_auth_domain", *domain);
    crawl(spider, {"CONCURRENT_REQUESTS=1", "SCHEDULER_MEMORY_QUEUE=fifo", "RETRY_ENABLED=false"});
    std::map<std::string, int> by_url;
    for (const auto& response : spider.responses) by_url[response.url] = response.status;
    for (const auto& failure : spider.failures) {
      by_url[failure.request.url] = failure.response ? failure.response->status : -1;
    }
    return by_url;
  };
  auto first_host = statuses(std::nullopt);
  EXPECT_EQ(first_host[server.url("/auth")], 200);
  EXPECT_EQ(first_host[elsewhere], 401);
  auto named = statuses("localhost");
  EXPECT_EQ(named[server.url("/auth")], 401);
  EXPECT_EQ(named[elsewhere], 200);
  auto everywhere = statuses("");
  EXPECT_EQ(everywhere[server.url("/auth")], 200);
  EXPECT_EQ(everywhere[elsewhere], 200);
}

// The Authorization header is RFC 4648 base64 of user:pass whatever its length: padded with two
// "=", one, or none (the expected values are Python's base64.b64encode).
TEST(crawl, http_credentials_of_every_length_are_sent_as_padded_base64) {
  http_server server;
  for (const auto& [user, pass, basic] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"ab", "c", "YWI6Yw=="}, {"ab", "cd", "YWI6Y2Q="}, {"ab", "cde", "YWI6Y2Rl"}}) {
    recording_spider spider({get(server.url("/auth?basic=" + basic))});
    spider.set_argument("http_user", user);
    spider.set_argument("http_pass", pass);
    crawl(spider, {"RETRY_ENABLED=false"});
    ASSERT_EQ(spider.responses.size(), 1u) << user << ":" << pass;
    EXPECT_EQ(spider.responses[0].body, "welcome") << user << ":" << pass;
  }
}

// HTTPPROXY_ENABLED (on): meta["proxy"], with its credentials, or the http_proxy environment
// variable routes a request through a proxy; off, neither is used. The target host does not
// exist: only the proxy can answer for it.
TEST(crawl, requests_go_through_meta_proxy_or_http_proxy_unless_httpproxy_enabled_is_false) {
  http_server proxy;
  const std::string target = "http://site.invalid/page?x=1";
  auto bodies = [&](crawler::request request, std::vector<std::string> settings) {
    recording_spider spider({std::move(request)});
    crawl(spider, std::move(settings));
    std::vector<std::string> out;
    for (const auto& response : spider.responses) out.push_back(response.body);
    for (const auto& failure : spider.failures) out.push_back("failed: " + failure.type);
    return out;
  };
  auto with_meta = get(target);
  with_meta.meta["proxy"] = "http://user:s3cret@127.0.0.1:" + std::to_string(proxy.port());
  EXPECT_EQ(bodies(with_meta, {}),
            std::vector<std::string>{"proxied " + target + " with Basic dXNlcjpzM2NyZXQ="});
  EXPECT_EQ(proxy.hits(target), 1u);

  setenv("http_proxy", proxy.url("").c_str(), 1);
  auto from_environment = bodies(get(target), {});
  auto disabled =
      bodies(with_meta, {"HTTPPROXY_ENABLED=false", "RETRY_ENABLED=false", "DOWNLOAD_TIMEOUT=5"});
  unsetenv("http_proxy");
  EXPECT_EQ(from_environment, std::vector<std::string>{"proxied " + target});
  ASSERT_EQ(disabled.size(), 1u);
  EXPECT_TRUE(disabled[0].starts_with("failed: ")) << disabled[0];
  EXPECT_EQ(proxy.hits(target), 2u);
}

TEST(crawl, cookies_set_by_one_response_go_with_the_next_request) {
  http_server server;
  // One at a time, oldest first: /cookie/set answers before /cookie/check leaves.
  recording_spider with({get(server.url("/cookie/set")), get(server.url("/cookie/check"))});
  auto with_result = crawl(with, {"CONCURRENT_REQUESTS=1", "SCHEDULER_MEMORY_QUEUE=fifo"});
  EXPECT_EQ(stat(with_result, "downloader/response_status_count/200"), 2);

  recording_spider without({get(server.url("/cookie/set")), get(server.url("/cookie/check"))});
  auto without_result = crawl(
      without, {"CONCURRENT_REQUESTS=1", "SCHEDULER_MEMORY_QUEUE=fifo", "COOKIES_ENABLED=false"});
  EXPECT_EQ(stat(without_result, "downloader/response_status_count/403"), 1);
}

// Scrapy turns a built-in off with null in DOWNLOADER_MIDDLEWARES: the middlewares whose work the
// downloader does here are turned off the same way (cookies: none kept; robots.txt: not asked
// for), and the two nothing here can do without are refused by name.
TEST(crawl, null_for_a_scrapy_downloader_middleware_turns_off_what_it_does_here) {
  http_server server({.robots_txt = "User-agent: *\nDisallow: /cookie/\n"});
  auto without = [](const std::string& middleware) {
    return "DOWNLOADER_MIDDLEWARES={\"scrapy.downloadermiddlewares." + middleware + "\": null}";
  };
  recording_spider no_cookies({get(server.url("/cookie/set")), get(server.url("/cookie/check"))});
  auto result = crawl(no_cookies, {"CONCURRENT_REQUESTS=1", "SCHEDULER_MEMORY_QUEUE=fifo",
                                   without("cookies.CookiesMiddleware")});
  EXPECT_EQ(stat(result, "downloader/response_status_count/403"), 1);

  recording_spider raw({get(server.url("/gzip"))});
  crawl(raw, {without("httpcompression.HttpCompressionMiddleware")});
  ASSERT_EQ(raw.responses.size(), 1u);
  EXPECT_TRUE(raw.responses[0].body.starts_with("\x1f\x8b")) << "decoded all the same";

  http_server proxy;
  auto proxied = get("http://site.invalid/page");
  proxied.meta["proxy"] = proxy.url("");
  recording_spider no_proxy({proxied});
  crawl(no_proxy,
        {without("httpproxy.HttpProxyMiddleware"), "RETRY_ENABLED=false", "DOWNLOAD_TIMEOUT=5"});
  EXPECT_TRUE(no_proxy.responses.empty());
  EXPECT_EQ(proxy.total_hits(), 0u);
  recording_spider through_proxy({proxied});  // the same request, the middleware left on
  crawl(through_proxy);
  EXPECT_EQ(proxy.total_hits(), 1u);

  recording_spider no_robots({get(server.url("/cookie/set"))});
  crawl(no_robots, {"ROBOTSTXT_OBEY=true", without("robotstxt.RobotsTxtMiddleware")});
  EXPECT_EQ(server.hits("/robots.txt"), 0u);
  EXPECT_EQ(no_robots.responses.size(), 1u);
  recording_spider obeying({get(server.url("/cookie/set"))});
  crawl(obeying, {"ROBOTSTXT_OBEY=true"});
  EXPECT_EQ(server.hits("/robots.txt"), 1u);
  EXPECT_TRUE(obeying.responses.empty());

  for (const auto& [middleware, why] : std::vector<std::pair<std::string, std::string>>{
           {"downloadtimeout.DownloadTimeoutMiddleware",
            "every download has DOWNLOAD_TIMEOUT (meta download_timeout)"},
           {"stats.DownloaderStats", "the downloader/ stats are always kept"}}) {
    recording_spider refused({get(server.url("/s?wd=1"))});
    try {
      crawl(refused, {without(middleware)});
      ADD_FAILURE() << middleware << " turned off";
    } catch (const crawler::settings_error& error) {
      EXPECT_EQ(std::string(error.what()),
                "DOWNLOADER_MIDDLEWARES[\"scrapy.downloadermiddlewares." + middleware +
                    "\"]: null cannot turn it off here: " + why);
    }
  }
  EXPECT_EQ(server.hits("/s?wd=1"), 0u);
}

// Scrapy's sessions: each meta "cookiejar" key has a jar of its own (1 and "1" are two keys), the
// crawl's own jar is a third, and meta "dont_merge_cookies" sends none and keeps none.
TEST(crawl, each_cookiejar_sees_only_its_own_cookies_and_dont_merge_cookies_uses_none) {
  http_server server;
  auto in_jar = [&](std::string target, nlohmann::json jar, bool dont_merge = false) {
    auto request = get(server.url(target));
    if (!jar.is_null()) request.meta["cookiejar"] = jar;
    if (dont_merge) request.meta["dont_merge_cookies"] = true;
    return request;
  };
  recording_spider spider({in_jar("/cookie/set?v=one", 1), in_jar("/cookie/set?v=two", "two"),
                           in_jar("/cookie/echo?n=1", 1), in_jar("/cookie/echo?n=2", "two"),
                           in_jar("/cookie/echo?n=3", nullptr), in_jar("/cookie/echo?n=4", 1, true),
                           in_jar("/cookie/set?v=three", 1, true), in_jar("/cookie/echo?n=5", 1),
                           in_jar("/cookie/echo?n=6", "1")});
  auto result = crawl(spider, {"CONCURRENT_REQUESTS=1", "SCHEDULER_MEMORY_QUEUE=fifo"});
  std::map<std::string, std::string> sent;
  for (const auto& response : spider.responses) sent[response.url] = response.body;
  EXPECT_EQ(sent[server.url("/cookie/echo?n=1")], "session=one");
  EXPECT_EQ(sent[server.url("/cookie/echo?n=2")], "session=two");
  EXPECT_EQ(sent[server.url("/cookie/echo?n=3")], "");
  EXPECT_EQ(sent[server.url("/cookie/echo?n=4")], "");
  EXPECT_EQ(sent[server.url("/cookie/echo?n=5")], "session=one");  // "three" was not kept
  EXPECT_EQ(sent[server.url("/cookie/echo?n=6")], "");
  EXPECT_EQ(stat(result, "cookies/jars_created"), 3);
}

// Scrapy's Request.cookies: sent, and kept in the request's jar for later requests to its host;
// one for another domain is refused, and dont_merge_cookies sends none of them.
TEST(crawl, a_requests_own_cookies_are_sent_and_kept_in_its_jar) {
  http_server server;
  auto with_cookies = [&](std::string target, nlohmann::json cookies, nlohmann::json meta = {}) {
    auto request = get(server.url(target));
    request.cookies = std::move(cookies);
    if (meta.is_object()) request.meta = std::move(meta);
    return request;
  };
  recording_spider spider(
      {with_cookies("/cookie/echo?n=1", {{"lang", "fr"}}),
       with_cookies("/cookie/echo?n=2", nlohmann::json::object()),
       with_cookies("/cookie/echo?n=3",
                    {{{"name", "k"}, {"value", "v"}, {"domain", "elsewhere.example"}}}),
       with_cookies("/cookie/echo?n=4", {{"x", "y"}}, {{"dont_merge_cookies", true}}),
       with_cookies("/cookie/echo?n=5", {{"s", 1}}, {{"cookiejar", 7}}),
       with_cookies("/cookie/echo?n=6", nlohmann::json::object())});
  crawl(spider, {"CONCURRENT_REQUESTS=1", "SCHEDULER_MEMORY_QUEUE=fifo"});
  std::map<std::string, std::string> sent;
  for (const auto& response : spider.responses) sent[response.url] = response.body;
  EXPECT_EQ(sent[server.url("/cookie/echo?n=1")], "lang=fr");
  EXPECT_EQ(sent[server.url("/cookie/echo?n=2")], "lang=fr");  // kept in the crawl's jar
  EXPECT_EQ(sent[server.url("/cookie/echo?n=3")], "lang=fr");  // not k=v: not this host's
  EXPECT_EQ(sent[server.url("/cookie/echo?n=4")], "");
  EXPECT_EQ(sent[server.url("/cookie/echo?n=5")], "s=1");  // jar 7 has only its own
  EXPECT_EQ(sent[server.url("/cookie/echo?n=6")], "lang=fr");
}

// COOKIES_MAX_JARS: a new session beyond the limit takes the place of the least recently used.
TEST(crawl, a_cookiejar_past_cookies_max_jars_drops_the_least_recently_used_one) {
  http_server server;
  auto in_jar = [&](std::string target, int jar) {
    auto request = get(server.url(target));
    request.meta["cookiejar"] = jar;
    return request;
  };
  recording_spider spider({in_jar("/cookie/set?v=a", 1), in_jar("/cookie/set?v=b", 2),
                           in_jar("/cookie/echo?n=1", 1), in_jar("/cookie/echo?n=2", 2)});
  auto result =
      crawl(spider, {"CONCURRENT_REQUESTS=1", "SCHEDULER_MEMORY_QUEUE=fifo", "COOKIES_MAX_JARS=2"});
  std::map<std::string, std::string> sent;
  for (const auto& response : spider.responses) sent[response.url] = response.body;
  EXPECT_EQ(sent[server.url("/cookie/echo?n=1")], "session=a");
  EXPECT_EQ(sent[server.url("/cookie/echo?n=2")], "session=b");
  EXPECT_EQ(stat(result, "cookies/jars_dropped"), 0);

  recording_spider limited({in_jar("/cookie/set?v=a", 1), in_jar("/cookie/set?v=b", 2),
                            in_jar("/cookie/echo?n=1", 1), in_jar("/cookie/echo?n=2", 2)});
  result = crawl(limited,
                 {"CONCURRENT_REQUESTS=1", "SCHEDULER_MEMORY_QUEUE=fifo", "COOKIES_MAX_JARS=1"});
  sent.clear();
  for (const auto& response : limited.responses) sent[response.url] = response.body;
  EXPECT_EQ(sent[server.url("/cookie/echo?n=1")], "");  // jar 1 made room for jar 2, and again
  EXPECT_EQ(stat(result, "cookies/jars_dropped"), 3);
}

}  // namespace
