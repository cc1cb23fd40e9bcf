// Statements: {% if %}, {% for %}, {% set %}, {% macro %}, {% call %}, {% filter %}, {% with %},
// {% generation %}, break/continue, and the template body around them.
#include "chat/parser.h"

#include <initializer_list>

#include "chat/expr_parser.h"

namespace zinc::chat {
namespace {

class Parser : public ExprParser {
 public:
  using ExprParser::ExprParser;

  Body parse() {
    Body body = subparse({});
    prog_.symbol_loop = intern("loop");
    prog_.symbol_caller = intern("caller");
    prog_.symbol_varargs = intern("varargs");
    prog_.symbol_kwargs = intern("kwargs");
    return body;
  }

 private:
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
          ExprPtr e = parse_tuple(true, {}, false);
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
      auto e = parse_tuple(true, {}, false);
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
      ExprPtr test = parse_tuple(false, {}, false);
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
    stmt->iterable = parse_tuple(false, "recursive", false);
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
      stmt->value = parse_tuple(true, {}, false);
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
  int loop_depth_ = 0;
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
