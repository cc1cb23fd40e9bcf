// Values of the template language: Python's types as a Jinja2 template sees them (None, bool,
// int, float, str, list/tuple, dict, Jinja's Undefined, namespaces, callables).
// Lists and dicts are shared and immutable once built (the sandbox forbids mutation); a namespace
// or a loop object is the only thing a template can change in place.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/status.h"

namespace zinc::chat {

// An error inside the engine. It never leaves the chat module: Template::render turns it into a
// Status. `line` is the template line (0 until the interpreter fills it in).
struct TemplateError {
  std::string message;
  int line = 0;
};
[[noreturn]] void fail(std::string message);

class Value;
class Callable;
struct Array;
struct Object;

class Value {
 public:
  enum class Kind : uint8_t { kUndefined, kNone, kBool, kInt, kFloat, kString, kArray, kObject, kCallable };

  Value() = default;  // Undefined
  static Value undefined(std::string hint) { return Value(std::in_place, Undefined{std::move(hint)}); }
  static Value none() { return Value(std::in_place, nullptr); }
  static Value boolean(bool b) { return Value(std::in_place, b); }
  static Value integer(int64_t i) { return Value(std::in_place, i); }
  static Value number(double d) { return Value(std::in_place, d); }
  static Value string(std::string s, bool markup = false) {
    Value v(std::in_place, std::move(s));
    v.markup_ = markup;
    return v;
  }
  static Value array(std::shared_ptr<Array> a) { return Value(std::in_place, std::move(a)); }
  static Value object(std::shared_ptr<Object> o) { return Value(std::in_place, std::move(o)); }
  static Value callable(std::shared_ptr<Callable> c) { return Value(std::in_place, std::move(c)); }
  static Value list(std::vector<Value> items, bool is_tuple = false);
  // JSON → Value (objects keep their key order).
  static Value from_json(const nlohmann::ordered_json& j);

  Kind kind() const { return Kind(data_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_number() const { return is_bool() || is_int() || is_float(); }  // Python's numbers.Number
  bool is_integral() const { return is_bool() || is_int(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_array() const { return kind() == Kind::kArray; }
  bool is_object() const { return kind() == Kind::kObject; }
  bool is_dict() const;
  bool is_callable() const { return kind() == Kind::kCallable; }
  bool is_markup() const { return markup_ && is_string(); }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return is_bool() ? int64_t(as_bool()) : std::get<int64_t>(data_); }  // bool or int
  double as_double() const { return is_float() ? std::get<double>(data_) : double(as_int()); }  // any number
  const std::string& str() const { return std::get<std::string>(data_); }
  std::string& str() { return std::get<std::string>(data_); }
  const Array& array() const { return *std::get<std::shared_ptr<Array>>(data_); }
  const std::shared_ptr<Array>& array_ptr() const { return std::get<std::shared_ptr<Array>>(data_); }
  Object& object() const { return *std::get<std::shared_ptr<Object>>(data_); }
  const std::shared_ptr<Object>& object_ptr() const { return std::get<std::shared_ptr<Object>>(data_); }
  Callable& callable() const { return *std::get<std::shared_ptr<Callable>>(data_); }
  // Why an Undefined is undefined ("'x' is undefined"); the message of an error that uses it.
  const std::string& undefined_hint() const { return std::get<Undefined>(data_).hint; }
  void set_markup(bool m) { markup_ = m; }

  bool truthy() const;           // Python's bool(); Undefined is false
  std::string to_str() const;    // Python's str(); Undefined is ""
  void append_str(std::string& out) const;
  std::string repr() const;      // Python's repr()
  // Python's type name: "str", "int", "dict", "list", "NoneType", "Undefined", ...
  std::string_view type_name() const;

 private:
  struct Undefined {
    std::string hint;
  };
  template <typename T>
  Value(std::in_place_t, T&& v) : data_(std::forward<T>(v)) {}

  std::variant<Undefined, std::nullptr_t, bool, int64_t, double, std::string, std::shared_ptr<Array>,
               std::shared_ptr<Object>, std::shared_ptr<Callable>>
      data_;
  bool markup_ = false;  // a str marked safe (Jinja's Markup): `+` escapes the other operand
};

// Lists and dicts nest at most this deep, so printing, comparing and freeing them stays off the
// stack's end (Python stops near the same depth with a RecursionError).
constexpr uint32_t kMaxValueDepth = 500;

struct Array {
  std::vector<Value> items;
  bool is_tuple = false;
  uint32_t depth = 1;  // 1 + the deepest list/dict inside
};

// A string-keyed map in insertion order (Python dict), a namespace() or a loop object.
struct Object {
  enum class Kind : uint8_t { kDict, kNamespace, kLoop };
  Kind kind = Kind::kDict;
  std::vector<std::pair<std::string, Value>> items;
  uint32_t depth = 1;  // 1 + the deepest list/dict inside (never lowered when a value is replaced)

  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  void set(std::string_view key, Value v);  // replaces in place or appends; fails past kMaxValueDepth
};

// Nesting depth of a list or dict (0 for anything else).
uint32_t container_depth(const Value& v);

inline bool Value::is_dict() const { return is_object() && object().kind == Object::Kind::kDict; }

// Positional and keyword arguments of a call, filter or test.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

class Interpreter;

// Something a template can call: a macro, a global function or a bound method.
class Callable {
 public:
  virtual ~Callable() = default;
  virtual Value call(Interpreter& in, CallArgs& args) = 0;
  virtual std::string repr() const = 0;
};

// Python semantics: == (1 == 1.0 == True; list vs tuple differ), and ordering for <, <=, >, >=
// (numbers, strings by code point, lists lexicographically; other pairs fail with a TypeError).
bool equals(const Value& a, const Value& b);
bool less(const Value& a, const Value& b);
// Fails with the hint of an Undefined that was used where a value is required.
[[noreturn]] void fail_undefined(const Value& v);

}  // namespace zinc::chat
