#include "chat/json_dump.h"

#include <algorithm>
#include <cstdio>

#include "chat/text.h"

namespace zinc::chat {
namespace {

constexpr int kMaxJsonDepth = 512;  // json.dumps would hit Python's recursion limit

class JsonWriter {
 public:
  explicit JsonWriter(const JsonFormat& f)
      : f_(f),
        item_sep_(f.item_separator ? *f.item_separator : f.indent ? "," : ", "),
        key_sep_(f.key_separator ? *f.key_separator : ": ") {}

  void write(const Value& v, int level) {
    if (level > kMaxJsonDepth) fail("tojson: value nested too deeply");
    switch (v.kind()) {
      case Value::Kind::kNone: out_ += "null"; return;
      case Value::Kind::kBool: out_ += v.as_bool() ? "true" : "false"; return;
      case Value::Kind::kInt: out_ += std::to_string(v.as_int()); return;
      case Value::Kind::kFloat: write_float(v.as_double()); return;
      case Value::Kind::kString: write_string(v.str()); return;
      case Value::Kind::kArray: write_array(v.array(), level); return;
      case Value::Kind::kObject:
        if (v.is_dict()) return write_object(v.object(), level);
        break;
      default: break;
    }
    fail("Object of type " + std::string(v.type_name()) + " is not JSON serializable");
  }

  std::string take() { return std::move(out_); }

 private:
  void newline(int level) {
    out_ += '\n';
    for (int i = 0; i < level; ++i) out_ += *f_.indent;
  }

  void write_float(double d) {
    if (d != d) out_ += "NaN";
    else if (d == 1.0 / 0.0) out_ += "Infinity";
    else if (d == -1.0 / 0.0) out_ += "-Infinity";
    else out_ += text::float_repr(d);
  }

  void write_string(std::string_view s) {
    out_ += '"';
    for (size_t i = 0; i < s.size();) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c >= 0x20 && c != '"' && c != '\\' && (c < 0x80 || !f_.ensure_ascii)) {
        out_ += char(c);
        ++i;
        continue;
      }
      if (c >= 0x80) {  // ensure_ascii: \uXXXX, surrogate pairs above the BMP
        uint32_t cp = text::decode(s, i);
        if (cp >= 0x10000) {
          cp -= 0x10000;
          escape_unit(0xD800 + (cp >> 10));
          escape_unit(0xDC00 + (cp & 0x3FF));
        } else {
          escape_unit(cp);
        }
        continue;
      }
      ++i;
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\n': out_ += "\\n"; break;
        case '\r': out_ += "\\r"; break;
        case '\t': out_ += "\\t"; break;
        case '\b': out_ += "\\b"; break;
        case '\f': out_ += "\\f"; break;
        default: escape_unit(c);
      }
    }
    out_ += '"';
  }

  void escape_unit(uint32_t u) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(u & 0xFFFF));
    out_ += buf;
  }

  void write_array(const Array& a, int level) {
    if (a.items.empty()) {
      out_ += "[]";
      return;
    }
    out_ += '[';
    for (size_t i = 0; i < a.items.size(); ++i) {
      if (i) out_ += item_sep_;
      if (f_.indent) newline(level + 1);
      write(a.items[i], level + 1);
    }
    if (f_.indent) newline(level);
    out_ += ']';
  }

  void write_object(const Object& o, int level) {
    if (o.items.empty()) {
      out_ += "{}";
      return;
    }
    std::vector<const std::pair<std::string, Value>*> items;
    items.reserve(o.items.size());
    for (const auto& kv : o.items) items.push_back(&kv);
    if (f_.sort_keys)
      std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
    out_ += '{';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out_ += item_sep_;
      if (f_.indent) newline(level + 1);
      write_string(items[i]->first);
      out_ += key_sep_;
      write(items[i]->second, level + 1);
    }
    if (f_.indent) newline(level);
    out_ += '}';
  }

  const JsonFormat& f_;
  std::string item_sep_;
  std::string key_sep_;
  std::string out_;
};

}  // namespace

std::string dump_json(const Value& v, const JsonFormat& format) {
  JsonWriter w(format);
  w.write(v, 0);
  return w.take();
}

}  // namespace zinc::chat
