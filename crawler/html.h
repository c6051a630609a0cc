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

#include <memory>
#include <string>
#include <string_view>

struct GumboInternalOutput;
struct GumboInternalNode;

namespace crawler {

class html_document {
 public:
  /// Decodes and parses `body`. `content_type` is the response's Content-Type header, if any.
  static std::shared_ptr<const html_document> parse(std::string_view body,
                                                    std::string_view content_type = {});
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
