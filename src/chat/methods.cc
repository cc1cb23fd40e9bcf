// Methods a template may call on values: str (strip, split, startswith, format, ...), dict (get,
// items, keys, values), list (index, count) and the loop object (cycle, changed). Methods that
// would mutate a value do not exist here, as in Hugging Face's immutable sandbox.
#include <algorithm>
#include <cstdio>

#include "chat/builtins.h"
#include "chat/interpreter.h"
#include "chat/text.h"

namespace zinc::chat {

// ---- argument binding ----
Args::Args(std::string_view function, const CallArgs& args, std::initializer_list<std::string_view> params)
    : function_(function), params_(params), bound_(params.size(), nullptr) {
  if (args.positional.size() > params_.size())
    fail(format("%s() takes at most %zu argument(s) (%zu given)", function_.c_str(), params_.size(),
                args.positional.size()));
  for (size_t i = 0; i < args.positional.size(); ++i) bound_[i] = &args.positional[i];
  for (const auto& [name, value] : args.keyword) {
    auto it = std::find(params_.begin(), params_.end(), name);
    if (it == params_.end())
      fail(format("%s() got an unexpected keyword argument '%s'", function_.c_str(), name.c_str()));
    size_t i = size_t(it - params_.begin());
    if (bound_[i]) fail(format("%s() got multiple values for argument '%s'", function_.c_str(), name.c_str()));
    bound_[i] = &value;
  }
}

int64_t Args::int_or(size_t i, int64_t fallback) const {
  const Value* v = get(i);
  if (!v || v->is_none()) return fallback;
  if (!v->is_integral())
    fail(format("%s(): argument '%s' must be an integer, not %s", function_.c_str(), std::string(params_[i]).c_str(),
                std::string(v->type_name()).c_str()));
  return v->as_int();
}

std::optional<std::string> Args::optional_string(size_t i) const {
  const Value* v = get(i);
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string())
    fail(format("%s(): argument '%s' must be str or None, not %s", function_.c_str(), std::string(params_[i]).c_str(),
                std::string(v->type_name()).c_str()));
  return v->str();
}

Value escape_value(const Value& s) {
  if (s.is_markup()) return s;
  return Value::string(text::html_escape(s.to_str()), true);
}

namespace {

// Byte offset → code point index (Python's str indices).
int64_t code_point_index(const std::string& s, size_t byte_offset) {
  return int64_t(text::code_point_count(std::string_view(s).substr(0, byte_offset)));
}

bool all_code_points(const std::string& s, bool (*pred)(uint32_t)) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size();)
    if (!pred(text::decode(s, i))) return false;
  return true;
}

// lower: islower(), else isupper(): cased characters exist and none has the other case.
bool case_test(const std::string& s, bool lower) {
  bool cased = false;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = text::decode(s, i);
    if (!text::is_cased(cp)) continue;
    cased = true;
    if (lower ? text::to_lower(cp) != cp : text::to_upper(cp) != cp) return false;
  }
  return cased;
}

Value string_list(std::vector<std::string> parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (auto& p : parts) items.push_back(Value::string(std::move(p)));
  return Value::list(std::move(items));
}

bool affix_match(const std::string& s, const Value& affix, bool prefix, const char* method) {
  auto one = [&](const Value& a) {
    if (!a.is_string())
      fail(format("%s first arg must be str or a tuple of str, not %s", method, std::string(a.type_name()).c_str()));
    const std::string& x = a.str();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.is_array() && affix.array().is_tuple) {
    for (const Value& a : affix.array().items)
      if (one(a)) return true;
    return false;
  }
  return one(affix);
}

std::optional<Value> string_method(Interpreter& in, const Value& self, std::string_view name, CallArgs& call) {
  const std::string& s = self.str();
  const size_t max_bytes = in.max_value_bytes();
  auto sv = [&](std::string_view v) { return Value::string(std::string(v)); };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    Args a(name, call, {"chars"});
    return sv(text::strip(s, a.optional_string(0), name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    Args a(name, call, {"sep", "maxsplit"});
    return string_list(text::split(s, a.optional_string(0), a.int_or(1, -1), name == "rsplit"));
  }
  if (name == "splitlines") {
    Args a(name, call, {"keepends"});
    return string_list(text::splitlines(s, a.bool_or(0, false)));
  }
  if (name == "startswith" || name == "endswith") {
    Args a(name, call, {"prefix"});
    if (!a.has(0)) fail(std::string(name) + "() takes at least 1 argument (0 given)");
    return Value::boolean(affix_match(s, *a.get(0), name == "startswith", name == "startswith" ? "startswith" : "endswith"));
  }
  if (name == "upper" || name == "lower" || name == "casefold" || name == "title" || name == "capitalize") {
    Args(name, call, {});
    if (name == "upper") return sv(text::upper(s));
    if (name == "title") return sv(text::title(s));
    if (name == "capitalize") return sv(text::capitalize(s));
    return sv(text::lower(s));
  }
  if (name == "replace") {
    Args a(name, call, {"old", "new", "count"});
    if (!a.has(1)) fail("replace() takes at least 2 arguments");
    if (!a.get(0)->is_string() || !a.get(1)->is_string()) fail("replace() arguments must be str");
    return sv(text::replace(s, a.get(0)->str(), a.get(1)->str(), a.int_or(2, -1), max_bytes));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    Args a(name, call, {"sub"});
    if (!a.has(0) || !a.get(0)->is_string()) fail(std::string(name) + "() argument must be str");
    const std::string& sub = a.get(0)->str();
    if (name == "count") {
      if (sub.empty()) return Value::integer(int64_t(text::code_point_count(s)) + 1);
      int64_t n = 0;
      for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
      return Value::integer(n);
    }
    size_t p = name[0] == 'r' ? s.rfind(sub) : s.find(sub);
    if (p == std::string::npos) {
      if (name == "index" || name == "rindex") fail("substring not found");
      return Value::integer(-1);
    }
    return Value::integer(code_point_index(s, p));
  }
  if (name == "join") {
    Args a(name, call, {"iterable"});
    if (!a.has(0)) fail("join() takes exactly one argument (0 given)");
    std::string out;
    const auto items = iterate(*a.get(0));
    for (size_t i = 0; i < items->items.size(); ++i) {
      const Value& v = items->items[i];
      if (!v.is_string())
        fail(format("sequence item %zu: expected str instance, %s found", i, std::string(v.type_name()).c_str()));
      if (i) out += s;
      out += v.str();
      if (out.size() > max_bytes) fail("join() result too large");
    }
    return Value::string(std::move(out));
  }
  if (name == "format") return Value::string(str_format(s, call, max_bytes));
  if (name.substr(0, 2) == "is" && has_method(self, name)) {
    Args(name, call, {});
    if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") return Value::boolean(all_code_points(s, text::is_digit));
    if (name == "isalpha") return Value::boolean(all_code_points(s, text::is_alpha));
    if (name == "isalnum")
      return Value::boolean(all_code_points(s, [](uint32_t c) { return text::is_alpha(c) || text::is_digit(c); }));
    if (name == "isspace") return Value::boolean(all_code_points(s, text::is_space));
    if (name == "islower" || name == "isupper") return Value::boolean(case_test(s, name == "islower"));
  }
  if (name == "center" || name == "ljust" || name == "rjust") {
    Args a(name, call, {"width", "fillchar"});
    std::string fill = a.string_or(1, " ");
    char align = name == "center" ? 'c' : name == "ljust" ? '<' : '>';
    int64_t width = std::min<int64_t>(a.int_or(0, 0), int64_t(max_bytes));
    return sv(text::pad(s, width, align, fill));
  }
  if (name == "zfill") {
    Args a(name, call, {"width"});
    int64_t width = std::min<int64_t>(a.int_or(0, 0), int64_t(max_bytes));
    int64_t n = int64_t(text::code_point_count(s));
    if (width <= n) return self;
    size_t sign = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
    return sv(s.substr(0, sign) + std::string(size_t(width - n), '0') + s.substr(sign));
  }
  if (name == "partition" || name == "rpartition") {
    Args a(name, call, {"sep"});
    if (!a.has(0) || !a.get(0)->is_string() || a.get(0)->str().empty()) fail("partition() needs a non-empty str");
    const std::string& sep = a.get(0)->str();
    size_t p = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (p == std::string::npos)
      return name == "partition" ? Value::list({sv(s), sv(""), sv("")}, true) : Value::list({sv(""), sv(""), sv(s)}, true);
    return Value::list({sv(s.substr(0, p)), sv(sep), sv(s.substr(p + sep.size()))}, true);
  }
  if (name == "removeprefix" || name == "removesuffix") {
    Args a(name, call, {"affix"});
    if (!a.has(0) || !a.get(0)->is_string()) fail(std::string(name) + "() argument must be str");
    const std::string& x = a.get(0)->str();
    if (name == "removeprefix") return sv(s.compare(0, x.size(), x) == 0 ? s.substr(x.size()) : s);
    return sv(x.size() <= s.size() && s.compare(s.size() - x.size(), x.size(), x) == 0 ? s.substr(0, s.size() - x.size()) : s);
  }
  return std::nullopt;
}

std::optional<Value> dict_method(const Value& self, std::string_view name, CallArgs& call) {
  const Object& o = self.object();
  if (name == "get") {
    Args a(name, call, {"key", "default"});
    if (!a.has(0)) fail("get expected at least 1 argument, got 0");
    if (a.get(0)->is_string())
      if (const Value* v = o.find(a.get(0)->str())) return *v;
    return a.value_or(1, Value::none());
  }
  if (name == "items" || name == "keys" || name == "values") {
    Args a(name, call, {});
    std::vector<Value> out;
    out.reserve(o.items.size());
    for (const auto& [k, v] : o.items) {
      if (name == "items") out.push_back(Value::list({Value::string(k), v}, true));
      else out.push_back(name == "keys" ? Value::string(k) : v);
    }
    return Value::list(std::move(out));
  }
  return std::nullopt;
}

std::optional<Value> list_method(const Value& self, std::string_view name, CallArgs& call) {
  const auto& items = self.array().items;
  if (name == "index" || name == "count") {
    Args a(name, call, {"value"});
    if (!a.has(0)) fail(std::string(name) + "() takes exactly one argument (0 given)");
    int64_t n = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!equals(items[i], *a.get(0))) continue;
      if (name == "index") return Value::integer(int64_t(i));
      ++n;
    }
    if (name == "index") fail(a.get(0)->repr() + " is not in list");
    return Value::integer(n);
  }
  return std::nullopt;
}

std::optional<Value> loop_method(const Value& self, std::string_view name, CallArgs& call) {
  Object& loop = self.object();
  if (name == "cycle") {
    if (call.positional.empty()) fail("no items for cycling given");
    int64_t i = loop.find("index0")->as_int();
    return call.positional[size_t(i % int64_t(call.positional.size()))];
  }
  if (name == "changed") {
    Value now = Value::list(call.positional, true);
    Value* last = loop.find("_changed");
    if (last && equals(*last, now)) return Value::boolean(false);
    loop.set("_changed", std::move(now));
    return Value::boolean(true);
  }
  return std::nullopt;
}

class BoundMethod : public Callable {
 public:
  BoundMethod(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
  Value call(Interpreter& in, CallArgs& args) override {
    if (auto r = call_method(in, self_, name_, args)) return std::move(*r);
    fail("'" + std::string(self_.type_name()) + "' object has no method '" + name_ + "'");
  }
  std::string repr() const override {
    return "<built-in method " + name_ + " of " + std::string(self_.type_name()) + " object>";
  }

 private:
  Value self_;
  std::string name_;
};

constexpr std::string_view kStringMethods[] = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith", "upper", "lower",
    "casefold", "title", "capitalize", "replace", "find", "rfind", "index", "rindex", "count", "join", "format",
    "isdigit", "isdecimal", "isnumeric", "isalpha", "isalnum", "isspace", "islower", "isupper", "center", "ljust",
    "rjust", "zfill", "partition", "rpartition", "removeprefix", "removesuffix"};

bool in_list(std::string_view name, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

bool has_method(const Value& obj, std::string_view name) {
  switch (obj.kind()) {
    case Value::Kind::kString:
      return std::find(std::begin(kStringMethods), std::end(kStringMethods), name) != std::end(kStringMethods);
    case Value::Kind::kArray: return in_list(name, {"index", "count"});
    case Value::Kind::kObject:
      if (obj.is_dict()) return in_list(name, {"get", "items", "keys", "values"});
      return obj.object().kind == Object::Kind::kLoop && in_list(name, {"cycle", "changed"});
    default: return false;
  }
}

Value bound_method(const Value& obj, std::string_view name) {
  return Value::callable(std::make_shared<BoundMethod>(obj, std::string(name)));
}

std::optional<Value> call_method(Interpreter& in, const Value& obj, std::string_view name, CallArgs& args) {
  switch (obj.kind()) {
    case Value::Kind::kString: return string_method(in, obj, name, args);
    case Value::Kind::kArray: return list_method(obj, name, args);
    case Value::Kind::kObject:
      if (obj.is_dict()) return dict_method(obj, name, args);
      if (obj.object().kind == Object::Kind::kLoop) return loop_method(obj, name, args);
      return std::nullopt;
    default: return std::nullopt;
  }
}

}  // namespace zinc::chat
