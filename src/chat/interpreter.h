// Runs a parsed template: statements write to an output string, expressions evaluate to values.
// Scoping follows Jinja2: `for` bodies and macros get a fresh scope (per iteration / per call),
// `if` does not; macros see the scope they were defined in at call time.
// One Interpreter per render; internal to the chat module (it throws TemplateError).
#pragma once

#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat/ast.h"
#include "chat/template.h"
#include "chat/value.h"

namespace zinc::chat {

struct Scope {
  explicit Scope(Scope* p) : parent(p) {}
  Value* find(int symbol);  // this scope, then its parents
  void set(int symbol, Value v);

  Scope* parent;
  bool pinned = false;  // a macro closes over it: it lives until the render ends
  std::vector<std::pair<int, Value>> vars;
};

class Interpreter {
 public:
  Interpreter(const Program& program, const RenderOptions& options);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  std::string render(const nlohmann::ordered_json& context);
  int line() const { return line_; }

  // Services for filters, tests, methods and callables.
  Value call(const Value& callee, CallArgs& args);
  Value call_filter(std::string_view name, Value operand, CallArgs& args);
  bool call_test(std::string_view name, const Value& operand, CallArgs& args);
  Value getattr(const Value& obj, std::string_view name);
  Value getitem(const Value& obj, const Value& key);
  Value call_macro(const MacroStmt& macro, Scope* closure, CallArgs& args);
  std::shared_ptr<Object> new_namespace();
  const std::tm& now() const { return now_; }
  size_t max_value_bytes() const { return options_.limits.max_output_bytes; }
  void step();  // counts a loop iteration or call against RenderLimits::max_steps

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  class ScopeHandle;

  Flow exec_body(const Body& body, Scope& scope);
  Flow exec(const Stmt& stmt, Scope& scope);
  void exec_for(const ForStmt& stmt, Scope& scope);
  std::string capture(const Body& body, Scope& scope);
  void emit(std::string_view text);
  void emit(const Value& v);

  Value eval(const Expr& expr, Scope& scope);
  Value lookup(int symbol, Scope& scope);
  Value eval_call(const CallExpr& call, Scope& scope, const Value* caller);
  CallArgs eval_args(const CallArgsExpr& args, Scope& scope);
  Value eval_compare(const CompareExpr& cmp, Scope& scope);
  Value apply_filters(const Expr& filter, Value input, Scope& scope);  // a chain whose innermost operand is null
  void assign(const Target& target, Value v, Scope& scope);
  Value make_macro(const MacroStmt& macro, Scope& scope);

  void pin(Scope* scope);
  void keep(std::unique_ptr<Scope> scope) { pinned_.push_back(std::move(scope)); }

  const Program& program_;
  const RenderOptions& options_;
  std::tm now_{};
  Scope root_{nullptr};
  std::string* out_ = nullptr;
  size_t emitted_bytes_ = 0;
  uint64_t steps_ = 0;
  int call_depth_ = 0;
  int line_ = 0;
  std::vector<std::unique_ptr<Scope>> pinned_;
  std::vector<std::weak_ptr<Object>> namespaces_;  // cleared at the end so reference cycles free
};

}  // namespace zinc::chat
