#include "chat/value.h"

#include <algorithm>
#include <cstdio>

#include "chat/text.h"

namespace zinc::chat {

void fail(std::string message) { throw TemplateError{std::move(message), 0}; }

void fail_undefined(const Value& v) {
  fail(v.is_undefined() && !v.undefined_hint().empty() ? v.undefined_hint() : "value is undefined");
}

uint32_t container_depth(const Value& v) {
  if (v.is_array()) return v.array().depth;
  if (v.is_object()) return v.object().depth;
  return 0;
}

namespace {

uint32_t checked_depth(uint32_t depth) {
  if (depth > kMaxValueDepth) fail(format("value nested more than %u levels deep", kMaxValueDepth));
  return depth;
}

Value from_json_at(const nlohmann::ordered_json& j, uint32_t depth);

}  // namespace

Value Value::list(std::vector<Value> items, bool is_tuple) {
  auto a = std::make_shared<Array>();
  uint32_t inner = 0;
  for (const Value& v : items) inner = std::max(inner, container_depth(v));
  a->depth = checked_depth(inner + 1);
  a->items = std::move(items);
  a->is_tuple = is_tuple;
  return array(std::move(a));
}

Value Value::from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 1); }

namespace {

Value from_json_at(const nlohmann::ordered_json& j, uint32_t depth) {
  using J = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case J::null: return Value::none();
    case J::boolean: return Value::boolean(j.get<bool>());
    case J::number_integer: return Value::integer(j.get<int64_t>());
    case J::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      return u <= uint64_t(INT64_MAX) ? Value::integer(int64_t(u)) : Value::number(double(u));
    }
    case J::number_float: return Value::number(j.get<double>());
    case J::string: return Value::string(j.get<std::string>());
    case J::array: {
      auto a = std::make_shared<Array>();
      a->depth = checked_depth(depth);
      a->items.reserve(j.size());
      for (const auto& e : j) a->items.push_back(from_json_at(e, depth + 1));
      return Value::array(std::move(a));
    }
    case J::object: {
      auto o = std::make_shared<Object>();
      o->depth = checked_depth(depth);
      o->items.reserve(j.size());
      for (const auto& [k, e] : j.items()) o->items.emplace_back(k, from_json_at(e, depth + 1));
      return Value::object(std::move(o));
    }
    case J::binary: {
      std::vector<Value> bytes;
      for (uint8_t b : j.get_binary()) bytes.push_back(Value::integer(b));
      return Value::list(std::move(bytes));
    }
    case J::discarded: break;
  }
  return Value();
}

}  // namespace

const Value* Object::find(std::string_view key) const {
  for (const auto& kv : items)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

Value* Object::find(std::string_view key) {
  for (auto& kv : items)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

void Object::set(std::string_view key, Value v) {
  depth = std::max(depth, checked_depth(container_depth(v) + 1));
  if (Value* slot = find(key)) *slot = std::move(v);
  else items.emplace_back(std::string(key), std::move(v));
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return as_bool();
    case Kind::kInt: return as_int() != 0;
    case Kind::kFloat: return as_double() != 0.0;
    case Kind::kString: return !str().empty();
    case Kind::kArray: return !array().items.empty();
    case Kind::kObject: return object().kind != Object::Kind::kDict || !object().items.empty();
    case Kind::kCallable: return true;
  }
  return false;
}

std::string_view Value::type_name() const {
  switch (kind()) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return is_markup() ? "Markup" : "str";
    case Kind::kArray: return array().is_tuple ? "tuple" : "list";
    case Kind::kObject:
      switch (object().kind) {
        case Object::Kind::kDict: return "dict";
        case Object::Kind::kNamespace: return "Namespace";
        case Object::Kind::kLoop: return "LoopContext";
      }
      break;
    case Kind::kCallable: return "function";
  }
  return "object";
}

namespace {

void append_string_repr(std::string& out, std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  out += quote;
  char buf[16];
  for (size_t i = 0; i < s.size();) {
    size_t start = i;
    uint32_t cp = text::decode(s, i);
    if (cp == uint32_t(quote) || cp == '\\') {
      out += '\\';
      out += char(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0xA0) || cp == 0xAD) {
      std::snprintf(buf, sizeof buf, "\\x%02x", cp);
      out += buf;
    } else if ((cp >= 0xDC80 && cp <= 0xDCFF) || (cp >= 0x80 && text::is_space(cp)) ||
               (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202E) ||
               (cp >= 0x2060 && cp <= 0x2064) || cp == 0xFEFF) {
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      out += buf;
    } else {
      out.append(s.substr(start, i - start));
    }
  }
  out += quote;
}

// Namespaces being printed: one that contains itself prints as Python's "{...}".
using Printing = std::vector<const Object*>;

void append_repr(std::string& out, const Value& v, Printing& printing);

void append_container(std::string& out, const Value& v, Printing& printing) {
  if (v.is_array()) {
    const Array& a = v.array();
    out += a.is_tuple ? '(' : '[';
    for (size_t i = 0; i < a.items.size(); ++i) {
      if (i) out += ", ";
      append_repr(out, a.items[i], printing);
    }
    if (a.is_tuple && a.items.size() == 1) out += ',';
    out += a.is_tuple ? ')' : ']';
    return;
  }
  const Object& o = v.object();
  if (o.kind == Object::Kind::kLoop) {
    const Value* index = o.find("index");
    const Value* length = o.find("length");
    out += "<LoopContext " + (index ? index->to_str() : "?") + "/" + (length ? length->to_str() : "?") + ">";
    return;
  }
  const bool ns = o.kind == Object::Kind::kNamespace;
  if (ns) {
    if (std::find(printing.begin(), printing.end(), &o) != printing.end()) {
      out += "<Namespace {...}>";
      return;
    }
    if (printing.size() >= kMaxValueDepth) fail("value nested too deeply to print");
    printing.push_back(&o);
    out += "<Namespace ";
  }
  out += '{';
  for (size_t i = 0; i < o.items.size(); ++i) {
    if (i) out += ", ";
    append_string_repr(out, o.items[i].first);
    out += ": ";
    append_repr(out, o.items[i].second, printing);
  }
  out += '}';
  if (ns) {
    out += '>';
    printing.pop_back();
  }
}

void append_repr(std::string& out, const Value& v, Printing& printing) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: out += "Undefined"; return;
    case Value::Kind::kString:
      if (v.is_markup()) {
        out += "Markup(";
        append_string_repr(out, v.str());
        out += ')';
      } else {
        append_string_repr(out, v.str());
      }
      return;
    case Value::Kind::kArray:
    case Value::Kind::kObject: append_container(out, v, printing); return;
    default: v.append_str(out);
  }
}

}  // namespace

void Value::append_str(std::string& out) const {
  switch (kind()) {
    case Kind::kUndefined: return;
    case Kind::kNone: out += "None"; return;
    case Kind::kBool: out += as_bool() ? "True" : "False"; return;
    case Kind::kInt: out += std::to_string(as_int()); return;
    case Kind::kFloat: out += text::float_repr(as_double()); return;
    case Kind::kString: out += str(); return;
    case Kind::kArray:
    case Kind::kObject: {
      Printing printing;
      append_container(out, *this, printing);
      return;
    }
    case Kind::kCallable: out += callable().repr(); return;
  }
}

std::string Value::to_str() const {
  if (is_string()) return str();
  std::string out;
  append_str(out);
  return out;
}

std::string Value::repr() const {
  std::string out;
  Printing printing;
  append_repr(out, *this, printing);
  return out;
}

bool equals(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::kUndefined:
    case K::kNone: return true;
    case K::kString: return a.str() == b.str();
    case K::kArray: {
      const Array& x = a.array();
      const Array& y = b.array();
      if (&x == &y) return true;
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i)
        if (!equals(x.items[i], y.items[i])) return false;
      return true;
    }
    case K::kObject: {
      const Object& x = a.object();
      const Object& y = b.object();
      if (&x == &y) return true;
      if (x.kind != Object::Kind::kDict || y.kind != Object::Kind::kDict || x.items.size() != y.items.size())
        return false;
      for (const auto& [k, v] : x.items) {
        const Value* other = y.find(k);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    }
    case K::kCallable: return &a.callable() == &b.callable();
    default: return false;
  }
}

bool less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.as_int() < b.as_int();
    return a.as_double() < b.as_double();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();
  if (a.is_array() && b.is_array() && a.array().is_tuple == b.array().is_tuple) {
    const auto& x = a.array().items;
    const auto& y = b.array().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!equals(x[i], y[i])) return less(x[i], y[i]);
    return x.size() < y.size();
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  fail("'<' not supported between instances of '" + std::string(a.type_name()) + "' and '" +
       std::string(b.type_name()) + "'");
}

}  // namespace zinc::chat
