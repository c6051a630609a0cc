#include "config/redact.h"

#include <gtest/gtest.h>

#include "config/log.h"
#include "config/settings.h"

using crawler::redact;
using crawler::redact_url;

TEST(redact_url, replaces_the_password_and_keeps_the_rest) {
  EXPECT_EQ(redact_url("redis://:hunter2@db:6379/0"), "redis://:***@db:6379/0");
  EXPECT_EQ(redact_url("http://user:pa:ss@proxy:3128"), "http://user:***@proxy:3128");
  EXPECT_EQ(redact_url("http://user@host/a:b@c"), "http://user@host/a:b@c");  // no password
  EXPECT_EQ(redact_url("no url here: a@b"), "no url here: a@b");
  EXPECT_EQ(redact_url("from redis://:x1@a/0 to redis://:y2@b/1"),
            "from redis://:***@a/0 to redis://:***@b/1");
}

TEST(redacted_settings, hides_redis_passwords_and_credential_headers) {
  crawler::settings s;
  s.set_from_string("REDIS_URL=redis://:hunter2@db:6379/0");
  s.set_from_string(R"(REDIS_PARAMS={"password": "hunter3", "db": 2})");
  s.set_from_string(
      R"(DEFAULT_REQUEST_HEADERS={"Authorization": "Bearer t0ken", "Accept": "*/*"})");
  s.set_from_string(R"(FEEDS={"ftp://u:feedpass@host/items.jl": {"format": "jsonlines"}})");
  auto shown = crawler::redacted_settings(s.to_json()).dump();
  for (const char* secret : {"hunter2", "hunter3", "t0ken", "feedpass"}) {
    EXPECT_EQ(shown.find(secret), std::string::npos) << secret << " in " << shown;
  }
  EXPECT_NE(shown.find("\"db\":2"), std::string::npos) << shown;  // the rest stays readable
  EXPECT_NE(shown.find("*/*"), std::string::npos) << shown;
}

TEST(redact, replaces_remembered_secrets_wherever_they_appear) {
  crawler::settings s;
  s.set_from_string(R"(REDIS_PARAMS={"password": "correct horse"})");
  s.set_from_string("REDIS_URL=redis://:p%40ssword@db:6379/0");
  crawler::remember_secrets(s);
  EXPECT_EQ(redact("AUTH correct horse failed"), "AUTH *** failed");
  EXPECT_EQ(redact("sent p@ssword"), "sent ***");  // the decoded form too
  EXPECT_EQ(redact("nothing secret"), "nothing secret");
}

TEST(redact, every_log_line_is_redacted_whatever_its_arguments) {
  crawler::remember_secret("tr0ub4dor&3");
  testing::internal::CaptureStderr();
  crawler::get_logger("redact_test")
      ->error("AUTH {} refused by {}", "tr0ub4dor&3", "redis://:other-pass@db:6379/0");
  auto line = testing::internal::GetCapturedStderr();
  EXPECT_NE(line.find("AUTH *** refused by redis://:***@db:6379/0"), std::string::npos) << line;
}
