// Jinja2's built-in tests (`x is defined`, `x is string`, `x is divisibleby 3`, ...), with the
// answers Python gives: a str is a sequence, an Undefined is iterable, a bool is a number.
#include "chat/builtins.h"
#include "chat/interpreter.h"
#include "chat/parser.h"
#include "chat/text.h"

namespace zinc::chat {
namespace {

const Value& arg(const CallArgs& a, const char* test) {
  if (a.positional.empty() && a.keyword.empty()) fail(std::string("test '") + test + "' needs an argument");
  return a.positional.empty() ? a.keyword[0].second : a.positional[0];
}

bool test_defined(Interpreter&, const Value& v, CallArgs&) { return !v.is_undefined(); }
bool test_undefined(Interpreter&, const Value& v, CallArgs&) { return v.is_undefined(); }
bool test_none(Interpreter&, const Value& v, CallArgs&) { return v.is_none(); }
bool test_boolean(Interpreter&, const Value& v, CallArgs&) { return v.is_bool(); }
bool test_true(Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && v.as_bool(); }
bool test_false(Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && !v.as_bool(); }
bool test_integer(Interpreter&, const Value& v, CallArgs&) { return v.is_int(); }
bool test_float(Interpreter&, const Value& v, CallArgs&) { return v.is_float(); }
bool test_number(Interpreter&, const Value& v, CallArgs&) { return v.is_number(); }
bool test_string(Interpreter&, const Value& v, CallArgs&) { return v.is_string(); }
bool test_mapping(Interpreter&, const Value& v, CallArgs&) { return v.is_dict(); }
bool test_escaped(Interpreter&, const Value& v, CallArgs&) { return v.is_markup(); }

bool test_iterable(Interpreter&, const Value& v, CallArgs&) {
  return v.is_undefined() || v.is_string() || v.is_array() ||
         (v.is_object() && v.object().kind != Object::Kind::kNamespace);
}

bool test_sequence(Interpreter&, const Value& v, CallArgs&) {
  return v.is_undefined() || v.is_string() || v.is_array() || v.is_dict();
}

bool test_callable(Interpreter&, const Value& v, CallArgs&) {
  return v.is_callable() || v.is_undefined() || (v.is_object() && v.object().kind == Object::Kind::kLoop);
}

bool test_sameas(Interpreter&, const Value& v, CallArgs& a) {
  const Value& other = arg(a, "sameas");
  if (v.kind() != other.kind()) return false;
  switch (v.kind()) {
    case Value::Kind::kArray: return &v.array() == &other.array();
    case Value::Kind::kObject: return &v.object() == &other.object();
    case Value::Kind::kCallable: return &v.callable() == &other.callable();
    case Value::Kind::kFloat: return false;
    default: return equals(v, other);
  }
}

int64_t int_operand(const Value& v, const char* test) {
  if (v.is_integral()) return v.as_int();
  if (v.is_undefined()) fail_undefined(v);
  fail(std::string("test '") + test + "' needs an integer, got " + std::string(v.type_name()));
}

bool test_odd(Interpreter&, const Value& v, CallArgs&) { return int_operand(v, "odd") % 2 != 0; }
bool test_even(Interpreter&, const Value& v, CallArgs&) { return int_operand(v, "even") % 2 == 0; }

bool test_divisibleby(Interpreter&, const Value& v, CallArgs& a) {
  Value r = binary_op(BinaryOp::kMod, v, arg(a, "divisibleby"), SIZE_MAX);
  return equals(r, Value::integer(0));
}

bool test_lower(Interpreter&, const Value& v, CallArgs&) {
  std::string s = v.to_str();
  return text::lower(s) == s && text::upper(s) != s;
}

bool test_upper(Interpreter&, const Value& v, CallArgs&) {
  std::string s = v.to_str();
  return text::upper(s) == s && text::lower(s) != s;
}

bool test_in(Interpreter&, const Value& v, CallArgs& a) { return contains(arg(a, "in"), v); }
bool test_eq(Interpreter&, const Value& v, CallArgs& a) { return equals(v, arg(a, "eq")); }
bool test_ne(Interpreter&, const Value& v, CallArgs& a) { return !equals(v, arg(a, "ne")); }
bool test_lt(Interpreter&, const Value& v, CallArgs& a) { return less(v, arg(a, "lt")); }
bool test_le(Interpreter&, const Value& v, CallArgs& a) { return !less(arg(a, "le"), v); }
bool test_gt(Interpreter&, const Value& v, CallArgs& a) { return less(arg(a, "gt"), v); }
bool test_ge(Interpreter&, const Value& v, CallArgs& a) { return !less(v, arg(a, "ge")); }

bool test_filter(Interpreter&, const Value& v, CallArgs&) { return v.is_string() && find_filter(v.str()) != nullptr; }
bool test_test(Interpreter&, const Value& v, CallArgs&) { return v.is_string() && find_test(v.str()) != nullptr; }

struct TestEntry {
  std::string_view name;
  TestFn fn;
};

constexpr TestEntry kTests[] = {
    {"defined", test_defined}, {"undefined", test_undefined}, {"none", test_none},
    {"boolean", test_boolean}, {"true", test_true},           {"false", test_false},
    {"integer", test_integer}, {"float", test_float},         {"number", test_number},
    {"string", test_string},   {"mapping", test_mapping},     {"iterable", test_iterable},
    {"sequence", test_sequence}, {"callable", test_callable}, {"sameas", test_sameas},
    {"escaped", test_escaped}, {"odd", test_odd},             {"even", test_even},
    {"divisibleby", test_divisibleby}, {"lower", test_lower}, {"upper", test_upper},
    {"in", test_in},           {"eq", test_eq},               {"equalto", test_eq},
    {"==", test_eq},           {"ne", test_ne},               {"!=", test_ne},
    {"lt", test_lt},           {"lessthan", test_lt},         {"<", test_lt},
    {"le", test_le},           {"<=", test_le},               {"gt", test_gt},
    {"greaterthan", test_gt},  {">", test_gt},                {"ge", test_ge},
    {">=", test_ge},           {"filter", test_filter},       {"test", test_test},
};

}  // namespace

TestFn find_test(std::string_view name) {
  for (const auto& t : kTests)
    if (t.name == name) return t.fn;
  return nullptr;
}

}  // namespace zinc::chat
