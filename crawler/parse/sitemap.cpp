#include "crawler/parse/sitemap.h"

#include <zlib.h>

#include <algorithm>

#include "config/log.h"
#include "config/ascii.h"
#include "crawler/parse/detail/entities.h"
#include "crawler/parse/robots_txt.h"

namespace crawler {
namespace {

// Reads sitemap XML as a stream of tags, keeping only what it needs: the element names at the
// top three levels and the text of a <loc> being read. Memory does not grow with the sitemap
// (a 50 MB one would take over a gigabyte as a tree), nor with how deep it nests. Namespace
// prefixes are dropped, as Scrapy's Sitemap does ("<s:loc>" is a loc).
class sitemap_scanner {
 public:
  explicit sitemap_scanner(sitemap& out) : out_(out) {}

  /// Takes the next bytes of the document; they may end anywhere, even inside a tag.
  void feed(std::string_view bytes) {
    if (pending_.empty()) {
      pending_.append(bytes.substr(scan(bytes)));
    } else {
      pending_.append(bytes);
      pending_.erase(0, scan(pending_));
    }
    // A tag or a comment is never this long in a real sitemap: drop what cannot be one.
    if (pending_.size() > max_pending) pending_.clear();
  }

 private:
  static constexpr std::size_t max_pending = 1 << 20;
  static constexpr std::size_t max_loc = 64 << 10;  // far past any URL a crawl would keep

  // Scans complete markup of `text`; returns how many bytes were consumed.
  std::size_t scan(std::string_view text) {
    std::size_t at = 0;
    while (at < text.size()) {
      if (text[at] != '<') {
        auto next = text.find('<', at);
        if (next == std::string_view::npos) {
          append_loc(text.substr(at));
          return text.size();
        }
        append_loc(text.substr(at, next - at));
        at = next;
        continue;
      }
      auto rest = text.substr(at);
      std::string_view close;
      if (rest.starts_with("<!--")) {
        close = "-->";
      } else if (rest.starts_with("<![CDATA[")) {
        auto end = rest.find("]]>");
        if (end == std::string_view::npos) return at;
        // CDATA is literal: its '&' is escaped so that decoding the text gives it back.
        for (char c : rest.substr(9, end - 9)) {
          append_loc(c == '&' ? std::string_view("&amp;") : std::string_view(&c, 1));
        }
        at += end + 3;
        continue;
      } else {
        close = ">";
      }
      auto end = rest.find(close);
      if (end == std::string_view::npos) return at;  // the rest arrives with the next bytes
      if (close == ">") tag(rest.substr(1, end - 1));
      at += end + close.size();
    }
    return at;
  }

  void append_loc(std::string_view text) {
    if (in_loc_ && loc_text_.size() <= max_loc) loc_text_.append(text);
  }

  void tag(std::string_view inside) {
    if (inside.empty() || inside.front() == '?' || inside.front() == '!') return;
    bool closing = inside.front() == '/';
    if (closing) inside.remove_prefix(1);
    bool empty_element = !closing && inside.back() == '/';
    auto name_end = inside.find_first_of(" \t\r\n/");
    auto name = inside.substr(0, name_end);
    if (auto colon = name.find(':'); colon != std::string_view::npos) name.remove_prefix(colon + 1);
    if (closing) {
      if (depth_ == 3 && in_loc_) take_loc();
      if (depth_ == 2 && names_[0] == "urlset") take_url();
      if (depth_ > 0) --depth_;
      return;
    }
    ++depth_;
    if (depth_ <= 3) names_[depth_ - 1] = ascii_lower(name);
    if (depth_ == 3 && names_[0] == "urlset" && names_[1] == "url" && names_[2] == "link")
      take_alternate(inside.substr(std::min(inside.size(), name_end)));
    in_loc_ = depth_ == 3 && names_[2] == "loc" &&
              ((names_[0] == "urlset" && names_[1] == "url") ||
               (names_[0] == "sitemapindex" && names_[1] == "sitemap"));
    if (empty_element) {
      in_loc_ = false;
      --depth_;
    }
  }

  void take_loc() {
    in_loc_ = false;
    auto url = detail::decode_entities(loc_text_);
    loc_text_.clear();
    auto trimmed = trim_ascii_space(url);
    if (trimmed.empty() || trimmed.size() > max_loc) return;
    if (names_[0] == "urlset") {
      url_loc_ = std::string(trimmed);
    } else {
      out_.sitemaps.emplace_back(trimmed);
    }
  }

  // A <url> ends: its <loc>, wherever in it, with the links around it.
  void take_url() {
    if (!url_loc_.empty()) {
      out_.urls.push_back(std::move(url_loc_));
      out_.alternates.push_back(std::move(url_alternates_));
    }
    url_loc_.clear();
    url_alternates_.clear();
  }

  // The href of a <link> in a <url>, from the attributes after its name.
  void take_alternate(std::string_view attributes) {
    for (std::size_t at = 0; (at = attributes.find("href", at)) != std::string_view::npos;
         at += 4) {
      bool starts_name = at == 0 || is_ascii_space(attributes[at - 1]);
      auto rest = trim_ascii_space(attributes.substr(at + 4));
      if (!starts_name || !rest.starts_with('=')) continue;
      rest = trim_ascii_space(rest.substr(1));
      if (rest.empty() || (rest.front() != '"' && rest.front() != '\'')) return;
      auto end = rest.find(rest.front(), 1);
      if (end == std::string_view::npos) return;
      auto href = detail::decode_entities(rest.substr(1, end - 1));
      auto trimmed = trim_ascii_space(href);
      if (!trimmed.empty() && trimmed.size() <= max_loc) url_alternates_.emplace_back(trimmed);
      return;
    }
  }

  sitemap& out_;
  std::string pending_;
  std::size_t depth_ = 0;
  std::string names_[3];
  bool in_loc_ = false;
  std::string loc_text_;  // raw, entities and all, until </loc>
  std::string url_loc_;   // the <loc> of the <url> being read
  std::vector<std::string> url_alternates_;
};

// Inflates a gzip body chunk by chunk into the scanner, up to `max_size` bytes of XML.
void scan_gunzipped(std::string_view data, std::size_t max_size, sitemap_scanner& scanner) {
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 32) != Z_OK) return;
  char buffer[65536];
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  std::size_t inflated = 0;
  int status = Z_OK;
  while (status == Z_OK && inflated < max_size) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof buffer;
    status = inflate(&stream, Z_NO_FLUSH);
    std::size_t produced = std::min(sizeof buffer - stream.avail_out, max_size - inflated);
    inflated += produced;
    scanner.feed(std::string_view(buffer, produced));
    if (status == Z_BUF_ERROR && stream.avail_in == 0) break;
  }
  inflateEnd(&stream);
}

}  // namespace

sitemap read_sitemap(const response& page, std::size_t max_size) {
  sitemap result;
  if (std::string_view(page.url).ends_with("/robots.txt")) {
    robots_txt robots{page.body};
    for (const auto& url : robots.sitemaps()) {
      try {
        result.sitemaps.push_back(page.urljoin(url));
      } catch (const link_error& error) {
        get_logger("sitemap")->warn("Skipped a Sitemap line of {}: {}", page.url, error.what());
      }
    }
    return result;
  }
  bool gzipped = page.body.size() >= 2 && static_cast<unsigned char>(page.body[0]) == 0x1f &&
                 static_cast<unsigned char>(page.body[1]) == 0x8b;
  sitemap_scanner scanner(result);
  if (gzipped) {
    scan_gunzipped(page.body, max_size, scanner);
  } else {
    scanner.feed(page.body);
  }
  return result;
}

}  // namespace crawler
