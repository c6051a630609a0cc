#include "crawler/parse/link_extractor.h"

#include <algorithm>
#include <boost/url/parse.hpp>
#include <unordered_set>

#include "config/ascii.h"
#include "crawler/parse/plain_url.h"
#include "crawler/parse/regex.h"
#include "request/canonical_url.h"

namespace crawler {
namespace {

std::vector<std::string> lower_all(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& value : values) out.push_back(ascii_lower(value));
  return out;
}

std::vector<std::shared_ptr<const re2::RE2>> compile(const std::vector<std::string>& patterns,
                                                     const char* option) {
  std::vector<std::shared_ptr<const re2::RE2>> compiled;
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    try {
      compiled.push_back(compile_regex(patterns[i]));
    } catch (const std::invalid_argument& error) {
      throw std::invalid_argument(std::string(option) + "[" + std::to_string(i) +
                                  "]: " + error.what());
    }
  }
  return compiled;
}

// What `unique` compares, as Scrapy 2.8: the canonical URL with its fragment kept, so
// "b?y=1&x=2" and "b?x=2&y=1" are one link and "a.html" and "a.html#x" two.
std::string unique_key(const std::string& url, bool canonical_already) {
  if (canonical_already) return url;
  try {
    auto hash = url.find('#');
    auto key = dedup::canonicalize_url(url);
    if (hash != std::string::npos) key.append(url, hash);
    return key;
  } catch (const dedup::url_error&) {
    return url;
  }
}

}  // namespace

bool host_in_domains(std::string_view host, const std::vector<std::string>& domains) {
  for (const auto& domain : domains) {
    if (host == domain || (host.size() > domain.size() && host.ends_with(domain) &&
                           host[host.size() - domain.size() - 1] == '.')) {
      return true;
    }
  }
  return false;
}

const std::vector<std::string>& ignored_extensions() {
  static const std::vector<std::string> extensions = {
      // archives
      "7z", "7zip", "bz2", "rar", "tar", "tar.gz", "xz", "zip",
      // images
      "mng", "pct", "bmp", "gif", "jpg", "jpeg", "png", "pst", "psp", "tif", "tiff", "ai", "drw",
      "dxf", "eps", "ps", "svg", "cdr", "ico", "webp",
      // audio
      "mp3", "wma", "ogg", "wav", "ra", "aac", "mid", "au", "aiff",
      // video
      "3gp", "asf", "asx", "avi", "mov", "mp4", "mpg", "qt", "rm", "swf", "wmv", "m4a", "m4v",
      "flv", "webm",
      // office suites
      "xls", "xlsx", "ppt", "pptx", "pps", "doc", "docx", "odt", "ods", "odg", "odp",
      // other
      "css", "pdf", "exe", "bin", "rss", "dmg", "iso", "apk"};
  return extensions;
}

link_extractor::link_extractor(link_extractor_options options)
    : options_(std::move(options)),
      allow_(compile(options_.allow, "allow")),
      deny_(compile(options_.deny, "deny")),
      tags_(lower_all(options_.tags)),
      attrs_(lower_all(options_.attrs)) {
  options_.allow_domains = lower_all(options_.allow_domains);
  options_.deny_domains = lower_all(options_.deny_domains);
  if (!options_.deny_extensions) options_.deny_extensions = ignored_extensions();
  for (auto& extension : *options_.deny_extensions) {
    extension = ascii_lower(extension);
    if (extension.starts_with('.')) extension.erase(0, 1);
  }
  for (std::size_t i = 0; i < options_.restrict_css.size(); ++i) {
    try {
      validate_selector(options_.restrict_css[i]);
    } catch (const selector_error& error) {
      throw std::invalid_argument("restrict_css[" + std::to_string(i) + "]: " + error.what());
    }
  }
  for (std::size_t i = 0; i < options_.restrict_xpaths.size(); ++i) {
    try {
      validate_xpath(options_.restrict_xpaths[i]);
    } catch (const selector_error& error) {
      throw std::invalid_argument("restrict_xpaths[" + std::to_string(i) + "]: " + error.what());
    }
  }
}

bool link_extractor::matches(std::string_view url) const {
  std::string scheme, host, path;
  if (auto plain = split_plain_url(url)) {  // most links: no parser needed
    scheme = plain->scheme;
    host = ascii_lower(plain->host);
    path = ascii_lower(plain->path);
  } else if (auto parsed = boost::urls::parse_uri(url)) {
    scheme = ascii_lower(parsed->scheme());
    host = ascii_lower(parsed->host());
    path = ascii_lower(parsed->encoded_path());
  } else {
    return false;
  }
  if (scheme != "http" && scheme != "https" && scheme != "file" && scheme != "ftp") return false;
  auto found = [url](const auto& pattern) { return regex_search(*pattern, url); };
  if (!allow_.empty() && std::none_of(allow_.begin(), allow_.end(), found)) return false;
  if (std::any_of(deny_.begin(), deny_.end(), found)) return false;
  if (!options_.allow_domains.empty() && !host_in_domains(host, options_.allow_domains))
    return false;
  if (host_in_domains(host, options_.deny_domains)) return false;
  for (const auto& extension : *options_.deny_extensions) {
    if (path.size() > extension.size() && path.ends_with(extension) &&
        path[path.size() - extension.size() - 1] == '.') {
      return false;
    }
  }
  return true;
}

std::vector<link> link_extractor::extract_links(const response& response) const {
  std::vector<const html_node*> regions;
  if (options_.restrict_css.empty() && options_.restrict_xpaths.empty()) {
    regions.push_back(response.document()->root());
  } else {
    for (const auto& query : options_.restrict_xpaths) {
      for (const auto& region : response.xpath(query)) {
        if (region.node()) regions.push_back(region.node());
      }
    }
    for (const auto& query : options_.restrict_css) {
      for (const auto& region : response.css(query)) {
        if (region.node()) regions.push_back(region.node());
      }
    }
  }
  std::vector<link> links;
  std::unordered_set<std::string> seen;
  for (const auto* region : regions) {
    // Every element under the region, in document order, walked without recursion.
    for (const html_node* node = region; node;) {
      const html_node* element = node;
      if (node->first_child) {
        node = node->first_child;
      } else {
        while (node != region && !node->next_sibling) node = node->parent;
        node = node == region ? nullptr : node->next_sibling;
      }
      if (!element->is_element()) continue;
      if (std::find(tags_.begin(), tags_.end(), element->name) == tags_.end()) continue;
      for (const auto& attr : attrs_) {
        const auto* attribute = element->attribute(attr);
        if (!attribute) continue;
        std::string_view value = *attribute;
        if (options_.strip) value = trim_ascii_space(value);
        std::string url;
        try {
          url = response.urljoin(value);
        } catch (const link_error&) {
          continue;
        }
        if (!matches(url)) continue;
        if (options_.canonicalize) {
          try {
            url = dedup::canonicalize_url(url);
          } catch (const dedup::url_error&) {
            continue;
          }
        }
        if (options_.unique && !seen.insert(unique_key(url, options_.canonicalize)).second) {
          continue;
        }
        const auto* rel = element->attribute("rel");
        bool nofollow = rel && ascii_lower(*rel).find("nofollow") != std::string::npos;
        links.push_back(
            {std::move(url), selector(response.document(), element).text_content(), nofollow});
      }
    }
  }
  return links;
}

}  // namespace crawler
