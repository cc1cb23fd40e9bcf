// Functions a template can call by name: Jinja2's range, dict, namespace, joiner, and
// Hugging Face's raise_exception and strftime_now.
#include <ctime>

#include "chat/builtins.h"
#include "chat/interpreter.h"

namespace zinc::chat {
namespace {

constexpr int64_t kMaxRange = 100000;  // Jinja's sandbox refuses longer ranges

using GlobalFn = Value (*)(Interpreter& in, CallArgs& args);

class Builtin : public Callable {
 public:
  Builtin(std::string_view name, GlobalFn fn) : name_(name), fn_(fn) {}
  Value call(Interpreter& in, CallArgs& args) override { return fn_(in, args); }
  std::string repr() const override { return "<function " + name_ + ">"; }

 private:
  std::string name_;
  GlobalFn fn_;
};

Value range(Interpreter&, CallArgs& a) {
  if (!a.keyword.empty()) fail("range() takes no keyword arguments");
  if (a.positional.empty() || a.positional.size() > 3)
    fail(format("range expected 1 to 3 arguments, got %zu", a.positional.size()));
  for (const Value& v : a.positional)
    if (!v.is_integral()) fail("'" + std::string(v.type_name()) + "' object cannot be interpreted as an integer");
  int64_t start = 0, stop, step = 1;
  if (a.positional.size() == 1) {
    stop = a.positional[0].as_int();
  } else {
    start = a.positional[0].as_int();
    stop = a.positional[1].as_int();
    if (a.positional.size() == 3) step = a.positional[2].as_int();
  }
  if (step == 0) fail("range() arg 3 must not be zero");
  int64_t n = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                       : (start > stop ? (start - stop - step - 1) / -step : 0);
  if (n > kMaxRange)
    fail(format("Range too big. The sandbox blocks ranges larger than MAX_RANGE (%lld).", (long long)kMaxRange));
  std::vector<Value> items;
  items.reserve(size_t(n));
  for (int64_t i = 0; i < n; ++i) items.push_back(Value::integer(start + i * step));
  return Value::list(std::move(items));
}

// dict(mapping_or_pairs, **kwargs) into `o`.
void fill_mapping(Object& o, CallArgs& a, const char* fn) {
  if (a.positional.size() > 1) fail(format("%s expected at most 1 positional argument, got %zu", fn, a.positional.size()));
  if (!a.positional.empty()) {
    const Value& init = a.positional[0];
    if (init.is_dict()) {
      for (const auto& [k, v] : init.object().items) o.set(k, v);
    } else {
      const auto pair_list = iterate(init);  // keeps a built list alive through the loop
      for (const Value& pair : pair_list->items) {
        auto kv = iterate(pair);
        if (kv->items.size() != 2 || !kv->items[0].is_string())
          fail(std::string(fn) + ": each element must be a (str, value) pair");
        o.set(kv->items[0].str(), kv->items[1]);
      }
    }
  }
  for (auto& [k, v] : a.keyword) o.set(k, v);
}

Value dict(Interpreter&, CallArgs& a) {
  auto o = std::make_shared<Object>();
  fill_mapping(*o, a, "dict");
  return Value::object(std::move(o));
}

Value namespace_(Interpreter& in, CallArgs& a) {
  auto ns = in.new_namespace();
  fill_mapping(*ns, a, "namespace");
  return Value::object(std::move(ns));
}

Value raise_exception(Interpreter&, CallArgs& a) {
  Args args("raise_exception", a, {"message"});
  fail(args.string_or(0, ""));
}

Value strftime_now(Interpreter& in, CallArgs& a) {
  Args args("strftime_now", a, {"format"});
  if (!args.has(0) || !args.get(0)->is_string()) fail("strftime_now() needs a format string");
  const std::string& fmt = args.get(0)->str();
  if (fmt.empty()) return Value::string("");
  std::tm tm = in.now();
  std::vector<char> buf(fmt.size() * 8 + 64);
  for (int attempt = 0; attempt < 8; ++attempt) {
    size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
    if (n > 0) return Value::string(std::string(buf.data(), n));
    buf.resize(buf.size() * 4);
  }
  return Value::string("");  // a format that only produces empty fields
}

class Joiner : public Callable {
 public:
  explicit Joiner(std::string sep) : sep_(std::move(sep)) {}
  Value call(Interpreter&, CallArgs& a) override {
    Args("joiner", a, {});
    if (!used_) {
      used_ = true;
      return Value::string("");
    }
    return Value::string(sep_);
  }
  std::string repr() const override { return "<Joiner>"; }

 private:
  std::string sep_;
  bool used_ = false;
};

Value joiner(Interpreter&, CallArgs& a) {
  Args args("joiner", a, {"sep"});
  return Value::callable(std::make_shared<Joiner>(args.string_or(0, ", ")));
}

struct GlobalEntry {
  std::string_view name;
  GlobalFn fn;
};

constexpr GlobalEntry kGlobals[] = {
    {"range", range},
    {"dict", dict},
    {"namespace", namespace_},
    {"joiner", joiner},
    {"raise_exception", raise_exception},
    {"strftime_now", strftime_now},
};

}  // namespace

Value make_global(std::string_view name) {
  for (const auto& g : kGlobals)
    if (g.name == name) return Value::callable(std::make_shared<Builtin>(g.name, g.fn));
  return Value();
}

}  // namespace zinc::chat
