// Statements: output, if, for (with loop.*), set, macros, call/filter/with blocks.
#include "chat/interpreter.h"

#include "chat/builtins.h"
#include "chat/parser.h"

namespace zinc::chat {

Value* Scope::find(int symbol) {
  for (Scope* s = this; s; s = s->parent)
    for (auto& [k, v] : s->vars)
      if (k == symbol) return &v;
  return nullptr;
}

void Scope::set(int symbol, Value v) {
  for (auto& [k, slot] : vars) {
    if (k == symbol) {
      slot = std::move(v);
      return;
    }
  }
  vars.emplace_back(symbol, std::move(v));
}

// Owns a child scope for the duration of a block; a pinned scope outlives it.
class Interpreter::ScopeHandle {
 public:
  ScopeHandle(Interpreter& in, Scope* parent) : in_(in), scope_(std::make_unique<Scope>(parent)) {}
  ~ScopeHandle() {
    if (scope_->pinned) in_.keep(std::move(scope_));
  }
  Scope& operator*() { return *scope_; }
  // A fresh scope for the next loop iteration.
  void reset() {
    if (scope_->pinned) {
      Scope* parent = scope_->parent;
      in_.keep(std::move(scope_));
      scope_ = std::make_unique<Scope>(parent);
    } else {
      scope_->vars.clear();
    }
  }

 private:
  Interpreter& in_;
  std::unique_ptr<Scope> scope_;
};

namespace {

class Macro : public Callable {
 public:
  Macro(const MacroStmt& m, Scope* closure) : m_(m), closure_(closure) {}
  Value call(Interpreter& in, CallArgs& args) override { return in.call_macro(m_, closure_, args); }
  std::string repr() const override { return "<Macro '" + m_.name + "'>"; }

 private:
  const MacroStmt& m_;
  Scope* closure_;  // pinned: lives as long as the interpreter
};

}  // namespace

Interpreter::Interpreter(const Program& program, const RenderOptions& options)
    : program_(program), options_(options) {
  root_.pinned = true;
  if (options.now) {
    now_ = *options.now;
  } else {
    std::time_t t = std::time(nullptr);
    localtime_r(&t, &now_);
  }
}

Interpreter::~Interpreter() {
  // Namespaces are the only mutable containers, so every reference cycle runs through one.
  for (auto& weak : namespaces_)
    if (auto ns = weak.lock()) ns->items.clear();
}

std::shared_ptr<Object> Interpreter::new_namespace() {
  auto ns = std::make_shared<Object>();
  ns->kind = Object::Kind::kNamespace;
  namespaces_.push_back(ns);
  return ns;
}

void Interpreter::step() {
  if (++steps_ > options_.limits.max_steps)
    fail(format("template ran more than %llu loop iterations and calls", (unsigned long long)options_.limits.max_steps));
}

void Interpreter::pin(Scope* scope) {
  for (; scope && !scope->pinned; scope = scope->parent) scope->pinned = true;
}

std::string Interpreter::render(const nlohmann::ordered_json& context) {
  if (!context.is_object()) fail("the template context must be a JSON object");
  for (const auto& [key, value] : context.items()) {
    auto it = program_.symbol_ids.find(key);
    if (it != program_.symbol_ids.end()) root_.set(it->second, Value::from_json(value));
  }
  std::string out;
  out_ = &out;
  exec_body(program_.body, root_);
  return out;
}

void Interpreter::emit(std::string_view text) {
  emitted_bytes_ += text.size();
  if (emitted_bytes_ > options_.limits.max_output_bytes)
    fail(format("template output exceeds %zu bytes", options_.limits.max_output_bytes));
  out_->append(text);
}

void Interpreter::emit(const Value& v) {
  if (v.is_string()) return emit(std::string_view(v.str()));
  std::string s;
  v.append_str(s);
  emit(std::string_view(s));
}

std::string Interpreter::capture(const Body& body, Scope& scope) {
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  struct Restore {
    std::string*& out;
    std::string* saved;
    ~Restore() { out = saved; }
  } restore{out_, saved};
  exec_body(body, scope);
  return buffer;
}

Interpreter::Flow Interpreter::exec_body(const Body& body, Scope& scope) {
  for (const auto& stmt : body) {
    Flow f = exec(*stmt, scope);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec(const Stmt& stmt, Scope& scope) {
  line_ = stmt.line;
  switch (stmt.kind) {
    case StmtKind::kText: emit(std::string_view(static_cast<const TextStmt&>(stmt).text)); break;
    case StmtKind::kPrint: emit(eval(*static_cast<const PrintStmt&>(stmt).expr, scope)); break;
    case StmtKind::kIf: {
      const auto& s = static_cast<const IfStmt&>(stmt);
      for (const auto& [test, body] : s.branches)
        if (eval(*test, scope).truthy()) return exec_body(body, scope);
      return exec_body(s.otherwise, scope);
    }
    case StmtKind::kFor: exec_for(static_cast<const ForStmt&>(stmt), scope); break;
    case StmtKind::kSet: {
      const auto& s = static_cast<const SetStmt&>(stmt);
      assign(s.target, eval(*s.value, scope), scope);
      break;
    }
    case StmtKind::kSetBlock: {
      const auto& s = static_cast<const SetBlockStmt&>(stmt);
      ScopeHandle inner(*this, &scope);
      Value v = Value::string(capture(s.body, *inner));
      line_ = s.line;
      if (s.filter) v = apply_filters(*s.filter, std::move(v), scope);
      assign(s.target, std::move(v), scope);
      break;
    }
    case StmtKind::kMacro: {
      const auto& m = static_cast<const MacroStmt&>(stmt);
      scope.set(m.symbol, make_macro(m, scope));
      break;
    }
    case StmtKind::kCallBlock: {
      const auto& s = static_cast<const CallBlockStmt&>(stmt);
      Value caller = make_macro(*s.caller, scope);
      emit(eval_call(static_cast<const CallExpr&>(*s.call), scope, &caller));
      break;
    }
    case StmtKind::kFilterBlock: {
      const auto& s = static_cast<const FilterBlockStmt&>(stmt);
      ScopeHandle inner(*this, &scope);
      Value v = Value::string(capture(s.body, *inner));
      line_ = s.line;
      emit(apply_filters(*s.filter, std::move(v), scope));
      break;
    }
    case StmtKind::kWith: {
      const auto& s = static_cast<const WithStmt&>(stmt);
      std::vector<Value> values;
      for (const auto& [target, expr] : s.assignments) values.push_back(eval(*expr, scope));
      ScopeHandle inner(*this, &scope);
      for (size_t i = 0; i < values.size(); ++i) assign(s.assignments[i].first, std::move(values[i]), *inner);
      return exec_body(s.body, *inner);
    }
    case StmtKind::kBreak: return Flow::kBreak;
    case StmtKind::kContinue: return Flow::kContinue;
  }
  return Flow::kNormal;
}

void Interpreter::exec_for(const ForStmt& stmt, Scope& scope) {
  Value iterable = eval(*stmt.iterable, scope);
  line_ = stmt.line;
  std::shared_ptr<const Array> items = iterate(iterable);
  ScopeHandle inner(*this, &scope);
  if (stmt.filter) {  // `for x in xs if cond`: loop.* counts only the items that pass
    auto kept = std::make_shared<Array>();
    kept->depth = items->depth;
    for (const Value& item : items->items) {
      step();
      inner.reset();
      assign(stmt.target, item, *inner);
      if (eval(*stmt.filter, *inner).truthy()) kept->items.push_back(item);
    }
    items = std::move(kept);
  }
  const auto& list = items->items;
  const int64_t n = int64_t(list.size());
  if (n == 0) {
    inner.reset();
    exec_body(stmt.otherwise, *inner);
    return;
  }
  auto loop = std::make_shared<Object>();
  loop->kind = Object::Kind::kLoop;
  loop->depth = items->depth + 1;  // previtem and nextitem come from the items
  static constexpr const char* kKeys[] = {"index",  "index0", "revindex", "revindex0", "first",
                                          "last",   "length", "previtem", "nextitem",  "depth", "depth0"};
  for (const char* key : kKeys) loop->items.emplace_back(key, Value());
  auto& slot = loop->items;
  slot[6].second = Value::integer(n);
  slot[9].second = Value::integer(1);
  slot[10].second = Value::integer(0);
  const Value loop_value = Value::object(loop);
  for (int64_t i = 0; i < n; ++i) {
    step();
    slot[0].second = Value::integer(i + 1);
    slot[1].second = Value::integer(i);
    slot[2].second = Value::integer(n - i);
    slot[3].second = Value::integer(n - i - 1);
    slot[4].second = Value::boolean(i == 0);
    slot[5].second = Value::boolean(i == n - 1);
    slot[7].second = i > 0 ? list[i - 1] : Value::undefined("there is no previous item");
    slot[8].second = i + 1 < n ? list[i + 1] : Value::undefined("there is no next item");
    inner.reset();
    (*inner).set(program_.symbol_loop, loop_value);
    assign(stmt.target, list[i], *inner);
    if (exec_body(stmt.body, *inner) == Flow::kBreak) break;
  }
}

void Interpreter::assign(const Target& target, Value v, Scope& scope) {
  switch (target.kind) {
    case Target::Kind::kName: scope.set(target.symbol, std::move(v)); return;
    case Target::Kind::kNamespaceAttr: {
      Value* ns = scope.find(target.symbol);
      if (!ns || !ns->is_object() || ns->object().kind != Object::Kind::kNamespace) {
        line_ = target.line;
        fail("cannot assign attribute on non-namespace object ('" + program_.symbols[target.symbol] + "' is " +
             (ns ? "of type " + std::string(ns->type_name()) : std::string("undefined")) + ")");
      }
      ns->object().set(target.attr, std::move(v));
      return;
    }
    case Target::Kind::kTuple: {
      auto items = iterate(v);
      if (items->items.size() != target.items.size()) {
        line_ = target.line;
        if (items->items.size() < target.items.size())
          fail(format("not enough values to unpack (expected %zu, got %zu)", target.items.size(), items->items.size()));
        fail(format("too many values to unpack (expected %zu)", target.items.size()));
      }
      for (size_t i = 0; i < target.items.size(); ++i) assign(target.items[i], items->items[i], scope);
      return;
    }
  }
}

Value Interpreter::make_macro(const MacroStmt& macro, Scope& scope) {
  pin(&scope);
  return Value::callable(std::make_shared<Macro>(macro, &scope));
}

Value Interpreter::call_macro(const MacroStmt& m, Scope* closure, CallArgs& args) {
  if (call_depth_ >= options_.limits.max_call_depth)
    fail(format("macro '%s' nested more than %d calls deep", m.name.c_str(), options_.limits.max_call_depth));
  step();
  struct Depth {  // restores the depth however the call ends; the caller's line only on success
    Interpreter& in;
    explicit Depth(Interpreter& i) : in(i) { ++in.call_depth_; }
    ~Depth() { --in.call_depth_; }
  } depth(*this);
  const int caller_line = line_;

  ScopeHandle scope(*this, closure);
  if (args.positional.size() > m.params.size() && !m.uses_varargs)
    fail(format("macro '%s' takes not more than %zu argument(s)", m.name.c_str(), m.params.size()));
  std::vector<bool> used(args.keyword.size(), false);
  for (size_t i = 0; i < m.params.size(); ++i) {
    const MacroParam& p = m.params[i];
    Value v;
    bool given = false;
    if (i < args.positional.size()) {
      v = args.positional[i];
      given = true;
    }
    for (size_t k = 0; k < args.keyword.size(); ++k) {
      if (args.keyword[k].first != p.name) continue;
      if (given) fail(format("macro '%s' got multiple values for argument '%s'", m.name.c_str(), p.name.c_str()));
      v = args.keyword[k].second;
      used[k] = given = true;
    }
    if (!given) v = p.default_value ? eval(*p.default_value, *scope) : Value::undefined("'" + p.name + "' is undefined");
    (*scope).set(p.symbol, std::move(v));
  }
  auto extra_kwargs = std::make_shared<Object>();
  for (size_t k = 0; k < args.keyword.size(); ++k) {
    if (used[k]) continue;
    if (args.keyword[k].first == "caller") {
      (*scope).set(program_.symbol_caller, args.keyword[k].second);
    } else if (m.uses_kwargs) {
      extra_kwargs->set(args.keyword[k].first, args.keyword[k].second);
    } else {
      fail(format("macro '%s' takes no keyword argument '%s'", m.name.c_str(), args.keyword[k].first.c_str()));
    }
  }
  if (m.uses_kwargs) (*scope).set(program_.symbol_kwargs, Value::object(extra_kwargs));
  if (m.uses_varargs) {
    std::vector<Value> rest;
    for (size_t i = m.params.size(); i < args.positional.size(); ++i) rest.push_back(args.positional[i]);
    (*scope).set(program_.symbol_varargs, Value::list(std::move(rest), true));
  }
  Value result = Value::string(capture(m.body, *scope));
  line_ = caller_line;
  return result;
}

}  // namespace zinc::chat
