// The page ledger (crawler/detail/page_ledger.h): a page stays in it while any copy of its ticket
// lives, each stage counts its pages, and what a waiting close logs names them stage by stage in
// the order of a page's walk, the oldest first.
#include "crawler/detail/page_ledger.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using crawler::detail::page_ledger;
using crawler::detail::page_stage;

TEST(page_ledger, a_page_stays_until_the_last_copy_of_its_ticket_is_let_go) {
  auto ledger = page_ledger::create();
  int left = 0;
  ledger->when_left([&] { ++left; });
  auto page = ledger->enter("https://a.test/", page_stage::downloading);
  {
    auto copy = page;
    page = {};
    EXPECT_FALSE(ledger->empty());
    EXPECT_EQ(left, 0);
  }
  EXPECT_TRUE(ledger->empty());
  EXPECT_EQ(left, 1);
  EXPECT_EQ(ledger->at(page_stage::downloading), 0u);
}

TEST(page_ledger, a_ticket_outlives_its_ledgers_owner) {
  page_ledger::ticket page;
  {
    auto ledger = page_ledger::create();
    page = ledger->enter("https://a.test/", page_stage::storing);
  }
  page.at(page_stage::parsing);  // the ledger lives as long as a ticket of it does
  EXPECT_TRUE(bool(page));
}

TEST(page_ledger, each_stage_counts_the_pages_at_it) {
  auto ledger = page_ledger::create();
  auto a = ledger->enter("a", page_stage::downloading);
  auto b = ledger->enter("b", page_stage::downloading);
  a.at(page_stage::parsing);
  a.at(page_stage::parsing);  // the same stage again moves nothing
  EXPECT_EQ(ledger->at(page_stage::downloading), 1u);
  EXPECT_EQ(ledger->at(page_stage::parsing), 1u);
  EXPECT_EQ(ledger->size(), 2u);
  page_ledger::ticket none;
  none.at(page_stage::storing);  // holds no page: nothing moves
  EXPECT_FALSE(bool(none));
  EXPECT_EQ(ledger->at(page_stage::storing), 0u);
  b = {};
  EXPECT_EQ(ledger->at(page_stage::downloading), 0u);
  EXPECT_EQ(ledger->size(), 1u);
}

TEST(page_ledger, holders_name_five_pages_a_stage_the_oldest_first_in_the_walks_order) {
  auto ledger = page_ledger::create();
  EXPECT_EQ(ledger->holders(), "");
  std::vector<page_ledger::ticket> held;
  for (int i = 0; i < 7; ++i) {
    held.push_back(ledger->enter("u" + std::to_string(i), page_stage::downloading));
  }
  held.push_back(ledger->enter("stored", page_stage::storing));
  held.push_back(ledger->enter("r", page_stage::robots));
  EXPECT_EQ(ledger->holders(),
            "1 request waiting for robots.txt (r), 7 downloads (u0, u1, u2, u3, u4, ...) and 1 "
            "page's outcome being stored by the scheduler (stored)");
  held[0].at(page_stage::pipelines);
  held.resize(6);  // u6, stored and r let go
  EXPECT_EQ(ledger->holders(),
            "5 downloads (u1, u2, u3, u4, u5) and 1 page's items in the item pipelines (u0)");
  held[1].at(page_stage::answering);
  held[2].at(page_stage::parsing);
  EXPECT_EQ(ledger->holders(),
            "1 answer on its way to a callback (u1), 3 downloads (u3, u4, u5), 1 page being "
            "parsed (u2) and 1 page's items in the item pipelines (u0)");
}

}  // namespace
