// An item: what a spider callback yields for the pipelines, the feeds and a fleet's Redis items. A
// JSON object whose fields keep the order the spider gave them, as a Scrapy item (a dict) does and
// as every exporter writes them (nlohmann::json sorts an object's keys; ordered_json keeps them).
//
//   crawler::item book{{"title", title}, {"url", response.url}, {"price", price}};
//   book["tags"] = tags;                          // after price
//   out.item(std::move(book));                    // JSON lines: {"title":...,"url":...,...}
#pragma once

#include <nlohmann/json.hpp>

namespace crawler {

using item = nlohmann::ordered_json;

}  // namespace crawler
