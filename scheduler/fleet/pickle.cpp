#include "scheduler/fleet/pickle.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

namespace crawler::pickle {

value value::of(bool b) {
  value v;
  v.type = kind::boolean;
  v.boolean = b;
  return v;
}
value value::of(std::int64_t i) {
  value v;
  v.type = kind::integer;
  v.integer = i;
  return v;
}
value value::of(double d) {
  value v;
  v.type = kind::real;
  v.real = d;
  return v;
}
value value::str(std::string text) {
  value v;
  v.type = kind::text;
  v.text = std::move(text);
  return v;
}
value value::bytes(std::string bytes) {
  value v;
  v.type = kind::bytes;
  v.text = std::move(bytes);
  return v;
}
value value::list() {
  value v;
  v.type = kind::list;
  return v;
}
value value::dict() {
  value v;
  v.type = kind::dict;
  return v;
}

const value* value::find(std::string_view key) const {
  if (type != kind::dict) return nullptr;
  for (std::size_t i = 0; i + 1 < items.size(); i += 2) {
    if (items[i].type == kind::text && items[i].text == key) return &items[i + 1];
  }
  return nullptr;
}

void value::set(std::string key, value item) {
  items.push_back(str(std::move(key)));
  items.push_back(std::move(item));
}

std::string_view value::type_name() const {
  switch (type) {
    case kind::none:
      return "None";
    case kind::boolean:
      return "bool";
    case kind::integer:
      return "int";
    case kind::real:
      return "float";
    case kind::text:
      return "str";
    case kind::bytes:
      return "bytes";
    case kind::list:
      return "list";
    case kind::tuple:
      return "tuple";
    case kind::dict:
      return "dict";
  }
  return "?";
}

namespace {

// The opcodes that build objects rather than data, by the names pickletools gives them. GLOBAL,
// STACK_GLOBAL and NEWOBJ are read for the classes of str_subclasses alone.
const char* object_opcode(unsigned char op) {
  switch (op) {
    case 'R':
      return "REDUCE";
    case 'b':
      return "BUILD";
    case 'i':
      return "INST";
    case 'o':
      return "OBJ";
    case 0x92:
      return "NEWOBJ_EX";
    case 0x82:
      return "EXT1";
    case 0x83:
      return "EXT2";
    case 0x84:
      return "EXT4";
    case 'P':
      return "PERSID";
    case 'Q':
      return "BINPERSID";
    case 0x97:
      return "NEXT_BUFFER";
    case 0x98:
      return "READONLY_BUFFER";
  }
  return nullptr;
}

// The Python classes whose instances are read as plain str: subclasses of str that add nothing a
// request needs, which real Scrapy requests carry in their meta. Each is pickled as the class
// (GLOBAL or STACK_GLOBAL), a tuple of one str, and NEWOBJ, which calls str.__new__: the value is
// that str. Nothing here is looked up or run; a class not on the list is refused by name.
struct str_subclass {
  std::string_view module, name;
};
constexpr str_subclass str_subclasses[] = {
    // What lxml's XPath text() and string() give: a CrawlSpider's meta["link_text"], and what a
    // callback puts in meta from response.xpath(...).get() on Scrapy 2.8 with lxml 4.9.
    {"lxml.etree", "_ElementUnicodeResult"},
};

std::string allowed_classes() {
  std::string out;
  for (const auto& allowed : str_subclasses) {
    if (!out.empty()) out += ", ";
    out += std::string(allowed.module) + "." + std::string(allowed.name);
  }
  return out;
}

// The pickle is read into an arena of nodes first: the memo and the stack hold indices, so a
// container that holds itself (legal in a pickle) is a loop of indices, not of owners, and is
// refused when the result is built (its depth has no end).
class reader {
 public:
  reader(std::string_view in, limits bounds) : in_(in), limits_(bounds) {}

  value run() {
    for (;;) {
      if (at_ >= in_.size()) fail("ends before its STOP opcode");
      auto offset = at_;
      auto op = static_cast<unsigned char>(in_[at_++]);
      if (const char* name = object_opcode(op)) {
        fail_at(offset, "holds opcode " + std::string(name) +
                            ", which names or builds a Python object; only data is read");
      }
      switch (op) {
        case 0x80: {  // PROTO
          auto version = unsigned(take(1)[0]);
          if (version > 5) fail_at(offset, "is pickle protocol " + std::to_string(version));
          break;
        }
        case 0x95:
          take(8);
          break;     // FRAME: a length to prefetch; the bytes follow anyway
        case '.': {  // STOP
          if (stack_.size() != 1 || !marks_.empty()) {
            fail_at(offset, "stops with " + std::to_string(stack_.size()) + " values on its stack");
          }
          return build(stack_.back(), 0);
        }
        case 'N':
          push(node{});
          break;
        case 0x88:
          push(scalar(value::of(true)));
          break;
        case 0x89:
          push(scalar(value::of(false)));
          break;
        case 'K':
          push(scalar(value::of(std::int64_t(little_endian(take(1))))));
          break;
        case 'M':
          push(scalar(value::of(std::int64_t(little_endian(take(2))))));
          break;
        case 'J': {
          auto raw = std::uint32_t(little_endian(take(4)));
          push(scalar(value::of(std::int64_t(std::int32_t(raw)))));
          break;
        }
        case 0x8a:
          long_integer(offset, unsigned(take(1)[0]));
          break;  // LONG1
        case 0x8b:
          long_integer(offset, length(4));
          break;  // LONG4
        case 'G': {
          auto raw = take(8);
          std::uint64_t bits = 0;
          for (unsigned char byte : raw) bits = bits << 8 | byte;
          push(scalar(value::of(std::bit_cast<double>(bits))));
          break;
        }
        case 0x8c:
          push(scalar(value::str(std::string(take(length(1))))));
          break;
        case 'X':
          push(scalar(value::str(std::string(take(length(4))))));
          break;
        case 0x8d:
          push(scalar(value::str(std::string(take(length(8))))));
          break;
        case 'C':
          push(scalar(value::bytes(std::string(take(length(1))))));
          break;
        case 'B':
          push(scalar(value::bytes(std::string(take(length(4))))));
          break;
        case 0x8e:
        case 0x96:
          push(scalar(value::bytes(std::string(take(length(8))))));
          break;
        case '}':
          push(container(value::kind::dict));
          break;
        case ']':
          push(container(value::kind::list));
          break;
        case ')':
          push(container(value::kind::tuple));
          break;
        case 0x8f:
          push(container(value::kind::list));
          break;  // EMPTY_SET
        case '(':
          marks_.push_back(stack_.size());
          break;
        case 'a': {  // APPEND
          auto item = pop(offset);
          add(offset, top(offset), {item}, value::kind::list);
          break;
        }
        case 'e':     // APPENDS
        case 0x90: {  // ADDITEMS
          auto items = pop_mark(offset);
          add(offset, top(offset), items, value::kind::list);
          break;
        }
        case 's': {  // SETITEM
          auto item = pop(offset);
          auto key = pop(offset);
          add(offset, top(offset), {key, item}, value::kind::dict);
          break;
        }
        case 'u': {  // SETITEMS
          auto items = pop_mark(offset);
          add(offset, top(offset), items, value::kind::dict);
          break;
        }
        case 'l':     // LIST
        case 't':     // TUPLE
        case 'd':     // DICT
        case 0x91: {  // FROZENSET
          auto items = pop_mark(offset);
          auto kind = op == 't'   ? value::kind::tuple
                      : op == 'd' ? value::kind::dict
                                  : value::kind::list;
          push(container(kind));
          add(offset, stack_.back(), items, kind);
          break;
        }
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1..3
          std::vector<std::uint32_t> items(op - 0x84);
          for (auto item = items.rbegin(); item != items.rend(); ++item) *item = pop(offset);
          auto made = container(value::kind::tuple);
          made.children = std::move(items);
          push(std::move(made));
          break;
        }
        case 'c': {  // GLOBAL: "module\nname\n"
          auto module = line(offset, "GLOBAL");
          auto name = line(offset, "GLOBAL");
          push_class(offset, "GLOBAL", module, name);
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          auto name = pop_text(offset, "STACK_GLOBAL");
          auto module = pop_text(offset, "STACK_GLOBAL");
          push_class(offset, "STACK_GLOBAL", module, name);
          break;
        }
        case 0x81:  // NEWOBJ
          new_object(offset);
          break;
        case 0x94:
          memo_.push_back(top(offset));
          break;  // MEMOIZE
        case 'q':
          put(offset, little_endian(take(1)));
          break;
        case 'r':
          put(offset, little_endian(take(4)));
          break;
        case 'h':
          get(offset, little_endian(take(1)));
          break;
        case 'j':
          get(offset, little_endian(take(4)));
          break;
        case '0':
          pop(offset);
          break;  // POP
        case '1':
          pop_mark(offset);
          break;
        case '2':
          stack_.push_back(top(offset));
          break;  // DUP
        default: {
          static constexpr char hex[] = "0123456789abcdef";
          std::string code{"0x", 2};
          code += hex[op >> 4];
          code += hex[op & 15];
          fail_at(offset, "holds opcode " + code +
                              ", which is not one of the binary data opcodes this reader knows");
        }
      }
    }
  }

 private:
  struct node {
    value scalar;  // none, booleans, numbers, str and bytes; the kind of a container
    std::vector<std::uint32_t> children;
    const str_subclass* python_class = nullptr;  // a class GLOBAL named, not a value
  };

  [[noreturn]] void refuse(std::size_t offset, const char* opcode, const std::string& why) const {
    fail_at(offset,
            "holds opcode " + std::string(opcode) + ", which " + why + "; only data is read");
  }
  // GLOBAL's arguments: text up to a newline.
  std::string line(std::size_t offset, const char* opcode) {
    auto end = in_.find('\n', at_);
    if (end == std::string_view::npos) refuse(offset, opcode, "names a class without a newline");
    auto out = std::string(in_.substr(at_, end - at_));
    at_ = end + 1;
    return out;
  }
  // STACK_GLOBAL's arguments: str values on the stack.
  std::string pop_text(std::size_t offset, const char* opcode) {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) {
      refuse(offset, opcode, "names a Python object with what is not on the stack");
    }
    const auto& named = nodes_[pop(offset)];
    if (named.python_class || named.scalar.type != value::kind::text) {
      refuse(offset, opcode,
             "names a Python object with a " +
                 std::string(named.python_class ? "class" : named.scalar.type_name()));
    }
    return named.scalar.text;
  }
  void push_class(std::size_t offset, const char* opcode, const std::string& module,
                  const std::string& name) {
    for (const auto& allowed : str_subclasses) {
      if (allowed.module == module && allowed.name == name) {
        node made;
        made.python_class = &allowed;
        push(std::move(made));
        return;
      }
    }
    refuse(offset, opcode,
           "names the Python object " + module + "." + name +
               ", not one of the str subclasses read as str (" + allowed_classes() + ")");
  }
  // NEWOBJ: cls.__new__(cls, *args), read only as a str subclass made from one str.
  void new_object(std::size_t offset) {
    if (stack_.size() < (marks_.empty() ? 0 : marks_.back()) + 2) {
      refuse(offset, "NEWOBJ", "builds a Python object from what is not on the stack");
    }
    const auto& args = nodes_[pop(offset)];
    const auto& made_by = nodes_[pop(offset)];
    if (!made_by.python_class) refuse(offset, "NEWOBJ", "builds an object of what is not a class");
    if (args.python_class || args.scalar.type != value::kind::tuple || args.children.size() != 1 ||
        nodes_[args.children[0]].python_class ||
        nodes_[args.children[0]].scalar.type != value::kind::text) {
      refuse(offset, "NEWOBJ",
             "builds a " + std::string(made_by.python_class->name) + " from other than one str");
    }
    push(scalar(nodes_[args.children[0]].scalar));
  }

  [[noreturn]] void fail(const std::string& what) const { throw error("the pickle " + what); }
  [[noreturn]] void fail_at(std::size_t offset, const std::string& what) const {
    fail(what + " (at byte " + std::to_string(offset) + ")");
  }

  std::string_view take(std::size_t count) {
    if (count > in_.size() - at_) fail("ends inside an opcode's argument");
    auto out = in_.substr(at_, count);
    at_ += count;
    return out;
  }
  static std::uint64_t little_endian(std::string_view bytes) {
    std::uint64_t out = 0;
    for (std::size_t i = bytes.size(); i-- > 0;)
      out = out << 8 | static_cast<unsigned char>(bytes[i]);
    return out;
  }
  std::size_t length(std::size_t width) {
    auto count = little_endian(take(width));
    if (count > in_.size() - at_) fail("ends inside a string it announced");
    return std::size_t(count);
  }
  void long_integer(std::size_t offset, std::size_t count) {
    auto raw = take(count);
    if (count > 8) fail_at(offset, "holds an integer of " + std::to_string(count) + " bytes");
    auto bits = little_endian(raw);
    if (count > 0 && count < 8 && (static_cast<unsigned char>(raw.back()) & 0x80)) {
      bits |= ~std::uint64_t(0) << (8 * count);  // sign-extend
    }
    push(scalar(value::of(static_cast<std::int64_t>(bits))));
  }

  static node scalar(value v) { return node{std::move(v), {}}; }
  static node container(value::kind kind) {
    node made;
    made.scalar.type = kind;
    return made;
  }
  void push(node made) {
    if (nodes_.size() >= limits_.max_values)
      fail("holds more than " + std::to_string(limits_.max_values) + " values");
    nodes_.push_back(std::move(made));
    stack_.push_back(std::uint32_t(nodes_.size() - 1));
  }
  std::uint32_t top(std::size_t offset) const {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back()))
      fail_at(offset, "reads an empty stack");
    return stack_.back();
  }
  std::uint32_t pop(std::size_t offset) {
    auto out = top(offset);
    stack_.pop_back();
    return out;
  }
  std::vector<std::uint32_t> pop_mark(std::size_t offset) {
    if (marks_.empty()) fail_at(offset, "reads a mark it never set");
    auto from = marks_.back();
    marks_.pop_back();
    std::vector<std::uint32_t> items(stack_.begin() + std::ptrdiff_t(from), stack_.end());
    stack_.resize(from);
    return items;
  }
  void add(std::size_t offset, std::uint32_t target, const std::vector<std::uint32_t>& items,
           value::kind want) {
    auto& into = nodes_[target];
    if (into.scalar.type != want) {
      fail_at(offset, "adds items to a " + std::string(into.scalar.type_name()) + ", where a " +
                          std::string(value{want}.type_name()) + " was needed");
    }
    // A dict's keys must be hashable in Python: no pickler writes a list or dict key.
    if (want == value::kind::dict) {
      if (items.size() % 2 != 0) fail_at(offset, "gives a dict key without a value");
      for (std::size_t i = 0; i < items.size(); i += 2) {
        auto key = nodes_[items[i]].scalar.type;
        if (key == value::kind::list || key == value::kind::dict) {
          fail_at(offset, "keys a dict with a " + std::string(nodes_[items[i]].scalar.type_name()));
        }
      }
    }
    into.children.insert(into.children.end(), items.begin(), items.end());
  }
  void put(std::size_t offset, std::uint64_t index) {
    if (index > limits_.max_values) fail_at(offset, "memoizes at index " + std::to_string(index));
    if (memo_.size() <= index) memo_.resize(index + 1, absent);
    memo_[index] = top(offset);
  }
  void get(std::size_t offset, std::uint64_t index) {
    if (index >= memo_.size() || memo_[index] == absent) {
      fail_at(offset, "reads memo " + std::to_string(index) + ", which it never stored");
    }
    stack_.push_back(memo_[index]);
  }

  // What makes two dict keys one key in Python: equal numbers whatever their type (True, 1 and
  // 1.0), equal str, equal bytes, tuples of equal items. A NaN equals nothing, not even itself
  // when unpickled twice, so it stands alone (`position` tells it apart).
  static std::string key_identity(const value& key, std::size_t position) {
    auto sized = [](char tag, const std::string& text) {
      return tag + std::to_string(text.size()) + ':' + text;
    };
    switch (key.type) {
      case value::kind::none:
        return "N";
      case value::kind::boolean:
        return "I" + std::to_string(int(key.boolean));
      case value::kind::integer:
        return "I" + std::to_string(key.integer);
      case value::kind::real:
        if (std::isnan(key.real)) return "nan" + std::to_string(position);
        if (std::trunc(key.real) == key.real && std::fabs(key.real) < 0x1p63) {
          return "I" + std::to_string(std::int64_t(key.real));
        }
        return "F" + std::to_string(std::bit_cast<std::uint64_t>(key.real));
      case value::kind::text:
        return sized('S', key.text);
      case value::kind::bytes:
        return sized('B', key.text);
      default: {  // a tuple: lists and dicts were refused as keys when they were added
        std::string out = "T" + std::to_string(key.items.size()) + ':';
        for (const auto& item : key.items) out += sized('K', key_identity(item, position));
        return out;
      }
    }
  }

  value build(std::uint32_t index, std::size_t depth) {
    if (depth > limits_.max_depth) {
      fail("nests deeper than " + std::to_string(limits_.max_depth) + " containers");
    }
    if (++built_ > limits_.max_values) {
      fail("expands to more than " + std::to_string(limits_.max_values) + " values");
    }
    const auto& from = nodes_[index];
    if (from.python_class) {
      fail("holds the Python class " + std::string(from.python_class->module) + "." +
           std::string(from.python_class->name) + " itself, where only its instances are read");
    }
    value out = from.scalar;
    out.items.reserve(from.children.size());
    if (out.type != value::kind::dict) {
      for (auto child : from.children) out.items.push_back(build(child, depth + 1));
      return out;
    }
    // A key set again replaces its value where it stands, as in a Python dict.
    std::map<std::string, std::size_t> position;
    for (std::size_t i = 0; i + 1 < from.children.size(); i += 2) {
      auto key = build(from.children[i], depth + 1);
      auto item = build(from.children[i + 1], depth + 1);
      auto [at, added] = position.try_emplace(key_identity(key, i), out.items.size());
      if (added) {
        out.items.push_back(std::move(key));
        out.items.push_back(std::move(item));
      } else {
        out.items[at->second + 1] = std::move(item);
      }
    }
    return out;
  }

  static constexpr std::uint32_t absent = std::numeric_limits<std::uint32_t>::max();
  std::string_view in_;
  limits limits_;
  std::size_t at_ = 0, built_ = 0;
  std::vector<node> nodes_;
  std::vector<std::uint32_t> stack_, memo_;
  std::vector<std::size_t> marks_;
};

// What CPython's pickler (_pickle.c, 3.11) writes, protocol 5, for data, byte for byte:
// - Frames: the body goes into frames; before each value is written, a frame that has reached
//   64 KiB is closed and the next write opens another. A str or bytes payload of 64 KiB or more
//   is written between frames, and a frame of under 4 bytes gets no FRAME header at all.
// - The memo: every str, bytes, list, dict and non-empty tuple is memoized (MEMOIZE), and an
//   object seen again is written as a reference to it (BINGET). The writer holds values, not
//   Python objects, so the one repetition it can know of is CPython's own: the empty str and
//   bytes and the str of one code point below 256 and the bytes of one byte are each one shared
//   object in CPython, so a value that holds two of them refers to the first.
// - Batches: a list or dict of one item is APPEND/SETITEM; more go between MARK and
//   APPENDS/SETITEMS, 1000 at a time, and a dict whose size is a whole number of batches ends
//   with one empty batch more.
class writer {
 public:
  std::string run(const value& v) {
    out_.assign("\x80\x05", 2);
    write(v);
    emit('.');
    close_frame();
    return std::move(out_);
  }

 private:
  static constexpr std::size_t frame_target = 64 * 1024;
  static constexpr std::size_t frame_minimum = 4;
  static constexpr std::size_t frame_header = 9;  // FRAME and a 64-bit length
  static constexpr std::size_t batch = 1000;
  static constexpr std::size_t no_frame = std::string::npos;

  static void little_endian(std::string& out, std::uint64_t n, int width) {
    for (int i = 0; i < width; ++i) out += char((n >> (8 * i)) & 0xff);
  }
  // Every opcode goes into the open frame, opening one when none is.
  void open_frame() {
    if (frame_start_ == no_frame) {
      frame_start_ = out_.size();
      out_.append(frame_header, '\0');
    }
  }
  void emit(char op) {
    open_frame();
    out_ += op;
  }
  void close_frame() {
    if (frame_start_ == no_frame) return;
    auto length = out_.size() - frame_start_ - frame_header;
    if (length >= frame_minimum) {
      out_[frame_start_] = char(0x95);
      for (std::size_t i = 0; i < 8; ++i) {
        out_[frame_start_ + 1 + i] = char((std::uint64_t(length) >> (8 * i)) & 0xff);
      }
    } else {
      out_.erase(frame_start_, frame_header);
    }
    frame_start_ = no_frame;
  }
  void memoize() {
    emit(char(0x94));
    ++memoized_;
  }
  // CPython's shared str and bytes objects (see above): the slot that remembers where each was
  // memoized, or null for a value CPython makes anew each time.
  std::uint32_t* shared_object(const value& v) {
    const auto& t = v.text;
    if (v.type == value::kind::bytes) {
      if (t.empty()) return &empty_bytes_;
      return t.size() == 1 ? &one_byte_[static_cast<unsigned char>(t[0])] : nullptr;
    }
    if (t.empty()) return &empty_str_;
    auto lead = static_cast<unsigned char>(t[0]);
    if (t.size() == 1 && lead < 0x80) return &one_char_[lead];
    if (t.size() == 2 && (lead == 0xc2 || lead == 0xc3)) {  // U+0080..U+00FF in UTF-8
      return &one_char_[((lead & 0x03) << 6) | (static_cast<unsigned char>(t[1]) & 0x3f)];
    }
    return nullptr;
  }
  void sized(const value& v, char short_op, char op, char long_op) {
    auto* shared = shared_object(v);
    if (shared && *shared != unseen) {
      if (*shared < 256) {
        emit('h');
        out_ += char(*shared);
      } else {
        emit('j');
        little_endian(out_, *shared, 4);
      }
      return;
    }
    const auto& text = v.text;
    std::string header;
    if (text.size() < 256) {
      header += short_op;
      header += char(text.size());
    } else if (text.size() <= 0xffffffffu) {
      header += op;
      little_endian(header, text.size(), 4);
    } else {
      header += long_op;
      little_endian(header, text.size(), 8);
    }
    if (text.size() >= frame_target) {
      close_frame();  // written between frames
    } else {
      open_frame();
    }
    out_ += header;
    out_ += text;
    if (shared) *shared = memoized_;
    memoize();
  }
  void list_items(const std::vector<value>& items) {
    if (items.size() == 1) {
      write(items[0]);
      emit('a');
      return;
    }
    for (std::size_t at = 0; at < items.size(); at += batch) {
      emit('(');
      for (auto i = at; i < std::min(items.size(), at + batch); ++i) write(items[i]);
      emit('e');
    }
  }
  void dict_items(const std::vector<value>& items) {
    if (items.size() == 2) {
      write(items[0]);
      write(items[1]);
      emit('s');
      return;
    }
    std::size_t at = 0, in_batch = 0;
    do {
      emit('(');
      for (in_batch = 0; in_batch < batch && at < items.size(); ++in_batch, at += 2) {
        write(items[at]);
        write(items[at + 1]);
      }
      emit('u');
    } while (in_batch == batch);
  }
  void write(const value& v) {
    if (frame_start_ != no_frame && out_.size() - frame_start_ - frame_header >= frame_target) {
      close_frame();
    }
    switch (v.type) {
      case value::kind::none:
        emit('N');
        break;
      case value::kind::boolean:
        emit(char(v.boolean ? 0x88 : 0x89));
        break;
      case value::kind::integer:
        integer(v.integer);
        break;
      case value::kind::real: {
        emit('G');
        auto bits = std::bit_cast<std::uint64_t>(v.real);
        for (int i = 7; i >= 0; --i) out_ += char((bits >> (8 * i)) & 0xff);
        break;
      }
      case value::kind::text:
        sized(v, char(0x8c), 'X', char(0x8d));
        break;
      case value::kind::bytes:
        sized(v, 'C', 'B', char(0x8e));
        break;
      case value::kind::list:
        emit(']');
        memoize();
        if (!v.items.empty()) list_items(v.items);
        break;
      case value::kind::dict:
        emit('}');
        memoize();
        if (!v.items.empty()) dict_items(v.items);
        break;
      case value::kind::tuple:
        if (v.items.empty()) {
          emit(')');
          break;
        }
        if (v.items.size() > 3) emit('(');
        for (const auto& item : v.items) write(item);
        emit(v.items.size() > 3 ? 't' : char(0x84 + v.items.size()));
        memoize();
        break;
    }
  }
  void integer(std::int64_t n) {
    if (n >= 0 && n <= 0xff) {
      emit('K');
      out_ += char(n);
    } else if (n >= 0 && n <= 0xffff) {
      emit('M');
      little_endian(out_, std::uint64_t(n), 2);
    } else if (n >= std::numeric_limits<std::int32_t>::min() &&
               n <= std::numeric_limits<std::int32_t>::max()) {
      emit('J');
      little_endian(out_, std::uint32_t(std::int32_t(n)), 4);
    } else {
      // LONG1: the shortest two's complement, little-endian, as Python's encode_long.
      auto bits = std::uint64_t(n);
      int width = 8;
      while (width > 1) {
        auto top = std::int64_t(bits << (64 - 8 * (width - 1))) >> (64 - 8 * (width - 1));
        if (top != n) break;
        --width;
      }
      emit(char(0x8a));
      out_ += char(width);
      little_endian(out_, bits, width);
    }
  }

  static constexpr std::uint32_t unseen = std::numeric_limits<std::uint32_t>::max();
  std::string out_;
  std::size_t frame_start_ = no_frame;
  std::uint32_t memoized_ = 0;
  std::uint32_t empty_str_ = unseen, empty_bytes_ = unseen;
  std::array<std::uint32_t, 256> one_char_ = filled(), one_byte_ = filled();
  static std::array<std::uint32_t, 256> filled() {
    std::array<std::uint32_t, 256> slots;
    slots.fill(unseen);
    return slots;
  }
};

}  // namespace

value read(std::string_view pickle, limits limits) {
  return reader(pickle, limits).run();
}

std::string write(const value& v) {
  return writer().run(v);
}

}  // namespace crawler::pickle
