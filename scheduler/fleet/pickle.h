// Python's pickle, the part of it that is data: the requests scrapy-redis queues (its default
// serializer, picklecompat, is pickle.dumps(request_to_dict(request), protocol=-1)) read without
// running anything, and written so that Python's pickle.loads reads them back.
//
//   crawler::pickle::value dict = crawler::pickle::read(entry);   // throws pickle::error
//   std::string entry = crawler::pickle::write(dict);             // what pickle.dumps writes
//
// The reader knows only the opcodes that build data: None, booleans, integers, floats, str,
// bytes, lists, tuples, sets, dicts, and the memo, marks and frames around them. An opcode that
// imports, calls or builds a Python object (REDUCE, BUILD, INST, OBJ, NEWOBJ_EX, EXT, PERSID,
// out-of-band buffers) is refused where it stands: a hostile pickle is an error that names the
// opcode and its offset, and nothing it names is looked up. One exception, by an allow-list in
// pickle.cpp: a str subclass that real Scrapy requests carry (lxml's _ElementUnicodeResult, the
// link text of a CrawlSpider's requests) is read as the str it holds, when it is pickled as its
// class (GLOBAL or STACK_GLOBAL), one str and NEWOBJ; any other class is refused by name. Nesting and
// the number of values are bounded, so a small pickle that references one list a million times
// is refused, not expanded. The writer writes what CPython's pickle.dumps(v, protocol=5) writes,
// byte for byte: its frames, memo and batches (tests/pickle_oracle_test.cpp compares the two).
// Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace crawler::pickle {

/// A pickle that is not data, or not a well-formed one.
class error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// One Python value. Sets read as lists; tuples stay tuples, since a tuple can be a dict key.
struct value {
  enum class kind : std::uint8_t { none, boolean, integer, real, text, bytes, list, tuple, dict };
  kind type = kind::none;
  bool boolean = false;
  std::int64_t integer = 0;
  double real = 0;
  /// A str's UTF-8, or a bytes' bytes.
  std::string text;
  /// A list's or tuple's items; a dict's keys and values, alternating, in insertion order.
  std::vector<value> items;

  static value of(bool b);
  static value of(std::int64_t i);
  static value of(double d);
  static value str(std::string text);
  static value bytes(std::string bytes);
  static value list();
  static value dict();

  /// A dict's member under the str key `key`, or null.
  const value* find(std::string_view key) const;
  /// Adds `key: item` to a dict.
  void set(std::string key, value item);
  /// "dict", "str", "bytes", ... as Python names the type.
  std::string_view type_name() const;
};

struct limits {
  std::size_t max_depth = 100;       // containers inside containers
  std::size_t max_values = 1000000;  // values in the result, a memo reference counting again
};

/// The value `pickle` holds. Throws error for anything but a well-formed pickle of data.
value read(std::string_view pickle, limits limits = {});

/// `v` as a protocol 5 pickle.
std::string write(const value& v);

}  // namespace crawler::pickle
