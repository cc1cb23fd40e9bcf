// The parsed form of a template: expression and statement nodes, each with its source line.
// Names are interned: a variable is a symbol index into Program::symbols.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "chat/value.h"

namespace zinc::chat {

enum class ExprKind : uint8_t {
  kConst, kName, kList, kDict, kGetattr, kGetitem, kSlice, kCall, kFilter, kTest,
  kNot, kNeg, kPos, kBinary, kCompare, kAnd, kOr, kConcat, kCondExpr,
};
enum class BinaryOp : uint8_t { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow };
enum class CompareOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

struct Expr {
  Expr(ExprKind k, int l) : kind(k), line(l) {}
  virtual ~Expr() = default;
  ExprKind kind;
  int line;
};
using ExprPtr = std::unique_ptr<Expr>;

struct ConstExpr : Expr {
  ConstExpr(int l, Value v) : Expr(ExprKind::kConst, l), value(std::move(v)) {}
  Value value;
};
struct NameExpr : Expr {
  NameExpr(int l, int s) : Expr(ExprKind::kName, l), symbol(s) {}
  int symbol;
};
struct ListExpr : Expr {  // [a, b] or (a, b)
  ListExpr(int l, bool tuple) : Expr(ExprKind::kList, l), is_tuple(tuple) {}
  std::vector<ExprPtr> items;
  bool is_tuple;
};
struct DictExpr : Expr {
  explicit DictExpr(int l) : Expr(ExprKind::kDict, l) {}
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};
struct GetattrExpr : Expr {  // object.name
  GetattrExpr(int l, ExprPtr o, std::string n) : Expr(ExprKind::kGetattr, l), object(std::move(o)), name(std::move(n)) {}
  ExprPtr object;
  std::string name;
};
struct GetitemExpr : Expr {  // object[index]; index may be a SliceExpr
  GetitemExpr(int l, ExprPtr o, ExprPtr i) : Expr(ExprKind::kGetitem, l), object(std::move(o)), index(std::move(i)) {}
  ExprPtr object;
  ExprPtr index;
};
struct SliceExpr : Expr {  // start:stop:step, any part may be absent
  explicit SliceExpr(int l) : Expr(ExprKind::kSlice, l) {}
  ExprPtr start, stop, step;
};

struct CallArgsExpr {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
  ExprPtr star_args;    // *args
  ExprPtr star_kwargs;  // **kwargs
};
struct CallExpr : Expr {
  CallExpr(int l, ExprPtr c) : Expr(ExprKind::kCall, l), callee(std::move(c)) {}
  ExprPtr callee;
  CallArgsExpr args;
};

class Interpreter;
using FilterFn = Value (*)(Interpreter& in, Value& operand, CallArgs& args);
using TestFn = bool (*)(Interpreter& in, const Value& operand, CallArgs& args);

struct FilterExpr : Expr {  // operand | name(args); operand is null inside {% filter %} and {% set x | f %}
  FilterExpr(int l, ExprPtr o, std::string n) : Expr(ExprKind::kFilter, l), operand(std::move(o)), name(std::move(n)) {}
  ExprPtr operand;
  std::string name;
  FilterFn fn = nullptr;  // null: unknown filter, an error when evaluated
  CallArgsExpr args;
};
struct TestExpr : Expr {  // operand is [not] name(args)
  TestExpr(int l, ExprPtr o, std::string n) : Expr(ExprKind::kTest, l), operand(std::move(o)), name(std::move(n)) {}
  ExprPtr operand;
  std::string name;
  TestFn fn = nullptr;
  CallArgsExpr args;
};
struct UnaryExpr : Expr {  // not / - / +
  UnaryExpr(ExprKind k, int l, ExprPtr o) : Expr(k, l), operand(std::move(o)) {}
  ExprPtr operand;
};
struct BinaryExpr : Expr {  // arithmetic, and / or
  BinaryExpr(ExprKind k, int l, BinaryOp o, ExprPtr a, ExprPtr b)
      : Expr(k, l), op(o), left(std::move(a)), right(std::move(b)) {}
  BinaryOp op;
  ExprPtr left, right;
};
struct CompareExpr : Expr {  // first op1 e1 op2 e2 ... (chained like Python)
  CompareExpr(int l, ExprPtr f) : Expr(ExprKind::kCompare, l), first(std::move(f)) {}
  ExprPtr first;
  std::vector<std::pair<CompareOp, ExprPtr>> rest;
};
struct ConcatExpr : Expr {  // a ~ b ~ c
  explicit ConcatExpr(int l) : Expr(ExprKind::kConcat, l) {}
  std::vector<ExprPtr> parts;
};
struct CondExpr : Expr {  // then if test else otherwise (otherwise may be absent: Undefined)
  CondExpr(int l) : Expr(ExprKind::kCondExpr, l) {}
  ExprPtr test, then, otherwise;
};

// Where `set` and `for` store: a name, ns.attr, or a tuple of targets.
struct Target {
  enum class Kind : uint8_t { kName, kNamespaceAttr, kTuple };
  Kind kind = Kind::kName;
  int symbol = -1;
  std::string attr;
  std::vector<Target> items;
  int line = 0;
};

enum class StmtKind : uint8_t {
  kText, kPrint, kIf, kFor, kSet, kSetBlock, kMacro, kCallBlock, kFilterBlock, kWith, kBreak, kContinue,
};
struct Stmt {
  Stmt(StmtKind k, int l) : kind(k), line(l) {}
  virtual ~Stmt() = default;
  StmtKind kind;
  int line;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct TextStmt : Stmt {
  TextStmt(int l, std::string t) : Stmt(StmtKind::kText, l), text(std::move(t)) {}
  std::string text;
};
struct PrintStmt : Stmt {
  PrintStmt(int l, ExprPtr e) : Stmt(StmtKind::kPrint, l), expr(std::move(e)) {}
  ExprPtr expr;
};
struct IfStmt : Stmt {
  explicit IfStmt(int l) : Stmt(StmtKind::kIf, l) {}
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, elif...
  Body otherwise;
};
struct ForStmt : Stmt {
  explicit ForStmt(int l) : Stmt(StmtKind::kFor, l) {}
  Target target;
  ExprPtr iterable;
  ExprPtr filter;  // for x in xs if cond
  Body body, otherwise;
  bool recursive = false;
};
struct SetStmt : Stmt {
  explicit SetStmt(int l) : Stmt(StmtKind::kSet, l) {}
  Target target;
  ExprPtr value;
};
struct SetBlockStmt : Stmt {  // {% set x | filters %}body{% endset %}
  explicit SetBlockStmt(int l) : Stmt(StmtKind::kSetBlock, l) {}
  Target target;
  ExprPtr filter;  // FilterExpr chain whose innermost operand is null; may be null
  Body body;
};
struct MacroParam {
  int symbol;
  std::string name;
  ExprPtr default_value;  // may be null
};
struct MacroStmt : Stmt {
  explicit MacroStmt(int l) : Stmt(StmtKind::kMacro, l) {}
  int symbol = -1;
  std::string name;
  std::vector<MacroParam> params;
  Body body;
  bool uses_caller = false, uses_varargs = false, uses_kwargs = false;
};
struct CallBlockStmt : Stmt {  // {% call(params) macro(args) %}body{% endcall %}
  explicit CallBlockStmt(int l) : Stmt(StmtKind::kCallBlock, l) {}
  std::unique_ptr<MacroStmt> caller;  // the body as an anonymous macro named "caller"
  ExprPtr call;                       // a CallExpr
};
struct FilterBlockStmt : Stmt {
  explicit FilterBlockStmt(int l) : Stmt(StmtKind::kFilterBlock, l) {}
  ExprPtr filter;
  Body body;
};
struct WithStmt : Stmt {  // {% with a = 1 %}, also {% generation %}: a body in its own scope
  explicit WithStmt(int l) : Stmt(StmtKind::kWith, l) {}
  std::vector<std::pair<Target, ExprPtr>> assignments;
  Body body;
};

// A parsed template: immutable, shared by every render.
struct Program {
  Body body;
  std::vector<std::string> symbols;              // symbol → name
  std::unordered_map<std::string, int> symbol_ids;  // name → symbol
  std::vector<Value> globals;                        // by symbol: a built-in function or Undefined
  int symbol_loop = -1, symbol_caller = -1, symbol_varargs = -1, symbol_kwargs = -1;
};

}  // namespace zinc::chat
