// Python's arithmetic, membership, subscripts, slices and iteration on template values.
#include <cmath>

#include "chat/builtins.h"
#include "chat/text.h"

namespace zinc::chat {
namespace {

[[noreturn]] void unsupported(const char* op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  fail(std::string("unsupported operand type(s) for ") + op + ": '" + std::string(a.type_name()) + "' and '" +
       std::string(b.type_name()) + "'");
}

void check_size(size_t bytes, size_t max_bytes) {
  if (bytes > max_bytes) fail(format("value of %zu bytes exceeds the limit of %zu bytes", bytes, max_bytes));
}

Value repeat(const Value& seq, int64_t n, size_t max_bytes) {
  if (n < 0) n = 0;
  auto too_big = [&] { fail(format("repeating a %s %lld times exceeds the limit of %zu bytes", std::string(seq.type_name()).c_str(), (long long)n, max_bytes)); };
  if (seq.is_string()) {
    const std::string& s = seq.str();
    if (!s.empty() && uint64_t(n) > max_bytes / s.size()) too_big();
    std::string out;
    out.reserve(s.size() * n);
    for (int64_t i = 0; i < n; ++i) out += s;
    return Value::string(std::move(out));
  }
  const auto& items = seq.array().items;
  if (!items.empty() && uint64_t(n) > max_bytes / (items.size() * sizeof(Value))) too_big();
  std::vector<Value> out;
  out.reserve(items.size() * n);
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out), seq.array().is_tuple);
}

Value int_result(bool overflow, int64_t r) {
  if (overflow) fail("integer overflow (zinc's template integers are 64-bit)");
  return Value::integer(r);
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

Value binary_op(BinaryOp op, Value a, Value b, size_t max_bytes) {
  const bool numbers = a.is_number() && b.is_number();
  const bool ints = a.is_integral() && b.is_integral();
  switch (op) {
    case BinaryOp::kAdd:
      if (ints) {
        int64_t r;
        const bool overflow = __builtin_add_overflow(a.as_int(), b.as_int(), &r);
        return int_result(overflow, r);
      }
      if (numbers) return Value::number(a.as_double() + b.as_double());
      if (a.is_string() && b.is_string()) {
        check_size(a.str().size() + b.str().size(), max_bytes);
        if (a.is_markup() != b.is_markup()) {  // Markup + str escapes the str
          if (a.is_markup()) return Value::string(a.str() + text::html_escape(b.str()), true);
          return Value::string(text::html_escape(a.str()) + b.str(), true);
        }
        bool markup = a.is_markup();
        a.str() += b.str();
        a.set_markup(markup);
        return a;
      }
      if (a.is_array() && b.is_array() && a.array().is_tuple == b.array().is_tuple) {
        check_size((a.array().items.size() + b.array().items.size()) * sizeof(Value), max_bytes);
        std::vector<Value> items = a.array().items;
        items.insert(items.end(), b.array().items.begin(), b.array().items.end());
        return Value::list(std::move(items), a.array().is_tuple);
      }
      if (a.is_string() && !b.is_undefined())
        fail("can only concatenate str (not \"" + std::string(b.type_name()) + "\") to str");
      unsupported("+", a, b);
    case BinaryOp::kSub:
      if (ints) {
        int64_t r;
        const bool overflow = __builtin_sub_overflow(a.as_int(), b.as_int(), &r);
        return int_result(overflow, r);
      }
      if (numbers) return Value::number(a.as_double() - b.as_double());
      unsupported("-", a, b);
    case BinaryOp::kMul:
      if (ints) {
        int64_t r;
        const bool overflow = __builtin_mul_overflow(a.as_int(), b.as_int(), &r);
        return int_result(overflow, r);
      }
      if (numbers) return Value::number(a.as_double() * b.as_double());
      if ((a.is_string() || a.is_array()) && b.is_integral()) return repeat(a, b.as_int(), max_bytes);
      if ((b.is_string() || b.is_array()) && a.is_integral()) return repeat(b, a.as_int(), max_bytes);
      unsupported("*", a, b);
    case BinaryOp::kDiv:
      if (!numbers) unsupported("/", a, b);
      if (b.as_double() == 0) fail("division by zero");
      return Value::number(a.as_double() / b.as_double());
    case BinaryOp::kFloorDiv:
      if (!numbers) unsupported("//", a, b);
      if (ints) {
        if (b.as_int() == 0) fail("integer division or modulo by zero");
        if (a.as_int() == INT64_MIN && b.as_int() == -1) int_result(true, 0);
        return Value::integer(floor_div(a.as_int(), b.as_int()));
      }
      if (b.as_double() == 0) fail("float floor division by zero");
      return Value::number(std::floor(a.as_double() / b.as_double()));
    case BinaryOp::kMod:
      if (a.is_string()) return Value::string(percent_format(a.str(), b, max_bytes));
      if (!numbers) unsupported("%", a, b);
      if (ints) {
        if (b.as_int() == 0) fail("integer division or modulo by zero");
        if (b.as_int() == -1) return Value::integer(0);
        int64_t r = a.as_int() % b.as_int();
        if (r != 0 && ((r < 0) != (b.as_int() < 0))) r += b.as_int();
        return Value::integer(r);
      } else {
        if (b.as_double() == 0) fail("float modulo");
        double r = std::fmod(a.as_double(), b.as_double());
        if (r != 0 && ((r < 0) != (b.as_double() < 0))) r += b.as_double();
        return Value::number(r);
      }
    case BinaryOp::kPow:
      if (!numbers) unsupported("** or pow()", a, b);
      if (ints && b.as_int() >= 0) {
        int64_t base = a.as_int(), e = b.as_int(), r = 1;
        bool overflow = false;
        while (e > 0 && !overflow) {
          if (e & 1) overflow |= __builtin_mul_overflow(r, base, &r);
          e >>= 1;
          if (e > 0) overflow |= __builtin_mul_overflow(base, base, &base);
        }
        return int_result(overflow, r);
      }
      return Value::number(std::pow(a.as_double(), b.as_double()));
  }
  fail("unknown operator");
}

Value negate(const Value& v, bool minus) {
  if (v.is_integral()) {
    if (!minus) return Value::integer(v.as_int());
    if (v.as_int() == INT64_MIN) int_result(true, 0);
    return Value::integer(-v.as_int());
  }
  if (v.is_float()) return Value::number(minus ? -v.as_double() : v.as_double());
  if (v.is_undefined()) fail_undefined(v);
  fail(std::string("bad operand type for unary ") + (minus ? "-" : "+") + ": '" + std::string(v.type_name()) + "'");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined: return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        if (item.is_undefined()) fail_undefined(item);
        fail("'in <string>' requires string as left operand, not " + std::string(item.type_name()));
      }
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::kArray:
      for (const Value& v : container.array().items)
        if (equals(v, item)) return true;
      return false;
    case Value::Kind::kObject:
      if (container.is_dict()) {
        if (item.is_array() && !item.array().is_tuple) fail("unhashable type: 'list'");
        if (item.is_dict()) fail("unhashable type: 'dict'");
        return item.is_string() && container.object().find(item.str()) != nullptr;
      }
      break;
    default: break;
  }
  fail("argument of type '" + std::string(container.type_name()) + "' is not iterable");
}

std::optional<Value> subscript(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_object()) {
    if (!key.is_string()) {
      if (obj.is_dict() && key.is_array() && !key.array().is_tuple) fail("unhashable type: 'list'");
      return std::nullopt;
    }
    if (const Value* v = obj.object().find(key.str())) return *v;
    return std::nullopt;
  }
  if (!key.is_integral() || !(obj.is_array() || obj.is_string())) return std::nullopt;
  int64_t i = key.as_int();
  if (obj.is_array()) {
    const auto& items = obj.array().items;
    if (i < 0) i += int64_t(items.size());
    if (i < 0 || i >= int64_t(items.size())) return std::nullopt;
    return items[size_t(i)];
  }
  const std::string& s = obj.str();
  if (text::is_ascii(s)) {
    if (i < 0) i += int64_t(s.size());
    if (i < 0 || i >= int64_t(s.size())) return std::nullopt;
    return Value::string(std::string(1, s[size_t(i)]));
  }
  auto offsets = text::code_point_offsets(s);
  int64_t n = int64_t(offsets.size()) - 1;
  if (i < 0) i += n;
  if (i < 0 || i >= n) return std::nullopt;
  return Value::string(s.substr(offsets[i], offsets[i + 1] - offsets[i]));
}

Value slice(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
  if (obj.is_undefined()) fail_undefined(obj);
  auto valid = [](const Value& v) { return v.is_none() || v.is_integral(); };
  if (!valid(start_v) || !valid(stop_v) || !valid(step_v) || !(obj.is_array() || obj.is_string()))
    return Value::undefined("'" + std::string(obj.type_name()) + " object' cannot be sliced with these indices");
  const int64_t step = step_v.is_none() ? 1 : step_v.as_int();
  if (step == 0) fail("slice step cannot be zero");
  const bool ascii = obj.is_string() && text::is_ascii(obj.str());
  std::vector<size_t> offsets;
  if (obj.is_string() && !ascii) offsets = text::code_point_offsets(obj.str());
  const int64_t n = obj.is_array() ? int64_t(obj.array().items.size())
                    : ascii        ? int64_t(obj.str().size())
                                   : int64_t(offsets.size()) - 1;
  // slice.indices(n)
  auto adjust = [&](const Value& v, int64_t fallback) {
    if (v.is_none()) return fallback;
    int64_t i = v.as_int();
    if (i < 0) {
      i += n;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= n) {
      i = step < 0 ? n - 1 : n;
    }
    return i;
  };
  const int64_t start = adjust(start_v, step < 0 ? n - 1 : 0);
  const int64_t stop = adjust(stop_v, step < 0 ? -1 : n);
  std::vector<int64_t> picks;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) picks.push_back(i);
  if (obj.is_array()) {
    std::vector<Value> items;
    items.reserve(picks.size());
    for (int64_t i : picks) items.push_back(obj.array().items[size_t(i)]);
    return Value::list(std::move(items), obj.array().is_tuple);
  }
  const std::string& s = obj.str();
  std::string out;
  if (step == 1 && !picks.empty()) {
    size_t b = ascii ? size_t(picks.front()) : offsets[picks.front()];
    size_t e = ascii ? size_t(picks.back()) + 1 : offsets[picks.back() + 1];
    out = s.substr(b, e - b);
  } else {
    for (int64_t i : picks) {
      if (ascii) out += s[size_t(i)];
      else out.append(s, offsets[i], offsets[i + 1] - offsets[i]);
    }
  }
  return Value::string(std::move(out));
}

std::shared_ptr<const Array> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return std::make_shared<Array>();
    case Value::Kind::kArray: return v.array_ptr();
    case Value::Kind::kString: {
      auto a = std::make_shared<Array>();
      const std::string& s = v.str();
      for (size_t i = 0; i < s.size();) {
        size_t start = i;
        text::decode(s, i);
        a->items.push_back(Value::string(s.substr(start, i - start)));
      }
      return a;
    }
    case Value::Kind::kObject:
      if (v.is_dict()) {
        auto a = std::make_shared<Array>();
        a->items.reserve(v.object().items.size());
        for (const auto& kv : v.object().items) a->items.push_back(Value::string(kv.first));
        return a;
      }
      break;
    default: break;
  }
  fail("'" + std::string(v.type_name()) + "' object is not iterable");
}

int64_t length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return 0;
    case Value::Kind::kString: return int64_t(text::code_point_count(v.str()));
    case Value::Kind::kArray: return int64_t(v.array().items.size());
    case Value::Kind::kObject:
      if (v.object().kind == Object::Kind::kDict) return int64_t(v.object().items.size());
      if (v.object().kind == Object::Kind::kLoop) {
        if (const Value* n = v.object().find("length")) return n->as_int();
      }
      break;
    default: break;
  }
  fail("object of type '" + std::string(v.type_name()) + "' has no len()");
}

}  // namespace zinc::chat
