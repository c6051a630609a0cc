#include "crawler/files_pipeline.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <stdexcept>

#include "config/ascii.h"
#include "config/file_writes.h"
#include "config/log.h"
#include "crawler/detail/whole_file.h"

namespace crawler {
namespace {

namespace fs = std::filesystem;

// The extensions of Python 3.11's built-in mimetypes table (Scrapy keeps a URL's extension when
// that table knows it), with .gz and .webp, which Debian's /etc/mime.types adds to it.
constexpr std::array<std::string_view, 151> known_extensions = {
    ".3g2",  ".3gp",     ".3gpp",    ".3gpp2", ".a",        ".aac",   ".adts",  ".ai",
    ".aif",  ".aifc",    ".aiff",    ".ass",   ".au",       ".avi",   ".avif",  ".bat",
    ".bcpio", ".bin",    ".bmp",     ".c",     ".cdf",      ".cpio",  ".csh",   ".css",
    ".csv",  ".dll",     ".doc",     ".dot",   ".dvi",      ".eml",   ".eps",   ".etx",
    ".exe",  ".gif",     ".gtar",    ".gz",   ".h",     ".h5",       ".hdf",   ".heic",  ".heif",
    ".htm",  ".html",    ".ico",     ".ief",   ".jpe",      ".jpeg",  ".jpg",   ".js",
    ".json", ".ksh",     ".latex",   ".loas",  ".m1v",      ".m3u",   ".m3u8",  ".man",
    ".me",   ".mht",     ".mhtml",   ".mif",   ".mjs",      ".mov",   ".movie", ".mp2",
    ".mp3",  ".mp4",     ".mpa",     ".mpe",   ".mpeg",     ".mpg",   ".ms",    ".n3",
    ".nc",   ".nq",      ".nt",      ".nws",   ".o",        ".obj",   ".oda",   ".opus",
    ".p12",  ".p7c",     ".pbm",     ".pdf",   ".pfx",      ".pgm",   ".pl",    ".png",
    ".pnm",  ".pot",     ".ppa",     ".ppm",   ".pps",      ".ppt",   ".ps",    ".pwz",
    ".py",   ".pyc",     ".pyo",     ".qt",    ".ra",       ".ram",   ".ras",   ".rdf",
    ".rgb",  ".roff",    ".rtx",     ".sgm",   ".sgml",     ".sh",    ".shar",  ".snd",
    ".so",   ".src",     ".srt",     ".sv4cpio", ".sv4crc", ".svg",   ".swf",   ".t",
    ".tar",  ".tcl",     ".tex",     ".texi",  ".texinfo",  ".tif",   ".tiff",  ".tr",
    ".trig", ".tsv",     ".txt",     ".ustar", ".vcf",      ".vtt",   ".wasm",  ".wav",
    ".webm", ".webmanifest", ".webp", ".wiz",  ".wsdl",     ".xbm",   ".xlb",   ".xls",
    ".xml",  ".xpdl",    ".xpm",     ".xsl",   ".xwd",      ".zip",
};

static_assert(std::is_sorted(known_extensions.begin(), known_extensions.end()),
              "known_extension() searches it by halves");

bool known_extension(std::string_view extension) {
  return std::binary_search(known_extensions.begin(), known_extensions.end(), extension);
}

// Python's PurePath(url).suffix: of the last non-empty part between slashes, from its last dot
// on, unless the dot starts or ends it. The query stays in ("a.pdf?x=1" has ".pdf?x=1").
std::string_view url_suffix(std::string_view url) {
  while (url.ends_with('/')) url.remove_suffix(1);
  auto name = url.substr(url.rfind('/') + 1);
  auto dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == name.size()) return {};
  return name.substr(dot);
}

std::string hex_digest(const EVP_MD* algorithm, std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &length, algorithm, nullptr) != 1) {
    throw std::runtime_error("OpenSSL could not compute a digest");
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

// <PREFIX>_STORE: a folder, as a path or a file:// URI. Scrapy's other stores (s3://, gs://,
// ftp://) are not here: better to refuse them at the start than to crawl and keep nothing.
fs::path store_folder(const settings& settings, const std::string& key) {
  auto store = settings.get_string(key);
  if (store.empty()) {
    throw settings_error(key + ": not set, and the pipeline that stores files needs a folder");
  }
  if (store.starts_with("file://")) return store.substr(7);
  if (auto colon = store.find("://"); colon != std::string::npos) {
    throw settings_error(key + ": \"" + store + "\": only a local folder can store files here "
                         "(a path or file://PATH), not " + store.substr(0, colon) + "://");
  }
  return store;
}

}  // namespace

files_pipeline::files_pipeline(crawl_context& crawl, std::string_view prefix)
    : engine_(crawl.engine),
      stats_(crawl.stats),
      store_(store_folder(crawl.settings, std::string(prefix) + "_STORE")),
      urls_field_(crawl.settings.get_string(std::string(prefix) + "_URLS_FIELD")),
      result_field_(crawl.settings.get_string(std::string(prefix) + "_RESULT_FIELD")),
      expires_days_(crawl.settings.get_double(std::string(prefix) + "_EXPIRES")),
      allow_redirects_(crawl.settings.get_bool("MEDIA_ALLOW_REDIRECTS")),
      schemes_(crawl.settings),
      logger_(get_logger(prefix == "IMAGES" ? "images" : "files")) {}

std::string files_pipeline::file_path(std::string_view url) {
  std::string extension(url_suffix(url));
  if (!known_extension(extension)) {
    extension = ascii_lower(extension);
    if (!known_extension(extension)) extension.clear();
  }
  return "full/" + hex_digest(EVP_sha1(), url) + extension;
}

void files_pipeline::process_item_async(crawler::item item, spider&, item_done done) {
  std::vector<std::string> urls;
  if (auto named = item.find(urls_field_); named != item.end()) {
    // The error is made before the item moves on: it quotes the item.
    auto refuse = [&](const std::string& problem) {
      auto error = std::make_exception_ptr(std::invalid_argument(problem));
      done(std::move(item), error);
    };
    if (!named->is_array()) {
      return refuse("the item's \"" + urls_field_ + "\" must be a list of URLs, got " +
                    named->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
    for (std::size_t i = 0; i < named->size(); ++i) {
      const auto& url = (*named)[i];
      if (!url.is_string()) {
        return refuse("the item's \"" + urls_field_ + "\"[" + std::to_string(i) +
                      "] must be a URL (a string), got " +
                      url.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      }
      urls.push_back(url.get<std::string>());
    }
  }
  auto held = std::make_shared<item_files>();
  held->item = std::move(item);
  held->done = std::move(done);
  held->results.resize(urls.size());
  // One more than there are files, let go last: files settled at once must not finish the item
  // before every one has been asked for.
  held->waiting = urls.size() + 1;
  for (std::size_t i = 0; i < urls.size(); ++i) {
    want(urls[i], [this, held, i](const file_result& result) {
      held->results[i] = result;
      if (--held->waiting == 0) finish(*held);
    });
  }
  if (--held->waiting == 0) finish(*held);
}

// Scrapy's item_completed: the files had, in the order the item named them.
void files_pipeline::finish(item_files& held) {
  auto& results = held.item[result_field_] = nlohmann::ordered_json::array();
  for (auto& result : held.results) {
    if (result) results.push_back(std::move(*result));
  }
  held.done(std::move(held.item), nullptr);
}

void files_pipeline::want(const std::string& url, file_wanted wanted) {
  if (!schemes_.fetches_remote(url)) {
    logger_->warn("File (refused-scheme): Not downloading <GET {}>: the files pipeline fetches "
                  "only the remote schemes of DOWNLOAD_SCHEMES",
                  url);
    return wanted(std::nullopt);
  }
  dedup::fingerprint key;
  try {
    key = dedup::request_fingerprint("GET", url);
  } catch (const std::exception& error) {
    logger_->warn("File (invalid-url): Error downloading file from <GET {}> referred in <None>: {}",
                  url, error.what());
    return wanted(std::nullopt);
  }
  auto& state = files_[key];
  if (state.settled) return wanted(state.result);
  state.waiting.push_back(std::move(wanted));
  if (state.waiting.size() == 1) fetch(url, key);  // else it is on its way
}

void files_pipeline::fetch(const std::string& url, dedup::fingerprint key) {
  auto path = file_path(url);
  if (auto stored = up_to_date(url, path)) return settle(key, std::move(stored));
  crawler::request request(url);
  // Scrapy's media requests: a redirect is the answer, not a way to the file, unless allowed.
  if (!allow_redirects_) request.meta["handle_httpstatus_all"] = true;
  engine_.download(std::move(request), [this, url, key, path](download_result got) {
    settle(key, store(url, path, got));
  });
}

void files_pipeline::settle(dedup::fingerprint key, file_result result) {
  auto& state = files_[key];
  state.settled = true;
  state.result = std::move(result);
  auto waiting = std::move(state.waiting);
  state.waiting.clear();
  for (auto& wanted : waiting) wanted(state.result);
}

// Scrapy's FSFilesStore.stat_file and the expiry check: a regular file stored less than
// <PREFIX>_EXPIRES days ago, with the MD5 of what it holds.
files_pipeline::file_result files_pipeline::up_to_date(const std::string& url,
                                                       const std::string& path) {
  auto where = store_ / path;
  std::error_code error;
  auto status = fs::symlink_status(where, error);
  if (error || !fs::is_regular_file(status)) return std::nullopt;
  auto modified = fs::last_write_time(where, error);
  if (error) return std::nullopt;
  std::chrono::duration<double, std::ratio<86400>> age = fs::file_time_type::clock::now() - modified;
  if (age.count() > expires_days_) return std::nullopt;
  std::string checksum;
  try {
    checksum = hex_digest(EVP_md5(), detail::read_whole_file(where));
  } catch (const std::exception&) {
    return std::nullopt;  // unreadable: downloaded again, and replaced
  }
  logger_->debug("File (uptodate): Downloaded file from <GET {}> referred in <None>", url);
  count("uptodate");
  return nlohmann::ordered_json{
      {"url", url}, {"path", path}, {"checksum", checksum}, {"status", "uptodate"}};
}

// Scrapy's media_downloaded and file_downloaded: only a 200 with a body is a file.
files_pipeline::file_result files_pipeline::store(const std::string& url, const std::string& path,
                                                  const download_result& got) {
  if (!got.response || !got.error_type.empty()) {
    logger_->warn(
        "File (unknown-error): Error downloading file from <GET {}> referred in <None>: {}: {}",
        url, got.error_type, got.error_message);
    return std::nullopt;
  }
  const auto& response = *got.response;
  if (response.status != 200) {
    logger_->warn("File (code: {}): Error downloading file from <GET {}> referred in <None>",
                  response.status, url);
    return std::nullopt;
  }
  if (response.body.empty()) {
    logger_->warn("File (empty-content): Empty file from <GET {}> referred in <None>: no-content",
                  url);
    return std::nullopt;
  }
  bool cached = std::find(response.flags.begin(), response.flags.end(), "cached") !=
                response.flags.end();
  std::string status = cached ? "cached" : "downloaded";
  try {
    auto where = store_ / path;
    fs::create_directories(where.parent_path());
    // Beside its place under a name nobody can guess, then renamed into it: a reader (the next
    // crawl) sees the whole file or the one before, and a link planted in the store is never
    // followed.
    replace_file(where, response.body, 0644);
  } catch (const std::exception& error) {
    logger_->error("File (error): Error processing file from <GET {}> referred in <None>: {}", url,
                   error.what());
    return std::nullopt;
  }
  logger_->debug("File ({}): Downloaded file from <GET {}> referred in <None>", status, url);
  count(status);
  return nlohmann::ordered_json{{"url", url},
                                {"path", path},
                                {"checksum", hex_digest(EVP_md5(), response.body)},
                                {"status", status}};
}

void files_pipeline::count(std::string_view status) {
  stats_.inc_value("file_count");
  stats_.inc_value("file_status_count/" + std::string(status));
}

}  // namespace crawler
