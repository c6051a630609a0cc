// robots.txt parsing and matching, from the examples and rules of RFC 9309.
#include "crawler/parse/robots_txt.h"

#include <gtest/gtest.h>

namespace {

using crawler::robots_txt;

// RFC 9309 section 5.1.
const char* rfc_simple_example = R"(User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
)";

TEST(robots_txt, a_named_group_replaces_the_star_group) {
  robots_txt robots{rfc_simple_example};
  EXPECT_TRUE(robots.allowed("https://example.com/example/page.html", "foobot"));
  EXPECT_TRUE(robots.allowed("https://example.com/example/allowed.gif", "foobot"));
  EXPECT_FALSE(robots.allowed("https://example.com/example/other.html", "foobot"));
  EXPECT_FALSE(robots.allowed("https://example.com/", "foobot"));
  // foobot's group allows /publications/ nowhere: the star group does not apply to it.
  EXPECT_FALSE(robots.allowed("https://example.com/publications/", "foobot"));
}

TEST(robots_txt, consecutive_user_agent_lines_share_one_group) {
  robots_txt robots{rfc_simple_example};
  for (const char* agent : {"barbot", "bazbot"}) {
    EXPECT_FALSE(robots.allowed("https://example.com/example/page.html", agent)) << agent;
    EXPECT_TRUE(robots.allowed("https://example.com/example/other.html", agent)) << agent;
    EXPECT_TRUE(robots.allowed("https://example.com/image.gif", agent)) << agent;
  }
}

TEST(robots_txt, a_group_without_rules_allows_everything) {
  robots_txt robots{rfc_simple_example};
  EXPECT_TRUE(robots.allowed("https://example.com/example/page.html", "quxbot"));
  EXPECT_TRUE(robots.allowed("https://example.com/x.gif", "quxbot"));
}

TEST(robots_txt, other_crawlers_obey_the_star_group_with_wildcards_and_anchors) {
  robots_txt robots{rfc_simple_example};
  EXPECT_FALSE(robots.allowed("https://example.com/images/cat.gif", "otherbot"));
  EXPECT_TRUE(robots.allowed("https://example.com/images/cat.gif?size=2", "otherbot"));
  EXPECT_TRUE(robots.allowed("https://example.com/images/cat.gifs", "otherbot"));
  EXPECT_FALSE(robots.allowed("https://example.com/example/", "otherbot"));
  EXPECT_FALSE(robots.allowed("https://example.com/example/deep/page", "otherbot"));
  EXPECT_TRUE(robots.allowed("https://example.com/publications/2022.html", "otherbot"));
  EXPECT_TRUE(robots.allowed("https://example.com/", "otherbot"));
}

// RFC 9309 section 5.2: the most specific (longest) match wins.
TEST(robots_txt, the_longest_matching_rule_wins) {
  robots_txt robots{R"(User-Agent: foobot
Allow: /example/page/
Disallow: /example/page/disallowed.gif
)"};
  EXPECT_TRUE(robots.allowed("https://example.com/example/page/", "foobot"));
  EXPECT_TRUE(robots.allowed("https://example.com/example/page/allowed.gif", "foobot"));
  EXPECT_FALSE(robots.allowed("https://example.com/example/page/disallowed.gif", "foobot"));
  robots_txt wildcards{"User-agent: *\nDisallow: /*.php\nAllow: /a*.php\n"};
  EXPECT_TRUE(wildcards.allowed("/a.php", "bot"));
  EXPECT_FALSE(wildcards.allowed("/b.php", "bot"));
}

TEST(robots_txt, allow_wins_a_tie_between_equally_long_rules) {
  robots_txt robots{"User-agent: *\nDisallow: /page\nAllow: /page\n"};
  EXPECT_TRUE(robots.allowed("/page", "bot"));
}

// RFC 9309 section 2.2.2's table: paths and patterns compare percent-encoded.
TEST(robots_txt, percent_encoding_is_compared_in_one_spelling) {
  robots_txt robots{
      "User-agent: *\n"
      "Disallow: /foo/bar?baz=quz\n"
      "Disallow: /foo/bar/\xE3\x83\x84\n"
      "Disallow: /encoded/%e3%83%85\n"
      "Disallow: /foo/bar/%62%61%7A\n"
      "Disallow: /zero/%0a%c0\n"};
  EXPECT_FALSE(robots.allowed("https://example.com/foo/bar?baz=quz", "bot"));
  EXPECT_TRUE(robots.allowed("https://example.com/foo/bar?baz=other", "bot"));
  EXPECT_FALSE(robots.allowed("https://example.com/foo/bar/%E3%83%84", "bot"));
  EXPECT_FALSE(robots.allowed("https://example.com/encoded/%E3%83%85", "bot"));
  EXPECT_FALSE(robots.allowed("https://example.com/foo/bar/baz", "bot"));
  EXPECT_FALSE(robots.allowed("https://example.com/foo/bar/%62az", "bot"));
  EXPECT_TRUE(robots.allowed("https://example.com/foo/bar/other", "bot"));
  // A hex digit 0 is a digit like any other, first or second.
  EXPECT_FALSE(robots.allowed("https://example.com/zero/%0A%C0", "bot"));
}

TEST(robots_txt, user_agents_match_case_insensitively_inside_the_full_header) {
  robots_txt robots{
      "User-agent: MyBot\nDisallow: /private\n\n"
      "User-agent: mybot-news\nDisallow: /news\n\n"
      "User-agent: *\nDisallow: /\n"};
  auto browser_like = "Mozilla/5.0 (compatible; mybot/2.1; +https://example.com/bot)";
  EXPECT_FALSE(robots.allowed("/private/x", browser_like));
  EXPECT_TRUE(robots.allowed("/public", browser_like));
  // The most specific product token wins: MyBot-News obeys its own group only.
  EXPECT_TRUE(robots.allowed("/private/x", "MyBot-News/1.0"));
  EXPECT_FALSE(robots.allowed("/news/today", "MyBot-News/1.0"));
  EXPECT_FALSE(robots.allowed("/public", "crawler/0.1"));
}

// The longest token found in the User-Agent picks the group, before or after the shorter one.
TEST(robots_txt, the_longest_user_agent_token_wins_wherever_its_group_sits) {
  for (std::string order : {"news first", "news last"}) {
    std::string news = "User-agent: mybot-news\nDisallow: /news\n\n";
    std::string plain = "User-agent: MyBot\nDisallow: /private\n\n";
    robots_txt robots{order == "news first" ? news + plain : plain + news};
    EXPECT_TRUE(robots.allowed("/private/x", "MyBot-News/1.0")) << order;
    EXPECT_FALSE(robots.allowed("/news/today", "MyBot-News/1.0")) << order;
    EXPECT_FALSE(robots.allowed("/private/x", "MyBot/1.0")) << order;
  }
}

TEST(robots_txt, groups_for_the_same_agent_are_merged) {
  robots_txt robots{
      "User-agent: bot\nDisallow: /a\n\nUser-agent: other\nDisallow: /\n\n"
      "User-agent: bot\nDisallow: /b\n"};
  EXPECT_FALSE(robots.allowed("/a", "bot"));
  EXPECT_FALSE(robots.allowed("/b", "bot"));
  EXPECT_TRUE(robots.allowed("/c", "bot"));
}

TEST(robots_txt, comments_blank_lines_crlf_and_unknown_lines_are_tolerated) {
  robots_txt robots{
      "\xEF\xBB\xBF# a comment\r\n"
      "Disallow: /before-any-group\r\n"
      "this line has no colon\r\n"
      "User-agent: *   # everyone\r\n"
      "Unknown-field: value\r\n"
      "Disallow: /private  # keep out\r\n"
      "Disallow:\r\n"};
  EXPECT_FALSE(robots.allowed("/private/x", "bot"));
  EXPECT_TRUE(robots.allowed("/before-any-group", "bot"));
  EXPECT_TRUE(robots.allowed("/public", "bot"));
}

TEST(robots_txt, no_matching_group_and_an_empty_file_allow_everything) {
  EXPECT_TRUE(robots_txt{""}.allowed("/anything", "bot"));
  EXPECT_TRUE(robots_txt{"User-agent: other\nDisallow: /\n"}.allowed("/anything", "bot"));
  EXPECT_TRUE(robots_txt{"<html><body>Not Found</body></html>"}.allowed("/x", "bot"));
}

TEST(robots_txt, robots_txt_itself_is_always_allowed) {
  robots_txt robots{"User-agent: *\nDisallow: /\n"};
  EXPECT_FALSE(robots.allowed("https://example.com/", "bot"));
  EXPECT_FALSE(robots.allowed("https://example.com", "bot"));
  EXPECT_TRUE(robots.allowed("https://example.com/robots.txt", "bot"));
  EXPECT_FALSE(robots_txt::disallow_all().allowed("https://example.com/index.html", "bot"));
  EXPECT_TRUE(robots_txt::disallow_all().allowed("https://example.com/robots.txt", "bot"));
  EXPECT_TRUE(robots_txt::allow_all().allowed("https://example.com/index.html", "bot"));
}

TEST(robots_txt, an_anchored_pattern_must_match_the_whole_path) {
  robots_txt robots{"User-agent: *\nDisallow: /exact$\nDisallow: /*/end$\nDisallow: /a*b*c\n"};
  EXPECT_FALSE(robots.allowed("/exact", "bot"));
  EXPECT_TRUE(robots.allowed("/exact/more", "bot"));
  EXPECT_FALSE(robots.allowed("/x/y/end", "bot"));
  EXPECT_TRUE(robots.allowed("/x/y/end/", "bot"));
  EXPECT_FALSE(robots.allowed("/a-b-c-d", "bot"));
  EXPECT_TRUE(robots.allowed("/a-c-b", "bot"));
}

TEST(robots_txt, crawl_delay_comes_from_the_obeyed_group) {
  robots_txt robots{
      "User-agent: *\nCrawl-delay: 2.5\n\nUser-agent: fastbot\nCrawl-delay: 0.1\n"
      "User-agent: brokenbot\nCrawl-delay: soon\n"};
  EXPECT_EQ(robots.crawl_delay("otherbot"), 2.5);
  EXPECT_EQ(robots.crawl_delay("fastbot/1.0"), 0.1);
  EXPECT_EQ(robots_txt{"User-agent: bot\nCrawl-delay: soon\n"}.crawl_delay("bot"), std::nullopt);
  EXPECT_EQ(robots_txt{"User-agent: *\nDisallow: /\n"}.crawl_delay("bot"), std::nullopt);
}

TEST(robots_txt, sitemaps_are_listed_whatever_group_they_sit_in) {
  robots_txt robots{
      "Sitemap: https://example.com/sitemap.xml\nUser-agent: bot\nDisallow: /x\n"
      "sitemap: https://example.com/news.xml.gz # news\n"};
  EXPECT_EQ(robots.sitemaps(), (std::vector<std::string>{"https://example.com/sitemap.xml",
                                                         "https://example.com/news.xml.gz"}));
}

TEST(robots_txt, only_the_first_500_kib_are_read) {
  std::string body = "User-agent: *\nDisallow: /early\n";
  body += std::string(600 * 1024, '\n');
  body += "Disallow: /late\n";
  robots_txt robots{body};
  EXPECT_FALSE(robots.allowed("/early", "bot"));
  EXPECT_TRUE(robots.allowed("/late", "bot"));
}

}  // namespace
