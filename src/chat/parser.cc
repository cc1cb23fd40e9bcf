#include "chat/parser.h"

#include <initializer_list>

#include "chat/lexer.h"

namespace zinc::chat {
namespace {

constexpr int kMaxNesting = 200;  // expressions and blocks; keeps parsing and evaluation off the stack's end

class Parser {
 public:
  Parser(std::vector<Token> tokens, Program& program) : toks_(std::move(tokens)), prog_(program) {}

  Body parse() {
    Body body = subparse({});
    prog_.symbol_loop = intern("loop");
    prog_.symbol_caller = intern("caller");
    prog_.symbol_varargs = intern("varargs");
    prog_.symbol_kwargs = intern("kwargs");
    return body;
  }

 private:
  // ---- token stream ----
  const Token& cur() const { return toks_[i_]; }
  const Token& look() const { return toks_[std::min(i_ + 1, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = toks_[i_];
    if (t.type != TokenType::kEof) ++i_;
    return t;
  }
  [[noreturn]] void fail(int line, std::string message) { throw TemplateError{std::move(message), line}; }
  [[noreturn]] void unexpected(const Token& t, std::string_view expected = "") {
    std::string m = "unexpected " + describe(t);
    if (!expected.empty()) m += ", expected " + std::string(expected);
    fail(t.line, m);
  }
  bool at_op(std::string_view op) const { return cur().is_op(op); }
  bool skip_op(std::string_view op) {
    if (!at_op(op)) return false;
    ++i_;
    return true;
  }
  bool skip_name(std::string_view n) {
    if (!cur().is_name(n)) return false;
    ++i_;
    return true;
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) unexpected(cur(), "'" + std::string(op) + "'");
  }
  const Token& expect_type(TokenType type, std::string_view what) {
    if (cur().type != type) unexpected(cur(), what);
    return next();
  }

  int intern(const std::string& name) {
    auto [it, added] = prog_.symbol_ids.emplace(name, int(prog_.symbols.size()));
    if (added) prog_.symbols.push_back(name);
    return it->second;
  }

  struct Nesting {
    Nesting(Parser& p, int line) : p_(p) {
      if (++p_.depth_ > kMaxNesting) p_.fail(line, "template nested too deeply (more than 200 levels)");
    }
    ~Nesting() { --p_.depth_; }
    Parser& p_;
  };

  // ---- statements ----
  Body subparse(std::initializer_list<std::string_view> end_names) {
    Body body;
    while (true) {
      const Token& t = cur();
      switch (t.type) {
        case TokenType::kData:
          body.push_back(std::make_unique<TextStmt>(t.line, t.text));
          next();
          break;
        case TokenType::kVariableBegin: {
          next();
          int line = cur().line;
          ExprPtr e = parse_tuple(false, true, {}, false);
          expect_type(TokenType::kVariableEnd, "end of print statement");
          body.push_back(std::make_unique<PrintStmt>(line, std::move(e)));
          break;
        }
        case TokenType::kBlockBegin: {
          next();
          for (auto n : end_names)
            if (cur().is_name(n)) return body;
          body.push_back(parse_statement());
          expect_type(TokenType::kBlockEnd, "end of statement block");
          break;
        }
        case TokenType::kEof: return body;
        default: unexpected(t);
      }
    }
  }

  struct OpenBlock {
    std::string_view tag;
    int line;
    std::vector<std::string_view> end_names;
  };

  static std::string quoted_list(const std::vector<std::string_view>& names) {
    std::string out;
    for (auto n : names) out += (out.empty() ? "'" : " or '") + std::string(n) + "'";
    return out;
  }

  // Skips an optional colon and the block end, then parses until one of `end_names`.
  Body parse_statements(std::initializer_list<std::string_view> end_names, bool drop_needle, std::string_view tag,
                        int tag_line) {
    skip_op(":");
    expect_type(TokenType::kBlockEnd, "end of statement block");
    open_.push_back({tag, tag_line, std::vector<std::string_view>(end_names)});
    Body body = subparse(end_names);
    if (cur().type == TokenType::kEof)
      fail(cur().line, "unexpected end of template; expected " + quoted_list(open_.back().end_names) +
                           " to close the '" + std::string(tag) + "' block from line " + std::to_string(tag_line));
    open_.pop_back();
    if (drop_needle) next();
    return body;
  }

  StmtPtr parse_statement() {
    const Token& t = cur();
    if (t.type != TokenType::kName) fail(t.line, "tag name expected");
    Nesting nest(*this, t.line);
    const std::string& n = t.text;
    if (n == "if") return parse_if();
    if (n == "for") return parse_for();
    if (n == "set") return parse_set();
    if (n == "macro") return parse_macro();
    if (n == "call") return parse_call_block();
    if (n == "filter") return parse_filter_block();
    if (n == "with" || n == "generation") return parse_with();
    if (n == "print") {
      int line = next().line;
      auto e = parse_tuple(false, true, {}, false);
      return std::make_unique<PrintStmt>(line, std::move(e));
    }
    if (n == "break" || n == "continue") {
      if (loop_depth_ == 0) fail(t.line, "'" + n + "' outside of a loop");
      next();
      return std::make_unique<Stmt>(n == "break" ? StmtKind::kBreak : StmtKind::kContinue, t.line);
    }
    for (auto unsupported : {"include", "import", "from", "extends", "block", "autoescape"})
      if (n == unsupported) fail(t.line, "tag '" + n + "' is not supported in chat templates");
    if (!open_.empty())
      fail(t.line, "unknown tag '" + n + "'; expected " + quoted_list(open_.back().end_names) + " to close the '" +
                       std::string(open_.back().tag) + "' block from line " + std::to_string(open_.back().line));
    fail(t.line, "unknown tag '" + n + "'");
  }

  StmtPtr parse_if() {
    auto stmt = std::make_unique<IfStmt>(next().line);
    while (true) {
      ExprPtr test = parse_tuple(false, false, {}, false);
      Body body = parse_statements({"elif", "else", "endif"}, false, "if", stmt->line);
      stmt->branches.emplace_back(std::move(test), std::move(body));
      const Token& t = next();
      if (t.is_name("elif")) continue;
      if (t.is_name("else")) stmt->otherwise = parse_statements({"endif"}, true, "if", stmt->line);
      return stmt;
    }
  }

  StmtPtr parse_for() {
    auto stmt = std::make_unique<ForStmt>(next().line);
    stmt->target = parse_assign_target(true, false, "in", false);
    if (!skip_name("in")) unexpected(cur(), "'in'");
    stmt->iterable = parse_tuple(false, false, "recursive", false);
    if (skip_name("if")) stmt->filter = parse_expression(true);
    stmt->recursive = skip_name("recursive");
    if (stmt->recursive) fail(stmt->line, "recursive for loops are not supported");
    ++loop_depth_;
    stmt->body = parse_statements({"endfor", "else"}, false, "for", stmt->line);
    --loop_depth_;
    if (next().is_name("else")) stmt->otherwise = parse_statements({"endfor"}, true, "for", stmt->line);
    return stmt;
  }

  StmtPtr parse_set() {
    int line = next().line;
    Target target = parse_assign_target(true, false, "", true);
    if (skip_op("=")) {
      auto stmt = std::make_unique<SetStmt>(line);
      stmt->target = std::move(target);
      stmt->value = parse_tuple(false, true, {}, false);
      return stmt;
    }
    auto stmt = std::make_unique<SetBlockStmt>(line);
    stmt->target = std::move(target);
    if (at_op("|")) stmt->filter = parse_filter(nullptr, false);
    stmt->body = parse_statements({"endset"}, true, "set", line);
    return stmt;
  }

  void parse_signature(MacroStmt& m) {
    expect_op("(");
    bool seen_default = false;
    while (!at_op(")")) {
      if (!m.params.empty()) expect_op(",");
      const Token& name = expect_type(TokenType::kName, "parameter name");
      MacroParam p{intern(name.text), name.text, nullptr};
      if (skip_op("=")) {
        p.default_value = parse_expression(true);
        seen_default = true;
      } else if (seen_default) {
        fail(name.line, "non-default argument follows default argument");
      }
      m.params.push_back(std::move(p));
    }
    expect_op(")");
  }

  // The body of a macro (or call block): break/continue do not reach an enclosing loop.
  Body macro_body(MacroStmt& m, std::string_view end, std::string_view tag) {
    int saved_loops = loop_depth_;
    loop_depth_ = 0;
    macros_.push_back(&m);
    Body body = parse_statements({end}, true, tag, m.line);
    macros_.pop_back();
    loop_depth_ = saved_loops;
    return body;
  }

  StmtPtr parse_macro() {
    auto stmt = std::make_unique<MacroStmt>(next().line);
    const Token& name = expect_type(TokenType::kName, "macro name");
    stmt->name = name.text;
    stmt->symbol = intern(name.text);
    parse_signature(*stmt);
    stmt->body = macro_body(*stmt, "endmacro", "macro");
    return stmt;
  }

  StmtPtr parse_call_block() {
    auto stmt = std::make_unique<CallBlockStmt>(next().line);
    stmt->caller = std::make_unique<MacroStmt>(stmt->line);
    stmt->caller->name = "caller";
    if (at_op("(")) parse_signature(*stmt->caller);
    stmt->call = parse_expression(true);
    if (stmt->call->kind != ExprKind::kCall) fail(stmt->line, "expected a macro call after 'call'");
    stmt->caller->body = macro_body(*stmt->caller, "endcall", "call");
    return stmt;
  }

  StmtPtr parse_filter_block() {
    auto stmt = std::make_unique<FilterBlockStmt>(next().line);
    stmt->filter = parse_filter(nullptr, true);
    stmt->body = parse_statements({"endfilter"}, true, "filter", stmt->line);
    return stmt;
  }

  StmtPtr parse_with() {
    const Token& tag = next();
    auto stmt = std::make_unique<WithStmt>(tag.line);
    if (tag.text == "with") {
      while (cur().type != TokenType::kBlockEnd) {
        if (!stmt->assignments.empty()) expect_op(",");
        Target t = parse_assign_target(true, false, "", false);
        expect_op("=");
        stmt->assignments.emplace_back(std::move(t), parse_expression(true));
      }
    }
    stmt->body = parse_statements({tag.text == "with" ? "endwith" : "endgeneration"}, true, tag.text, stmt->line);
    return stmt;
  }

  // ---- assignment targets ----
  Target parse_target_primary(bool with_namespace) {
    const Token& t = cur();
    Target target;
    target.line = t.line;
    if (t.type == TokenType::kName) {
      for (auto c : {"true", "false", "True", "False", "none", "None"})
        if (t.text == c) fail(t.line, "can't assign to '" + t.text + "'");
      next();
      if (with_namespace && at_op(".")) {
        next();
        target.kind = Target::Kind::kNamespaceAttr;
        target.symbol = intern(t.text);
        target.attr = expect_type(TokenType::kName, "attribute name").text;
      } else {
        target.symbol = intern(t.text);
      }
      return target;
    }
    if (skip_op("(")) {
      target = parse_assign_target(true, false, "", with_namespace);
      expect_op(")");
      return target;
    }
    fail(t.line, "can't assign to " + describe(t));
  }

  Target parse_assign_target(bool with_tuple, bool name_only, std::string_view extra_end, bool with_namespace) {
    if (name_only || !with_tuple) return parse_target_primary(with_namespace && !name_only);
    Target tuple;
    tuple.kind = Target::Kind::kTuple;
    tuple.line = cur().line;
    bool is_tuple = false;
    while (true) {
      if (!tuple.items.empty()) expect_op(",");
      if (is_tuple_end(extra_end)) break;
      tuple.items.push_back(parse_target_primary(with_namespace));
      if (at_op(",")) is_tuple = true;
      else break;
    }
    if (!is_tuple) {
      if (tuple.items.empty()) unexpected(cur(), "an assignment target");
      return std::move(tuple.items[0]);
    }
    return tuple;
  }

  // ---- expressions ----
  bool is_tuple_end(std::string_view extra_end) const {
    const Token& t = cur();
    return t.type == TokenType::kVariableEnd || t.type == TokenType::kBlockEnd || t.is_op(")") ||
           (!extra_end.empty() && t.is_name(extra_end));
  }

  ExprPtr parse_tuple(bool /*simplified*/, bool with_condexpr, std::string_view extra_end, bool explicit_parens) {
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

  ExprPtr parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

  ExprPtr parse_condexpr() {
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

  ExprPtr parse_or() {
    int line = cur().line;
    ExprPtr left = parse_and();
    while (skip_name("or"))
      left = std::make_unique<BinaryExpr>(ExprKind::kOr, line, BinaryOp::kAdd, std::move(left), parse_and());
    return left;
  }

  ExprPtr parse_and() {
    int line = cur().line;
    ExprPtr left = parse_not();
    while (skip_name("and"))
      left = std::make_unique<BinaryExpr>(ExprKind::kAnd, line, BinaryOp::kAdd, std::move(left), parse_not());
    return left;
  }

  ExprPtr parse_not() {
    if (cur().is_name("not")) {
      int line = next().line;
      Nesting nest(*this, line);
      return std::make_unique<UnaryExpr>(ExprKind::kNot, line, parse_not());
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
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

  ExprPtr parse_math1() {
    int line = cur().line;
    ExprPtr left = parse_concat();
    while (at_op("+") || at_op("-")) {
      BinaryOp op = next().text == "+" ? BinaryOp::kAdd : BinaryOp::kSub;
      left = std::make_unique<BinaryExpr>(ExprKind::kBinary, line, op, std::move(left), parse_concat());
    }
    return left;
  }

  ExprPtr parse_concat() {
    int line = cur().line;
    ExprPtr first = parse_math2();
    if (!at_op("~")) return first;
    auto c = std::make_unique<ConcatExpr>(line);
    c->parts.push_back(std::move(first));
    while (skip_op("~")) c->parts.push_back(parse_math2());
    return c;
  }

  ExprPtr parse_math2() {
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

  ExprPtr parse_pow() {
    int line = cur().line;
    ExprPtr left = parse_unary(true);
    while (skip_op("**"))
      left = std::make_unique<BinaryExpr>(ExprKind::kBinary, line, BinaryOp::kPow, std::move(left), parse_unary(true));
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
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

  ExprPtr parse_primary() {
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
      ExprPtr e = parse_tuple(false, true, {}, true);
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

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (at_op(".") || at_op("[")) node = parse_subscript(std::move(node));
      else if (at_op("(")) node = parse_call(std::move(node));
      else return node;
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (at_op("|")) node = parse_filter(std::move(node), false);
      else if (cur().is_name("is")) node = parse_test(std::move(node));
      else if (at_op("(")) node = parse_call(std::move(node));
      else return node;
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
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

  ExprPtr parse_subscribed() {
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

  CallArgsExpr parse_call_args() {
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

  ExprPtr parse_call(ExprPtr node) {
    auto call = std::make_unique<CallExpr>(cur().line, std::move(node));
    call->args = parse_call_args();
    return call;
  }

  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
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

  ExprPtr parse_test(ExprPtr node) {
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

  std::vector<Token> toks_;
  size_t i_ = 0;
  Program& prog_;
  int depth_ = 0;
  int loop_depth_ = 0;
  std::vector<MacroStmt*> macros_;
  std::vector<OpenBlock> open_;
};

}  // namespace

std::unique_ptr<Program> parse_program(std::string_view source) {
  auto program = std::make_unique<Program>();
  Parser parser(tokenize(source), *program);
  program->body = parser.parse();
  return program;
}

}  // namespace zinc::chat
