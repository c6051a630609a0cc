// A parsed HTML page: the body decoded to UTF-8 and parsed once by Gumbo (the HTML5 algorithm,
// so broken markup parses as a browser would).
//
//   auto document = crawler::html_document::parse(response.body, response.header("Content-Type"));
//   auto titles = crawler::select(document, "title::text").getall();
//
// The encoding is taken, in order, from a byte order mark, the Content-Type header's charset, a
// <meta charset> or <meta http-equiv="Content-Type"> in the first 1024 bytes, else UTF-8, as
// browsers do. Bytes that are invalid in that encoding become U+FFFD; nothing is dropped silently
// and nothing crashes. A document is immutable once parsed and may be shared between threads.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

struct GumboInternalOutput;
struct GumboInternalNode;

namespace crawler {

/// What a page may cost before it is parsed (HTML_MAX_SIZE, HTML_MAX_DEPTH). Gumbo's time grows
/// with the square of the nesting depth (100,000 nested <div>s take it about 17 s), so a page
/// is measured before Gumbo sees it, and one over budget is refused.
struct html_limits {
  std::size_t max_bytes = 32u << 20;
  std::size_t max_depth = 2000;
};

/// A page over an html_limits budget. what() says which budget and by how much; reason() is
/// "too_large" or "too_deep", for stats.
class page_too_complex : public std::runtime_error {
 public:
  page_too_complex(std::string reason, const std::string& message)
      : std::runtime_error(message), reason_(std::move(reason)) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

/// How deep `markup` nests elements, estimated from its tags in one pass without parsing: start
/// tags count, end tags uncount, void elements and the ones HTML closes by itself (p, li, td,
/// option, ...) do not count, script/style/textarea/title bodies and comments are skipped. An
/// upper bound for well-formed pages; a page whose tags are left open counts them all.
std::size_t estimate_nesting_depth(std::string_view markup);

class html_document {
 public:
  /// Decodes and parses `body`. `content_type` is the response's Content-Type header, if any.
  /// Throws page_too_complex, before parsing, when `body` is over a budget of `limits`.
  static std::shared_ptr<const html_document> parse(std::string_view body,
                                                    std::string_view content_type = {},
                                                    const html_limits& limits = {});
  ~html_document();
  html_document(const html_document&) = delete;
  html_document& operator=(const html_document&) = delete;

  /// The document node (the parent of <html>).
  const GumboInternalNode* root() const;
  /// The encoding the body was decoded from, lower-case ("utf-8", "windows-1252", ...).
  const std::string& encoding() const { return encoding_; }
  /// The body as UTF-8, as it was parsed (node positions point into it).
  const std::string& text() const { return utf8_; }

 private:
  struct arena;

  html_document();
  std::string utf8_;
  std::string encoding_;
  std::unique_ptr<arena> arena_;  // owns every byte Gumbo allocated for output_
  GumboInternalOutput* output_ = nullptr;
};

/// `body` decoded to UTF-8 from `encoding` (any name iconv knows); invalid bytes become U+FFFD.
std::string decode_to_utf8(std::string_view body, std::string_view encoding);

/// The encoding a browser would pick for `body` (see html_document), lower-case.
std::string sniff_encoding(std::string_view body, std::string_view content_type);

}  // namespace crawler
