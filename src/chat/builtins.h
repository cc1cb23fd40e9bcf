// Internal to the chat module: Python operators on values, methods of str/dict/list, Jinja's
// global functions, and argument binding for all of them. Every function fails with a
// TemplateError (value.h) the way the Python original raises.
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/ast.h"
#include "chat/value.h"

namespace zinc::chat {

// ---- operators (operators.cc) ----
Value binary_op(BinaryOp op, Value a, Value b, size_t max_bytes);
Value negate(const Value& v, bool minus);  // unary - and +
bool contains(const Value& container, const Value& item);  // `item in container`
// obj[key] without the attribute fallback; nullopt where Python raises LookupError/TypeError.
std::optional<Value> subscript(const Value& obj, const Value& key);
// obj[start:stop:step]; Undefined where Python raises TypeError.
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
// The items of a for loop or a filter's input (dict → keys, str → characters, Undefined → none).
std::shared_ptr<const Array> iterate(const Value& v);
// Python's len(); fails for values without a length.
int64_t length(const Value& v);

// ---- methods (methods.cc) ----
// Calls obj.name(args) when obj's type has that method; nullopt otherwise.
std::optional<Value> call_method(Interpreter& in, const Value& obj, std::string_view name, CallArgs& args);
bool has_method(const Value& obj, std::string_view name);
Value bound_method(const Value& obj, std::string_view name);  // a callable; has_method must hold
// ---- formatting (format.cc) ----
// printf-style `fmt % values` (values: one value, a tuple, or a dict for %(name)s).
std::string percent_format(std::string_view fmt, const Value& values, size_t max_bytes);
// str.format: {} {0} {name}, conversions !r !s, specs [[fill]align][width][.precision][s|d|f].
std::string str_format(const std::string& fmt, const CallArgs& args, size_t max_bytes);

// ---- globals (globals.cc) ----
// range, dict, namespace, raise_exception, strftime_now, joiner, cycler; Undefined for other names.
Value make_global(std::string_view name);

// ---- argument binding ----
// Binds CallArgs to a Python signature: params in order, each by position or keyword.
class Args {
 public:
  Args(std::string_view function, const CallArgs& args, std::initializer_list<std::string_view> params);
  const Value* get(size_t i) const { return i < bound_.size() ? bound_[i] : nullptr; }
  bool has(size_t i) const { return get(i) != nullptr; }
  Value value_or(size_t i, Value fallback) const { return has(i) ? *get(i) : std::move(fallback); }
  int64_t int_or(size_t i, int64_t fallback) const;
  bool bool_or(size_t i, bool fallback) const { return has(i) ? get(i)->truthy() : fallback; }
  std::string string_or(size_t i, std::string fallback) const { return has(i) ? get(i)->to_str() : fallback; }
  // The value of an argument that must be a str (or None, given as nullopt).
  std::optional<std::string> optional_string(size_t i) const;

 private:
  std::string function_;
  std::vector<std::string_view> params_;
  std::vector<const Value*> bound_;
};

// Escapes `s` unless it is already markup (markupsafe.escape); the result is markup.
Value escape_value(const Value& s);

}  // namespace zinc::chat
