// JOBDIR's request journal on its own: what a resume finds after a crash at any point of a write
// or of a close.
#include "scheduler/request_journal.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>
#include <fstream>

#include "redis_server.h"

namespace {

using crawler::request;
using crawler::request_journal;
using crawler::fixtures::temp_dir;

std::vector<std::string> urls(const std::vector<request>& requests) {
  std::vector<std::string> out;
  for (const auto& r : requests) out.push_back(r.url);
  return out;
}

void append(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::app) << text;
}

TEST(request_journal, what_was_queued_and_not_done_is_pending_after_a_crash) {
  temp_dir dir;
  std::string parent_id;
  {
    request_journal journal(dir.path(), false);
    EXPECT_TRUE(journal.open().pending.empty());
    request a{"http://a/1"}, b{"http://a/2"};
    journal.queued(a);
    journal.queued(b);
    journal.commit();
    request child{"http://a/3"};
    journal.queued(child);
    journal.done(a.lease);
    journal.commit();
    // killed here: no compact
  }
  request_journal again(dir.path(), false);
  auto replay = again.open();
  EXPECT_EQ(urls(replay.pending), (std::vector<std::string>{"http://a/2", "http://a/3"}));
  EXPECT_EQ(replay.journaled.size(), 3u);  // a/1 too: its fingerprint is seen
  // Ids keep going up across runs, so the next run's marks are unambiguous.
  request next{"http://a/4"};
  again.queued(next);
  EXPECT_EQ(next.lease, "4");
}

// A resumed request is the request that was queued, every field of it: a priority or a POST body
// lost in the journal would change the crawl after a crash.
TEST(request_journal, a_resumed_request_keeps_every_field) {
  temp_dir dir;
  request queued{"http://a/form"};
  queued.method = "POST";
  queued.headers = {{"Content-Type", "application/x-www-form-urlencoded"}, {"X-Twice", "1"},
                    {"X-Twice", "2"}};
  queued.body = "q=crawler&page=2";
  queued.meta = {{"depth", 3}, {"cookiejar", "b"}};
  queued.priority = -7;
  queued.dont_filter = true;
  queued.callback = "parse_result";
  queued.errback = "on_error";
  {
    request_journal journal(dir.path(), false);
    journal.open();
    journal.queued(queued);
    journal.commit();
  }
  request_journal again(dir.path(), false);
  auto replay = again.open();
  ASSERT_EQ(replay.pending.size(), 1u);
  const auto& resumed = replay.pending[0];
  EXPECT_EQ(resumed.url, queued.url);
  EXPECT_EQ(resumed.method, "POST");
  EXPECT_EQ(resumed.headers, queued.headers);
  EXPECT_EQ(resumed.body, queued.body);
  EXPECT_EQ(resumed.meta, queued.meta);
  EXPECT_EQ(resumed.priority, -7);
  EXPECT_TRUE(resumed.dont_filter);
  EXPECT_EQ(resumed.callback, "parse_result");
  EXPECT_EQ(resumed.errback, "on_error");
}

// A saved request keeps the headers it was given, but not its secrets: those named in
// SENSITIVE_HEADERS, those as DEFAULT_REQUEST_HEADERS gives them (applied again at fetch), and
// meta "proxy"'s credentials.
TEST(request_secrets, a_saved_request_keeps_its_own_headers_and_no_secret) {
  crawler::settings settings;
  settings.set_from_string(R"(DEFAULT_REQUEST_HEADERS={"Accept": "text/html", "X-Key": "k1"})");
  settings.set_from_string(R"(SENSITIVE_HEADERS=["Authorization", "X-Session"])");
  crawler::request_secrets secrets(settings);
  request queued{"http://a/page"};
  queued.headers = {{"Accept", "application/json"},  // the spider's own: kept
                    {"X-Key", "k1"},                 // as the settings give it: applied again
                    {"authorization", "Bearer t0ken"},
                    {"X-Session", "s3ss"},
                    {"Referer", "http://a/"}};
  queued.meta = {{"proxy", "http://user:pr0xy-pass@proxy:3128"}};
  auto json = secrets.to_json(queued);
  auto read = request::from_json(json, "test");
  EXPECT_EQ(read.headers, (crawler::header_list{{"Accept", "application/json"},
                                                {"Referer", "http://a/"}}));
  EXPECT_EQ(read.meta["proxy"], "http://proxy:3128");
  EXPECT_EQ(json.dump().find("pr0xy-pass"), std::string::npos);

  settings.set_from_string(R"(SENSITIVE_HEADERS=["Authorization", "not a name"])");
  try {
    crawler::request_secrets refused(settings);
    ADD_FAILURE() << "a header name with spaces was taken";
  } catch (const crawler::settings_error& error) {
    EXPECT_EQ(std::string(error.what()),
              "SENSITIVE_HEADERS[1]: must be a header name, got \"not a name\"");
  }
}

// "~<id>": a page's links went to a dupefilter that records them at once (Redis). A crash before
// its done mark leaves the page pending and torn; one whose outcome was stored is not.
TEST(request_journal, a_page_whose_links_were_being_checked_at_a_crash_is_torn) {
  temp_dir dir;
  {
    request_journal journal(dir.path(), false);
    journal.open();
    request a{"http://a/1"}, b{"http://a/2"}, c{"http://a/3"};
    journal.queued(a);
    journal.queued(b);
    journal.queued(c);
    journal.settling(a.lease);
    journal.settling(b.lease);
    journal.done(b.lease);
    journal.commit();
  }
  request_journal journal(dir.path(), false);
  auto replay = journal.open();
  EXPECT_EQ(urls(replay.pending), (std::vector<std::string>{"http://a/1", "http://a/3"}));
  EXPECT_EQ(replay.torn_settles, std::vector<std::string>{"1"});
}

TEST(request_journal, a_line_cut_short_by_a_crash_is_dropped_and_appending_goes_on_after_it) {
  temp_dir dir;
  {
    request_journal journal(dir.path(), false);
    journal.open();
    request a{"http://a/1"};
    journal.queued(a);
    journal.commit();
  }
  append(dir.path() / "requests.journal", "+2 {\"url\": \"http://a/tor");
  {
    request_journal journal(dir.path(), false);
    auto replay = journal.open();
    EXPECT_EQ(replay.torn_lines, 1u);
    EXPECT_EQ(urls(replay.pending), std::vector<std::string>{"http://a/1"});
    request b{"http://a/2"};
    journal.queued(b);
    journal.commit();
  }
  request_journal last(dir.path(), false);
  auto replay = last.open();
  EXPECT_EQ(replay.torn_lines, 0u);
  EXPECT_EQ(urls(replay.pending), (std::vector<std::string>{"http://a/1", "http://a/2"}));
}

TEST(request_journal, a_close_makes_a_snapshot_and_a_journal_left_by_a_crash_mid_close_is_ignored) {
  temp_dir dir;
  auto journal_path = dir.path() / "requests.journal";
  {
    request_journal journal(dir.path(), false);
    journal.open();
    request a{"http://a/1"}, b{"http://a/2"};
    journal.queued(a);
    journal.queued(b);
    journal.done(a.lease);
    journal.commit();
    std::ifstream before(journal_path);
    std::string old_journal((std::istreambuf_iterator<char>(before)), {});
    journal.compact({b}, {request{"http://a/unchecked"}});
    EXPECT_FALSE(std::filesystem::exists(journal_path));
    // As if the process died between the snapshot's rename and the journal's removal.
    std::ofstream(journal_path) << old_journal;
  }
  request_journal journal(dir.path(), false);
  auto replay = journal.open();
  EXPECT_TRUE(replay.stale_journal);
  EXPECT_EQ(urls(replay.pending), std::vector<std::string>{"http://a/2"});  // not twice
  EXPECT_EQ(urls(replay.unchecked), std::vector<std::string>{"http://a/unchecked"});
  EXPECT_TRUE(replay.journaled.empty());
}

// A snapshot's first line "# TOKEN" pairs it with the journal written after it. A bare "#" or
// "# " (a snapshot edited by hand) names no token, as a crawl with no snapshot has none: the
// journal such a crawl starts, "# -", is still its own, and its requests are replayed.
TEST(request_journal, a_snapshot_without_a_token_keeps_the_journal_a_tokenless_crawl_wrote) {
  for (std::string header : {"#", "# "}) {
    temp_dir dir;
    request queued{"http://a/from-the-snapshot"};
    std::ofstream(dir.path() / "requests.queue.jsonl")
        << header << '\n' << queued.to_json().dump() << '\n';
    std::ofstream(dir.path() / "requests.journal")
        << "# -\n+7 " << request{"http://a/from-the-journal"}.to_json().dump() << '\n';
    request_journal journal(dir.path(), false);
    auto replay = journal.open();
    EXPECT_FALSE(replay.stale_journal) << '"' << header << '"';
    EXPECT_EQ(urls(replay.pending), (std::vector<std::string>{"http://a/from-the-snapshot",
                                                              "http://a/from-the-journal"}))
        << '"' << header << '"';
  }
}

TEST(request_journal, a_bad_line_in_the_middle_is_an_error_naming_the_file_and_line) {
  temp_dir dir;
  {
    request_journal journal(dir.path(), false);
    journal.open();
  }
  append(dir.path() / "requests.journal", "+1 {\"url\": \"http://a/1\"}\nnonsense\n-1\n");
  request_journal journal(dir.path(), false);
  try {
    journal.open();
    FAIL() << "read a journal with a bad line";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(
        std::string(error.what())
            .find("requests.journal:3: expected +<id> <request>, ~<id> or -<id>"),
        std::string::npos)
        << error.what();
  }
}

// A mark names a request queued before it, in the snapshot or on an earlier line: a mark of an
// id the journal never queued (among fifty it did), or of one queued only after it, is an error
// naming its line, never a request quietly taken for done.
TEST(request_journal, a_mark_of_a_request_it_never_queued_is_an_error_naming_its_line) {
  std::string queued;
  for (int id = 1; id <= 50; ++id) {
    queued += "+" + std::to_string(id) + " {\"url\": \"http://a/" + std::to_string(id) + "\"}\n";
  }
  // Line 1 is the token: the fifty requests take lines 2 to 51, the mark line 52.
  for (const std::string mark : {"-999", "-77", "~123456", "-51"}) {
    temp_dir dir;
    {
      request_journal journal(dir.path(), false);
      journal.open();
    }
    auto body = queued + mark + "\n";
    if (mark == "-51") body += "+51 {\"url\": \"http://a/51\"}\n";  // queued after its mark
    append(dir.path() / "requests.journal", body);
    request_journal journal(dir.path(), false);
    try {
      journal.open();
      ADD_FAILURE() << mark << " was read as a mark of a queued request";
    } catch (const std::runtime_error& error) {
      EXPECT_NE(std::string(error.what()).find("requests.journal:52: marks a request it never "
                                               "queued"),
                std::string::npos)
          << mark << ": " << error.what();
    }
  }
}

TEST(request_journal, a_write_that_fails_is_an_error_naming_the_file) {
  temp_dir dir;
  request_journal journal(dir.path(), false);
  journal.open();
  // A file-size limit at the journal's size: the next write fails as on a full disk.
  rlimit before{};
  getrlimit(RLIMIT_FSIZE, &before);
  auto* previous = std::signal(SIGXFSZ, SIG_IGN);
  rlimit full{rlim_t(std::filesystem::file_size(dir.path() / "requests.journal")), before.rlim_max};
  setrlimit(RLIMIT_FSIZE, &full);
  request a{"http://a/1"};
  journal.queued(a);
  std::string what;
  try {
    journal.commit();
  } catch (const std::runtime_error& error) {
    what = error.what();
  }
  setrlimit(RLIMIT_FSIZE, &before);
  std::signal(SIGXFSZ, previous);
  EXPECT_NE(what.find("cannot write " + (dir.path() / "requests.journal").string()),
            std::string::npos)
      << what;
}

// A write that fails part way (a file size limit 150 bytes past the journal's end: the first
// lines of the batch fit) puts none of its batch in the journal: the file goes back to its size
// after the last commit, since whole lines left there would read as recorded on resume though the
// crawl was told they are not. Every later commit fails the same way and writes nothing, even once
// there is room again: what was not recorded stays unrecorded, and a resume finds exactly the
// commits that succeeded.
TEST(request_journal, a_write_that_fails_part_way_leaves_none_of_its_batch_and_nothing_after) {
  temp_dir dir;
  auto path = dir.path() / "requests.journal";
  request recorded{"http://a/recorded"};
  std::uintmax_t committed = 0;
  {
    request_journal journal(dir.path(), false);
    journal.open();
    journal.queued(recorded);
    journal.commit();
    committed = std::filesystem::file_size(path);
    rlimit before{};
    getrlimit(RLIMIT_FSIZE, &before);
    auto* previous = std::signal(SIGXFSZ, SIG_IGN);
    rlimit almost{rlim_t(committed + 150), before.rlim_max};
    setrlimit(RLIMIT_FSIZE, &almost);
    std::vector<request> batch;
    for (int i = 0; i < 20; ++i) batch.push_back(request{"http://a/lost/" + std::to_string(i)});
    for (auto& request : batch) journal.queued(request);
    journal.done(recorded.lease);
    EXPECT_THROW(journal.commit(), std::runtime_error);
    setrlimit(RLIMIT_FSIZE, &before);
    std::signal(SIGXFSZ, previous);
    EXPECT_EQ(std::filesystem::file_size(path), committed);
    EXPECT_TRUE(journal.holds_only_commits());
    request later{"http://a/later"};
    journal.queued(later);
    try {
      journal.commit();
      ADD_FAILURE() << "a commit after a failed one wrote";
    } catch (const std::runtime_error& error) {
      EXPECT_NE(std::string(error.what()).find("cannot write " + path.string()), std::string::npos)
          << error.what();
    }
    EXPECT_EQ(std::filesystem::file_size(path), committed);
    EXPECT_THROW(journal.compact(std::vector<request>{}, {}), std::runtime_error);
  }
  request_journal again(dir.path(), false);
  auto replay = again.open();
  EXPECT_EQ(urls(replay.pending), std::vector<std::string>{"http://a/recorded"});
  EXPECT_EQ(replay.torn_lines, 0u);
}

// JOBDIR's files are created as Python's open() creates Scrapy's (0666 less the umask): a user
// sees rw-r--r-- under the usual umask, and one who shares JOBDIR with a group (umask 002)
// gets group-writable files, never an execute or sticky bit.
TEST(request_journal, its_files_are_created_0666_less_the_umask) {
  for (mode_t umask : {mode_t(022), mode_t(002)}) {
    temp_dir dir;
    auto before = ::umask(umask);
    {
      request_journal journal(dir.path(), false);
      journal.open();
      request a{"http://a/1"};
      journal.queued(a);
      journal.commit();
      journal.compact(std::vector<request>{a}, {});
      request_journal again(dir.path(), false);
      again.open();
    }
    ::umask(before);
    for (const char* name : {"requests.journal", "requests.queue.jsonl"}) {
      struct stat file {};
      ASSERT_EQ(::stat((dir.path() / name).c_str(), &file), 0) << name;
      EXPECT_EQ(file.st_mode & 07777, 0666 & ~umask) << name << " under umask " << umask;
    }
  }
}

}  // namespace
