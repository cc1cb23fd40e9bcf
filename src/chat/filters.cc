// Jinja2's built-in filters on strings and numbers, and the filter table. Sequence filters
// (map, select, sort, join, ...) are in filters_seq.cc. `tojson` is Hugging Face's override.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chat/builtins.h"
#include "chat/interpreter.h"
#include "chat/json_dump.h"
#include "chat/parser.h"
#include "chat/text.h"

namespace zinc::chat {

// Declared here, defined in filters_seq.cc.
Value filter_attr(Interpreter&, Value&, CallArgs&);
Value filter_batch(Interpreter&, Value&, CallArgs&);
Value filter_dictsort(Interpreter&, Value&, CallArgs&);
Value filter_first(Interpreter&, Value&, CallArgs&);
Value filter_items(Interpreter&, Value&, CallArgs&);
Value filter_join(Interpreter&, Value&, CallArgs&);
Value filter_last(Interpreter&, Value&, CallArgs&);
Value filter_list(Interpreter&, Value&, CallArgs&);
Value filter_map(Interpreter&, Value&, CallArgs&);
Value filter_max(Interpreter&, Value&, CallArgs&);
Value filter_min(Interpreter&, Value&, CallArgs&);
Value filter_reject(Interpreter&, Value&, CallArgs&);
Value filter_rejectattr(Interpreter&, Value&, CallArgs&);
Value filter_reverse(Interpreter&, Value&, CallArgs&);
Value filter_select(Interpreter&, Value&, CallArgs&);
Value filter_selectattr(Interpreter&, Value&, CallArgs&);
Value filter_sort(Interpreter&, Value&, CallArgs&);
Value filter_sum(Interpreter&, Value&, CallArgs&);
Value filter_unique(Interpreter&, Value&, CallArgs&);

namespace {

// soft_str: str(value) unless it is markup already.
Value soft_str(const Value& v) { return v.is_string() ? v : Value::string(v.to_str()); }

Value same_markup(const Value& original, std::string s) { return Value::string(std::move(s), original.is_markup()); }

Value filter_upper(Interpreter&, Value& v, CallArgs& a) {
  Args("upper", a, {});
  return same_markup(v, text::upper(soft_str(v).str()));
}

Value filter_lower(Interpreter&, Value& v, CallArgs& a) {
  Args("lower", a, {});
  return same_markup(v, text::lower(soft_str(v).str()));
}

Value filter_capitalize(Interpreter&, Value& v, CallArgs& a) {
  Args("capitalize", a, {});
  return same_markup(v, text::capitalize(soft_str(v).str()));
}

// Jinja's title: words start after whitespace, '-', '(', '{', '[' or '<'.
Value filter_title(Interpreter&, Value& v, CallArgs& a) {
  Args("title", a, {});
  const std::string s = soft_str(v).str();
  std::string out;
  bool word_start = true;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = text::decode(s, i);
    bool sep = text::is_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    std::string piece;
    text::append_utf8(piece, cp);
    out += sep ? piece : word_start ? text::upper(piece) : text::lower(piece);
    word_start = sep;
  }
  return same_markup(v, std::move(out));
}

Value filter_trim(Interpreter&, Value& v, CallArgs& a) {
  Args args("trim", a, {"chars"});
  Value s = soft_str(v);
  return same_markup(v, std::string(text::strip(s.str(), args.optional_string(0), true, true)));
}

Value filter_replace(Interpreter& in, Value& v, CallArgs& a) {
  Args args("replace", a, {"old", "new", "count"});
  if (!args.has(1)) fail("replace() missing required arguments 'old' and 'new'");
  int64_t count = args.int_or(2, -1);
  return Value::string(
      text::replace(v.to_str(), args.get(0)->to_str(), args.get(1)->to_str(), count, in.max_value_bytes()));
}

Value filter_string(Interpreter&, Value& v, CallArgs& a) {
  Args("string", a, {});
  return soft_str(v);
}

Value filter_safe(Interpreter&, Value& v, CallArgs& a) {
  Args("safe", a, {});
  return Value::string(v.to_str(), true);
}

Value filter_escape(Interpreter&, Value& v, CallArgs& a) {
  Args("escape", a, {});
  return escape_value(v);
}

Value filter_forceescape(Interpreter&, Value& v, CallArgs& a) {
  Args("forceescape", a, {});
  return Value::string(text::html_escape(v.to_str()), true);
}

Value filter_length(Interpreter&, Value& v, CallArgs& a) {
  Args("length", a, {});
  return Value::integer(length(v));
}

Value filter_default(Interpreter&, Value& v, CallArgs& a) {
  Args args("default", a, {"default_value", "boolean"});
  if (v.is_undefined() || (args.bool_or(1, false) && !v.truthy())) return args.value_or(0, Value::string(""));
  return v;
}

// tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False), as transformers defines it.
Value filter_tojson(Interpreter&, Value& v, CallArgs& a) {
  Args args("tojson", a, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonFormat f;
  f.ensure_ascii = args.bool_or(0, false);
  if (const Value* indent = args.get(1); indent && !indent->is_none()) {
    if (indent->is_string()) f.indent = indent->str();
    else if (indent->is_integral()) f.indent = std::string(size_t(std::clamp<int64_t>(indent->as_int(), 0, 1 << 10)), ' ');
    else fail("tojson(): indent must be an integer or a string");
  }
  if (const Value* sep = args.get(2); sep && !sep->is_none()) {
    if (!sep->is_array() || sep->array().items.size() != 2 || !sep->array().items[0].is_string() ||
        !sep->array().items[1].is_string())
      fail("tojson(): separators must be a pair of strings");
    f.item_separator = sep->array().items[0].str();
    f.key_separator = sep->array().items[1].str();
  }
  f.sort_keys = args.bool_or(3, false);
  return Value::string(dump_json(v, f));
}

Value filter_abs(Interpreter&, Value& v, CallArgs& a) {
  Args("abs", a, {});
  if (v.is_integral()) return negate(v, v.as_int() < 0);
  if (v.is_float()) return Value::number(std::fabs(v.as_double()));
  fail("bad operand type for abs(): '" + std::string(v.type_name()) + "'");
}

// Python's float() of a string: surrounding whitespace, underscores between digits, inf/nan.
std::optional<double> parse_float(const std::string& raw) {
  std::string s;
  for (char c : text::strip(raw, std::nullopt, true, true))
    if (c != '_') s += c;
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return d;
}

Value filter_int(Interpreter&, Value& v, CallArgs& a) {
  Args args("int", a, {"default", "base"});
  Value fallback = args.value_or(0, Value::integer(0));
  if (v.is_integral()) return Value::integer(v.as_int());
  if (v.is_float()) {
    double d = v.as_double();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return fallback;
    return Value::integer(int64_t(d));
  }
  if (!v.is_string()) return fallback;
  const int64_t base = args.int_or(1, 10);
  std::string s(text::strip(v.str(), std::nullopt, true, true));
  std::string digits;
  for (char c : s)
    if (c != '_') digits += c;
  if (!digits.empty()) {
    char* end = nullptr;
    errno = 0;
    long long n = std::strtoll(digits.c_str(), &end, int(base));
    if (end == digits.c_str() + digits.size() && errno == 0) return Value::integer(n);
  }
  if (auto d = parse_float(v.str()); d && std::isfinite(*d) && std::fabs(*d) < 9.2e18) return Value::integer(int64_t(*d));
  return fallback;
}

Value filter_float(Interpreter&, Value& v, CallArgs& a) {
  Args args("float", a, {"default"});
  if (v.is_number()) return Value::number(v.as_double());
  if (v.is_string())
    if (auto d = parse_float(v.str())) return Value::number(*d);
  return args.value_or(0, Value::number(0.0));
}

Value filter_round(Interpreter&, Value& v, CallArgs& a) {
  Args args("round", a, {"precision", "method"});
  const int64_t precision = args.int_or(0, 0);
  const std::string method = args.string_or(1, "common");
  if (method != "common" && method != "ceil" && method != "floor") fail("method must be common, ceil or floor");
  if (!v.is_number()) fail("type " + std::string(v.type_name()) + " doesn't define __round__ method");
  if (method == "common") {
    if (v.is_integral() && precision >= 0) return Value::integer(v.as_int());
    double d = v.as_double();
    if (precision >= 0 && precision < 300 && std::isfinite(d)) {
      char buf[512];
      std::snprintf(buf, sizeof buf, "%.*f", int(precision), d);  // correctly rounded, ties to even
      return Value::number(std::strtod(buf, nullptr));
    }
    double scale = std::pow(10.0, double(-precision));
    return Value::number(std::nearbyint(d / scale) * scale);
  }
  double scale = std::pow(10.0, double(precision));
  double d = v.as_double() * scale;
  return Value::number((method == "ceil" ? std::ceil(d) : std::floor(d)) / scale);
}

Value filter_center(Interpreter& in, Value& v, CallArgs& a) {
  Args args("center", a, {"width"});
  CallArgs call;
  call.positional.push_back(Value::integer(args.int_or(0, 80)));
  return *call_method(in, soft_str(v), "center", call);
}

Value filter_indent(Interpreter& in, Value& v, CallArgs& a) {
  Args args("indent", a, {"width", "first", "blank"});
  std::string indention;
  if (const Value* w = args.get(0); w && w->is_string()) indention = w->str();
  else indention = std::string(size_t(std::clamp<int64_t>(args.int_or(0, 4), 0, 1 << 10)), ' ');
  std::string s = v.to_str() + "\n";  // Jinja's quirk for splitlines
  std::vector<std::string> lines = text::splitlines(s, false);
  std::string out;
  if (args.bool_or(2, false)) {
    for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" + indention : "") + lines[i];
  } else {
    out = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) out += "\n" + (lines[i].empty() ? "" : indention) + lines[i];
  }
  if (args.bool_or(1, false)) out = indention + out;
  if (out.size() > in.max_value_bytes()) fail("indent() result too large");
  return Value::string(std::move(out));
}

Value filter_wordcount(Interpreter&, Value& v, CallArgs& a) {
  Args("wordcount", a, {});
  const std::string s = v.to_str();
  int64_t words = 0;
  bool in_word = false;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = text::decode(s, i);
    bool w = text::is_alpha(cp) || text::is_digit(cp) || cp == '_';
    if (w && !in_word) ++words;
    in_word = w;
  }
  return Value::integer(words);
}

Value filter_truncate(Interpreter&, Value& v, CallArgs& a) {
  Args args("truncate", a, {"length", "killwords", "end", "leeway"});
  const std::string s = v.to_str();
  const int64_t length = args.int_or(0, 255);
  const std::string end = args.string_or(2, "...");
  const int64_t leeway = args.int_or(3, 5);
  auto offsets = text::code_point_offsets(s);
  const int64_t n = int64_t(offsets.size()) - 1;
  const int64_t end_n = int64_t(text::code_point_count(end));
  if (length < end_n) fail(format("expected length >= %lld, got %lld", (long long)end_n, (long long)length));
  if (n <= length + leeway) return Value::string(s);
  std::string head = s.substr(0, offsets[size_t(length - end_n)]);
  if (!args.bool_or(1, false)) {
    size_t space = head.rfind(' ');
    if (space != std::string::npos) head.resize(space);
  }
  return Value::string(head + end);
}

Value filter_striptags(Interpreter&, Value& v, CallArgs& a) {
  Args("striptags", a, {});
  const std::string s = v.to_str();
  std::string stripped;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 4, "<!--") == 0) {
      size_t e = s.find("-->", i + 4);
      if (e == std::string::npos) break;
      i = e + 2;
    } else if (s[i] == '<') {
      size_t e = s.find('>', i + 1);
      if (e == std::string::npos) break;
      i = e;
    } else {
      stripped += s[i];
    }
  }
  std::string out;
  for (auto& word : text::split(stripped, std::nullopt, -1, false)) out += (out.empty() ? "" : " ") + word;
  for (auto [entity, ch] : {std::pair{"&lt;", "<"}, {"&gt;", ">"}, {"&#34;", "\""}, {"&quot;", "\""}, {"&#39;", "'"}, {"&amp;", "&"}})
    out = text::replace(out, entity, ch, -1, SIZE_MAX);
  return Value::string(std::move(out));
}

Value filter_format(Interpreter& in, Value& v, CallArgs& a) {
  if (!a.positional.empty() && !a.keyword.empty()) fail("can't handle positional and keyword arguments at the same time");
  Value values;
  if (!a.keyword.empty()) {
    auto o = std::make_shared<Object>();
    for (auto& [k, kv] : a.keyword) o->set(k, kv);
    values = Value::object(std::move(o));
  } else {
    values = Value::list(a.positional, true);
  }
  return Value::string(percent_format(v.to_str(), values, in.max_value_bytes()));
}

Value filter_pprint(Interpreter&, Value& v, CallArgs& a) {
  Args("pprint", a, {});
  return Value::string(v.repr());
}

struct FilterEntry {
  std::string_view name;
  FilterFn fn;
};

constexpr FilterEntry kFilters[] = {
    {"abs", filter_abs},         {"attr", filter_attr},
    {"batch", filter_batch},     {"capitalize", filter_capitalize},
    {"center", filter_center},   {"count", filter_length},
    {"d", filter_default},       {"default", filter_default},
    {"dictsort", filter_dictsort}, {"e", filter_escape},
    {"escape", filter_escape},   {"first", filter_first},
    {"float", filter_float},     {"forceescape", filter_forceescape},
    {"format", filter_format},   {"indent", filter_indent},
    {"int", filter_int},         {"items", filter_items},
    {"join", filter_join},       {"last", filter_last},
    {"length", filter_length},   {"list", filter_list},
    {"lower", filter_lower},     {"map", filter_map},
    {"max", filter_max},         {"min", filter_min},
    {"pprint", filter_pprint},   {"reject", filter_reject},
    {"rejectattr", filter_rejectattr}, {"replace", filter_replace},
    {"reverse", filter_reverse}, {"round", filter_round},
    {"safe", filter_safe},       {"select", filter_select},
    {"selectattr", filter_selectattr}, {"sort", filter_sort},
    {"string", filter_string},   {"striptags", filter_striptags},
    {"sum", filter_sum},         {"title", filter_title},
    {"tojson", filter_tojson},   {"trim", filter_trim},
    {"truncate", filter_truncate}, {"unique", filter_unique},
    {"upper", filter_upper},     {"wordcount", filter_wordcount},
};

}  // namespace

FilterFn find_filter(std::string_view name) {
  for (const auto& f : kFilters)
    if (f.name == name) return f.fn;
  return nullptr;
}

}  // namespace zinc::chat
