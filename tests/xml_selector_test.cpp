// Selectors on XML responses (Scrapy's XmlResponse): parsed as XML, so names keep their case and
// namespaces. Every expected value was printed by Scrapy 2.8 (parsel, lxml) on the same body.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "crawler/parse/response.h"

namespace {

using strings = std::vector<std::string>;

crawler::response xml_response(std::string body, std::string content_type = "application/xml",
                               std::string url = "http://example.org/feed") {
  crawler::response response;
  response.url = std::move(url);
  response.body = std::move(body);
  if (!content_type.empty()) response.headers.emplace_back("Content-Type", content_type);
  return response;
}

const std::string feed = R"(<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:g="http://base.google.com/ns/1.0">
<channel>
<Title>Feed</Title>
<item><Name>One</Name><name>lower</name><g:price>10</g:price><link>http://a/1</link></item>
<item ID="b"><Name>Two</Name><g:price>20</g:price><![CDATA[raw <b>text</b>]]></item>
</channel>
</rss>)";

TEST(xml_selectors, css_matches_element_and_attribute_names_as_written) {
  auto response = xml_response(feed);
  ASSERT_TRUE(response.is_xml());
  EXPECT_EQ(response.css("Name::text").getall(), (strings{"One", "Two"}));
  EXPECT_EQ(response.css("name::text").getall(), (strings{"lower"}));
  EXPECT_EQ(response.css("NAME::text").getall(), strings{});
  EXPECT_EQ(response.css("item[ID]::attr(ID)").getall(), (strings{"b"}));
  EXPECT_EQ(response.css("item[id]::attr(id)").getall(), strings{});
  // Within a selection too.
  EXPECT_EQ(response.css("item").css("Name::text").getall(), (strings{"One", "Two"}));
  EXPECT_EQ(response.css("item")[0].css("name::text").getall(), (strings{"lower"}));
}

// Compiled selectors are kept for the next page: the same selector on an HTML page and then on
// an XML one is compiled for each, case-folded for the one and as written for the other.
TEST(xml_selectors, one_selector_on_html_then_xml_matches_each_by_its_rules) {
  crawler::response html;
  html.url = "http://example.org/";
  html.body = "<Item><Name>html</Name></Item>";
  html.headers.emplace_back("Content-Type", "text/html");
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(html.css("Name::text").getall(), (strings{"html"}));
    EXPECT_EQ(xml_response(feed).css("Name::text").getall(), (strings{"One", "Two"}));
    EXPECT_EQ(xml_response(feed).css("NAME::text").getall(), strings{});
    EXPECT_EQ(html.css("NAME::text").getall(), (strings{"html"}));
  }
  // A bad selector is not kept: it fails every time.
  for (int round = 0; round < 2; ++round) {
    EXPECT_THROW(html.css("p["), crawler::selector_error);
  }
}

TEST(xml_selectors, cdata_is_text) {
  auto response = xml_response(feed);
  EXPECT_EQ(response.xpath("//item[2]/text()").getall(), (strings{"raw <b>text</b>"}));
}

TEST(xml_selectors, xpath_sees_namespaces_the_document_declares_and_those_registered) {
  auto response = xml_response(feed);
  // parsel needs register_namespace("g", ...) first; the document's own prefixes are known here.
  EXPECT_EQ(response.xpath("//g:price/text()").getall(), (strings{"10", "20"}));

  auto sitemap = xml_response(
      R"(<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://x/1</loc></url></urlset>)");
  // An element in a default namespace is not a plain name, to CSS or XPath, as in Scrapy.
  EXPECT_EQ(sitemap.css("url").getall(), strings{});
  EXPECT_EQ(sitemap.css("loc::text").getall(), strings{});
  EXPECT_EQ(sitemap.xpath("//url").getall(), strings{});
  sitemap.register_namespace("s", "http://www.sitemaps.org/schemas/sitemap/0.9");
  EXPECT_EQ(sitemap.xpath("//s:loc/text()").getall(), (strings{"http://x/1"}));
}

TEST(xml_selectors, an_element_is_written_as_xml_with_the_namespaces_it_uses) {
  auto response = xml_response(feed);
  EXPECT_EQ(response.css("item").get(),
            R"(<item xmlns:g="http://base.google.com/ns/1.0"><Name>One</Name><name>lower</name><g:price>10</g:price><link>http://a/1</link></item>)");
  EXPECT_EQ(response.xpath("//g:price").get(),
            R"(<g:price xmlns:g="http://base.google.com/ns/1.0">10</g:price>)");
}

TEST(xml_selectors, entities_are_not_expanded_nor_loaded) {
  auto internal = xml_response(R"(<!DOCTYPE a [<!ENTITY e "boom">]><a>x&e;y</a>)");
  EXPECT_EQ(internal.css("a::text").getall(), (strings{"x", "y"}));
  EXPECT_EQ(internal.xpath("string(/a)").getall(), (strings{"xboomy"}));
  EXPECT_EQ(internal.css("a").get(), "<a>x&e;y</a>");
  auto external =
      xml_response(R"(<!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/hostname">]><a>x&x;y</a>)");
  EXPECT_EQ(external.xpath("string(/a)").getall(), (strings{"xy"})) << "no file is read";
  auto escaped = xml_response("<a>1 &amp; 2 &lt;3</a>");
  EXPECT_EQ(escaped.css("a::text").getall(), (strings{"1 & 2 <3"}));
  auto broken = xml_response("<a><b>unclosed</a>");
  EXPECT_EQ(broken.xpath("string(/a)").getall(), (strings{"unclosed"}));
}

TEST(xml_selectors, the_xml_declaration_names_the_encoding) {
  auto latin = xml_response("<?xml version=\"1.0\" encoding=\"iso-8859-1\"?><a>caf\xe9</a>");
  EXPECT_EQ(latin.css("a::text").getall(), (strings{"caf\xc3\xa9"}));
  EXPECT_EQ(latin.document()->encoding(), "windows-1252");
}

TEST(xml_selectors, a_response_is_xml_by_scrapys_rules) {
  EXPECT_TRUE(xml_response("<a/>", "application/rss+xml").is_xml());
  EXPECT_TRUE(xml_response("<a/>", "text/xml; charset=utf-8").is_xml());
  EXPECT_TRUE(xml_response("<a/>", "application/atom+xml").is_xml());
  EXPECT_FALSE(xml_response("<?xml version=\"1.0\"?><html/>", "text/html").is_xml());
  EXPECT_FALSE(xml_response("<html/>", "application/xhtml+xml").is_xml());
  // No Content-Type that says: the URL, then the body.
  EXPECT_TRUE(xml_response("<a/>", "", "http://example.org/a.xml?x=1").is_xml());
  EXPECT_TRUE(xml_response("<a/>", "application/octet-stream", "http://example.org/f.rss").is_xml());
  EXPECT_TRUE(xml_response("<?xml version=\"1.0\"?><a/>", "", "http://example.org/a").is_xml());
  EXPECT_FALSE(xml_response("<?xml version=\"1.0\"?><html><a/></html>", "", "http://example.org/a")
                   .is_xml());
  EXPECT_FALSE(xml_response("<a/>", "", "http://example.org/a.xml.d/page").is_xml());

  // An HTML page still folds names: <Name> is "name" there.
  auto html = xml_response("<html><body><Name>x</Name></body></html>", "text/html");
  EXPECT_EQ(html.css("name::text").getall(), (strings{"x"}));
  EXPECT_EQ(html.css("NAME::text").getall(), (strings{"x"}));
}

}  // namespace
