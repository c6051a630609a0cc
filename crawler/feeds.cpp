#include "crawler/feeds.h"

#include <fmt/chrono.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "config/log.h"
#include "crawler/detail/placeholders.h"
#include "crawler/feed_storage.h"
#include "crawler/spider.h"
#include "request/python_json.h"

namespace crawler {
namespace {

std::string format_for_extension(std::string_view path) {
  auto extension = std::filesystem::path(path).extension().string();
  if (extension == ".jsonl" || extension == ".jl" || extension == ".jsonlines") return "jsonlines";
  if (extension == ".json") return "json";
  if (extension == ".csv") return "csv";
  if (extension == ".xml") return "xml";
  return {};
}

// A scalar as Python's str() shows it, which Scrapy's XML export writes: True, False, None.
std::string python_str(const crawler::item& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "True" : "False";
  if (value.is_null()) return "None";
  if (value.is_number_float() && !std::isfinite(value.get<double>())) {
    auto number = value.get<double>();
    return std::isnan(number) ? "nan" : number > 0 ? "inf" : "-inf";
  }
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// XML character data, escaped as Python's XMLGenerator.characters escapes it (&, <, >).
std::string xml_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else {
      out += c;
    }
  }
  return out;
}

// A value as Python's repr() shows it, which Scrapy's CSV export writes of a list that is not all
// strings, or of a dict: [1, 'a', None], {'k': "it's"}. Characters outside ASCII are kept as
// they are (Python escapes the few it deems unprintable).
std::string python_repr(const crawler::item& value) {
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    char quote =
        text.find('\'') != std::string::npos && text.find('"') == std::string::npos ? '"' : '\'';
    std::string out(1, quote);
    for (char c : text) {
      if (c == '\\' || c == quote) {
        out += '\\';
        out += c;
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c == '\t') {
        out += "\\t";
      } else if ((c >= 0 && c < 0x20) || c == 0x7f) {
        out += fmt::format("\\x{:02x}", int(c));
      } else {
        out += c;
      }
    }
    return out + quote;
  }
  if (value.is_array() || value.is_object()) {
    std::string out(1, value.is_object() ? '{' : '[');
    for (auto member = value.begin(); member != value.end(); ++member) {
      if (member != value.begin()) out += ", ";
      if (value.is_object()) out += python_repr(crawler::item(member.key())) + ": ";
      out += python_repr(*member);
    }
    return out + (value.is_object() ? '}' : ']');
  }
  return python_str(value);
}

// A CSV cell as Scrapy's CsvItemExporter writes it: a list of strings joined by ",", any other
// list or a dict as Python's repr(), a scalar as Python's str() (True, an empty cell for None).
std::string csv_field(const crawler::item& value) {
  std::string text;
  if (value.is_array() && std::all_of(value.begin(), value.end(),
                                      [](const crawler::item& e) { return e.is_string(); })) {
    for (auto element = value.begin(); element != value.end(); ++element) {
      if (element != value.begin()) text += ',';
      text += element->get_ref<const std::string&>();
    }
  } else if (value.is_array() || value.is_object()) {
    text = python_repr(value);
  } else if (!value.is_null()) {
    text = python_str(value);
  }
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + '"';
}

// What one feed writes: FEEDS.<uri>'s options over the FEED_EXPORT_* settings.
struct feed_options {
  std::string uri;  // as FEEDS names it: its batches' paths follow from it
  std::string path;
  std::string format;
  bool overwrite = false;
  std::vector<std::string> fields;  // empty: each item's own, in its order
  bool ensure_ascii = true;         // FEED_EXPORT_ENCODING unset, as Scrapy's JSON exporters
  int indent = 0;
  std::size_t batch_item_count = 0;  // FEED_EXPORT_BATCH_ITEM_COUNT: 0, one file
  bool store_empty = false;          // FEED_STORE_EMPTY: a feed of no item is still a JSON array
};

// A feed option of Scrapy 2.8's that names Python code, and so cannot be honoured here.
constexpr std::pair<std::string_view, std::string_view> python_feed_options[] = {
    {"item_classes", "it names Python item classes; every item goes to every feed here"},
    {"item_filter", "it names a Python ItemFilter class; every item goes to every feed here"},
    {"item_export_kwargs", "it passes keyword arguments to a Python exporter class"},
    {"uri_params",
     "it names a Python function; a URI names %(name)s, %(time)s, %(batch_id)d, "
     "%(batch_time)s and spider arguments"},
    {"postprocessing",
     "it names Python plugins; compress the feed once the crawl is done "
     "(gzip items.jsonl)"},
};

// Refuses a feed option this exporter does not know, naming the nearest one it does.
void check_option_names(const nlohmann::json& options, const std::string& where) {
  static constexpr std::string_view known[] = {
      "format", "overwrite", "fields", "encoding", "indent", "batch_item_count", "store_empty"};
  for (const auto& [name, value] : options.items()) {
    if (std::find(std::begin(known), std::end(known), name) != std::end(known)) continue;
    for (const auto& [option, why] : python_feed_options) {
      if (name == option) {
        throw settings_error(where + "." + name + ": Scrapy's feed option " + name +
                             " cannot be honoured here: " + std::string(why));
      }
    }
    std::string message = where + "." + name + ": unknown feed option";
    if (auto best = nearest_name(name, known); !best.empty()) {
      message += " (did you mean \"" + std::string(best) + "\"?)";
    }
    throw settings_error(message +
                         "; the options are format, overwrite, fields, encoding, "
                         "indent, batch_item_count and store_empty");
  }
}

// Scrapy's `uri % uri_params`: %(key)s (or %(key)d) is the parameter, %% a percent sign. Any other
// percent sign stays as written (Scrapy would stop with a Python error).
std::string expand_uri(const std::string& uri, const feed_exporter::uri_parameters& parameters) {
  try {
    return detail::expand_placeholders(uri, parameters);
  } catch (const detail::placeholder_error& error) {
    if (error.name.empty()) throw settings_error("FEEDS." + uri + ": " + error.what());
    throw settings_error("FEEDS." + uri + ": no parameter \"" + error.name +
                         "\"; a feed URI may name %(name)s, %(time)s, %(batch_id)d, "
                         "%(batch_time)s and spider arguments");
  }
}

std::vector<std::string> field_names(const nlohmann::json& value, const std::string& where) {
  std::vector<std::string> names;
  if (value.is_null()) return names;
  if (!value.is_array()) throw settings_error(where + ": must be a list of field names");
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_string()) {
      throw settings_error(where + "[" + std::to_string(i) + "]: must be a field name (a string)");
    }
    names.push_back(value[i].get<std::string>());
  }
  return names;
}

// Whether JSON feeds escape non-ASCII text. Only UTF-8 is written otherwise: every item's text is
// UTF-8 already, and a feed in another encoding would need a transcoder for no user we know of.
bool escapes_non_ascii(const nlohmann::json& encoding, const std::string& where) {
  if (encoding.is_null()) return true;
  if (encoding.is_string()) {
    auto name = encoding.get<std::string>();
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (name == "utf-8" || name == "utf8") return false;
  }
  throw settings_error(where + ": unsupported encoding " + encoding.dump() +
                       "; feeds are written as utf-8 (or, unset, JSON with \\u escapes)");
}

}  // namespace

std::pair<std::string, nlohmann::json> feed_for_file(std::string_view argument, bool overwrite) {
  auto flag = std::string(overwrite ? "-O " : "-o ") + std::string(argument);
  std::string path(argument), format;
  if (argument == "-") return {"stdout:", {{"format", "jsonlines"}, {"overwrite", false}}};
  if (auto colon = argument.rfind(':'); colon != std::string_view::npos && colon > 0) {
    auto named = argument.substr(colon + 1);
    if (named == "jsonlines" || named == "jsonl" || named == "jl" || named == "json" ||
        named == "csv" || named == "xml") {
      path = argument.substr(0, colon);
      if (path == "-") path = "stdout:";  // Scrapy's `-o -:json`
      format = named == "jsonl" || named == "jl" ? "jsonlines" : std::string(named);
    } else if (named == "marshal" || named == "pickle") {
      throw settings_error(flag + ": the " + std::string(named) +
                           " format is Python's own and not written here; use jsonlines, json, "
                           "csv or xml");
    }
  }
  if (format.empty()) format = format_for_extension(path);
  if (format.empty()) {
    throw settings_error(flag +
                         ": cannot tell the feed format from the extension; use .jsonl, .jl, "
                         ".json, .csv or .xml, or name it after a colon (FILE:jsonlines)");
  }
  return {path, {{"format", format}, {"overwrite", overwrite}}};
}

class feed_exporter::feed {
 public:
  // `flushes_before`: the exporter's flushes before this feed opened.
  feed(const feed_options& options, bool flushed_per_page, std::uint64_t flushes_before)
      : flushes_before_(flushes_before),
        path_(options.path),
        format_(options.format),
        fields_(options.fields),
        ensure_ascii_(options.ensure_ascii),
        indent_(format_ == "json" && options.indent > 0 ? options.indent : -1),
        store_empty_(options.store_empty),
        // Two arrays in one file would not be JSON, nor two documents XML.
        storage_(open_feed_storage(
            {path_, options.overwrite || format_ == "json" || format_ == "xml", flushed_per_page})),
        out_(storage_->stream()) {
    header_written_ = storage_->continues_existing();  // a CSV that already has its header row
  }

  // What comes before the first item. As Scrapy's exporters (FEED_STORE_EMPTY false), a feed
  // that gets no item gets none of it, and its file stays empty.
  void start() {
    started_ = true;
    if (format_ == "json") out_ << '[';
    if (format_ == "xml") out_ << "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<items>\n";
  }

  // False once the file could not be written (a full disk): logged once, with the reason.
  bool write(const crawler::item& item) {
    if (!started_) start();
    if (format_ == "jsonlines") {
      out_ << encode(item) << '\n';
    } else if (format_ == "json") {
      out_ << (count_ ? ",\n" : "\n") << encode(item);
    } else if (format_ == "xml") {
      write_xml(item);
    } else {
      write_csv(item);
    }
    ++count_;
    if (count_ == 1 && out_ && !storage_->under_way()) {
      failed_ = true;
      get_logger("feedexport")
          ->error("Cannot put the {} feed {} in place of the one it replaces", format_, path_);
      return false;
    }
    return check();
  }

  // What a failed write left is the storage's to undo (a file is cut back to whole items).
  bool check() {
    if (out_ || failed_) return !failed_;
    failed_ = true;
    auto reason = std::strerror(errno);
    get_logger("feedexport")->error("Cannot write the {} feed {}: {}", format_, path_, reason);
    storage_->after_failed_write();
    return false;
  }

  bool flush() {
    out_.flush();
    if (!check()) return false;
    return storage_->flush();
  }

  // The exporter's flush numbers, as this feed's storage counts its own.
  void recorded(std::uint64_t flush) {
    if (flush > flushes_before_) storage_->recorded(flush - flushes_before_);
  }
  void take_back_unrecorded() { storage_->take_back_unrecorded(); }

  bool close(stats& stats) {
    if (!started_ && store_empty_) start();
    if (started_) {
      // As Scrapy's JsonItemExporter ends the array (FEED_EXPORT_INDENT 0): no newline after it.
      if (format_ == "json") out_ << (count_ ? "\n]" : "\n\n]");
      if (format_ == "xml") out_ << "</items>";
    }
    bool stored = !failed_ && out_ && storage_->store();
    auto log = get_logger("feedexport");
    // Scrapy's storage class names, as its stats key them.
    auto storage = std::string(storage_->stats_name());
    if (!stored) {
      log->error("Error storing {} feed ({} items) in: {}", format_, count_, path_);
      stats.inc_value("feedexport/failed_count/" + storage);
      return false;
    }
    log->info("Stored {} feed ({} items) in: {}", format_, count_, path_);
    stats.inc_value("feedexport/success_count/" + storage);
    return true;
  }

 private:
  // The item as JSON text: only `fields_`, in their order, when there are some (a field the item
  // lacks is left out, as Scrapy leaves it).
  std::string encode(const crawler::item& item) const {
    if (fields_.empty() || !item.is_object()) return encode_all(item);
    nlohmann::ordered_json picked = nlohmann::ordered_json::object();
    for (const auto& field : fields_) {
      if (auto value = item.find(field); value != item.end()) picked[field] = *value;
    }
    return encode_all(picked);
  }
  std::string encode_all(const crawler::item& item) const {
    if (indent_ >= 0) {
      return item.dump(indent_, ' ', ensure_ascii_, nlohmann::json::error_handler_t::replace);
    }
    // As Python's json.dumps: ", " and ": ". A NaN or an infinity is written null, valid JSON,
    // where Python writes NaN or Infinity, which JSON has no word for.
    return with_python_separators(
        item.dump(-1, ' ', ensure_ascii_, nlohmann::json::error_handler_t::replace));
  }

  // Scrapy's XmlItemExporter (FEED_EXPORT_INDENT 0): an <item> a line, a field an element, a list
  // a run of <value> elements, an object nested elements; text escaped as XML character data.
  void write_xml(const crawler::item& item) {
    out_ << "<item>";
    if (item.is_object()) {
      if (fields_.empty()) {
        for (const auto& [key, value] : item.items()) write_xml_field(key, value);
      } else {
        for (const auto& field : fields_) {
          if (auto value = item.find(field); value != item.end()) write_xml_field(field, *value);
        }
      }
    }
    out_ << "</item>\n";
  }

  void write_xml_field(const std::string& name, const crawler::item& value) {
    out_ << '<' << name << '>';
    if (value.is_object()) {
      for (const auto& [key, nested] : value.items()) write_xml_field(key, nested);
    } else if (value.is_array()) {
      for (const auto& element : value) write_xml_field("value", element);
    } else {
      out_ << xml_text(python_str(value));
    }
    out_ << "</" << name << '>';
  }

  void write_csv(const crawler::item& item) {
    if (!item.is_object()) {
      out_ << csv_field(item) << "\r\n";
      return;
    }
    if (fields_.empty()) {
      for (const auto& [key, value] : item.items()) fields_.push_back(key);
    }
    if (!header_written_) {
      for (std::size_t i = 0; i < fields_.size(); ++i) {
        out_ << (i ? "," : "") << csv_field(fields_[i]);
      }
      out_ << "\r\n";
      header_written_ = true;
    }
    for (std::size_t i = 0; i < fields_.size(); ++i) {
      auto value = item.find(fields_[i]);
      out_ << (i ? "," : "") << (value == item.end() ? "" : csv_field(*value));
    }
    out_ << "\r\n";
  }

  std::uint64_t flushes_before_;
  std::string path_;
  std::string format_;
  std::vector<std::string> fields_;  // the columns of a CSV; what JSON writes, when given
  bool ensure_ascii_;
  int indent_;  // nlohmann's: -1 writes an item on one line
  bool store_empty_;
  std::unique_ptr<feed_storage> storage_;
  std::ostream& out_;  // the storage's stream
  bool header_written_ = false;
  bool started_ = false;  // start() has written what comes before the first item
  bool failed_ = false;
  std::size_t count_ = 0;
};

struct feed_exporter::batched {
  feed_options options;
  uri_parameters parameters;
  bool flushed_per_page;
  std::unique_ptr<feed> current;  // null between a full batch and the next item
  std::size_t id = 1, items = 0;
};

// One FEEDS entry's options, checked. Throws settings_error naming FEEDS.<uri>.<option> or the
// FEED_EXPORT_* setting.
static feed_options read_feed_options(const settings& settings, const std::string& uri,
                                      const nlohmann::json& options,
                                      const feed_exporter::uri_parameters& first_batch) {
  auto where = "FEEDS." + uri;
  if (!options.is_object()) throw settings_error(where + ": must be an object of feed options");
  check_option_names(options, where);
  feed_options feed;
  feed.uri = uri.starts_with("file://") ? uri.substr(7) : uri;
  feed.path = expand_uri(feed.uri, first_batch);
  feed.format = options.value("format", format_for_extension(feed.path));
  if (feed.format == "jsonl" || feed.format == "jl") feed.format = "jsonlines";
  if (feed.format != "jsonlines" && feed.format != "json" && feed.format != "csv" &&
      feed.format != "xml") {
    throw settings_error(where + ".format: unknown format \"" + feed.format +
                         "\"; valid formats are jsonlines, json, csv and xml");
  }
  feed.overwrite = options.value("overwrite", false);
  feed.fields = options.contains("fields")
                    ? field_names(options["fields"], where + ".fields")
                    : field_names(settings.get("FEED_EXPORT_FIELDS"), "FEED_EXPORT_FIELDS");
  feed.ensure_ascii =
      options.contains("encoding")
          ? escapes_non_ascii(options["encoding"], where + ".encoding")
          : escapes_non_ascii(settings.get("FEED_EXPORT_ENCODING"), "FEED_EXPORT_ENCODING");
  if (options.contains("indent")) {
    if (!options["indent"].is_number_integer() || options["indent"].get<int>() < 0) {
      throw settings_error(where + ".indent: must be a whole number of spaces, 0 or more");
    }
    feed.indent = options["indent"].get<int>();
  } else {
    feed.indent = int(settings.get_int("FEED_EXPORT_INDENT"));
  }
  auto batch = options.contains("batch_item_count") ? options["batch_item_count"]
                                                    : settings.get("FEED_EXPORT_BATCH_ITEM_COUNT");
  if (!batch.is_number_integer() || batch.get<std::int64_t>() < 0) {
    throw settings_error(where + ".batch_item_count: must be a whole number of items, 0 or more");
  }
  feed.batch_item_count = batch.get<std::size_t>();
  auto store_empty =
      options.contains("store_empty") ? options["store_empty"] : settings.get("FEED_STORE_EMPTY");
  if (!store_empty.is_boolean()) {
    throw settings_error(where + ".store_empty: must be true or false");
  }
  feed.store_empty = store_empty.get<bool>();
  if (feed.batch_item_count > 0 && feed.uri.find("%(batch_time)s") == std::string::npos &&
      feed.uri.find("%(batch_id)") == std::string::npos) {
    // Scrapy's rule: else every batch would overwrite (or add to) the one file.
    throw settings_error(where + ": a feed in batches of " + std::to_string(feed.batch_item_count) +
                         " items (batch_item_count, FEED_EXPORT_BATCH_ITEM_COUNT) needs "
                         "%(batch_time)s or %(batch_id)d in its URI, a file per batch");
  }
  return feed;
}

feed_exporter::feed_exporter(const settings& settings, stats& stats,
                             const uri_parameters& parameters)
    : stats_(stats) {
  for (const auto& [uri, options] : settings.get("FEEDS").items()) {
    auto where = "FEEDS." + uri;
    auto feed = read_feed_options(settings, uri, options, batch_parameters(parameters, 1));
    auto opened = std::make_unique<batched>(
        batched{std::move(feed), parameters, settings.has("JOBDIR"), nullptr});
    try {
      opened->current =
          std::make_unique<feed_exporter::feed>(opened->options, opened->flushed_per_page, 0);
    } catch (const std::invalid_argument& no_storage) {
      throw settings_error(where + ": " + no_storage.what());
    }
    batches_.push_back(std::move(opened));
  }
}

feed_exporter::~feed_exporter() = default;

std::vector<std::string> feed_exporter::problems(const settings& settings,
                                                 const uri_parameters& parameters) {
  std::vector<std::string> found;
  for (const auto& [uri, options] : settings.get("FEEDS").items()) {
    try {
      read_feed_options(settings, uri, options, batch_parameters(parameters, 1));
    } catch (const settings_error& error) {
      found.emplace_back(error.what());
    }
  }
  return found;
}

feed_exporter::uri_parameters feed_exporter::parameters_for(const spider& spider) {
  uri_parameters parameters(spider.arguments().begin(), spider.arguments().end());
  parameters["name"] = spider.name();
  // Scrapy's %(time)s: the UTC time to the second, colons made dashes for file names.
  parameters["time"] = fmt::format("{:%Y-%m-%dT%H-%M-%S}", fmt::gmtime(std::time(nullptr)));
  return parameters;
}

// A batch's own parameters: its number (from 1) and the time it started, as Scrapy's
// batch_time, to the microsecond, colons made dashes.
feed_exporter::uri_parameters feed_exporter::batch_parameters(uri_parameters parameters,
                                                              std::size_t batch_id) {
  parameters["batch_id"] = std::to_string(batch_id);
  auto now = std::chrono::system_clock::now();
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()) %
                std::chrono::seconds(1);
  parameters["batch_time"] =
      fmt::format("{:%Y-%m-%dT%H-%M-%S}.{:06d}",
                  fmt::gmtime(std::chrono::system_clock::to_time_t(now)), micros.count());
  return parameters;
}

bool feed_exporter::export_item(const crawler::item& item) {
  bool ok = true;
  for (auto& batch : batches_) {
    if (!batch->current) {
      // The next batch's file opens with its first item: a crawl never leaves an empty last one.
      ++batch->id;
      batch->options.path =
          expand_uri(batch->options.uri, batch_parameters(batch->parameters, batch->id));
      batch->current =
          std::make_unique<feed>(batch->options, batch->flushed_per_page, flushes_);
    }
    ok = batch->current->write(item) && ok;
    if (batch->options.batch_item_count > 0 && ++batch->items == batch->options.batch_item_count) {
      ok = batch->current->close(stats_) && ok;
      batch->current.reset();
      batch->items = 0;
    }
  }
  return ok;
}

bool feed_exporter::flush() {
  ++flushes_;
  bool ok = true;
  for (auto& batch : batches_) {
    if (batch->current) ok = batch->current->flush() && ok;
  }
  return ok;
}

void feed_exporter::recorded(std::uint64_t flush) {
  for (auto& batch : batches_) {
    if (batch->current) batch->current->recorded(flush);
  }
}

void feed_exporter::take_back_unrecorded() {
  for (auto& batch : batches_) {
    if (batch->current) batch->current->take_back_unrecorded();
  }
}

bool feed_exporter::close() {
  bool ok = true;
  for (auto& batch : batches_) {
    if (batch->current) ok = batch->current->close(stats_) && ok;
  }
  batches_.clear();
  return ok;
}

}  // namespace crawler
