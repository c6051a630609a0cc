// Items with declared fields, item loaders and processors (crawler/parse/item_loader.h), held to
// what Scrapy's ItemLoader and itemloaders.processors return for the same page (the expected
// values were printed by Scrapy 2.8 with itemloaders and w3lib on Debian 12).
#include "crawler/parse/item_loader.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace p = crawler::processors;
using value = p::value;

crawler::response item_page(std::string body) {
  crawler::response response;
  response.url = response.request.url = "http://books.example/1";
  response.body = std::move(body);
  response.headers.emplace_back("Content-Type", "text/html; charset=utf-8");
  return response;
}

const std::string book_page =
    "<html><body>\n"
    "<h1>  A <b>Light</b> in the Attic\xc2\xa0 </h1>\n"
    "<p class=\"price\">  \xc2\xa3"
    "51.77 </p>\n"
    "<ul class=\"tags\"><li><a> poetry </a></li><li><a>classics</a></li><li><a>  </a></li></ul>\n"
    "<p class=\"desc\">Line one\n\tline two</p>\n"
    "</body></html>";

const crawler::item_type book("Book",
                              {{"title", {.input = p::map_compose({p::remove_tags, p::strip})}},
                               {"price"},
                               {"tags", {.output = p::join(", ")}},
                               {"description"},
                               {"isbn"}});

TEST(item_loader, trims_joins_and_takes_the_first_value_as_scrapys_does) {
  auto response = item_page(book_page);
  crawler::item_loader loader(book, response);
  loader.default_output = p::take_first();
  loader.add_css("title", "h1");
  loader.add_css("price", "p.price::text", {p::map_compose({p::strip})});
  loader.add_css("tags", "ul.tags a::text", {p::map_compose({p::strip})});
  loader.add_css("description", "p.desc::text", {p::map_compose({p::replace_escape_chars})});
  loader.add_css("isbn", ".isbn::text");  // nothing matches: the field is left out
  EXPECT_EQ(loader.get_collected_values("tags"), value({"poetry", "classics", ""}));
  EXPECT_EQ(loader.load_item().dump(),
            R"({"title":"A Light in the Attic","price":"£51.77","tags":"poetry, classics, ",)"
            R"("description":"Line oneline two"})");
}

TEST(item_loader, a_field_the_item_type_does_not_declare_is_an_error_naming_it) {
  crawler::item_loader loader(book);
  try {
    loader.add_value("pirce", "12");
    FAIL() << "an undeclared field was taken";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "Book does not support field: pirce");
  }
  EXPECT_THROW(book.check({{"title", "x"}, {"pirce", "12"}}), std::invalid_argument);
  EXPECT_NO_THROW(book.check({{"title", "x"}, {"price", "12"}}));
}

TEST(item_loader, the_loaders_processors_for_a_field_win_over_the_types_and_the_defaults) {
  crawler::item_loader loader(book);
  loader.add_value("price", value({"", "12", "13"}));
  EXPECT_EQ(loader.get_output_value("price"), value({"", "12", "13"}));  // identity by default
  loader.default_output = p::take_first();
  EXPECT_EQ(loader.get_output_value("price"), "12");
  loader.field_processors("price", {.output = p::join("|")});
  EXPECT_EQ(loader.get_output_value("price"), "|12|13");
  loader.field_processors("tags", {.output = p::take_first()});
  loader.add_value("tags", value({"a", "b"}));
  EXPECT_EQ(loader.get_output_value("tags"), "a");  // over the type's join(", ")
  loader.replace_value("price", "14");
  EXPECT_EQ(loader.get_output_value("price"), "14");
}

TEST(item_loader, a_loader_over_one_element_selects_under_it) {
  auto response = item_page(R"(<div class="quote"><span>One</span><small> Ann </small></div>)"
                            R"(<div class="quote"><span>Two</span><small>Bob</small></div>)");
  const crawler::item_type quote("Quote",
                                 {{"text"}, {"author", {.input = p::map_compose({p::strip})}}});
  std::vector<std::string> loaded;
  for (const auto& element : response.css("div.quote")) {
    crawler::item_loader loader(quote, element);
    loader.default_output = p::take_first();
    loader.add_css("text", "span::text");
    loader.add_xpath("author", "./small/text()");
    loaded.push_back(loader.load_item().dump());
  }
  EXPECT_EQ(loaded, (std::vector<std::string>{R"({"text":"One","author":"Ann"})",
                                              R"({"text":"Two","author":"Bob"})"}));
}

TEST(processors, map_compose_flattens_lists_and_drops_nulls_and_compose_stops_at_null) {
  auto twice_or_drop = [](const value& v) -> value {
    if (v == "drop") return nullptr;
    return value::array({v, v});
  };
  EXPECT_EQ(p::map_compose({twice_or_drop, p::strip})(value({" a ", "drop", "b"})),
            value({"a", "a", "b", "b"}));
  EXPECT_EQ(p::map_compose({p::strip})("  one value  "), value({"one value"}));
  EXPECT_EQ(p::take_first()(value({nullptr, "", "x", "y"})), "x");
  EXPECT_EQ(p::take_first()(value::array()), nullptr);
  EXPECT_EQ(p::join()(value({"a", "b"})), "a b");
  auto first_with_bang = p::compose(
      {p::take_first(), [](const value& v) -> value { return v.get<std::string>() + "!"; }});
  EXPECT_EQ(first_with_bang(value({"", "x"})), "x!");
  EXPECT_EQ(first_with_bang(value({""})), nullptr);  // stopped at take_first's null
}

TEST(processors, strip_and_remove_tags_return_what_python_and_w3lib_return) {
  // str.strip() removes Unicode whitespace (no-break space, ideographic space), not other bytes.
  EXPECT_EQ(p::strip("\xc2\xa0\t a b \xe3\x80\x80\n"), "a b");
  EXPECT_EQ(p::strip("\xc3\xa9t\xc3\xa9"), "\xc3\xa9t\xc3\xa9");
  EXPECT_EQ(p::strip(12), 12);
  EXPECT_EQ(p::remove_tags("a <b>b</b> <br/> < c > </ d> <x\ny>z</x>"), "a b  < c > </ d> z");
  EXPECT_EQ(p::replace_escape_chars("a\nb\tc\rd"), "abcd");
}

}  // namespace

namespace {

// re= and nested loaders, as Scrapy's ItemLoader (itemloaders 1.0): the expected item is its
// load_item() on the same page and calls.
TEST(item_loader, re_keeps_what_a_regex_takes_and_nested_loaders_add_to_the_outer_item) {
  auto response = item_page(
      "<div class=\"product\"><h2>Book <b>A</b></h2><p class=\"price\">Price: \xc2\xa3"
      "51.77 (was \xc2\xa3"
      "60.00)</p></div><div class=\"product\"><h2>Book B</h2><p class=\"price\">\xc2\xa3"
      "12.00</p></div><footer><a href=\"/x\">x</a><p class=\"price\">\xc2\xa3"
      "99</p></footer>");
  const crawler::item_type shop(
      "Shop",
      {{"price"}, {"whole"}, {"code"}, {"footer_price"}, {"footer_link"}, {"anywhere"}, {"none"}});
  crawler::item_loader loader(shop, response);
  loader.add_css("price", "p.price::text", crawler::re{"\xc2\xa3([\\d.]+)"});
  loader.add_xpath("whole", "//h2/text()", crawler::re{R"(Book \w)"});
  loader.add_value("code", nlohmann::json::array({"ab-12", "cd-3 ef-4"}),
                   crawler::re{R"((\w+)-(\d+))"});
  auto footer = loader.nested_css("footer");
  footer.add_css("footer_price", "p.price::text");
  footer.add_xpath("footer_link", ".//a/@href");
  footer.add_xpath("anywhere", "//h2/b/text()");  // "//" still searches the whole page
  auto aside = loader.nested_css("aside");        // no match: adds nothing
  aside.add_css("none", "p::text");
  auto expected = crawler::item::parse(
      R"({"price": ["51.77", "60.00", "12.00", "99"], "whole": ["Book B"],
          "code": ["ab", "12", "cd", "3", "ef", "4"], "footer_price": ["£99"],
          "footer_link": ["/x"], "anywhere": ["A"]})");
  EXPECT_EQ(loader.load_item(), expected);
  EXPECT_EQ(footer.load_item(), expected);  // the one item, from either loader
  EXPECT_THROW(loader.add_css("price", "p::text", crawler::re{"(unclosed"}), std::invalid_argument);
}

// Scrapy's loader context, read by a processor that captures the loader (its loader_context
// argument in Python): set on the loader, copied to a nested one.
TEST(item_loader, processors_read_the_loaders_context_and_nested_loaders_start_with_it) {
  auto response = item_page("<p class=\"price\">51.77</p><footer><p>12</p></footer>");
  const crawler::item_type priced("Priced", {{"price"}, {"footer"}});
  crawler::item_loader loader(priced, response);
  loader.context["currency"] = "EUR";
  auto in_currency = p::map_compose({[&loader](const p::value& value) -> p::value {
    return value.get<std::string>() + " " + loader.context["currency"].get<std::string>();
  }});
  loader.field_processors("price", {.input = in_currency});
  loader.add_css("price", "p.price::text");
  auto footer = loader.nested_css("footer");
  EXPECT_EQ(footer.context, loader.context);
  footer.context["currency"] = "GBP";
  footer.field_processors("footer",
                          {.input = p::map_compose({[&footer](const p::value& value) -> p::value {
                             return value.get<std::string>() + " " +
                                    footer.context["currency"].get<std::string>();
                           }})});
  footer.add_css("footer", "p::text");
  EXPECT_EQ(loader.load_item(),
            crawler::item::parse(R"({"price": ["51.77 EUR"], "footer": ["12 GBP"]})"));
  EXPECT_EQ(loader.context["currency"], "EUR");
}

}  // namespace
