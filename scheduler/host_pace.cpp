#include "scheduler/host_pace.h"

#include <boost/url/parse.hpp>

namespace crawler {

std::string pacing_host(const request& request) {
  std::string host;
  if (auto slot = request.meta.find("download_slot");
      slot != request.meta.end() && slot->is_string()) {
    host = slot->get<std::string>();
  } else if (auto url = boost::urls::parse_uri(request.url)) {
    host = std::string(url->host());
    for (auto& c : host) {
      if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    }
  }
  std::string escaped;
  escaped.reserve(host.size());
  for (char c : host) {
    if (c == '|') {
      escaped += "%7C";
    } else {
      escaped += c;
    }
  }
  return escaped;
}

}  // namespace crawler
