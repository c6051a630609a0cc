// A user's own `crawler` program: their spiders, every subcommand.
#include <crawler/cli/main.h>
#include <crawler/spider.h>

namespace {

class hello : public crawler::spider {
 public:
  hello() : spider("hello") {}
  void parse(const crawler::response& response, crawler::output& out) override {
    out.item({{"url", response.url}});
  }
};

}  // namespace

CRAWLER_REGISTER_SPIDER(hello, "The consumer's own spider");

int main(int argc, char** argv) { return crawler::cli::main(argc, argv); }
