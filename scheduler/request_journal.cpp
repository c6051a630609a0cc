#include "scheduler/request_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

#include "config/file_writes.h"

namespace crawler {
namespace {

namespace fs = std::filesystem;

std::runtime_error io_error(const fs::path& path, std::string_view action) {
  return std::runtime_error("cannot " + std::string(action) + " " + path.string() + ": " +
                            std::strerror(errno));
}

std::string new_token() {
  std::random_device random;
  static constexpr char hex[] = "0123456789abcdef";
  std::string token;
  for (int i = 0; i < 16; ++i) token += hex[random() % 16];
  return token;
}

// Calls `each(number, line)` for each line of the file, read a line at a time; a last line
// without its newline is torn (counted, not passed). Returns the bytes of the whole lines.
template <class Each>
std::size_t for_each_line(const fs::path& path, std::size_t& torn, Each each) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  std::size_t number = 0, whole = 0;
  while (std::getline(in, line)) {
    if (in.eof()) {  // no newline after it
      ++torn;
      break;
    }
    whole += line.size() + 1;
    each(++number, line);
  }
  return whole;
}

// Ids as the resume keeps them: 8 bytes each. Two ids of one journal sharing a hash would take
// one's marks for the other's: at 64 bits, not in any journal a crawl writes.
std::uint64_t id_hash(std::string_view id) {
  return std::hash<std::string_view>{}(id);
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
  auto summary = open([&result](request queued) { result.journaled.push_back(std::move(queued)); },
                      {}, [&result](request pending) { result.pending.push_back(std::move(pending)); });
  static_cast<replay_summary&>(result) = std::move(summary);
  return result;
}

// Three reads, a line at a time: the snapshot (its token, and which of its lines are requests,
// each an id "s<line>"), the journal (what it queued and marked, as 8-byte hashes of the ids, with
// the line of each, so a mark before its request still reads as an error), then the snapshot and
// the journal again for the pending requests, in queue order.
request_journal::replay_summary request_journal::open(
    const visitor& journaled, const std::function<void(const replay_summary&)>& summary,
    const visitor& pending) {
  replay_summary result;
  fs::create_directories(snapshot_path_.parent_path());
  token_ = "-";
  // (id hash, line): line 0 for the snapshot's requests.
  std::vector<std::pair<std::uint64_t, std::size_t>> queued_ids, done_marks, settling_marks;
  std::size_t torn = 0;
  for_each_line(snapshot_path_, torn, [&](std::size_t number, const std::string& line) {
    if (line.empty()) return;
    if (line.starts_with('#')) {
      if (number == 1) token_ = line.size() > 2 ? line.substr(2) : "-";
      return;
    }
    auto where = snapshot_path_.string() + ":" + std::to_string(number);
    auto json = parse_line(line, where);
    if (json.is_object() && json.value("unchecked", false)) {
      result.unchecked.push_back(request::from_json(json, where));
      return;
    }
    queued_ids.emplace_back(id_hash("s" + std::to_string(number)), 0);
  });
  if (torn) {
    // Snapshots are renamed into place whole: a torn one was not written by this crawler.
    throw std::runtime_error(snapshot_path_.string() +
                             ": the last line is cut short; delete the file to start afresh");
  }
  std::size_t journal_lines = 0;
  bool journal_valid = true;
  std::vector<std::string> settling_ids;  // "~" marks, by text: the few a crash leaves
  auto whole = for_each_line(journal_path_, result.torn_lines, [&](std::size_t number,
                                                                    const std::string& line) {
    journal_lines = number;
    if (number == 1) {
      if (line != "# " + token_) journal_valid = false;
      return;
    }
    if (!journal_valid) return;
    auto where = journal_path_.string() + ":" + std::to_string(number);
    if (line.starts_with('+')) {
      auto space = line.find(' ');
      if (space == std::string::npos) throw std::runtime_error(where + ": a queued line has no id");
      auto id = std::string_view(line).substr(1, space - 1);
      auto queued =
          request::from_json(parse_line(std::string_view(line).substr(space + 1), where), where);
      if (auto id_number = std::strtoull(std::string(id).c_str(), nullptr, 10);
          id_number >= next_id_) {
        next_id_ = id_number + 1;
      }
      queued_ids.emplace_back(id_hash(id), number);
      journaled(std::move(queued));
    } else if (line.starts_with('-') || line.starts_with('~')) {
      auto id = std::string_view(line).substr(1);
      (line[0] == '-' ? done_marks : settling_marks).emplace_back(id_hash(id), number);
      if (line[0] == '~') settling_ids.emplace_back(id);
    } else {
      throw std::runtime_error(where + ": expected +<id> <request>, ~<id> or -<id>");
    }
  });
  if (!journal_valid) {
    result.stale_journal = true;
    result.torn_lines = 0;
  }
  // Every mark follows its request: in the snapshot, or on an earlier line of the journal.
  std::sort(queued_ids.begin(), queued_ids.end());
  auto check = [&](const std::vector<std::pair<std::uint64_t, std::size_t>>& marks) {
    for (const auto& [hash, number] : marks) {
      auto first = std::lower_bound(queued_ids.begin(), queued_ids.end(),
                                    std::pair<std::uint64_t, std::size_t>{hash, 0});
      if (first == queued_ids.end() || first->first != hash || first->second > number) {
        throw std::runtime_error(journal_path_.string() + ":" + std::to_string(number) +
                                 ": marks a request it never queued");
      }
    }
  };
  check(done_marks);
  check(settling_marks);
  queued_ids = {};
  std::vector<std::uint64_t> done;
  done.reserve(done_marks.size());
  for (const auto& mark : done_marks) done.push_back(mark.first);
  done_marks = {};
  settling_marks = {};
  std::sort(done.begin(), done.end());
  auto is_done = [&done](std::string_view id) {
    return std::binary_search(done.begin(), done.end(), id_hash(id));
  };
  for (auto& id : settling_ids) {
    if (!is_done(id) && std::find(result.torn_settles.begin(), result.torn_settles.end(), id) ==
                            result.torn_settles.end()) {
      result.torn_settles.push_back(std::move(id));
    }
  }
  if (summary) summary(result);

  std::size_t ignored = 0;
  for_each_line(snapshot_path_, ignored, [&](std::size_t number, const std::string& line) {
    if (line.empty() || line.starts_with('#')) return;
    auto id = "s" + std::to_string(number);
    if (is_done(id)) return;
    auto where = snapshot_path_.string() + ":" + std::to_string(number);
    auto json = parse_line(line, where);
    if (json.is_object() && json.value("unchecked", false)) return;
    auto next = request::from_json(json, where);
    next.lease = std::move(id);
    pending(std::move(next));
  });
  if (journal_valid) {
    ignored = 0;
    for_each_line(journal_path_, ignored, [&](std::size_t number, const std::string& line) {
      if (number == 1 || !line.starts_with('+')) return;
      auto space = line.find(' ');
      auto id = line.substr(1, space - 1);
      if (is_done(id)) return;
      auto where = journal_path_.string() + ":" + std::to_string(number);
      auto next =
          request::from_json(parse_line(std::string_view(line).substr(space + 1), where), where);
      next.lease = std::move(id);
      pending(std::move(next));
    });
  }

  // Appending resumes after the last whole line; a fresh journal starts with its snapshot's token.
  bool fresh = journal_lines == 0 || !journal_valid;
  // JOBDIR may be a folder others can write: no file here is written through a link
  // (config/file_writes.h).
  if (fresh) {
    replace_file(journal_path_, "# " + token_ + "\n", 0666);
  } else if (result.torn_lines) {
    fs::resize_file(journal_path_, whole);
  }
  fd_ = open_to_append(journal_path_, 0666);
  if (fd_ < 0) throw io_error(journal_path_, "open");
  struct stat opened {};
  if (::fstat(fd_, &opened) != 0) throw io_error(journal_path_, "stat");
  committed_size_ = std::uintmax_t(opened.st_size);
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

// A failed write may have put part of the batch on the disk: whole lines of it would read as
// recorded on resume, though the caller was told they are not. So the file goes back to its size
// after the last commit that succeeded, and nothing is written after the failure: what the journal
// holds is exactly what commit() said it holds.
void request_journal::commit() {
  if (!failure_.empty()) throw std::runtime_error(failure_);
  if (pending_.empty() || fd_ < 0) return;
  bool written = write_all(fd_, pending_);
  if (!written || (fsync_ && ::fdatasync(fd_) != 0)) {
    failure_ = io_error(journal_path_, written ? "fsync" : "write").what();
    holds_only_commits_ = ::ftruncate(fd_, off_t(committed_size_)) == 0;
    throw std::runtime_error(failure_);
  }
  committed_size_ += pending_.size();
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
  auto token = new_token();
  replacing_file snapshot(snapshot_path_, 0666);
  snapshot.write("# " + token + "\n");
  auto write = [this, &snapshot](const request& queued, bool checked) {
    auto json = secrets_.to_json(queued);
    if (!checked) json["unchecked"] = true;
    snapshot.write(json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + '\n');
  };
  pending([&write](const request& queued) { write(queued, true); });
  for (const auto& queued : unchecked) write(queued, false);
  snapshot.commit(fsync_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  std::error_code ignored;
  fs::remove(journal_path_, ignored);  // a crash before this leaves a journal with the old token
  token_ = token;
}

}  // namespace crawler
