// Form and JSON requests, each expected value what Scrapy 2.8's FormRequest.from_response,
// FormRequest and JsonRequest build from the same page and arguments (computed with Debian's
// python3-scrapy; the script is in the comment of each case's page).
#include "crawler/parse/form_request.h"

#include <gtest/gtest.h>

using namespace crawler;

namespace {

// The page of tests/fixtures/http_server.cpp's /login, with the token written TOKEN.
const char* login_page =
    "<!DOCTYPE html><html><body>\n"
    "<form id=\"search\" action=\"/s\"><input name=\"wd\"></form>\n"
    "<form name=\"login\" action=\"/login\" method=\"post\">\n"
    "<input type=\"hidden\" name=\"csrf\" value=\"TOKEN\">\n"
    "<input name=\"username\"> <input type=\"password\" name=\"password\">\n"
    "<input type=\"checkbox\" name=\"remember\" value=\"yes\" checked>\n"
    "<input type=\"checkbox\" name=\"newsletter\">\n"
    "<select name=\"lang\"><option value=\"en\">English</option>"
    "<option value=\"fr\" selected>Fran\xc3\xa7\x61is</option></select>\n"
    "<input type=\"reset\" name=\"clear\" value=\"Clear\">\n"
    "<input type=\"submit\" name=\"action\" value=\"log in\">\n"
    "</form></body></html>\n";

// Selects of every kind, a textarea, unnamed fields, a <base href> and an image button first.
const char* fields_page =
    "<html><head><base href=\"http://base.example/dir/\"></head><body><form action=\" next.php \">"
    "<select name=\"a\"><option disabled>x</option><option>  first text </option>"
    "<option value=\"v3\">3</option></select>"
    "<select name=\"b\"></select>"
    "<select name=\"c\" multiple><option value=\"1\" selected>one</option>"
    "<option value=\"\" selected> two </option><option value=\"3\">three</option></select>"
    "<select name=\"d\" multiple></select>"
    "<select name=\"e\"><option value=\"p\" selected>p</option>"
    "<option value=\"q\" selected>q</option></select>"
    "<textarea name=\"t\">line one\nline &amp; two</textarea>"
    "<input name=\"noval\"><input type=\"radio\" name=\"r\" checked>"
    "<input type=\"RADIO\" name=\"r2\" value=\"z\">"
    "<input type=\"text\" value=\"nameless\"><input name=\"\" value=\"emptyname\">"
    "<input type=\"image\" name=\"img\" value=\"i\"><button name=\"btn\" value=\"b\">go</button>"
    "</form></body></html>";

response form_page(std::string url, const char* body) {
  response r;
  r.url = std::move(url);
  r.body = body;
  r.headers = {{"Content-Type", "text/html; charset=utf-8"}};
  return r;
}

const response login = form_page("http://example.com/account/login?next=/home", login_page);

std::string described(const request& r) {
  return r.method + " " + r.url + " " + r.body + " " +
         std::string(find_header(r.headers, "Content-Type"));
}

}  // namespace

TEST(form_request, a_login_keeps_the_hidden_token_and_the_checked_fields_and_clicks_submit) {
  for (auto parser : {html_parser::gumbo, html_parser::libxml2}) {
    auto with = login;
    with.parser = parser;
    auto submitted = form_request::from_response(
        with, {.formname = "login",
               .formdata = {{"username", "alice"}, {"password", "s3cret pass"}},
               .callback = "after_login"});
    EXPECT_EQ(described(submitted),
              "POST http://example.com/login "
              "csrf=TOKEN&remember=yes&lang=fr&action=log+in&username=alice&password=s3cret+pass "
              "application/x-www-form-urlencoded");
    EXPECT_EQ(submitted.callback, "after_login");
  }
}

// from_response passes Scrapy's Request keyword arguments on: errback, meta, cb_kwargs,
// priority, dont_filter and headers, a Content-Type among them winning over the form's (as
// FormRequest's setdefault leaves a caller's), any other header added.
TEST(form_request, the_request_keywords_scrapy_passes_on_go_with_the_submitted_form) {
  auto submitted = form_request::from_response(
      login, {.formname = "login",
              .callback = "after_login",
              .errback = "login_failed",
              .meta = {{"cookiejar", "alice"}},
              .cb_kwargs = {{"user", "alice"}},
              .headers = {{"content-type", "application/x-www-form-urlencoded; charset=utf-8"},
                          {"X-Requested-With", "XMLHttpRequest"}},
              .priority = 5,
              .dont_filter = true});
  EXPECT_EQ(submitted.method, "POST");
  EXPECT_EQ(submitted.errback, "login_failed");
  EXPECT_EQ(submitted.meta, (nlohmann::json{{"cookiejar", "alice"}}));
  EXPECT_EQ(submitted.cb_kwargs, (nlohmann::json{{"user", "alice"}}));
  EXPECT_EQ(submitted.priority, 5);
  EXPECT_TRUE(submitted.dont_filter);
  EXPECT_EQ(find_header(submitted.headers, "Content-Type"),
            "application/x-www-form-urlencoded; charset=utf-8");
  EXPECT_EQ(find_header(submitted.headers, "X-Requested-With"), "XMLHttpRequest");
  std::size_t content_types = 0;
  for (const auto& [name, value] : submitted.headers) {
    content_types += name == "Content-Type" || name == "content-type";
  }
  EXPECT_EQ(content_types, 1u);
  // Left unset, they are a plain request's.
  auto plain = form_request::from_response(login, {.formname = "login"});
  EXPECT_EQ(plain.errback, "");
  EXPECT_EQ(plain.meta, nlohmann::json::object());
  EXPECT_FALSE(plain.dont_filter);
  EXPECT_EQ(plain.priority, 0);
}

TEST(form_request, the_form_is_chosen_by_name_id_number_css_or_xpath_as_scrapy_does) {
  EXPECT_EQ(
      described(form_request::from_response(login, {.formdata = {{"wd", "caf\xc3\xa9 & tea"}}})),
      "GET http://example.com/s?wd=caf%C3%A9+%26+tea  ");
  EXPECT_EQ(described(form_request::from_response(login, {.formid = "search"})),
            "GET http://example.com/s?wd=  ");
  EXPECT_EQ(
      described(form_request::from_response(
          login, {.formnumber = 1, .formdata = {{"remember", std::nullopt}}, .dont_click = true})),
      "POST http://example.com/login csrf=TOKEN&username=&password=&lang=fr "
      "application/x-www-form-urlencoded");
  EXPECT_EQ(described(form_request::from_response(
                login, {.formcss = "select[name=lang]", .clickdata = {{{"name", "action"}}}})),
            "POST http://example.com/login "
            "csrf=TOKEN&username=&password=&remember=yes&lang=fr&action=log+in "
            "application/x-www-form-urlencoded");
  // A repeated name in formdata sends each value, and replaces the form's field of that name.
  EXPECT_EQ(
      described(form_request::from_response(login, {.formxpath = "//input[@name='username']",
                                                    .formdata = {{"lang", "de"}, {"lang", "it"}}})),
      "POST http://example.com/login "
      "csrf=TOKEN&username=&password=&remember=yes&action=log+in&lang=de&lang=it "
      "application/x-www-form-urlencoded");
  // A name that matches no form falls through to formnumber, as in Scrapy.
  EXPECT_EQ(form_request::from_response(login, {.formname = "nope"}).url,
            "http://example.com/s?wd=");
}

TEST(form_request, clickdata_nr_counts_every_field_and_method_and_url_can_be_given) {
  EXPECT_EQ(described(form_request::from_response(
                login, {.formname = "login", .clickdata = {{{"nr", "1"}}}})),
            "POST http://example.com/login "
            "csrf=TOKEN&username=&password=&remember=yes&lang=fr&username= "
            "application/x-www-form-urlencoded");
  EXPECT_EQ(described(form_request::from_response(login, {.formname = "login", .method = "put"})),
            "GET http://example.com/login?"
            "csrf=TOKEN&username=&password=&remember=yes&lang=fr&action=log+in  ");
  EXPECT_EQ(
      described(form_request::from_response(login, {.formname = "login", .url = "../other#x"})),
      "POST http://example.com/other#x "
      "csrf=TOKEN&username=&password=&remember=yes&lang=fr&action=log+in "
      "application/x-www-form-urlencoded");
}

TEST(form_request, selects_textareas_checkboxes_and_unnamed_fields_send_what_a_browser_sends) {
  auto fields = form_page("http://example.com/page", fields_page);
  EXPECT_EQ(described(form_request::from_response(fields)),
            "GET http://base.example/dir/next.php?a=first+text&c=1&c=two&e=q&"
            "t=line+one%0Aline+%26+two&noval=&r=on&img=i  ");
  EXPECT_EQ(form_request::from_response(fields, {.clickdata = {{{"name", "btn"}}}}).url,
            "http://base.example/dir/next.php?a=first+text&c=1&c=two&e=q&"
            "t=line+one%0Aline+%26+two&noval=&r=on&btn=b");
  // A given URL resolves against the page's <base href> too.
  EXPECT_TRUE(form_request::from_response(fields, {.url = "x.php"})
                  .url.starts_with("http://base.example/dir/x.php?a=first+text"));
}

TEST(form_request, a_page_without_the_form_or_button_asked_for_is_an_error_naming_it) {
  auto message = [](const form_options& options, const response& from = login) {
    try {
      form_request::from_response(from, options);
    } catch (const form_error& error) {
      return std::string(error.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(message({.formnumber = 5}),
            "form number 5 not found in http://example.com/account/login?next=/home (it has 2)");
  // Numbered from 0, as in Scrapy: of two forms, number 1 is the last and 2 is past it.
  EXPECT_EQ(message({.formnumber = 1, .dont_click = true}), "(no error)");
  EXPECT_EQ(message({.formnumber = 2}),
            "form number 2 not found in http://example.com/account/login?next=/home (it has 2)");
  EXPECT_EQ(message({.formcss = "p.none"}),
            "no <form> element found with formcss p.none in "
            "http://example.com/account/login?next=/home");
  EXPECT_EQ(message({}, form_page("http://example.com/plain", "<p>no form here</p>")),
            "no <form> element found in http://example.com/plain");
  EXPECT_EQ(message({.formname = "login", .clickdata = {{{"type", "checkbox"}}}}),
            "2 elements match the clickdata {type=\"checkbox\"}");
  EXPECT_EQ(message({.formname = "login", .clickdata = {{{"name", "absent"}}}}),
            "no clickable element matches the clickdata {name=\"absent\"}");
}

TEST(form_request, form_data_goes_in_the_body_for_post_and_replaces_the_query_for_get) {
  EXPECT_EQ(described(form_request("http://example.com/search?old=1#frag",
                                   {{"q", "a b/c?d=\xc3\xa9"}, {"n", "1"}}, "GET")),
            "GET http://example.com/search?q=a+b%2Fc%3Fd%3D%C3%A9&n=1#frag  ");
  EXPECT_EQ(described(form_request("http://example.com/post", {{"k", "~_.-*'()!"}})),
            "POST http://example.com/post k=~_.-%2A%27%28%29%21 "
            "application/x-www-form-urlencoded");
  EXPECT_EQ(described(form_request("http://example.com/post", {})),
            "GET http://example.com/post  ");
}

TEST(json_request, the_body_is_pythons_sorted_json_dumps_with_scrapys_headers) {
  auto sent = json_request("http://example.com/api",
                           {{"b", {1, 2}}, {"a", {{"z", "\xc3\xa9"}, {"y", nullptr}}}, {"c", 1.5}});
  EXPECT_EQ(sent.method, "POST");
  EXPECT_EQ(sent.body, R"({"a": {"y": null, "z": "\u00e9"}, "b": [1, 2], "c": 1.5})");
  EXPECT_EQ(find_header(sent.headers, "Content-Type"), "application/json");
  EXPECT_EQ(find_header(sent.headers, "Accept"), "application/json, text/javascript, */*; q=0.01");
}
