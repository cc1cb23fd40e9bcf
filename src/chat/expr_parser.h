// Internal to the chat module. Parsing state shared by statements and expressions (token cursor,
// symbol interning, nesting guard), and Jinja2's expression grammar with its precedence:
// conditional < or < and < not < comparisons/in < + - < ~ < * / // % < ** < unary < filters/tests
// < postfix (.attr, [item], calls).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "chat/ast.h"
#include "chat/lexer.h"

namespace zinc::chat {

class TokenStream {
 public:
  TokenStream(std::vector<Token> tokens, Program& program) : toks_(std::move(tokens)), prog_(program) {}

 protected:
  static constexpr int kMaxNesting = 200;  // expressions and blocks; keeps parsing and evaluation off the stack's end

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

  // Counts one level of nesting while alive; fails past kMaxNesting.
  struct Nesting {
    Nesting(TokenStream& s, int line) : s_(s) {
      if (++s_.depth_ > kMaxNesting) s_.fail(line, "template nested too deeply (more than 200 levels)");
    }
    ~Nesting() { --s_.depth_; }
    TokenStream& s_;
  };

  std::vector<Token> toks_;
  size_t i_ = 0;
  Program& prog_;
  int depth_ = 0;
  std::vector<MacroStmt*> macros_;  // the macros being parsed (they learn whether they use caller/varargs/kwargs)
};

class ExprParser : public TokenStream {
 public:
  using TokenStream::TokenStream;

 protected:
  bool is_tuple_end(std::string_view extra_end) const;
  // Expressions separated by commas form a tuple; a single one is returned as is.
  ExprPtr parse_tuple(bool with_condexpr, std::string_view extra_end, bool explicit_parens);
  ExprPtr parse_expression(bool with_condexpr);
  // `| name(args)` chains; with start_inline the first filter has no leading '|' ({% filter %}).
  ExprPtr parse_filter(ExprPtr node, bool start_inline);

 private:
  ExprPtr parse_condexpr();
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_subscribed();
  CallArgsExpr parse_call_args();
  ExprPtr parse_call(ExprPtr node);
  ExprPtr parse_test(ExprPtr node);
};

}  // namespace zinc::chat
