// Requests that submit forms and JSON, as Scrapy's FormRequest and JsonRequest build them.
//
//   // A login: the page's form, its hidden fields (a CSRF token) as they are, ours on top.
//   out.request(crawler::form_request::from_response(
//       response, {.formdata = {{"username", "alice"}, {"password", "secret"}},
//                  .callback = "after_login"}));
//   // A search by GET: the data replaces the URL's query.
//   out.request(crawler::form_request("https://example.com/search", {{"q", "c++ crawler"}},
//                                     "GET"));
//   // An API call: the body is json.dumps(data, sort_keys=True).
//   out.request(crawler::json_request("https://example.com/api/items", {{"page", 2}}));
//
// Form data is urlencoded as Python's urlencode writes it (UTF-8, space as '+'). A POST sets
// `Content-Type: application/x-www-form-urlencoded` unless the request has one.
// from_response follows Scrapy's rules, so a spider ported from Scrapy submits the same fields:
// - the form: the first whose name is `formname`, else whose id is `formid`, else the nearest
//   form around the first match of `formxpath` (or `formcss`; an error when there is none), else
//   the `formnumber`-th form of the page (0: the first);
// - its fields, in document order: every named <input> but submit, image and reset buttons and
//   unchecked checkboxes and radios (a checked one without a value sends "on"), every <textarea>
//   (its text), every <select> (its last selected option, else its first enabled one; a
//   multiple select sends each selected option);
// - the clicked button, after them: the first submit button (<input type=submit|image>, or a
//   <button> of type submit or none), or the one `clickdata` describes ({"name": ..., "value":
//   ...}, matched against every element's attributes, or {"nr": "N"}, the Nth field), unless
//   `dont_click`; it is sent when it has a name;
// - `formdata` last: a name it gives replaces every field of that name, and nullopt removes it;
// - the URL: `url` if given, else the form's action, resolved against the page's base URL
//   (<base href> or its URL); the method: `method` if given, else the form's, GET unless POST.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "crawler/parse/response.h"
#include "request/request.h"

namespace crawler {

/// Form fields, in the order they are sent; a name may repeat. In from_response's formdata, a
/// field whose value is nullopt is removed from the form.
using form_data = std::vector<std::pair<std::string, std::optional<std::string>>>;

/// The page has no form that matches, or `clickdata` no element. what() names the page or the
/// criteria (Scrapy's ValueError and IndexError).
class form_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// from_response's choices, named as Scrapy's keyword arguments.
struct form_options {
  std::optional<std::string> formname, formid, formxpath, formcss;
  std::size_t formnumber = 0;
  form_data formdata;
  /// Attributes of the button to click (matched exactly), or {"nr": "N"}.
  std::optional<std::map<std::string, std::string>> clickdata;
  bool dont_click = false;
  std::optional<std::string> url, method;
  std::string callback;
  /// What the request carries besides the form, as Scrapy's Request keyword arguments that
  /// from_response passes on. A Content-Type in `headers` replaces the form's own; any other
  /// header is added.
  std::string errback;
  nlohmann::json meta = nlohmann::json::object();
  nlohmann::json cb_kwargs = nlohmann::json::object();
  header_list headers;
  int priority = 0;
  bool dont_filter = false;
};

struct form_request : request {
  /// A request that sends `data` to `url`: urlencoded in the body for POST, as the URL's query
  /// (replacing the URL's own) for GET. `method` unset: POST when there is data, else GET. With
  /// no data, the URL and body stay as they are.
  form_request(std::string url, const form_data& data,
               std::optional<std::string> method = std::nullopt);

  /// The request that submits a form of `page` (see the file comment). Throws form_error when
  /// the page has no such form, or `clickdata` matches no element or several.
  static form_request from_response(const response& page, const form_options& options = {});

 private:
  form_request() = default;
};

/// A request whose body is `data` as json.dumps(data, sort_keys=True) writes it, sent with
/// `Content-Type: application/json` and Scrapy's JSON `Accept` (Scrapy's JsonRequest); POST
/// unless `method` says otherwise.
request json_request(std::string url, const nlohmann::json& data, std::string method = "POST");

/// `fields` as Python's urlencode writes them: UTF-8, `quote_plus` (unreserved bytes kept,
/// space as '+', the rest %XX), `&` between pairs.
std::string urlencode(const form_data& fields);

}  // namespace crawler
