// Expressions: names, literals, attribute and item access, calls, filters, tests and operators.
#include <algorithm>

#include "chat/builtins.h"
#include "chat/interpreter.h"
#include "chat/parser.h"

namespace zinc::chat {
namespace {

std::string object_description(const Value& obj) {
  if (obj.is_none()) return "None";
  return std::string(obj.type_name()) + " object";
}

// Methods that would change a list or dict exist in Python but are refused by the immutable sandbox.
bool is_mutating_method(const Value& obj, std::string_view name) {
  static constexpr std::string_view kList[] = {"append", "clear", "pop", "reverse", "insert", "sort", "extend", "remove"};
  static constexpr std::string_view kDict[] = {"clear", "pop", "popitem", "setdefault", "update"};
  if (obj.is_array() && !obj.array().is_tuple) return std::find(std::begin(kList), std::end(kList), name) != std::end(kList);
  if (obj.is_dict()) return std::find(std::begin(kDict), std::end(kDict), name) != std::end(kDict);
  return false;
}

Value no_attribute(const Value& obj, std::string_view name) {
  if (is_mutating_method(obj, name))
    return Value::undefined("access to attribute '" + std::string(name) + "' of '" + std::string(obj.type_name()) +
                            "' object is unsafe.");
  return Value::undefined("'" + object_description(obj) + "' has no attribute '" + std::string(name) + "'");
}

}  // namespace

Value Interpreter::lookup(int symbol, Scope& scope) {
  if (Value* v = scope.find(symbol)) return *v;
  const auto& globals = program_.globals;
  if (size_t(symbol) < globals.size() && !globals[symbol].is_undefined()) return globals[symbol];
  return Value::undefined("'" + program_.symbols[symbol] + "' is undefined");
}

Value Interpreter::getattr(const Value& obj, std::string_view name) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (!name.empty() && name[0] == '_')
    return Value::undefined("access to attribute '" + std::string(name) + "' of '" + std::string(obj.type_name()) +
                            "' object is unsafe");
  if (obj.is_object()) {
    if (obj.is_dict() && has_method(obj, name)) return bound_method(obj, name);  // d.items before d['items']
    if (const Value* v = obj.object().find(name)) return *v;
    if (has_method(obj, name)) return bound_method(obj, name);  // loop.cycle
    return no_attribute(obj, name);
  }
  if (has_method(obj, name)) return bound_method(obj, name);
  return no_attribute(obj, name);
}

Value Interpreter::getitem(const Value& obj, const Value& key) {
  if (auto v = subscript(obj, key)) return std::move(*v);
  if (key.is_string()) {  // Jinja falls back to the attribute
    if (!key.str().empty() && key.str()[0] == '_') return no_attribute(obj, key.str());
    if (has_method(obj, key.str())) return bound_method(obj, key.str());
    return no_attribute(obj, key.str());
  }
  return Value::undefined("'" + object_description(obj) + "' has no element " + key.repr());
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.is_callable()) return callee.callable().call(*this, args);
  if (callee.is_undefined()) fail_undefined(callee);
  fail("'" + std::string(callee.type_name()) + "' object is not callable");
}

Value Interpreter::call_filter(std::string_view name, Value operand, CallArgs& args) {
  FilterFn fn = find_filter(name);
  if (!fn) fail("No filter named '" + std::string(name) + "'.");
  return fn(*this, operand, args);
}

bool Interpreter::call_test(std::string_view name, const Value& operand, CallArgs& args) {
  TestFn fn = find_test(name);
  if (!fn) fail("No test named '" + std::string(name) + "'.");
  return fn(*this, operand, args);
}

CallArgs Interpreter::eval_args(const CallArgsExpr& a, Scope& scope) {
  CallArgs args;
  args.positional.reserve(a.positional.size());
  for (const auto& e : a.positional) args.positional.push_back(eval(*e, scope));
  if (a.star_args) {
    Value extra = eval(*a.star_args, scope);
    const auto v_list = iterate(extra);  // keeps a built list alive through the loop
    for (const Value& v : v_list->items) args.positional.push_back(v);
  }
  for (const auto& [name, e] : a.keyword) args.keyword.emplace_back(name, eval(*e, scope));
  if (a.star_kwargs) {
    Value extra = eval(*a.star_kwargs, scope);
    if (!extra.is_dict()) fail("argument after ** must be a mapping, not " + std::string(extra.type_name()));
    for (const auto& [k, v] : extra.object().items) args.keyword.emplace_back(k, v);
  }
  return args;
}

Value Interpreter::eval_call(const CallExpr& call, Scope& scope, const Value* caller) {
  if (call.callee->kind == ExprKind::kGetattr) {  // obj.method(...) without a bound-method object
    const auto& g = static_cast<const GetattrExpr&>(*call.callee);
    Value obj = eval(*g.object, scope);
    CallArgs args = eval_args(call.args, scope);
    if (caller) args.keyword.emplace_back("caller", *caller);
    line_ = call.line;
    if (!obj.is_undefined() && (!obj.is_object() || obj.is_dict() || !obj.object().find(g.name)))
      if (auto r = call_method(*this, obj, g.name, args)) return std::move(*r);
    return this->call(getattr(obj, g.name), args);
  }
  Value fn = eval(*call.callee, scope);
  CallArgs args = eval_args(call.args, scope);
  if (caller) args.keyword.emplace_back("caller", *caller);
  line_ = call.line;
  return this->call(fn, args);
}

Value Interpreter::apply_filters(const Expr& e, Value input, Scope& scope) {
  const auto& f = static_cast<const FilterExpr&>(e);
  Value operand = f.operand ? apply_filters(*f.operand, std::move(input), scope) : std::move(input);
  CallArgs args = eval_args(f.args, scope);
  line_ = f.line;
  if (!f.fn) fail("No filter named '" + f.name + "'.");
  return f.fn(*this, operand, args);
}

Value Interpreter::eval_compare(const CompareExpr& cmp, Scope& scope) {
  Value left = eval(*cmp.first, scope);
  for (const auto& [op, expr] : cmp.rest) {
    Value right = eval(*expr, scope);
    line_ = cmp.line;
    bool r = false;
    switch (op) {
      case CompareOp::kEq: r = equals(left, right); break;
      case CompareOp::kNe: r = !equals(left, right); break;
      case CompareOp::kLt: r = less(left, right); break;
      case CompareOp::kLe: r = !less(right, left); break;
      case CompareOp::kGt: r = less(right, left); break;
      case CompareOp::kGe: r = !less(left, right); break;
      case CompareOp::kIn: r = contains(right, left); break;
      case CompareOp::kNotIn: r = !contains(right, left); break;
    }
    if (!r) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Value Interpreter::eval(const Expr& e, Scope& scope) {
  switch (e.kind) {
    case ExprKind::kConst: return static_cast<const ConstExpr&>(e).value;
    case ExprKind::kName: return lookup(static_cast<const NameExpr&>(e).symbol, scope);
    case ExprKind::kList: {
      const auto& l = static_cast<const ListExpr&>(e);
      std::vector<Value> items;
      items.reserve(l.items.size());
      for (const auto& item : l.items) items.push_back(eval(*item, scope));
      return Value::list(std::move(items), l.is_tuple);
    }
    case ExprKind::kDict: {
      const auto& d = static_cast<const DictExpr&>(e);
      auto obj = std::make_shared<Object>();
      for (const auto& [k, v] : d.items) {
        Value key = eval(*k, scope);
        if (!key.is_string()) {
          line_ = k->line;
          fail("dict keys must be strings in zinc's templates (got " + std::string(key.type_name()) + ")");
        }
        obj->set(key.str(), eval(*v, scope));
      }
      return Value::object(std::move(obj));
    }
    case ExprKind::kGetattr: {
      const auto& g = static_cast<const GetattrExpr&>(e);
      Value obj = eval(*g.object, scope);
      line_ = e.line;
      return getattr(obj, g.name);
    }
    case ExprKind::kGetitem: {
      const auto& g = static_cast<const GetitemExpr&>(e);
      Value obj = eval(*g.object, scope);
      if (g.index->kind == ExprKind::kSlice) {
        const auto& s = static_cast<const SliceExpr&>(*g.index);
        Value start = s.start ? eval(*s.start, scope) : Value::none();
        Value stop = s.stop ? eval(*s.stop, scope) : Value::none();
        Value step = s.step ? eval(*s.step, scope) : Value::none();
        line_ = e.line;
        return slice(obj, start, stop, step);
      }
      Value key = eval(*g.index, scope);
      line_ = e.line;
      if (obj.is_undefined()) fail_undefined(obj);
      return getitem(obj, key);
    }
    case ExprKind::kSlice: fail("a slice is only valid inside [ ]");
    case ExprKind::kCall: return eval_call(static_cast<const CallExpr&>(e), scope, nullptr);
    case ExprKind::kFilter: {
      const auto& f = static_cast<const FilterExpr&>(e);
      Value operand = eval(*f.operand, scope);
      CallArgs args = eval_args(f.args, scope);
      line_ = e.line;
      if (!f.fn) fail("No filter named '" + f.name + "'.");
      return f.fn(*this, operand, args);
    }
    case ExprKind::kTest: {
      const auto& t = static_cast<const TestExpr&>(e);
      Value operand = eval(*t.operand, scope);
      CallArgs args = eval_args(t.args, scope);
      line_ = e.line;
      if (!t.fn) fail("No test named '" + t.name + "'.");
      return Value::boolean(t.fn(*this, operand, args));
    }
    case ExprKind::kNot: return Value::boolean(!eval(*static_cast<const UnaryExpr&>(e).operand, scope).truthy());
    case ExprKind::kNeg:
    case ExprKind::kPos: {
      Value v = eval(*static_cast<const UnaryExpr&>(e).operand, scope);
      line_ = e.line;
      return negate(v, e.kind == ExprKind::kNeg);
    }
    case ExprKind::kBinary: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      Value left = eval(*b.left, scope);
      Value right = eval(*b.right, scope);
      line_ = e.line;
      return binary_op(b.op, std::move(left), std::move(right), max_value_bytes());
    }
    case ExprKind::kAnd: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      Value left = eval(*b.left, scope);
      return left.truthy() ? eval(*b.right, scope) : left;
    }
    case ExprKind::kOr: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      Value left = eval(*b.left, scope);
      return left.truthy() ? left : eval(*b.right, scope);
    }
    case ExprKind::kCompare: return eval_compare(static_cast<const CompareExpr&>(e), scope);
    case ExprKind::kConcat: {
      std::string out;
      for (const auto& part : static_cast<const ConcatExpr&>(e).parts) {
        eval(*part, scope).append_str(out);
        if (out.size() > max_value_bytes()) {
          line_ = e.line;
          fail(format("string exceeds %zu bytes", max_value_bytes()));
        }
      }
      return Value::string(std::move(out));
    }
    case ExprKind::kCondExpr: {
      const auto& c = static_cast<const CondExpr&>(e);
      if (eval(*c.test, scope).truthy()) return eval(*c.then, scope);
      if (c.otherwise) return eval(*c.otherwise, scope);
      return Value::undefined("the inline if-expression evaluated to false and no else section was defined");
    }
  }
  fail("unknown expression");
}

}  // namespace zinc::chat
