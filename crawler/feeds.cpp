#include "crawler/feeds.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "config/log.h"

namespace crawler {
namespace {

std::string format_for_extension(std::string_view path) {
  auto extension = std::filesystem::path(path).extension().string();
  if (extension == ".jsonl" || extension == ".jl" || extension == ".jsonlines") return "jsonlines";
  if (extension == ".json") return "json";
  if (extension == ".csv") return "csv";
  return {};
}

std::string csv_field(const nlohmann::json& value) {
  std::string text;
  if (value.is_string()) {
    text = value.get<std::string>();
  } else if (value.is_array()) {
    for (const auto& element : value) {
      if (!text.empty()) text += ',';
      text += element.is_string() ? element.get<std::string>() : element.dump();
    }
  } else if (!value.is_null()) {
    text = value.dump();
  }
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + '"';
}

// The file's size up to and including its last newline, and its whole size.
std::pair<std::uintmax_t, std::uintmax_t> whole_lines_size(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(0, std::ios::end);
  auto size = std::streamoff(in.tellg());
  if (size <= 0) return {0, 0};
  std::streamoff keep = size;
  char c = 0;
  while (keep > 0) {
    in.seekg(keep - 1);
    in.get(c);
    if (c == '\n') break;
    --keep;
  }
  return {std::uintmax_t(keep), std::uintmax_t(size)};
}

// A feed appended to must end with a whole line: a crawl killed mid-write leaves a cut-short
// last line, which the next run's first item would merge into. It is dropped, with a warning
// (its item is crawled again: its page was not done).
void drop_torn_tail(const std::string& path) {
  auto [keep, size] = whole_lines_size(path);
  if (keep == size) return;
  std::filesystem::resize_file(path, keep);
  get_logger("feedexport")
      ->warn("{}: dropped its last {} bytes, a line cut short by a crash", path, size - keep);
}

}  // namespace

nlohmann::json feed_for_file(std::string_view path, bool overwrite) {
  auto format = format_for_extension(path);
  if (format.empty()) {
    throw settings_error("-o " + std::string(path) +
                         ": cannot tell the feed format from the extension; use .jsonl, .jl, "
                         ".json or .csv");
  }
  return {{"format", format}, {"overwrite", overwrite}};
}

class feed_exporter::feed {
 public:
  feed(std::string path, std::string format, bool overwrite, bool flushed_per_page)
      : path_(std::move(path)), format_(std::move(format)), flushed_per_page_(flushed_per_page) {
    if (format_ == "json") overwrite = true;  // two arrays in one file would not be JSON
    if (auto parent = std::filesystem::path(path_).parent_path(); !parent.empty()) {
      std::filesystem::create_directories(parent);
    }
    bool existing = !overwrite && std::filesystem::is_regular_file(path_) &&
                    std::filesystem::file_size(path_) > 0;
    if (existing) drop_torn_tail(path_);
    out_.open(path_, overwrite ? std::ios::trunc : std::ios::app);
    if (!out_) throw std::runtime_error(path_ + ": cannot open the feed for writing");
    std::error_code no_size;  // a device such as /dev/full: none to go back to
    whole_size_ = std::filesystem::file_size(path_, no_size);
    header_written_ = existing;  // appending to a CSV that already has its header row
    if (format_ == "json") out_ << '[';
  }

  // False once the file could not be written (a full disk): logged once, with the reason.
  bool write(const nlohmann::json& item) {
    if (format_ == "jsonlines") {
      out_ << item.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    } else if (format_ == "json") {
      out_ << (count_ ? ",\n" : "\n")
           << item.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    } else {
      write_csv(item);
    }
    ++count_;
    return check();
  }

  // A failed write may have put part of a line on the disk (all of it that fit). With JOBDIR the
  // file goes back to its size at the last flush that succeeded, the end of a page that is done
  // (the items after it come again with their pages, crawled again by the resume); without, to
  // its last whole line.
  bool check() {
    if (out_ || failed_) return !failed_;
    failed_ = true;
    auto reason = std::strerror(errno);
    get_logger("feedexport")->error("Cannot write the {} feed {}: {}", format_, path_, reason);
    out_.close();  // now: later, closing would write the rest of its buffer after the cut
    std::error_code ignored;
    std::filesystem::resize_file(
        path_, flushed_per_page_ ? whole_size_ : whole_lines_size(path_).first, ignored);
    return false;
  }

  bool flush() {
    out_.flush();
    if (!check()) return false;
    std::error_code error;
    if (auto size = std::filesystem::file_size(path_, error); !error) whole_size_ = size;
    return true;
  }

  bool close(stats& stats) {
    if (format_ == "json") out_ << (count_ ? "\n]\n" : "]\n");
    out_.close();
    auto log = get_logger("feedexport");
    if (!out_) {
      log->error("Error storing {} feed ({} items) in: {}", format_, count_, path_);
      stats.inc_value("feedexport/failed_count/FileFeedStorage");
      return false;
    }
    log->info("Stored {} feed ({} items) in: {}", format_, count_, path_);
    stats.inc_value("feedexport/success_count/FileFeedStorage");
    return true;
  }

 private:
  void write_csv(const nlohmann::json& item) {
    if (!item.is_object()) {
      out_ << csv_field(item) << "\r\n";
      return;
    }
    if (fields_.empty()) {
      for (const auto& [key, value] : item.items()) fields_.push_back(key);
      if (!header_written_) {
        for (std::size_t i = 0; i < fields_.size(); ++i) {
          out_ << (i ? "," : "") << csv_field(fields_[i]);
        }
        out_ << "\r\n";
        header_written_ = true;
      }
    }
    for (std::size_t i = 0; i < fields_.size(); ++i) {
      auto value = item.find(fields_[i]);
      out_ << (i ? "," : "") << (value == item.end() ? "" : csv_field(*value));
    }
    out_ << "\r\n";
  }

  std::string path_;
  std::string format_;
  std::ofstream out_;
  std::vector<std::string> fields_;
  bool header_written_ = false;
  bool failed_ = false;
  std::size_t count_ = 0;
  bool flushed_per_page_;          // JOBDIR: flush() ends each page's items
  std::uintmax_t whole_size_ = 0;  // the file's size at the last flush that succeeded
};

feed_exporter::feed_exporter(const settings& settings, stats& stats) : stats_(stats) {
  for (const auto& [uri, options] : settings.get("FEEDS").items()) {
    auto where = "FEEDS." + uri;
    if (!options.is_object()) throw settings_error(where + ": must be an object of feed options");
    std::string path = uri.starts_with("file://") ? uri.substr(7) : uri;
    if (path.find("://") != std::string::npos) {
      throw settings_error(where + ": only local files are supported as feed storage");
    }
    auto format = options.value("format", format_for_extension(path));
    if (format == "jsonl" || format == "jl") format = "jsonlines";
    if (format != "jsonlines" && format != "json" && format != "csv") {
      throw settings_error(where + ".format: unknown format \"" + format +
                           "\"; valid formats are jsonlines, json and csv");
    }
    auto overwrite = options.value("overwrite", false);
    feeds_.push_back(std::make_unique<feed>(path, format, overwrite, settings.has("JOBDIR")));
  }
}

feed_exporter::~feed_exporter() = default;

bool feed_exporter::export_item(const nlohmann::json& item) {
  bool ok = true;
  for (auto& feed : feeds_) ok = feed->write(item) && ok;
  return ok;
}

bool feed_exporter::flush() {
  bool ok = true;
  for (auto& feed : feeds_) ok = feed->flush() && ok;
  return ok;
}

bool feed_exporter::close() {
  bool ok = true;
  for (auto& feed : feeds_) ok = feed->close(stats_) && ok;
  feeds_.clear();
  return ok;
}

}  // namespace crawler
