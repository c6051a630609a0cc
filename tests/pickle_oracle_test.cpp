// The pickle writer against CPython's own: over ten thousand values made by a seeded generator,
// and every length at which what CPython writes changes form (a str or bytes of 256 bytes, a
// payload of 64 KiB, an integer past each width, a list or dict past a batch of 1000, a frame past
// 64 KiB or under 4 bytes, a memo index past 255, CPython's shared one-character objects), each
// written by pickle::write and by Debian's python3 with pickle.dumps(v, protocol=5), and the two
// compared byte for byte. What Python wrote also reads back, and writes again as it was.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "redis_server.h"
#include "scheduler/fleet/pickle.h"

namespace {

namespace pickle = crawler::pickle;
using kind = pickle::value::kind;

std::string hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string unhex(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i + 1 < text.size(); i += 2) {
    out += char(std::stoi(text.substr(i, 2), nullptr, 16));
  }
  return out;
}

// How the Python side builds the value: a tagged tree, strings as the hex of their UTF-8 so
// that nothing is lost on the way, floats as their bits.
nlohmann::json describe(const pickle::value& v) {
  auto children = [&] {
    auto out = nlohmann::json::array();
    for (const auto& item : v.items) out.push_back(describe(item));
    return out;
  };
  switch (v.type) {
    case kind::none:
      return {"n"};
    case kind::boolean:
      return {"b", v.boolean};
    case kind::integer:
      return {"i", std::to_string(v.integer)};
    case kind::real: {
      auto bits = std::bit_cast<std::uint64_t>(v.real);
      std::string big_endian;
      for (int i = 7; i >= 0; --i) big_endian += char((bits >> (8 * i)) & 0xff);
      return {"f", hex(big_endian)};
    }
    case kind::text:
      return {"s", hex(v.text)};
    case kind::bytes:
      return {"y", hex(v.text)};
    case kind::list:
      return {"l", children()};
    case kind::tuple:
      return {"t", children()};
    case kind::dict:
      return {"d", children()};
  }
  return {};
}

const char* python_side = R"py(
import json, pickle, struct, sys

def build(d):
    tag = d[0]
    if tag == "n":
        return None
    if tag == "b":
        return d[1]
    if tag == "i":
        return int(d[1])
    if tag == "f":
        return struct.unpack(">d", bytes.fromhex(d[1]))[0]
    if tag == "s":
        return bytes.fromhex(d[1]).decode("utf-8")
    if tag == "y":
        return bytes.fromhex(d[1])
    items = [build(x) for x in d[1]]
    if tag == "l":
        return items
    if tag == "t":
        return tuple(items)
    out = dict(zip(items[::2], items[1::2]))
    if len(out) * 2 != len(items):
        raise SystemExit("two keys of one dict are equal in Python: " + repr(items[::2])[:200])
    return out

for line in sys.stdin:
    sys.stdout.write(pickle.dumps(build(json.loads(line)), protocol=5).hex() + "\n")
)py";

pickle::value tuple_of(std::vector<pickle::value> items) {
  auto t = pickle::value::list();
  t.type = kind::tuple;
  t.items = std::move(items);
  return t;
}

pickle::value list_of(std::vector<pickle::value> items) {
  auto l = pickle::value::list();
  l.items = std::move(items);
  return l;
}

pickle::value integer(std::int64_t n) {
  return pickle::value::of(n);
}

// A str of exactly `bytes` bytes of UTF-8, mixing one- to four-byte characters.
std::string utf8_of_length(std::mt19937_64& random, std::size_t bytes, int widest) {
  std::string out;
  while (out.size() < bytes) {
    auto room = bytes - out.size();
    int width = std::min<int>(int(room), 1 + int(random() % widest));
    char32_t c;
    switch (width) {
      case 1:
        c = random() % 0x80;
        break;
      case 2:
        c = 0x80 + random() % (0x800 - 0x80);
        break;
      case 3:
        do c = 0x800 + random() % (0x10000 - 0x800);
        while (c >= 0xd800 && c <= 0xdfff);  // surrogates are no characters
        break;
      default:
        c = 0x10000 + random() % (0x110000 - 0x10000);
    }
    if (c < 0x80) {
      out += char(c);
    } else if (c < 0x800) {
      out += char(0xc0 | (c >> 6));
      out += char(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      out += char(0xe0 | (c >> 12));
      out += char(0x80 | ((c >> 6) & 0x3f));
      out += char(0x80 | (c & 0x3f));
    } else {
      out += char(0xf0 | (c >> 18));
      out += char(0x80 | ((c >> 12) & 0x3f));
      out += char(0x80 | ((c >> 6) & 0x3f));
      out += char(0x80 | (c & 0x3f));
    }
  }
  return out;
}

class generator {
 public:
  explicit generator(std::uint64_t seed) : random_(seed) {}

  pickle::value any(int depth) {
    switch (random_() % (depth > 0 ? 10 : 7)) {
      case 0:
        return pickle::value{};
      case 1:
        return pickle::value::of(bool(random_() % 2));
      case 2:
        return integer(an_integer());
      case 3:
        return pickle::value::of(a_real());
      case 4:
      case 5:
        return pickle::value::str(a_str());
      case 6:
        return pickle::value::bytes(some_bytes());
      case 7:
        return container(kind::list, depth);
      case 8:
        return container(kind::tuple, depth);
      default:
        return container(kind::dict, depth);
    }
  }

 private:
  std::size_t a_length() {
    static const std::size_t edges[] = {0, 1, 2, 3, 4, 254, 255, 256, 257};
    static const std::size_t payload_edges[] = {65535, 65536, 65537};
    auto roll = random_() % 1000;
    if (roll < 3) return payload_edges[random_() % 3];
    if (roll < 400) return edges[random_() % std::size(edges)];
    return random_() % 40;
  }
  std::string a_str() {
    // One character below 256 is a shared object in CPython: make them often.
    if (random_() % 4 == 0) {
      auto c = char32_t(random_() % 256);
      return c < 0x80 ? std::string(1, char(c))
                      : std::string{char(0xc0 | (c >> 6)), char(0x80 | (c & 0x3f))};
    }
    return utf8_of_length(random_, a_length(), 4);
  }
  std::string some_bytes() {
    auto length = random_() % 4 == 0 ? random_() % 2 : a_length();
    std::string out(length, '\0');
    for (auto& c : out) c = char(random_() % (random_() % 2 ? 4 : 256));
    return out;
  }
  std::int64_t an_integer() {
    if (random_() % 2) {
      static const std::vector<std::int64_t> edges = [] {
        std::vector<std::int64_t> out{0,
                                      1,
                                      255,
                                      256,
                                      65535,
                                      65536,
                                      std::numeric_limits<std::int32_t>::max(),
                                      std::numeric_limits<std::int64_t>::max()};
        out.push_back(std::int64_t(std::numeric_limits<std::int32_t>::max()) + 1);
        for (int bits = 7; bits < 63; bits += 8) {  // where LONG1 needs one byte more
          auto edge = std::int64_t(1) << bits;
          out.insert(out.end(), {edge - 1, edge, edge + 1});
        }
        auto count = out.size();
        for (std::size_t i = 0; i < count; ++i) out.push_back(-out[i]);
        out.push_back(std::numeric_limits<std::int64_t>::min());
        return out;
      }();
      return edges[random_() % edges.size()];
    }
    auto bits = random_() % 64;
    return std::int64_t(random_() >> (63 - bits)) * (random_() % 2 ? 1 : -1);
  }
  double a_real() {
    static const double edges[] = {0.0,
                                   -0.0,
                                   1.5,
                                   -2.25,
                                   1e300,
                                   5e-324,
                                   std::numeric_limits<double>::infinity(),
                                   -std::numeric_limits<double>::infinity(),
                                   std::numeric_limits<double>::quiet_NaN(),
                                   std::numeric_limits<double>::max(),
                                   std::numeric_limits<double>::min()};
    if (random_() % 3 == 0) return edges[random_() % std::size(edges)];
    std::uniform_real_distribution<double> spread(-1e6, 1e6);
    return spread(random_);
  }
  std::size_t a_size() {
    static const std::size_t edges[] = {0, 1, 2, 3, 4, 5};
    static const std::size_t batch_edges[] = {999, 1000, 1001, 1999, 2000, 2001};
    if (random_() % 400 == 0) return batch_edges[random_() % std::size(batch_edges)];
    return edges[random_() % std::size(edges)];
  }
  // A key no other key of its dict equals in Python (1 == True == 1.0, so no bools or floats).
  pickle::value a_key(std::size_t index) {
    switch (random_() % 4) {
      case 0:
        return integer(std::int64_t(index) - 500);
      case 1:
        return pickle::value::bytes("k" + std::to_string(index));
      case 2:
        return tuple_of({pickle::value::str("t"), integer(std::int64_t(index))});
      default:
        // A one-character key where it can be one: shared with the values' characters.
        return pickle::value::str(index < 94 ? std::string(1, char('!' + index))
                                             : "key " + std::to_string(index));
    }
  }
  pickle::value container(kind type, int depth) {
    auto size = a_size();
    bool large = size > 5;
    if (type == kind::dict) {
      auto d = pickle::value::dict();
      for (std::size_t i = 0; i < size; ++i) {
        d.items.push_back(a_key(i));
        d.items.push_back(large ? integer(std::int64_t(i)) : any(depth - 1));
      }
      return d;
    }
    std::vector<pickle::value> items;
    for (std::size_t i = 0; i < size; ++i) {
      items.push_back(large ? pickle::value::str(std::string(1, char('a' + i % 26)))
                            : any(depth - 1));
    }
    return type == kind::list ? list_of(std::move(items)) : tuple_of(std::move(items));
  }

  std::mt19937_64 random_;
};

// The values at the edges, chosen rather than drawn: the frame of 64 KiB crossed at each of a
// few bytes around it, a payload at 64 KiB before and after a frame of 3, 4 and 5 bytes, and
// memo references on each side of index 255.
std::vector<pickle::value> values_at_the_edges() {
  std::vector<pickle::value> out;
  for (std::int64_t n : {0, 1, 255, 256, 300, 65535, 65536}) out.push_back(integer(n));
  out.push_back(pickle::value{});
  out.push_back(pickle::value::of(true));
  out.push_back(pickle::value::str(""));
  out.push_back(pickle::value::str("ab"));
  // ], MEMOIZE, MARK and a str: the frame reaches 64 KiB within a few bytes of the string's end.
  for (std::size_t payload = 65520; payload < 65536; ++payload) {
    out.push_back(list_of({pickle::value::str(std::string(payload, 'y')), pickle::value::str("a"),
                           pickle::value::str("a")}));
    out.push_back(list_of({pickle::value::bytes(std::string(payload / 2, 'y')),
                           pickle::value::bytes(std::string(payload / 2, 'z')), integer(1)}));
  }
  for (std::size_t before = 0; before < 4; ++before) {
    for (std::size_t payload : {65535, 65536, 65537}) {
      std::vector<pickle::value> items(before, integer(7));
      items.push_back(pickle::value::bytes(std::string(payload, 'p')));
      items.push_back(pickle::value::bytes(""));
      items.push_back(pickle::value::bytes(""));
      out.push_back(list_of(items));
      out.push_back(pickle::value::str(std::string(payload, 'q')));
    }
  }
  for (std::size_t distinct = 250; distinct < 260; ++distinct) {
    std::vector<pickle::value> items;
    items.push_back(pickle::value::str("a"));
    for (std::size_t i = 0; i < distinct; ++i) {
      items.push_back(pickle::value::str("s" + std::to_string(i)));
    }
    items.push_back(pickle::value::str("b"));
    items.push_back(pickle::value::str("a"));
    items.push_back(pickle::value::str("b"));
    out.push_back(list_of(std::move(items)));
  }
  return out;
}

TEST(pickle_writer_against_cpython, every_generated_value_is_written_as_pickle_dumps_writes_it) {
  auto values = values_at_the_edges();
  generator make(20261128);
  while (values.size() < 10500) values.push_back(make.any(3));
  ASSERT_GE(values.size(), 10000u);

  crawler::fixtures::temp_dir dir;
  auto descriptions = dir.path() / "values.jsonl";
  {
    std::ofstream out(descriptions);
    for (const auto& v : values) out << describe(v).dump() << '\n';
  }
  crawler::fixtures::child_process python({"/usr/bin/python3", "-c", python_side}, descriptions);
  ASSERT_EQ(python.wait(std::chrono::seconds(300)), 0) << python.stderr_text();
  std::istringstream lines(python.stdout_text());
  std::vector<std::string> by_python;
  for (std::string line; std::getline(lines, line);) by_python.push_back(unhex(line));
  ASSERT_EQ(by_python.size(), values.size());

  std::size_t differ = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    auto ours = pickle::write(values[i]);
    std::string again;
    try {
      again = pickle::write(pickle::read(by_python[i]));
    } catch (const pickle::error& e) {
      again = std::string("read failed: ") + e.what();
    }
    if (ours == by_python[i] && again == by_python[i]) continue;
    if (++differ > 5) continue;  // the first few are enough to see why
    auto difference = [&](const std::string& what, const std::string& written) {
      auto at =
          std::mismatch(written.begin(), written.end(), by_python[i].begin(), by_python[i].end());
      auto offset = std::size_t(at.first - written.begin());
      auto from = offset > 8 ? offset - 8 : 0;
      return what + " " + std::to_string(written.size()) + " bytes, Python's " +
             std::to_string(by_python[i].size()) + ", first difference at byte " +
             std::to_string(offset) + ": ..." + hex(written.substr(from, 24)) + " against ..." +
             hex(by_python[i].substr(from, 24));
    };
    ADD_FAILURE() << "value " << i << " (" << describe(values[i]).dump().substr(0, 300)
                  << "): " << (ours == by_python[i] ? "" : difference("written", ours) + "; ")
                  << (again == by_python[i] ? "" : difference("read and written again", again));
  }
  EXPECT_EQ(differ, 0u) << "of " << values.size() << " values";
}

}  // namespace
