// What may become part of a request line or a header field: RFC 9110's syntax, checked before
// anything is sent. A header value holding CR or LF would end the field, and its rest would be
// sent as headers of the crawler's choosing or as a second request on the connection (request
// smuggling), whoever wrote it: a queue entry, a crawl file, a setting, spider code, a middleware.
//
//   crawler::request_syntax_problem(request)    // "" or, e.g.:
//     header "X-A": its value holds a carriage return (byte 3); a field value is visible
//     characters, spaces and tabs (RFC 9110, section 5.5)
//
// Each function returns "" when the text may be sent, else why not, naming the first bad byte.
#pragma once

#include <string>
#include <string_view>

#include "request/request.h"

namespace crawler {

/// A field name is a token: visible ASCII except the delimiters "(),/:;<=>?@[\]{}, not empty.
std::string field_name_problem(std::string_view name);
/// A field value is visible characters (obs-text, bytes 0x80 and up, included), spaces and tabs;
/// no CR, LF, NUL or other control byte.
std::string field_value_problem(std::string_view value);
/// A method is a token, as a field name.
std::string method_problem(std::string_view method);
/// A URL on the request line holds no control byte (a space, libcurl escapes).
std::string url_problem(std::string_view url);

/// The first of these problems in `request`'s URL, method and headers, naming the header; "".
std::string request_syntax_problem(const request& request);

}  // namespace crawler
