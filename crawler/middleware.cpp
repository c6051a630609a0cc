#include "crawler/middleware.h"

#include <map>

namespace crawler {

downloader_middleware::~downloader_middleware() = default;
void downloader_middleware::process_request(request&) {}
std::optional<response> downloader_middleware::answer(const request&) {
  return std::nullopt;
}
std::optional<request> downloader_middleware::process_response(const request&, const response&) {
  return std::nullopt;
}
std::optional<request> downloader_middleware::process_exception(const request&,
                                                                const download_result&) {
  return std::nullopt;
}

spider_middleware::~spider_middleware() = default;
std::optional<failure> spider_middleware::process_spider_input(const response&) {
  return std::nullopt;
}
void spider_middleware::process_spider_output(const response&, output&) {}
void spider_middleware::process_start_requests(output&) {}

std::string status_message(int status) {
  static const std::map<int, const char*> phrases = {{100, "Continue"},
                                                     {200, "OK"},
                                                     {201, "Created"},
                                                     {202, "Accepted"},
                                                     {204, "No Content"},
                                                     {206, "Partial Content"},
                                                     {301, "Moved Permanently"},
                                                     {302, "Found"},
                                                     {303, "See Other"},
                                                     {304, "Not Modified"},
                                                     {307, "Temporary Redirect"},
                                                     {308, "Permanent Redirect"},
                                                     {400, "Bad Request"},
                                                     {401, "Unauthorized"},
                                                     {403, "Forbidden"},
                                                     {404, "Not Found"},
                                                     {405, "Method Not Allowed"},
                                                     {408, "Request Timeout"},
                                                     {410, "Gone"},
                                                     {429, "Too Many Requests"},
                                                     {500, "Internal Server Error"},
                                                     {501, "Not Implemented"},
                                                     {502, "Bad Gateway"},
                                                     {503, "Service Unavailable"},
                                                     {504, "Gateway Timeout"},
                                                     {522, "Unknown Status"},
                                                     {524, "Unknown Status"}};
  auto found = phrases.find(status);
  return std::to_string(status) + " " + (found == phrases.end() ? "Unknown Status" : found->second);
}

}  // namespace crawler
