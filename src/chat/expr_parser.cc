#include "chat/expr_parser.h"

#include "chat/parser.h"

namespace zinc::chat {

bool ExprParser::is_tuple_end(std::string_view extra_end) const {
  const Token& t = cur();
  return t.type == TokenType::kVariableEnd || t.type == TokenType::kBlockEnd || t.is_op(")") ||
         (!extra_end.empty() && t.is_name(extra_end));
}

ExprPtr ExprParser::parse_tuple(bool with_condexpr, std::string_view extra_end, bool explicit_parens) {
  int line = cur().line;
  std::vector<ExprPtr> args;
  bool is_tuple = false;
  while (true) {
    if (!args.empty()) expect_op(",");
    if (is_tuple_end(extra_end)) break;
    args.push_back(parse_expression(with_condexpr));
    if (at_op(",")) is_tuple = true;
    else break;
  }
  if (!is_tuple) {
    if (!args.empty()) return std::move(args[0]);
    if (!explicit_parens) unexpected(cur(), "an expression");
  }
  auto t = std::make_unique<ListExpr>(line, true);
  t->items = std::move(args);
  return t;
}

ExprPtr ExprParser::parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

ExprPtr ExprParser::parse_condexpr() {
  int line = cur().line;
  ExprPtr expr = parse_or();
  while (skip_name("if")) {
    auto c = std::make_unique<CondExpr>(line);
    c->then = std::move(expr);
    c->test = parse_or();
    if (skip_name("else")) c->otherwise = parse_condexpr();
    expr = std::move(c);
    line = cur().line;
  }
  return expr;
}

ExprPtr ExprParser::parse_or() {
  int line = cur().line;
  ExprPtr left = parse_and();
  while (skip_name("or"))
    left = std::make_unique<BinaryExpr>(ExprKind::kOr, line, BinaryOp::kAdd, std::move(left), parse_and());
  return left;
}

ExprPtr ExprParser::parse_and() {
  int line = cur().line;
  ExprPtr left = parse_not();
  while (skip_name("and"))
    left = std::make_unique<BinaryExpr>(ExprKind::kAnd, line, BinaryOp::kAdd, std::move(left), parse_not());
  return left;
}

ExprPtr ExprParser::parse_not() {
  if (cur().is_name("not")) {
    int line = next().line;
    Nesting nest(*this, line);
    return std::make_unique<UnaryExpr>(ExprKind::kNot, line, parse_not());
  }
  return parse_compare();
}

ExprPtr ExprParser::parse_compare() {
  int line = cur().line;
  ExprPtr first = parse_math1();
  std::unique_ptr<CompareExpr> cmp;
  while (true) {
    CompareOp op;
    const Token& t = cur();
    if (t.is_op("==")) op = CompareOp::kEq;
    else if (t.is_op("!=")) op = CompareOp::kNe;
    else if (t.is_op("<")) op = CompareOp::kLt;
    else if (t.is_op("<=")) op = CompareOp::kLe;
    else if (t.is_op(">")) op = CompareOp::kGt;
    else if (t.is_op(">=")) op = CompareOp::kGe;
    else if (t.is_name("in")) op = CompareOp::kIn;
    else if (t.is_name("not") && look().is_name("in")) op = CompareOp::kNotIn, next();
    else break;
    next();
    if (!cmp) cmp = std::make_unique<CompareExpr>(line, std::move(first));
    cmp->rest.emplace_back(op, parse_math1());
  }
  if (!cmp) return first;
  return cmp;
}

ExprPtr ExprParser::parse_math1() {
  int line = cur().line;
  ExprPtr left = parse_concat();
  while (at_op("+") || at_op("-")) {
    BinaryOp op = next().text == "+" ? BinaryOp::kAdd : BinaryOp::kSub;
    left = std::make_unique<BinaryExpr>(ExprKind::kBinary, line, op, std::move(left), parse_concat());
  }
  return left;
}

ExprPtr ExprParser::parse_concat() {
  int line = cur().line;
  ExprPtr first = parse_math2();
  if (!at_op("~")) return first;
  auto c = std::make_unique<ConcatExpr>(line);
  c->parts.push_back(std::move(first));
  while (skip_op("~")) c->parts.push_back(parse_math2());
  return c;
}

ExprPtr ExprParser::parse_math2() {
  int line = cur().line;
  ExprPtr left = parse_pow();
  while (true) {
    BinaryOp op;
    if (at_op("*")) op = BinaryOp::kMul;
    else if (at_op("/")) op = BinaryOp::kDiv;
    else if (at_op("//")) op = BinaryOp::kFloorDiv;
    else if (at_op("%")) op = BinaryOp::kMod;
    else break;
    next();
    left = std::make_unique<BinaryExpr>(ExprKind::kBinary, line, op, std::move(left), parse_pow());
  }
  return left;
}

ExprPtr ExprParser::parse_pow() {
  int line = cur().line;
  ExprPtr left = parse_unary(true);
  while (skip_op("**"))
    left = std::make_unique<BinaryExpr>(ExprKind::kBinary, line, BinaryOp::kPow, std::move(left), parse_unary(true));
  return left;
}

ExprPtr ExprParser::parse_unary(bool with_filter) {
  int line = cur().line;
  Nesting nest(*this, line);
  ExprPtr node;
  if (skip_op("-")) node = std::make_unique<UnaryExpr>(ExprKind::kNeg, line, parse_unary(false));
  else if (skip_op("+")) node = std::make_unique<UnaryExpr>(ExprKind::kPos, line, parse_unary(false));
  else node = parse_primary();
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

ExprPtr ExprParser::parse_primary() {
  const Token& t = cur();
  switch (t.type) {
    case TokenType::kName: {
      next();
      if (t.text == "true" || t.text == "True") return std::make_unique<ConstExpr>(t.line, Value::boolean(true));
      if (t.text == "false" || t.text == "False") return std::make_unique<ConstExpr>(t.line, Value::boolean(false));
      if (t.text == "none" || t.text == "None") return std::make_unique<ConstExpr>(t.line, Value::none());
      if (!macros_.empty()) {
        if (t.text == "caller") macros_.back()->uses_caller = true;
        if (t.text == "varargs") macros_.back()->uses_varargs = true;
        if (t.text == "kwargs") macros_.back()->uses_kwargs = true;
      }
      return std::make_unique<NameExpr>(t.line, intern(t.text));
    }
    case TokenType::kString: {
      std::string s;
      int line = t.line;
      while (cur().type == TokenType::kString) s += next().text;
      return std::make_unique<ConstExpr>(line, Value::string(std::move(s)));
    }
    case TokenType::kInteger: next(); return std::make_unique<ConstExpr>(t.line, Value::integer(t.int_value));
    case TokenType::kFloat: next(); return std::make_unique<ConstExpr>(t.line, Value::number(t.float_value));
    default: break;
  }
  if (skip_op("(")) {
    ExprPtr e = parse_tuple(true, {}, true);
    expect_op(")");
    return e;
  }
  if (skip_op("[")) {
    auto list = std::make_unique<ListExpr>(t.line, false);
    while (!at_op("]")) {
      if (!list->items.empty()) expect_op(",");
      if (at_op("]")) break;
      list->items.push_back(parse_expression(true));
    }
    expect_op("]");
    return list;
  }
  if (skip_op("{")) {
    auto dict = std::make_unique<DictExpr>(t.line);
    while (!at_op("}")) {
      if (!dict->items.empty()) expect_op(",");
      if (at_op("}")) break;
      ExprPtr key = parse_expression(true);
      expect_op(":");
      dict->items.emplace_back(std::move(key), parse_expression(true));
    }
    expect_op("}");
    return dict;
  }
  unexpected(t);
}

ExprPtr ExprParser::parse_postfix(ExprPtr node) {
  while (true) {
    if (at_op(".") || at_op("[")) node = parse_subscript(std::move(node));
    else if (at_op("(")) node = parse_call(std::move(node));
    else return node;
  }
}

ExprPtr ExprParser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (at_op("|")) node = parse_filter(std::move(node), false);
    else if (cur().is_name("is")) node = parse_test(std::move(node));
    else if (at_op("(")) node = parse_call(std::move(node));
    else return node;
  }
}

ExprPtr ExprParser::parse_subscript(ExprPtr node) {
  const Token& t = next();
  if (t.is_op(".")) {
    const Token& attr = next();
    if (attr.type == TokenType::kName) return std::make_unique<GetattrExpr>(t.line, std::move(node), attr.text);
    if (attr.type != TokenType::kInteger) fail(attr.line, "expected name or number after '.'");
    auto index = std::make_unique<ConstExpr>(attr.line, Value::integer(attr.int_value));
    return std::make_unique<GetitemExpr>(t.line, std::move(node), std::move(index));
  }
  std::vector<ExprPtr> args;
  while (!at_op("]")) {
    if (!args.empty()) expect_op(",");
    args.push_back(parse_subscribed());
  }
  expect_op("]");
  ExprPtr index;
  if (args.size() == 1) {
    index = std::move(args[0]);
  } else {
    auto tuple = std::make_unique<ListExpr>(t.line, true);
    tuple->items = std::move(args);
    index = std::move(tuple);
  }
  return std::make_unique<GetitemExpr>(t.line, std::move(node), std::move(index));
}

ExprPtr ExprParser::parse_subscribed() {
  int line = cur().line;
  auto slice = std::make_unique<SliceExpr>(line);
  if (!skip_op(":")) {
    ExprPtr e = parse_expression(true);
    if (!skip_op(":")) return e;
    slice->start = std::move(e);
  }
  if (!at_op(":") && !at_op("]") && !at_op(",")) slice->stop = parse_expression(true);
  if (skip_op(":") && !at_op("]") && !at_op(",")) slice->step = parse_expression(true);
  return slice;
}

CallArgsExpr ExprParser::parse_call_args() {
  int line = cur().line;
  expect_op("(");
  CallArgsExpr args;
  bool need_comma = false;
  auto ensure = [&](bool ok) {
    if (!ok) fail(line, "invalid syntax for function call expression");
  };
  while (!at_op(")")) {
    if (need_comma) {
      expect_op(",");
      if (at_op(")")) break;
    }
    if (skip_op("*")) {
      ensure(!args.star_args && !args.star_kwargs);
      args.star_args = parse_expression(true);
    } else if (skip_op("**")) {
      ensure(!args.star_kwargs);
      args.star_kwargs = parse_expression(true);
    } else if (cur().type == TokenType::kName && look().is_op("=")) {
      ensure(!args.star_kwargs);
      std::string key = next().text;
      next();
      args.keyword.emplace_back(std::move(key), parse_expression(true));
    } else {
      ensure(!args.star_args && !args.star_kwargs && args.keyword.empty());
      args.positional.push_back(parse_expression(true));
    }
    need_comma = true;
  }
  expect_op(")");
  return args;
}

ExprPtr ExprParser::parse_call(ExprPtr node) {
  auto call = std::make_unique<CallExpr>(cur().line, std::move(node));
  call->args = parse_call_args();
  return call;
}

ExprPtr ExprParser::parse_filter(ExprPtr node, bool start_inline) {
  while (at_op("|") || start_inline) {
    if (!start_inline) next();
    start_inline = false;
    const Token& name = expect_type(TokenType::kName, "filter name");
    std::string full = name.text;
    while (skip_op(".")) full += "." + expect_type(TokenType::kName, "filter name").text;
    auto f = std::make_unique<FilterExpr>(name.line, std::move(node), full);
    f->fn = find_filter(full);
    if (at_op("(")) f->args = parse_call_args();
    node = std::move(f);
  }
  return node;
}

ExprPtr ExprParser::parse_test(ExprPtr node) {
  int line = next().line;  // "is"
  bool negated = skip_name("not");
  std::string name = expect_type(TokenType::kName, "test name").text;
  while (skip_op(".")) name += "." + expect_type(TokenType::kName, "test name").text;
  auto test = std::make_unique<TestExpr>(line, std::move(node), name);
  test->fn = find_test(name);
  const Token& t = cur();
  if (t.is_op("(")) {
    test->args = parse_call_args();
  } else if ((t.type == TokenType::kName || t.type == TokenType::kString || t.type == TokenType::kInteger ||
              t.type == TokenType::kFloat || t.is_op("[") || t.is_op("{")) &&
             !t.is_name("else") && !t.is_name("or") && !t.is_name("and")) {
    if (t.is_name("is")) fail(t.line, "you cannot chain multiple tests with 'is'");
    test->args.positional.push_back(parse_postfix(parse_primary()));
  }
  if (negated) return std::make_unique<UnaryExpr>(ExprKind::kNot, line, std::move(test));
  return test;
}

}  // namespace zinc::chat
