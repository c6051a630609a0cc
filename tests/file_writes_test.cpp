// Files written into folders others may write (config/file_writes.h), and every writer of
// JOBDIR that goes through them: a link planted at any name they use is never written through.
#include "config/file_writes.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "redis_server.h"
#include "scheduler/detail/jobdir_lock.h"
#include "scheduler/request_journal.h"
#include "scheduler/request_queue.h"

namespace {

namespace fs = std::filesystem;
using crawler::fixtures::temp_dir;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::set<std::string> names_in(const fs::path& directory) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(directory)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

// A file outside the folder, and a link to it planted at `name` inside.
struct planted_link {
  planted_link(const fs::path& folder, const std::string& name) : victim(folder / "victim") {
    std::ofstream(victim) << "the victim's own bytes";
    fs::create_symlink(victim, folder / name);
  }
  bool victim_untouched() const { return read_file(victim) == "the victim's own bytes"; }
  fs::path victim;
};

TEST(replace_file, replaces_a_link_planted_at_its_name_and_leaves_the_links_target_alone) {
  temp_dir dir;
  fs::create_directory(dir.path() / "store");
  planted_link link(dir.path(), "store/out.bin");
  crawler::replace_file(dir.path() / "store" / "out.bin", "downloaded", 0644);
  EXPECT_TRUE(link.victim_untouched());
  EXPECT_FALSE(fs::is_symlink(dir.path() / "store" / "out.bin"));
  EXPECT_EQ(read_file(dir.path() / "store" / "out.bin"), "downloaded");
  EXPECT_EQ(names_in(dir.path() / "store"), std::set<std::string>{"out.bin"});
}

TEST(replace_file, gives_the_file_its_mode_less_the_umask) {
  temp_dir dir;
  auto old_mask = ::umask(022);
  crawler::replace_file(dir.path() / "private", "x", 0600);
  crawler::replace_file(dir.path() / "shared", "x", 0666);
  ::umask(old_mask);
  EXPECT_EQ(fs::status(dir.path() / "private").permissions(),
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(fs::status(dir.path() / "shared").permissions(),
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                fs::perms::others_read);
}

TEST(replace_file, a_folder_that_is_not_there_is_named_and_nothing_is_left) {
  temp_dir dir;
  try {
    crawler::replace_file(dir.path() / "missing" / "out.bin", "x", 0644);
    FAIL() << "no error";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()),
              "cannot write " + (dir.path() / "missing" / "out.bin").string() +
                  ": No such file or directory");
  }
  EXPECT_TRUE(names_in(dir.path()).empty());
}

TEST(replacing_file, its_name_is_unguessable_until_it_is_renamed_into_place) {
  temp_dir dir;
  auto path = dir.path() / "feed.jsonl";
  crawler::replacing_file first(path, 0644), second(path, 0644);
  std::regex unguessable(std::regex_replace(path.string(), std::regex(R"([.^$|()\[\]{}*+?\\])"),
                                            R"(\$&)") +
                         R"(\.tmp-[0-9a-z]{16})");
  EXPECT_TRUE(std::regex_match(first.temporary().string(), unguessable)) << first.temporary();
  EXPECT_TRUE(std::regex_match(second.temporary().string(), unguessable)) << second.temporary();
  EXPECT_NE(first.temporary(), second.temporary());
  EXPECT_FALSE(fs::exists(path));
}

TEST(replacing_file, dropped_before_commit_leaves_the_old_file_and_nothing_beside_it) {
  temp_dir dir;
  auto path = dir.path() / "requests.queue.jsonl";
  std::ofstream(path) << "yesterday";
  {
    crawler::replacing_file file(path, 0644);
    file.write("today, cut short");
  }
  EXPECT_EQ(read_file(path), "yesterday");
  EXPECT_EQ(names_in(dir.path()), std::set<std::string>{"requests.queue.jsonl"});
}

TEST(replacing_file, keeps_every_byte_of_small_and_large_pieces_in_their_order) {
  temp_dir dir;
  auto path = dir.path() / "filter.bloom";
  std::string expected;
  {
    crawler::replacing_file file(path, 0644);
    // Around the 64 KiB it buffers: below, at, above, and a piece larger than all of it.
    for (std::size_t size : {1u, 65535u, 1u, 65536u, 70000u, 3u, 200000u, 7u}) {
      std::string piece(size, char('a' + expected.size() % 26));
      expected += piece;
      file.write(piece);
    }
    file.commit();
  }
  EXPECT_EQ(read_file(path), expected);
}

TEST(open_to_append, refuses_a_link_at_its_name_and_appends_to_a_file) {
  temp_dir dir;
  planted_link link(dir.path(), "requests.seen");
  errno = 0;
  EXPECT_EQ(crawler::open_to_append(dir.path() / "requests.seen", 0644), -1);
  EXPECT_EQ(errno, ELOOP);
  EXPECT_TRUE(link.victim_untouched());

  std::ofstream(dir.path() / "log") << "one\n";
  int fd = crawler::open_to_append(dir.path() / "log", 0644);
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(crawler::write_all(fd, "two\n"));
  ::close(fd);
  EXPECT_EQ(read_file(dir.path() / "log"), "one\ntwo\n");
}

// LOG_FILE, STATS_FILE and a feed appended to are destinations a user names: the file at the
// name, created, cut or appended to as asked; a device or pipe a link leads to (/dev/null); never
// the file behind a planted link, which is neither cut nor written.
TEST(open_destination, writes_the_file_at_its_name_or_a_device_and_refuses_a_link_to_a_file) {
  temp_dir dir;
  for (bool truncate : {true, false}) {
    planted_link link(dir.path(), "stats.json");
    errno = 0;
    EXPECT_EQ(crawler::open_destination(dir.path() / "stats.json", 0644, truncate), -1);
    EXPECT_EQ(errno, ELOOP);
    EXPECT_TRUE(link.victim_untouched()) << (truncate ? "cut" : "appended to");
    EXPECT_THROW(
        {
          try {
            crawler::write_destination(dir.path() / "stats.json", "{}");
          } catch (const std::runtime_error& error) {
            EXPECT_NE(std::string(error.what()).find("stats.json: a symbolic link to a file"),
                      std::string::npos)
                << error.what();
            throw;
          }
        },
        std::runtime_error);
    EXPECT_TRUE(link.victim_untouched());
    fs::remove(dir.path() / "stats.json");
    fs::remove(link.victim);
  }

  fs::create_symlink("/dev/null", dir.path() / "to-null");
  int fd = crawler::open_destination(dir.path() / "to-null", 0644, true);
  EXPECT_GE(fd, 0) << "a link to a device is a destination";
  if (fd >= 0) ::close(fd);
  {
    // A crawl started with stdin closed (a daemon, `<&-`) gets descriptor 0 for it: still one.
    int saved_stdin = ::dup(0);
    ASSERT_GE(saved_stdin, 0);
    ::close(0);
    int lowest = crawler::open_destination(dir.path() / "to-null", 0644, true);
    if (lowest >= 0) ::close(lowest);
    bool written = true;
    try {
      crawler::write_destination(dir.path() / "to-null", "{}");
    } catch (const std::exception&) {
      written = false;
    }
    ::dup2(saved_stdin, 0);
    ::close(saved_stdin);
    EXPECT_EQ(lowest, 0) << "the first free descriptor, 0, is an open destination";
    EXPECT_TRUE(written) << "written through descriptor 0";
  }

  auto log = dir.path() / "crawl.log";
  crawler::write_destination(log, "first run\n");  // created
  int appended = crawler::open_destination(log, 0644, false);
  ASSERT_GE(appended, 0);
  EXPECT_TRUE(crawler::write_all(appended, "second run\n"));
  ::close(appended);
  EXPECT_EQ(read_file(log), "first run\nsecond run\n");
  crawler::write_destination(log, "cut\n");
  EXPECT_EQ(read_file(log), "cut\n");

  EXPECT_THROW(crawler::write_destination(dir.path() / "no-such-folder" / "x", "{}"),
               std::runtime_error);
}

// A JOBDIR's lock is let go with the crawl that took it, even when it was given descriptor 0
// (a crawl started with stdin closed): the next crawl of the folder in the process takes it.
TEST(jobdir_lock, a_lock_on_descriptor_0_is_let_go_for_the_next_crawl) {
  temp_dir dir;
  int saved_stdin = ::dup(0);
  ASSERT_GE(saved_stdin, 0);
  ::close(0);
  std::string refused;
  try {
    { crawler::detail::jobdir_lock first(dir.path()); }
    crawler::detail::jobdir_lock second(dir.path());
  } catch (const std::exception& error) {
    refused = error.what();
  }
  ::dup2(saved_stdin, 0);
  ::close(saved_stdin);
  EXPECT_EQ(refused, "");
}

TEST(jobdir_files, links_planted_at_the_journals_names_are_replaced_never_written_through) {
  temp_dir dir;
  planted_link journal(dir.path(), "requests.journal");
  {
    crawler::request_journal requests(dir.path(), false);
    requests.open();
    EXPECT_FALSE(fs::is_symlink(dir.path() / "requests.journal"));
    // The snapshot's name, planted while the crawl runs (a link there at the start is read,
    // and refused as a snapshot it is not).
    fs::create_symlink(journal.victim, dir.path() / "requests.queue.jsonl");
    crawler::request queued{"http://site.test/1"};
    requests.queued(queued);
    requests.commit();
    requests.compact(std::vector<crawler::request>{queued}, {});
  }
  EXPECT_TRUE(journal.victim_untouched());
  EXPECT_FALSE(fs::is_symlink(dir.path() / "requests.queue.jsonl"));
  crawler::request_journal resumed(dir.path(), false);
  auto pending = resumed.open().pending;
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].url, "http://site.test/1");
}

TEST(jobdir_files, links_planted_at_every_segment_name_lose_no_request_and_are_never_followed) {
  temp_dir dir;
  auto segments = dir.path() / "queue-segments";
  crawler::spill_options options;
  options.memory_limit = 4;
  options.directory = segments;
  options.encode = [](const crawler::request& r) { return r.to_json().dump(); };
  options.decode = [](std::string_view line, const std::string& where) {
    return crawler::request::from_json(nlohmann::json::parse(line), where);
  };
  crawler::memory_queue queue(crawler::queue_order::fifo, options);
  std::ofstream(dir.path() / "victim") << "the victim's own bytes";
  for (int i = 0; i < 40; ++i) {
    fs::create_symlink(dir.path() / "victim", segments / (std::to_string(i) + ".jsonl"));
  }
  for (int i = 0; i < 30; ++i) queue.push(crawler::request{"http://site.test/" + std::to_string(i)});
  std::size_t popped = 0;
  while (queue.pop()) ++popped;
  EXPECT_EQ(popped, 30u);  // a segment refused keeps its requests in memory
  EXPECT_EQ(read_file(dir.path() / "victim"), "the victim's own bytes");
}

}  // namespace
