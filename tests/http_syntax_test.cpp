// RFC 9110's syntax for what goes on a request line or into a header field: the bytes at each
// edge of what is allowed, and the message that names the first bad one.
#include "request/http_syntax.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using crawler::field_name_problem;
using crawler::field_value_problem;
using crawler::method_problem;
using crawler::url_problem;

TEST(http_syntax, a_field_value_takes_visible_bytes_spaces_and_tabs_and_nothing_else) {
  EXPECT_EQ(field_value_problem(""), "");
  EXPECT_EQ(field_value_problem("Mozilla/5.0 (X11)\tx"), "");
  EXPECT_EQ(field_value_problem("caf\xc3\xa9 \x80\xff"), "");  // obs-text
  EXPECT_EQ(field_value_problem("~"), "");                     // 0x7e, the last VCHAR
  EXPECT_EQ(field_value_problem("1\r\nX-Injected: 1"),
            "its value holds a carriage return (byte 1); a field value is visible characters, "
            "spaces and tabs (RFC 9110, section 5.5)");
  EXPECT_EQ(field_value_problem("1\nX: 1"),
            "its value holds a line feed (byte 1); a field value is visible characters, spaces "
            "and tabs (RFC 9110, section 5.5)");
  EXPECT_NE(field_value_problem(std::string("a\0b", 3)).find("holds a NUL (byte 1)"),
            std::string::npos);
  EXPECT_NE(field_value_problem("\x1f").find("holds control byte 0x1F (byte 0)"),
            std::string::npos);
  EXPECT_NE(field_value_problem("a\x7f").find("holds control byte 0x7F (byte 1)"),
            std::string::npos);
}

TEST(http_syntax, a_field_name_and_a_method_are_tokens) {
  EXPECT_EQ(field_name_problem("X-Custom_1.!#$%&'*+^`|~"), "");
  EXPECT_EQ(field_name_problem(""), "it is empty; a field name is a token (RFC 9110, section 5.1)");
  EXPECT_EQ(field_name_problem("X A"),
            "it holds a space (byte 1); a field name is a token (RFC 9110, section 5.1)");
  EXPECT_EQ(field_name_problem("X:A"),
            "it holds \":\" (byte 1); a field name is a token (RFC 9110, section 5.1)");
  EXPECT_NE(field_name_problem("X\r\nY").find("holds a carriage return (byte 1)"),
            std::string::npos);
  EXPECT_NE(field_name_problem("caf\xc3\xa9").find("(byte 3)"), std::string::npos);
  EXPECT_EQ(field_name_problem(":authority"),  // the first byte counts as much as the others
            "it holds \":\" (byte 0); a field name is a token (RFC 9110, section 5.1)");
  EXPECT_EQ(field_name_problem("X"), "");
  EXPECT_EQ(method_problem("PROPFIND"), "");
  EXPECT_EQ(method_problem("GET /smuggled HTTP/1.1"),
            "it holds a space (byte 3); a method is a token (RFC 9110, section 9.1)");
}

TEST(http_syntax, a_url_on_the_request_line_holds_no_control_byte) {
  EXPECT_EQ(url_problem("http://a.example/x y?q=%0D%0A"), "");  // escaped, or escaped by curl
  EXPECT_EQ(url_problem("http://a.example/x\r\nHost: b"),
            "its URL holds a carriage return (byte 18), which a request line cannot carry");
  EXPECT_NE(url_problem("http://a.example/\t").find("a tab (byte 17)"), std::string::npos);
}

TEST(http_syntax, a_requests_first_problem_names_its_header) {
  crawler::request request{"http://a.example/"};
  EXPECT_EQ(crawler::request_syntax_problem(request), "");
  request.headers = {{"X-Fine", "1"}, {"X-Evil", "1\r\nX-Injected: 1"}, {"Bad Name", "2"}};
  EXPECT_EQ(crawler::request_syntax_problem(request),
            "header \"X-Evil\": its value holds a carriage return (byte 1); a field value is "
            "visible characters, spaces and tabs (RFC 9110, section 5.5)");
  request.headers.erase(request.headers.begin() + 1);
  EXPECT_EQ(crawler::request_syntax_problem(request),
            "a header name: it holds a space (byte 3); a field name is a token (RFC 9110, "
            "section 5.1)");
  request.method = "GET\r\n";
  EXPECT_NE(crawler::request_syntax_problem(request).find("method: it holds a carriage return"),
            std::string::npos);
}

}  // namespace
