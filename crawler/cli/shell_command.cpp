// `crawler shell [URL|FILE]`: Scrapy's shell for CSS selectors and XPath. A page is fetched
// through the downloader and middlewares, then each line read is a CSS selector or an XPath
// expression (its getall() is printed) or a command. On a terminal lines are edited and
// remembered with libedit; from a pipe they are read plainly, so a session can be scripted.
#include <editline/readline.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/file_writes.h"
#include "config/redact.h"
#include "crawler/cli/detail/commands.h"
#include "crawler/config_spider.h"
#include "crawler/crawl_spider.h"
#include "config/ascii.h"
#include "crawler/parse/selector.h"
#include "crawler/parse/selector_error.h"
#include "crawler/run_crawl.h"

namespace crawler::cli {
namespace {

constexpr const char* shell_help =
    R"(Type a CSS selector or an XPath expression to print what it selects, e.g.
  h1::text          a::attr(href)          div.quote span.text::text
  //h1/text()       //a/@href              normalize-space(//title)
or a command:
  links             the links the crawl file's rules (or a default link extractor) would follow
  fetch URL         load another page (a path to a file works too)
  headers           the response headers
  status            the response status
  url               the response URL
  view              write the page to a temporary file to open in a browser
  help              this text
  quit              leave (so does end of input)
)";

struct shell_options {
  std::string target;
  std::string config;
  std::vector<std::string> overrides;
  std::string log_level;
};

// One request, every status kept (a 404 is a page to look at too), its response or failure kept.
class page_spider : public spider {
 public:
  explicit page_spider(std::string url) : spider("shell"), url_(std::move(url)) {
    custom_settings["HTTPERROR_ALLOW_ALL"] = true;
    errback("failed", &page_spider::failed);
  }

  void start_requests(output& out) override {
    request request{url_};
    request.dont_filter = true;
    request.errback = "failed";
    out.request(std::move(request));
  }
  void parse(const response& response, output&) override { page = response; }
  void failed(const failure& failure, output&) { error = failure.type + ": " + failure.message; }

  std::optional<response> page;
  std::string error;

 private:
  std::string url_;
};

// Scrapy's shell guesses what a bare argument means: a file that exists, else a web address.
std::string url_for(const std::string& target) {
  if (target.find("://") != std::string::npos) return target;
  if (std::filesystem::exists(target)) {
    return "file://" + std::filesystem::absolute(target).lexically_normal().string();
  }
  return "http://" + target;
}

class shell {
 public:
  explicit shell(const shell_options& options) : options_(options) {
    if (!options.config.empty()) {
      auto config = load_crawl_config_file(options.config);
      file_settings_ = config.settings;
      spider_ = std::move(config.spider);
    }
  }

  void fetch(const std::string& target) {
    page_spider fetcher(url_for(target));
    if (spider_) fetcher.user_settings = spider_->user_settings;
    auto overrides = options_.overrides;
    // Quiet unless asked: the shell's own output is what the user reads.
    overrides.insert(overrides.begin(), {"LOG_LEVEL=WARNING", "PROGRESS=false"});
    if (!options_.log_level.empty()) overrides.push_back("LOG_LEVEL=" + options_.log_level);
    auto settings = settings_for(fetcher, overrides, file_settings_);
    crawl_options quiet;
    quiet.handle_signals = false;
    quiet.expects_items = false;
    run_crawl(fetcher, settings, std::move(quiet));
    if (!fetcher.page) {
      std::cerr << "fetch failed: " << url_for(target) << ": "
                << (fetcher.error.empty() ? "no response" : fetcher.error) << '\n';
      return;
    }
    page_ = std::move(fetcher.page);
    std::cout << "[" << page_->status << "] " << page_->url << " (" << page_->body.size()
              << " bytes)\n";
  }

  // Runs one line; false to leave.
  bool run(std::string_view line) {
    line = trim_ascii_space(line);
    if (line.empty()) return true;
    auto space = line.find(' ');
    auto command = line.substr(0, space);
    auto argument = space == std::string_view::npos ? std::string_view()
                                                    : trim_ascii_space(line.substr(space + 1));
    if (command == "quit" || command == "exit") return false;
    if (command == "help") {
      std::cout << shell_help;
    } else if (command == "fetch") {
      if (argument.empty()) {
        std::cerr << "fetch: give a URL\n";
      } else {
        fetch(std::string(argument));
      }
    } else if (!page_) {
      std::cerr << "no page yet: fetch URL first\n";
    } else if (command == "links" && argument.empty()) {
      links();
    } else if (command == "headers" && argument.empty()) {
      for (const auto& [name, value] : page_->headers) std::cout << name << ": " << value << '\n';
    } else if (command == "status" && argument.empty()) {
      std::cout << page_->status << '\n';
    } else if (command == "url" && argument.empty()) {
      std::cout << page_->url << '\n';
    } else if (command == "view" && argument.empty()) {
      view();
    } else {
      select(line);
    }
    std::cout.flush();
    return true;
  }

 private:
  void select(std::string_view query) {
    try {
      auto selected = looks_like_xpath(query) ? page_->xpath(query) : page_->css(query);
      std::cout << nlohmann::json(selected.getall()).dump() << '\n';
    } catch (const selector_error& error) {
      std::cerr << error.what() << '\n';
    } catch (const std::exception& error) {  // a page over HTML_MAX_SIZE or HTML_MAX_DEPTH
      std::cerr << page_->url << ": " << error.what() << '\n';
    }
  }

  // Each link once, with the rule that takes it: the first whose link extractor extracts it, as
  // the crawl follows it.
  void links() {
    auto* crawling = dynamic_cast<crawl_spider*>(spider_.get());
    if (!crawling || crawling->rules.empty()) {
      for (const auto& link : link_extractor().extract_links(*page_)) std::cout << link.url << '\n';
      return;
    }
    for (const auto& [index, link] : crawling->links_by_rule(*page_)) {
      const auto& callback = crawling->rules[index].callback;
      std::cout << link.url << "  [rule " << index << (callback.empty() ? "" : " " + callback)
                << "]\n";
    }
  }

  // Scrapy's view / open_in_browser: the body with a <base> so relative links and styles resolve.
  void view() {
    char path[] = "/tmp/crawler-view-XXXXXX.html";
    int fd = ::mkstemps(path, 5);
    if (fd < 0) {
      std::cerr << "view: cannot create a temporary file\n";
      return;
    }
    std::string body = page_->body;
    auto base = "<base href=\"" + page_->url + "\">";
    auto lower = ascii_lower(body.substr(0, std::min<std::size_t>(body.size(), 4096)));
    if (auto head = lower.find("<head"); head != std::string::npos) {
      body.insert(body.find('>', head) + 1, base);
    } else {
      body.insert(0, "<head>" + base + "</head>");
    }
    // Through the descriptor mkstemps opened: the name is never opened again.
    bool written = write_all(fd, body);
    ::close(fd);
    if (!written) {
      std::cerr << "view: cannot write " << path << ": " << std::strerror(errno) << '\n';
      return;
    }
    std::cout << path << "\nfile://" << path << '\n';
  }

  const shell_options& options_;
  nlohmann::json file_settings_ = nlohmann::json::object();
  std::unique_ptr<crawl_spider> spider_;
  std::optional<response> page_;
};

int run_shell(const shell_options& options) {
  shell session(options);
  if (!options.target.empty()) session.fetch(options.target);
  if (::isatty(STDIN_FILENO)) {
    std::cout << "crawler shell: a CSS selector or a command per line; \"help\" lists them\n";
    while (char* read = ::readline(">>> ")) {
      std::unique_ptr<char, decltype(&std::free)> line(read, &std::free);
      if (*read) ::add_history(read);
      if (!session.run(read)) break;
    }
  } else {
    std::string line;
    while (std::getline(std::cin, line) && session.run(line)) {
    }
  }
  return 0;
}

}  // namespace

void add_shell_command(CLI::App& app, int& exit_status) {
  auto options = std::make_shared<shell_options>();
  CLI::App* command = app.add_subcommand(
      "shell", "Fetch a page and try CSS or XPath selectors on it, a line at a time");
  command->add_option("url", options->target, "the page: a URL or a file");
  command->add_option("-c,--config", options->config, "a crawl file: its settings and rules");
  command->add_option("-s,--set", options->overrides, "setting override KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  command->add_option("-L,--loglevel", options->log_level, "log level (default WARNING)");
  command->callback([options, &exit_status] {
    try {
      exit_status = run_shell(*options);
    } catch (const std::exception& error) {
      std::cerr << "crawler shell: " << redact(error.what()) << '\n';
      exit_status = 2;
    }
  });
}

}  // namespace crawler::cli
