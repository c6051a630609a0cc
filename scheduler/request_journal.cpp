#include "scheduler/request_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <stdexcept>

namespace crawler {
namespace {

namespace fs = std::filesystem;

std::runtime_error io_error(const fs::path& path, std::string_view action) {
  return std::runtime_error("cannot " + std::string(action) + " " + path.string() + ": " +
                            std::strerror(errno));
}

void write_all(int fd, std::string_view text, const fs::path& path) {
  while (!text.empty()) {
    auto written = ::write(fd, text.data(), text.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      throw io_error(path, "write");
    }
    text.remove_prefix(std::size_t(written));
  }
}

std::string new_token() {
  std::random_device random;
  static constexpr char hex[] = "0123456789abcdef";
  std::string token;
  for (int i = 0; i < 16; ++i) token += hex[random() % 16];
  return token;
}

// The file's lines; a last line without its newline is torn (counted, not returned).
std::vector<std::string> read_lines(const fs::path& path, std::size_t& torn) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) {
      ++torn;
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

nlohmann::json parse_line(std::string_view json_text, const std::string& where) {
  auto json = nlohmann::json::parse(json_text, nullptr, false);
  if (json.is_discarded()) {
    throw std::runtime_error(where + ": not a JSON request; delete the file to start afresh");
  }
  return json;
}

}  // namespace

request_journal::request_journal(fs::path dir, bool fsync, request_secrets secrets)
    : snapshot_path_(dir / "requests.queue.jsonl"),
      journal_path_(dir / "requests.journal"),
      fsync_(fsync),
      secrets_(std::move(secrets)) {}

request_journal::~request_journal() {
  if (fd_ >= 0) ::close(fd_);
}

request_journal::replay request_journal::open() {
  replay result;
  fs::create_directories(snapshot_path_.parent_path());
  // Pending requests by id, in the order they were queued.
  std::vector<std::pair<std::string, request>> order;
  std::map<std::string, std::size_t> position;
  token_ = "-";
  std::size_t torn = 0;
  auto snapshot = read_lines(snapshot_path_, torn);
  if (torn) {
    // Snapshots are renamed into place whole: a torn one was not written by this crawler.
    throw std::runtime_error(snapshot_path_.string() +
                             ": the last line is cut short; delete the file to start afresh");
  }
  for (std::size_t i = 0; i < snapshot.size(); ++i) {
    const auto& line = snapshot[i];
    if (line.empty()) continue;
    if (line.starts_with('#')) {
      if (i == 0) token_ = line.size() > 2 ? line.substr(2) : "-";
      continue;
    }
    auto where = snapshot_path_.string() + ":" + std::to_string(i + 1);
    auto json = parse_line(line, where);
    if (json.is_object() && json.value("unchecked", false)) {
      result.unchecked.push_back(request::from_json(json, where));
      continue;
    }
    auto id = "s" + std::to_string(i + 1);
    position[id] = order.size();
    order.emplace_back(id, request::from_json(json, where));
  }
  std::vector<bool> done(order.size(), false);
  std::vector<std::size_t> settling;  // positions marked "~"
  auto journal = read_lines(journal_path_, result.torn_lines);
  if (!journal.empty() && journal[0] != "# " + token_) {
    result.stale_journal = true;
    journal.clear();
    result.torn_lines = 0;
  }
  for (std::size_t i = 1; i < journal.size(); ++i) {
    const auto& line = journal[i];
    auto where = journal_path_.string() + ":" + std::to_string(i + 1);
    if (line.starts_with('+')) {
      auto space = line.find(' ');
      if (space == std::string::npos) throw std::runtime_error(where + ": a queued line has no id");
      auto id = line.substr(1, space - 1);
      auto queued =
          request::from_json(parse_line(std::string_view(line).substr(space + 1), where), where);
      if (auto number = std::strtoull(id.c_str(), nullptr, 10); number >= next_id_) {
        next_id_ = number + 1;
      }
      result.journaled.push_back(queued);
      position[id] = order.size();
      order.emplace_back(id, std::move(queued));
      done.push_back(false);
    } else if (line.starts_with('-') || line.starts_with('~')) {
      auto found = position.find(line.substr(1));
      if (found == position.end()) {
        throw std::runtime_error(where + ": marks a request it never queued");
      }
      if (line[0] == '-') {
        done[found->second] = true;
      } else {
        settling.push_back(found->second);
      }
    } else {
      throw std::runtime_error(where + ": expected +<id> <request>, ~<id> or -<id>");
    }
  }
  for (auto at : settling) {
    if (!done[at]) result.torn_settles.push_back(order[at].first);
  }
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (done[i]) continue;
    order[i].second.lease = order[i].first;
    result.pending.push_back(std::move(order[i].second));
  }

  // Appending resumes after the last whole line; a fresh journal starts with its snapshot's token.
  bool fresh = journal.empty();
  if (fresh) {
    std::ofstream(journal_path_, std::ios::trunc) << "# " << token_ << '\n';
  } else if (result.torn_lines) {
    std::size_t whole = 0;
    for (const auto& line : journal) whole += line.size() + 1;
    fs::resize_file(journal_path_, whole);
  }
  fd_ = ::open(journal_path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd_ < 0) throw io_error(journal_path_, "open");
  return result;
}

void request_journal::queued(request& request) {
  request.lease = std::to_string(next_id_++);
  pending_ += '+';
  pending_ += request.lease;
  pending_ += ' ';
  pending_ +=
      secrets_.to_json(request).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  pending_ += '\n';
}

void request_journal::settling(const std::string& id) {
  pending_ += '~';
  pending_ += id;
  pending_ += '\n';
}

void request_journal::done(const std::string& id) {
  pending_ += '-';
  pending_ += id;
  pending_ += '\n';
}

void request_journal::commit() {
  if (pending_.empty() || fd_ < 0) return;
  write_all(fd_, pending_, journal_path_);
  if (fsync_ && ::fdatasync(fd_) != 0) throw io_error(journal_path_, "fsync");
  pending_.clear();
}

void request_journal::compact(const std::vector<request>& pending,
                              const std::vector<request>& unchecked) {
  compact(
      [&pending](const std::function<void(const request&)>& visit) {
        for (const auto& queued : pending) visit(queued);
      },
      unchecked);
}

void request_journal::compact(const pending_requests& pending,
                              const std::vector<request>& unchecked) {
  commit();
  auto partial = snapshot_path_;
  partial += ".partial";
  auto token = new_token();
  {
    std::ofstream out(partial, std::ios::trunc);
    out << "# " << token << '\n';
    auto write = [this, &out](const request& queued, bool checked) {
      auto json = secrets_.to_json(queued);
      if (!checked) json["unchecked"] = true;
      out << json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    };
    pending([&write](const request& queued) { write(queued, true); });
    for (const auto& queued : unchecked) write(queued, false);
    out.flush();
    if (!out) throw io_error(partial, "write");
  }
  if (fsync_) {
    int fd = ::open(partial.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) throw io_error(partial, "fsync");
    ::close(fd);
  }
  fs::rename(partial, snapshot_path_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  std::error_code ignored;
  fs::remove(journal_path_, ignored);  // a crash before this leaves a journal with the old token
  token_ = token;
}

}  // namespace crawler
