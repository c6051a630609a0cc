// scrapy-redis's queue form, from what scrapy-redis 0.9.1 itself wrote (fixtures/scrapy_redis):
// every request it pickled reads into the request it stands for and writes back byte for byte,
// its dupefilter's fingerprints are ours, and a pickle that would run a command is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "request/request.h"
#include "scheduler/fleet/pickle.h"
#include "scheduler/fleet/scrapy_request.h"
#include "tree_paths.h"

namespace {

namespace pickle = crawler::pickle;

std::string base64_decode(const std::string& text) {
  static const std::string alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned bits = 0;
  int count = 0;
  for (char c : text) {
    auto at = alphabet.find(c);
    if (at == std::string::npos) continue;  // '=' padding
    bits = bits << 6 | unsigned(at);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += char((bits >> count) & 0xff);
    }
  }
  return out;
}

const nlohmann::json& fixtures() {
  static const nlohmann::json loaded = [] {
    std::ifstream in(crawler::fixtures::fixtures_dir() / "scrapy_redis/fixtures.json");
    return nlohmann::json::parse(in);
  }();
  return loaded;
}

// A "decoded" member as the fixture writes bytes: {"b64": ...}.
std::string bytes_in(const nlohmann::json& v) {
  return v.is_object() ? base64_decode(v["b64"].get<std::string>()) : v.get<std::string>();
}

class each_fixture_request : public testing::TestWithParam<std::string> {
 protected:
  const nlohmann::json& fixture() const { return fixtures()["requests"][GetParam()]; }
  std::string stored() const { return base64_decode(fixture()["pickle_b64"].get<std::string>()); }
};

TEST_P(each_fixture_request, reads_into_the_request_python_decodes_it_to) {
  const auto& decoded = fixture()["decoded"];
  auto read = crawler::request_from_scrapy_dict(pickle::read(stored()), "site:requests");
  EXPECT_EQ(read.url, decoded["url"]);
  EXPECT_EQ(read.method, decoded["method"]);
  EXPECT_EQ(read.body, bytes_in(decoded["body"]));
  EXPECT_EQ(read.callback, decoded["callback"].is_null() ? "" : decoded["callback"]);
  EXPECT_EQ(read.errback, decoded["errback"].is_null() ? "" : decoded["errback"]);
  EXPECT_EQ(read.priority, decoded["priority"]);
  EXPECT_EQ(read.dont_filter, decoded["dont_filter"]);
  crawler::header_list headers;
  for (const auto& [name, values] : decoded["headers"].items()) {
    for (const auto& one : values) headers.emplace_back(name.substr(2), bytes_in(one));
  }
  // Python's dict keeps the order; the fixture's JSON sorted it.
  auto in_order = read.headers;
  std::sort(in_order.begin(), in_order.end());
  std::sort(headers.begin(), headers.end());
  EXPECT_EQ(in_order, headers);
  auto meta = read.meta;
  auto carried = meta[std::string(crawler::scrapy_request_meta_key)];
  meta.erase(std::string(crawler::scrapy_request_meta_key));
  EXPECT_EQ(meta, decoded["meta"]);
  // The callback's keyword arguments are the request's own; what has no field here travels
  // beside the meta, as Python wrote it.
  EXPECT_EQ(read.cb_kwargs, decoded.value("cb_kwargs", nlohmann::json::object()));
  EXPECT_EQ(read.cookies, decoded.value("cookies", nlohmann::json::object()));
  for (const char* member : {"flags", "_class", "dumps_kwargs"}) {
    bool unset = !decoded.contains(member) || decoded[member].empty();
    if (unset) {
      EXPECT_FALSE(carried.is_object() && carried.contains(member)) << member;
    } else {
      EXPECT_EQ(carried[member], decoded[member]) << member;
    }
  }
}

TEST_P(each_fixture_request, written_back_is_byte_equal_to_what_scrapy_redis_stored) {
  auto read = crawler::request_from_scrapy_dict(pickle::read(stored()), "site:requests");
  EXPECT_EQ(pickle::write(crawler::scrapy_dict_of(read)), stored());
}

TEST_P(each_fixture_request, fingerprint_equals_scrapy_redis_dupefilters) {
  auto read = crawler::request_from_scrapy_dict(pickle::read(stored()), "site:requests");
  EXPECT_EQ(
      crawler::fingerprint_of(read, crawler::dedup::fingerprint_scheme::scrapy_redis_0_8).hex(),
      fixture()["fingerprint_scrapy_redis"]);
}

INSTANTIATE_TEST_SUITE_P(scrapy_redis, each_fixture_request,
                         testing::Values("get", "priority", "post_form", "json", "headers_cookies",
                                         "idn"));

TEST(scrapy_redis_pickle, a_pickle_that_would_run_a_command_is_refused_and_nothing_runs) {
  auto hostile = base64_decode(fixtures()["hostile_pickle_b64"].get<std::string>());
  std::filesystem::remove("scrapy_redis_fixture_pwned");
  try {
    pickle::read(hostile);
    FAIL() << "read a pickle that calls posix.system";
  } catch (const pickle::error& refused) {
    EXPECT_NE(std::string(refused.what())
                  .find("holds opcode STACK_GLOBAL, which names the Python object "
                        "posix.system, not one of the str subclasses read as str "
                        "(lxml.etree._ElementUnicodeResult); only data is read (at byte 61)"),
              std::string::npos)
        << refused.what();
  }
  EXPECT_FALSE(std::filesystem::exists("scrapy_redis_fixture_pwned"));
}

// Each opcode that reaches past data, alone after a protocol header: refused by name.
TEST(scrapy_redis_pickle, every_opcode_that_names_or_builds_an_object_is_refused_by_name) {
  const std::pair<char, const char*> opcodes[] = {{'c', "GLOBAL"},    {'\x93', "STACK_GLOBAL"},
                                                  {'R', "REDUCE"},    {'b', "BUILD"},
                                                  {'i', "INST"},      {'o', "OBJ"},
                                                  {'\x81', "NEWOBJ"}, {'\x92', "NEWOBJ_EX"},
                                                  {'\x82', "EXT1"},   {'P', "PERSID"},
                                                  {'Q', "BINPERSID"}, {'\x97', "NEXT_BUFFER"}};
  for (const auto& [op, name] : opcodes) {
    std::string bytes{"\x80\x05N", 3};
    bytes += op;
    bytes += '.';
    try {
      pickle::read(bytes);
      ADD_FAILURE() << name << " was read";
    } catch (const pickle::error& refused) {
      EXPECT_NE(std::string(refused.what()).find(std::string("opcode ") + name + ","),
                std::string::npos)
          << refused.what();
    }
  }
}

// What the reader says of `bytes`: "read", or its error.
std::string refused(const std::string& bytes) {
  try {
    pickle::read(bytes);
    return "read";
  } catch (const pickle::error& error) {
    return error.what();
  }
}

// Pickle bytes for the allow-list's tests: a header, a str (SHORT_BINUNICODE), a bytes.
const std::string protocol_5{"\x80\x05", 2};
std::string py_str(std::string_view text) {
  return std::string(1, '\x8c') + char(text.size()) + std::string(text);
}
std::string py_bytes(std::string_view text) {
  return std::string(1, 'C') + char(text.size()) + std::string(text);
}
const std::string lxml_class =
    protocol_5 + py_str("lxml.etree") + py_str("_ElementUnicodeResult") + "\x93";

// The allow-list's one entry, as a CrawlSpider's meta["link_text"] holds it: lxml's str subclass,
// pickled as its class, a tuple of one str and NEWOBJ, in protocol 5's form (STACK_GLOBAL) and
// protocol 2's (GLOBAL). It is read as the str it holds. (scrapy_redis_interop_test reads the
// same from pickles Python makes at test time.)
TEST(scrapy_redis_pickle, lxmls_str_subclass_is_read_as_the_str_it_holds) {
  for (const auto& made : {lxml_class + py_str("A x") + "\x85\x81.",
                           std::string("\x80\x02"
                                       "clxml.etree\n_ElementUnicodeResult\n") +
                               py_str("A x") + "\x85\x81."}) {
    auto read = pickle::read(made);
    EXPECT_EQ(read.type, pickle::value::kind::text);
    EXPECT_EQ(read.text, "A x");
  }
}

// What the allow-list does not open: another class, by either opcode; the class itself as a
// value; NEWOBJ of a non-class, or of the class from anything but one str.
TEST(scrapy_redis_pickle, around_the_allow_list_every_other_object_is_refused_by_name) {
  auto at = [](std::size_t offset) { return " (at byte " + std::to_string(offset) + ")"; };
  const std::string not_listed =
      ", not one of the str subclasses read as str "
      "(lxml.etree._ElementUnicodeResult); only data is read";
  EXPECT_EQ(refused("\x80\x02"
                    "cos\nsystem\n."),
            "the pickle holds opcode GLOBAL, which names the Python object os.system" + not_listed +
                at(2));
  auto other_module = protocol_5 + py_str("lxml") + py_str("_ElementUnicodeResult");
  EXPECT_EQ(refused(other_module + "\x93."),
            "the pickle holds opcode STACK_GLOBAL, which names the Python object "
            "lxml._ElementUnicodeResult" +
                not_listed + at(other_module.size()));
  auto named_by_bytes = protocol_5 + py_str("lxml.etree") + py_bytes("_ElementUnicodeResult");
  EXPECT_EQ(refused(named_by_bytes + "\x93."),
            "the pickle holds opcode STACK_GLOBAL, which names a Python object with a bytes; "
            "only data is read" +
                at(named_by_bytes.size()));
  EXPECT_EQ(refused(lxml_class + "."),
            "the pickle holds the Python class lxml.etree._ElementUnicodeResult itself, where "
            "only its instances are read");
  const std::string not_one_str =
      "the pickle holds opcode NEWOBJ, which builds a "
      "_ElementUnicodeResult from other than one str; only data is read";
  for (const auto& args : {py_str("a") + py_str("b") + "\x86", std::string(")"),
                           py_bytes("a") + "\x85", py_str("a")}) {
    EXPECT_EQ(refused(lxml_class + args + "\x81."),
              not_one_str + at(lxml_class.size() + args.size()));
  }
  auto none_class = protocol_5 + "N" + py_str("a") + "\x85";
  EXPECT_EQ(refused(none_class + "\x81."),
            "the pickle holds opcode NEWOBJ, which builds an object of what is not a class; only "
            "data is read" +
                at(none_class.size()));
  auto named_after_mark = protocol_5 + py_str("lxml.etree") + "(";
  EXPECT_EQ(refused(named_after_mark + "\x93."),
            "the pickle holds opcode STACK_GLOBAL, which names a Python object with what is not "
            "on the stack; only data is read" +
                at(named_after_mark.size()));
  auto after_mark = protocol_5 + "(" + py_str("a") + "\x85";
  EXPECT_EQ(refused(after_mark + "\x81."),
            "the pickle holds opcode NEWOBJ, which builds a Python object from what is not on the "
            "stack; only data is read" +
                at(after_mark.size()));
  // The class named, then called by REDUCE rather than NEWOBJ: still refused, by REDUCE's name.
  EXPECT_NE(refused(lxml_class + py_str("a") + "\x85R.").find("opcode REDUCE,"), std::string::npos);
}

TEST(scrapy_redis_pickle, malformed_or_explosive_pickles_are_errors_not_crashes) {
  EXPECT_NE(refused({"\x80\x05\x8c\x05"
                     "ab",
                     6})
                .find("ends inside"),
            std::string::npos);
  EXPECT_NE(refused({"\x80\x05]", 3}).find("ends before its STOP"), std::string::npos);
  EXPECT_NE(refused({"\x80\x05h\x07.", 5}).find("reads memo 7, which it never stored"),
            std::string::npos);
  EXPECT_NE(refused({"\x80\x05NN.", 5}).find("stops with 2 values"), std::string::npos);
  EXPECT_NE(refused({"\x80\x05}]\x94N\x73.", 8}).find("keys a dict with a list"),
            std::string::npos);
  // A list that holds itself: legal for Python, endless for a reader that copies it.
  EXPECT_NE(refused({"\x80\x05]\x94h\x00"
                     "a.",
                     8})
                .find("nests deeper than 100"),
            std::string::npos);
  // Each level holds the one below twice: 2^40 values from 300 bytes.
  std::string laughs{
      "\x80\x05]\x94"
      "0",
      5};
  for (int level = 0; level < 40; ++level) {
    laughs += "(h";
    laughs += char(level);
    laughs += 'h';
    laughs += char(level);
    laughs +=
        "l\x94"
        "0";
  }
  laughs += 'h';
  laughs += char(40);
  laughs += '.';
  EXPECT_NE(refused(laughs).find("expands to more than 1000000 values"), std::string::npos);
}

// A dict whose pickle sets one key twice is what Python reads: one key, the later value, where
// the key first stood. Keys equal in Python are one key (1, True and 1.0; two equal tuples);
// keys Python tells apart stay apart (two tuples that differ in one item, a str and its bytes).
TEST(scrapy_redis_pickle, a_dict_keeps_one_value_for_keys_python_holds_equal) {
  // {1: 'a', ('t', 1): 'b', True: 'c', ('t', 2): 'd', 1.0: 'e', ('t', 1): 'f', 'k': 1, b'k': 2}
  std::string crafted;
  const std::string hex =
      "80057d284b018c0261318c01744b01868c026231888c0263318c01744b02868c026431473ff00000"
      "000000008c0265318c01744b01868c0266318c016b4b0143016b4b02752e";
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    crafted += char(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  auto read = pickle::read(crafted);
  ASSERT_EQ(read.items.size(), 10u);
  EXPECT_EQ(read.items[0].integer, 1);
  EXPECT_EQ(read.items[1].text, "e1");
  EXPECT_EQ(read.items[2].type, pickle::value::kind::tuple);
  EXPECT_EQ(read.items[3].text, "f1");
  EXPECT_EQ(read.items[4].items[1].integer, 2);
  EXPECT_EQ(read.items[5].text, "d1");
  EXPECT_EQ(read.items[6].type, pickle::value::kind::text);
  EXPECT_EQ(read.items[8].type, pickle::value::kind::bytes);
}

TEST(scrapy_redis_pickle, data_round_trips_through_the_writer) {
  auto dict = pickle::value::dict();
  dict.set("big", pickle::value::of(std::int64_t(1) << 40));
  dict.set("negative", pickle::value::of(std::int64_t(-1) << 39));
  dict.set("int32", pickle::value::of(std::int64_t(-70000)));
  dict.set("real", pickle::value::of(1.5));
  dict.set("long", pickle::value::str(std::string(300, 'x')));
  dict.set("bytes", pickle::value::bytes(std::string("\0\xff", 2)));
  auto tuple = pickle::value::list();
  tuple.type = pickle::value::kind::tuple;
  for (int i = 0; i < 5; ++i) tuple.items.push_back(pickle::value::of(std::int64_t(i)));
  dict.set("tuple", tuple);
  auto read = pickle::read(pickle::write(dict));
  ASSERT_EQ(read.items.size(), dict.items.size());
  EXPECT_EQ(read.find("big")->integer, std::int64_t(1) << 40);
  EXPECT_EQ(read.find("negative")->integer, std::int64_t(-1) << 39);
  EXPECT_EQ(read.find("int32")->integer, -70000);
  EXPECT_EQ(read.find("real")->real, 1.5);
  EXPECT_EQ(read.find("long")->text, std::string(300, 'x'));
  EXPECT_EQ(read.find("bytes")->text, std::string("\0\xff", 2));
  EXPECT_EQ(read.find("tuple")->type, pickle::value::kind::tuple);
  EXPECT_EQ(read.find("tuple")->items.size(), 5u);
}

// scrapy-redis pops an entry, then looks its callback up as a method of the spider: a name no
// Python method can have would be lost there, so it is never written. Identifiers pass, with
// non-ASCII letters; an empty name is None (parse, or no errback).
TEST(scrapy_redis_pickle, a_callback_no_python_method_can_be_named_is_never_written) {
  auto written = [](std::string callback, std::string errback) {
    crawler::request request{"http://a/x", std::move(callback)};
    request.errback = std::move(errback);
    try {
      auto dict = crawler::scrapy_dict_of(request);
      return std::string(dict.find("callback")->type_name()) + " " +
             std::string(dict.find("errback")->type_name());
    } catch (const std::invalid_argument& refused) {
      return std::string(refused.what());
    }
  };
  EXPECT_EQ(written("parse_item", "_errback"), "str str");
  EXPECT_EQ(written("_callback2", ""), "str None");
  EXPECT_EQ(written("", ""), "None None");
  EXPECT_EQ(written("parse_\xc3\xa9t\xc3\xa9", ""), "str None");
  EXPECT_EQ(written("parse-item", ""),
            "<GET http://a/x>: its callback \"parse-item\" cannot be the name of a Python "
            "spider's method, which a scrapy-redis worker would look it up as "
            "(SCHEDULER_SERIALIZER = \"scrapy_redis.picklecompat\")");
  EXPECT_NE(written("parse", "2nd").find("its errback \"2nd\" cannot be"), std::string::npos);
  EXPECT_NE(written("parse item", "").find("its callback \"parse item\""), std::string::npos);
}

TEST(scrapy_redis_pickle, a_request_dict_with_a_member_of_the_wrong_type_names_it) {
  auto dict = pickle::value::dict();
  dict.set("url", pickle::value::str("http://a/"));
  dict.set("priority", pickle::value::str("high"));
  try {
    crawler::request_from_scrapy_dict(dict, "site:requests entry L1");
    FAIL();
  } catch (const std::invalid_argument& refused) {
    EXPECT_EQ(std::string(refused.what()), "site:requests entry L1: \"priority\" must be an int");
  }
}

// A url is text a JSON request can hold: UTF-8 well formed, every sequence of it. Bytes that
// start a sequence and are not followed by its continuation bytes, or stop short of them, are
// refused naming the member; well-formed sequences of each length pass.
TEST(scrapy_redis_pickle, a_url_that_is_not_well_formed_utf8_is_refused_naming_it) {
  for (std::string url : {"http://a/\xc3\x28", "http://a/\xe2\x82", "http://a/\xe2\x28\xa1",
                          "http://a/\xf0\x9f\x98\x28", "http://a/\xff", "http://a/\xc3"}) {
    auto dict = pickle::value::dict();
    dict.set("url", pickle::value::str(url));
    try {
      crawler::request_from_scrapy_dict(dict, "site:requests entry L1");
      ADD_FAILURE() << "took " << url;
    } catch (const std::invalid_argument& refused) {
      EXPECT_EQ(std::string(refused.what()), "site:requests entry L1: \"url\" is not UTF-8");
    }
  }
  for (std::string url : {"http://a/\xc3\xa9", "http://a/\xe2\x82\xac", "http://a/\xf0\x9f\x98\x80"}) {
    auto dict = pickle::value::dict();
    dict.set("url", pickle::value::str(url));
    EXPECT_EQ(crawler::request_from_scrapy_dict(dict, "site:requests entry L1").url, url);
  }
}

}  // namespace
