// Jinja2's built-in filters on sequences and mappings: map, select/reject(attr), sort, dictsort,
// unique, min/max, sum, join, first/last, list, reverse, items, batch, attr.
#include <algorithm>

#include "chat/builtins.h"
#include "chat/interpreter.h"
#include "chat/text.h"

namespace zinc::chat {
namespace {

Value lower_if_string(Value v) { return v.is_string() ? Value::string(text::lower(v.str())) : v; }

// make_attrgetter: "a.b.0" looks up a, then b, then item 0, with Jinja's getitem rules.
class AttrGetter {
 public:
  AttrGetter(const Value* attribute, bool ignore_case, const Value* fallback = nullptr)
      : ignore_case_(ignore_case), fallback_(fallback) {
    if (!attribute || attribute->is_none()) return;
    if (!attribute->is_string()) {
      parts_.push_back(*attribute);
      return;
    }
    for (const std::string& part : text::split(attribute->str(), std::string_view("."), -1, false)) {
      bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
      parts_.push_back(digits ? Value::integer(std::atoll(part.c_str())) : Value::string(part));
    }
  }

  Value operator()(Interpreter& in, Value item) const {
    for (const Value& part : parts_) {
      item = in.getitem(item, part);
      if (fallback_ && !fallback_->is_none() && item.is_undefined()) item = *fallback_;
    }
    return ignore_case_ ? lower_if_string(std::move(item)) : item;
  }

 private:
  std::vector<Value> parts_;
  bool ignore_case_;
  const Value* fallback_;
};

Value list_of(std::vector<Value> items) { return Value::list(std::move(items)); }

// Stable sort by key, descending with the stability Python's sorted(reverse=True) keeps.
void sort_by_key(std::vector<std::pair<Value, Value>>& keyed, bool reverse) {
  std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& a, const auto& b) {
    return reverse ? less(b.first, a.first) : less(a.first, b.first);
  });
}

Value select_or_reject(Interpreter& in, const Value& v, CallArgs& a, bool select, bool lookup_attr) {
  std::vector<Value> out;
  if (!v.truthy()) return list_of(std::move(out));
  size_t off = 0;
  std::optional<AttrGetter> getter;
  if (lookup_attr) {
    if (a.positional.empty()) fail("Missing parameter for attribute name");
    getter.emplace(&a.positional[0], false);
    off = 1;
  }
  std::string test;
  CallArgs test_args;
  if (a.positional.size() > off) {
    test = a.positional[off].to_str();
    test_args.positional.assign(a.positional.begin() + off + 1, a.positional.end());
  }
  test_args.keyword = a.keyword;
  const auto item_list = iterate(v);  // keeps a built list alive through the loop
  for (const Value& item : item_list->items) {
    Value subject = getter ? (*getter)(in, item) : item;
    CallArgs call = test_args;
    bool r = test.empty() ? subject.truthy() : in.call_test(test, subject, call);
    if (r == select) out.push_back(item);
  }
  return list_of(std::move(out));
}

Value min_or_max(Interpreter& in, const Value& v, CallArgs& a, bool max) {
  Args args(max ? "max" : "min", a, {"case_sensitive", "attribute"});
  AttrGetter key(args.get(1), !args.bool_or(0, false));
  const auto items = iterate(v);
  if (items->items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = key(in, items->items[0]);
  for (size_t i = 1; i < items->items.size(); ++i) {
    Value k = key(in, items->items[i]);
    if (max ? less(best_key, k) : less(k, best_key)) best = i, best_key = std::move(k);
  }
  return items->items[best];
}

}  // namespace

Value filter_attr(Interpreter& in, Value& v, CallArgs& a) {
  Args args("attr", a, {"name"});
  std::string name = args.string_or(0, "");
  if (v.is_dict() && !has_method(v, name))  // a dict's keys are items, not attributes
    return Value::undefined("'dict object' has no attribute '" + name + "'");
  return in.getattr(v, name);
}

Value filter_batch(Interpreter&, Value& v, CallArgs& a) {
  Args args("batch", a, {"linecount", "fill_with"});
  const int64_t n = args.int_or(0, 0);
  if (n <= 0) fail("batch(): linecount must be positive");
  std::vector<Value> rows, row;
  const auto item_list = iterate(v);  // keeps a built list alive through the loop
  for (const Value& item : item_list->items) {
    row.push_back(item);
    if (int64_t(row.size()) == n) rows.push_back(list_of(std::move(row))), row.clear();
  }
  if (!row.empty()) {
    if (const Value* fill = args.get(1); fill && !fill->is_none())
      while (int64_t(row.size()) < n) row.push_back(*fill);
    rows.push_back(list_of(std::move(row)));
  }
  return list_of(std::move(rows));
}

Value filter_items(Interpreter&, Value& v, CallArgs& a) {
  Args("items", a, {});
  std::vector<Value> out;
  if (v.is_undefined()) return list_of(std::move(out));
  if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
  for (const auto& [k, x] : v.object().items) out.push_back(Value::list({Value::string(k), x}, true));
  return list_of(std::move(out));
}

Value filter_dictsort(Interpreter&, Value& v, CallArgs& a) {
  Args args("dictsort", a, {"case_sensitive", "by", "reverse"});
  const bool case_sensitive = args.bool_or(0, false);
  const std::string by = args.string_or(1, "key");
  if (by != "key" && by != "value") fail("You can only sort by either \"key\" or \"value\"");
  if (!v.is_dict()) fail("dictsort() needs a mapping, got " + std::string(v.type_name()));
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& [k, x] : v.object().items) {
    Value key = by == "key" ? Value::string(k) : x;
    keyed.emplace_back(case_sensitive ? key : lower_if_string(key), Value::list({Value::string(k), x}, true));
  }
  sort_by_key(keyed, args.bool_or(2, false));
  std::vector<Value> out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return list_of(std::move(out));
}

Value filter_sort(Interpreter& in, Value& v, CallArgs& a) {
  Args args("sort", a, {"reverse", "case_sensitive", "attribute"});
  const bool ignore_case = !args.bool_or(1, false);
  std::vector<AttrGetter> keys;
  if (const Value* attr = args.get(2); attr && attr->is_string() && attr->str().find(',') != std::string::npos) {
    for (const std::string& part : text::split(attr->str(), std::string_view(","), -1, false)) {
      Value p = Value::string(part);
      keys.emplace_back(&p, ignore_case);
    }
  } else {
    keys.emplace_back(args.get(2), ignore_case);
  }
  std::vector<std::pair<Value, Value>> keyed;
  const auto item_list = iterate(v);  // keeps a built list alive through the loop
  for (const Value& item : item_list->items) {
    if (keys.size() == 1) {
      keyed.emplace_back(keys[0](in, item), item);
    } else {
      std::vector<Value> k;
      for (const auto& getter : keys) k.push_back(getter(in, item));
      keyed.emplace_back(Value::list(std::move(k)), item);
    }
  }
  sort_by_key(keyed, args.bool_or(0, false));
  std::vector<Value> out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return list_of(std::move(out));
}

Value filter_unique(Interpreter& in, Value& v, CallArgs& a) {
  Args args("unique", a, {"case_sensitive", "attribute"});
  AttrGetter key(args.get(1), !args.bool_or(0, false));
  std::vector<Value> seen, out;
  const auto item_list = iterate(v);  // keeps a built list alive through the loop
  for (const Value& item : item_list->items) {
    Value k = key(in, item);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, k); })) continue;
    seen.push_back(std::move(k));
    out.push_back(item);
  }
  return list_of(std::move(out));
}

Value filter_min(Interpreter& in, Value& v, CallArgs& a) { return min_or_max(in, v, a, false); }
Value filter_max(Interpreter& in, Value& v, CallArgs& a) { return min_or_max(in, v, a, true); }

Value filter_sum(Interpreter& in, Value& v, CallArgs& a) {
  Args args("sum", a, {"attribute", "start"});
  AttrGetter key(args.get(0), false);
  Value total = args.value_or(1, Value::integer(0));
  const auto item_list = iterate(v);  // keeps a built list alive through the loop
  for (const Value& item : item_list->items) total = binary_op(BinaryOp::kAdd, std::move(total), key(in, item), in.max_value_bytes());
  return total;
}

Value filter_join(Interpreter& in, Value& v, CallArgs& a) {
  Args args("join", a, {"d", "attribute"});
  const std::string sep = args.has(0) ? args.get(0)->to_str() : "";
  std::optional<AttrGetter> key;
  if (args.has(1) && !args.get(1)->is_none()) key.emplace(args.get(1), false);
  std::string out;
  bool first = true;
  const auto item_list = iterate(v);  // keeps a built list alive through the loop
  for (const Value& item : item_list->items) {
    if (!first) out += sep;
    first = false;
    (key ? (*key)(in, item) : item).append_str(out);
    if (out.size() > in.max_value_bytes()) fail("join() result too large");
  }
  return Value::string(std::move(out));
}

Value filter_first(Interpreter&, Value& v, CallArgs& a) {
  Args("first", a, {});
  const auto items = iterate(v);
  if (items->items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items->items.front();
}

Value filter_last(Interpreter&, Value& v, CallArgs& a) {
  Args("last", a, {});
  const auto items = iterate(v);
  if (items->items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items->items.back();
}

Value filter_list(Interpreter&, Value& v, CallArgs& a) {
  Args("list", a, {});
  return list_of(iterate(v)->items);
}

Value filter_reverse(Interpreter&, Value& v, CallArgs& a) {
  Args("reverse", a, {});
  if (v.is_string()) {
    std::string out;
    const std::string& s = v.str();
    for (size_t i = s.size(); i > 0;) text::append_utf8(out, text::decode_back(s, i));
    return Value::string(std::move(out));
  }
  std::vector<Value> items = iterate(v)->items;
  std::reverse(items.begin(), items.end());
  return list_of(std::move(items));
}

Value filter_map(Interpreter& in, Value& v, CallArgs& a) {
  std::vector<Value> out;
  const auto items = iterate(v);
  if (a.positional.empty()) {
    const Value* attribute = nullptr;
    const Value* fallback = nullptr;
    for (const auto& [k, x] : a.keyword) {
      if (k == "attribute") attribute = &x;
      else if (k == "default") fallback = &x;
      else fail("Unexpected keyword argument '" + k + "'");
    }
    if (!attribute) fail("map requires a filter argument");
    AttrGetter key(attribute, false, fallback);
    for (const Value& item : items->items) out.push_back(key(in, item));
    return list_of(std::move(out));
  }
  const std::string name = a.positional[0].to_str();
  CallArgs rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.keyword = a.keyword;
  for (const Value& item : items->items) {
    CallArgs call = rest;
    out.push_back(in.call_filter(name, item, call));
  }
  return list_of(std::move(out));
}

Value filter_select(Interpreter& in, Value& v, CallArgs& a) { return select_or_reject(in, v, a, true, false); }
Value filter_reject(Interpreter& in, Value& v, CallArgs& a) { return select_or_reject(in, v, a, false, false); }
Value filter_selectattr(Interpreter& in, Value& v, CallArgs& a) { return select_or_reject(in, v, a, true, true); }
Value filter_rejectattr(Interpreter& in, Value& v, CallArgs& a) { return select_or_reject(in, v, a, false, true); }

}  // namespace zinc::chat
