// Syntax and runtime errors name the template line; runaway templates stop at the limits.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "chat/template.h"

namespace zinc::chat {
namespace {

// The rendering, or "error: <message>".
std::string run(std::string_view source, const RenderOptions& options = {}) {
  auto t = Template::parse(source);
  if (!t.ok()) return "error: " + t.status().message();
  auto out = t->render(nlohmann::ordered_json{{"x", 1}}, options);
  return out.ok() ? *out : "error: " + out.status().message();
}

struct ErrorRow {
  const char* source;
  const char* message;  // the whole error, line included
};

TEST(Errors, SyntaxErrorsNameTheLine) {
  const ErrorRow rows[] = {
      {"{% if x %}\n{% endfor %}",
       "line 2: unknown tag 'endfor'; expected 'elif' or 'else' or 'endif' to close the 'if' block from line 1"},
      {"{% for x in y %}\nabc",
       "line 2: unexpected end of template; expected 'endfor' or 'else' to close the 'for' block from line 1"},
      {"a\n{{ 1 + }}", "line 2: unexpected end of print statement"},
      {"a\n{{ x y }}", "line 2: unexpected 'y', expected end of print statement"},
      {"a\n{{ 'x }}", "line 2: unterminated string literal"},
      {"a\n\n{# x", "line 3: missing end of comment tag"},
      {"\n{{ (1 ] }}", "line 2: unexpected ']', expected ')'"},
      {"{{ 1 }\n}", "line 1: unexpected '}'"},
      {"\n\n{% break %}", "line 3: 'break' outside of a loop"},
      {"{% for i in x %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}", "line 1: 'continue' outside of a loop"},
      {"{% macro m(a=1, b) %}{% endmacro %}", "line 1: non-default argument follows default argument"},
      {"{% include 'other.jinja' %}", "line 1: tag 'include' is not supported in chat templates"},
      {"{% frobnicate %}", "line 1: unknown tag 'frobnicate'"},
      {"{% set 1 = 2 %}", "line 1: can't assign to '1'"},
      {"{% set true = 2 %}", "line 1: can't assign to 'true'"},
      {"{{ 1 is defined is defined }}", "line 1: you cannot chain multiple tests with 'is'"},
      {"{{ 99999999999999999999 }}", "line 1: integer literal too large: 99999999999999999999"},
      {"{{ '\\x4' }}", "line 1: truncated \\x escape in string literal"},
      {"{{ a ! b }}", "line 1: unexpected char '!'"},
      {"{% raw %}never closed", "line 1: missing end of raw directive"},
      {"{{ x", "line 1: unexpected end of template: unclosed '{{'"},
  };
  for (const auto& row : rows) EXPECT_EQ(run(row.source), std::string("error: ") + row.message) << row.source;
}

TEST(Errors, RuntimeErrorsNameTheInnermostLine) {
  const ErrorRow rows[] = {
      {"{% if true %}\n\n{{ raise_exception('boom') }}{% endif %}", "line 3: boom"},
      {"{% macro m() %}\n{{ 1 / 0 }}\n{% endmacro %}\n{{ m() }}", "line 2: division by zero"},
      {"{% macro m() %}\n\n{% endmacro %}\n{{ m() + 1 }}", "line 4: can only concatenate str (not \"int\") to str"},
      {"a\n{{ missing.attr }}", "line 2: 'missing' is undefined"},
      {"{% set d = {'a': 1} %}\n{{ d.b.c }}", "line 2: 'dict object' has no attribute 'b'"},
      {"{% for a, b in [[1]] %}{% endfor %}", "line 1: not enough values to unpack (expected 2, got 1)"},
      {"{{ 'x'|nosuch }}", "line 1: No filter named 'nosuch'."},
      {"{{ x is nosuch }}", "line 1: No test named 'nosuch'."},
      {"{{ x() }}", "line 1: 'int' object is not callable"},
      {"{% set ns = 1 %}{% set ns.a = 2 %}", "line 1: cannot assign attribute on non-namespace object ('ns' is of type int)"},
      {"{{ {1: 2} }}", "line 1: dict keys must be strings in zinc's templates (got int)"},
      {"{{ 9223372036854775807 + 1 }}", "line 1: integer overflow (zinc's template integers are 64-bit)"},
  };
  for (const auto& row : rows) EXPECT_EQ(run(row.source), std::string("error: ") + row.message) << row.source;
}

TEST(Limits, MacroRecursionStops) {
  EXPECT_EQ(run("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}\n{{ r(0) }}"),
            "error: line 1: macro 'r' nested more than 200 calls deep");
  RenderOptions shallow;
  shallow.limits.max_call_depth = 5;
  EXPECT_EQ(run("{% macro r(n) %}{% if n < 4 %}{{ r(n + 1) }}{% endif %}{{ n }}{% endmacro %}{{ r(0) }}", shallow),
            "43210");
}

TEST(Limits, OutputSizeStops) {
  RenderOptions small;
  small.limits.max_output_bytes = 1000;
  EXPECT_EQ(run("{% for i in range(100000) %}xxxxxxxxxx{% endfor %}", small),
            "error: line 1: template output exceeds 1000 bytes");
  // Values that double in size stop too, before memory runs out.
  EXPECT_EQ(run("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", small),
            "error: line 1: string exceeds 1000 bytes");
  EXPECT_EQ(run("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}", small),
            "error: line 1: value of 1024 bytes exceeds the limit of 1000 bytes");
  EXPECT_EQ(run("{{ 'ab' * 10000000000 }}", small),
            "error: line 1: repeating a str 10000000000 times exceeds the limit of 1000 bytes");
  EXPECT_EQ(run("{{ 'abc'.replace('', 'x') }}", small), "xaxbxcx");
  EXPECT_EQ(run("{{ ('a' * 300).replace('', 'xxxxx') }}", small), "error: line 1: replace() result exceeds 1000 bytes");
}

TEST(Limits, StepsStop) {
  RenderOptions few;
  few.limits.max_steps = 1000;
  EXPECT_EQ(run("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", few),
            "error: line 1: template ran more than 1000 loop iterations and calls");
  EXPECT_EQ(run("{{ range(100001)|length }}"),
            "error: line 1: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
}

TEST(Limits, DeepNestingIsASyntaxError) {
  std::string deep = "{{ " + std::string(300, '(') + "1" + std::string(300, ')') + " }}";
  EXPECT_EQ(run(deep), "error: line 1: template nested too deeply (more than 200 levels)");
  std::string blocks;
  for (int i = 0; i < 300; ++i) blocks += "{% if true %}";
  EXPECT_EQ(run(blocks), "error: line 1: template nested too deeply (more than 200 levels)");
  std::string nots = "{{ ";
  for (int i = 0; i < 300; ++i) nots += "not ";
  EXPECT_EQ(run(nots + "x }}"), "error: line 1: template nested too deeply (more than 200 levels)");
}

TEST(Limits, NamespaceCyclesRender) {
  // A namespace holding itself: renders and prints like Python, and the interpreter breaks the
  // cycle when it ends.
  EXPECT_EQ(run("{% set ns = namespace() %}{% set ns.self = ns %}{% set ns.n = 1 %}{{ ns.self.self.n }}"), "1");
  EXPECT_EQ(run("{% set ns = namespace(a=1) %}{% set ns.self = ns %}{{ ns }}"),
            "<Namespace {'a': 1, 'self': <Namespace {...}>}>");
}

TEST(Limits, DeepValuesStop) {
  EXPECT_EQ(run("{% set ns = namespace(x=[]) %}{% for i in range(400) %}{% set ns.x = [ns.x] %}{% endfor %}"
                "{{ ns.x|tojson|length }}"),
            "802");
  EXPECT_EQ(run("{% set ns = namespace(x=[]) %}{% for i in range(600) %}{% set ns.x = [ns.x] %}{% endfor %}"),
            "error: line 1: value nested more than 500 levels deep");
  EXPECT_EQ(run("{% set ns = namespace(x=none) %}{% for i in range(600) %}{% set ns.x = namespace(c=ns.x) %}{% endfor %}"),
            "error: line 1: value nested more than 500 levels deep");
  // Context from outside is held to the same depth.
  std::string deep = std::string(2000, '[') + std::string(2000, ']');
  auto t = Template::parse("{{ x|length }}");
  auto out = t->render(nlohmann::ordered_json{{"x", nlohmann::ordered_json::parse(deep)}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "value nested more than 500 levels deep");
}

}  // namespace
}  // namespace zinc::chat
