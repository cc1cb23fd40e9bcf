// The engine against expectations produced by the reference Jinja2 (3.1, Hugging Face's settings:
// sandboxed, trim_blocks, lstrip_blocks, loopcontrols, tojson as json.dumps). Each row is a small
// template; a row without output must fail with a message containing the given text.
// The rows come from reference/make_render_rows.py over reference/render_rows.txt.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chat/template.h"

namespace zinc::chat {
namespace {

struct Row {
  const char* source;
  const char* output;            // null: rendering must fail
  const char* error = nullptr;   // text the error message contains
};

const nlohmann::ordered_json& context() {
  static const auto ctx = nlohmann::ordered_json::parse(R"({
    "msgs": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
             {"role": "assistant", "content": "Hello",
              "tool_calls": [{"function": {"name": "f", "arguments": {"b": 1, "a": [1.5, "x"]}}}]},
             {"role": "user", "content": "Bye"}],
    "d": {"b": 2, "a": 1, "C": 3}, "s": "  Hello World  ", "n": null, "u": "héllo wörld",
    "words": ["b", "A", "c", "a"], "f": 2.5, "t": true})");
  return ctx;
}

RenderOptions fixed_time() {
  RenderOptions o;
  o.now = parse_local_time("2026-01-15T09:30:00").value();
  return o;
}

const Row kRows[] = {
    {"{{ 1 + 2 * 3 }}|{{ 2 ** 3 ** 2 }}|{{ -2 ** 2 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ -7 % 3 }}|{{ 7 % -3 }}", "7|64|4|3|-4|2|-2"},
    {"{{ 1 / 2 }}|{{ 10 / 2 }}|{{ 0.1 + 0.2 }}|{{ 1e100 }}|{{ 1.5e3 }}|{{ 1e16 }}|{{ 123456789012345.0 }}|{{ 0.0001 }}|{{ 0.00001 }}|{{ -0.0 }}", "0.5|5.0|0.30000000000000004|1e+100|1500.0|1e+16|123456789012345.0|0.0001|1e-05|-0.0"},
    {"{{ 1_000 + 0x10 + 0o7 + 0b1 }}|{{ true + 1 }}|{{ 3 * 'ab' }}|{{ [1] * 3 }}|{{ 2.5 * 2 }}", "1024|2|ababab|[1, 1, 1]|5.0"},
    {"{{ 'x' ~ 2 * 3 }}|{{ 'a' ~ none ~ true ~ 1.0 ~ undefined_thing }}|{{ -1|abs }}|{{ not 1 == 2 }}", "x6|aNoneTrue1.0|1|True"},
    {"{{ 'a' if false }}|{{ 1 if false else 2 if false else 3 }}|{{ (1, 2) }}|{{ (1,) }}|{{ () }}|{{ [1, 'a', none, true, 2.0] }}", "|3|(1, 2)|(1,)|()|[1, 'a', None, True, 2.0]"},
    {"{{ {'a': \"it's\", \"b\": 'say \"hi\"', 'c': [1, {'d': none}]} }}|{{ {'a': 1}['a'] }}|{{ \"x\\ty\\u00e9\\x41\\101\" }}|{{ 'a' 'b' \"c\" }}", "{'a': \"it's\", 'b': 'say \"hi\"', 'c': [1, {'d': None}]}|1|x\tyéAA|abc"},
    {"{{ 1 < 2 < 3 }}|{{ 3 > 2 > 2 }}|{{ 'abc' < 'abd' }}|{{ [1, 2] < [1, 3] }}|{{ 1 == 1.0 }}|{{ (1, 2) == [1, 2] }}|{{ none == none }}|{{ x == y }}", "True|False|True|True|True|False|True|True"},
    {"{{ 'b' in 'abc' }}|{{ 2 in [1, 2] }}|{{ 'a' in {'a': 1} }}|{{ 'z' not in 'abc' }}|{{ 1 in undefined_thing }}", "True|True|True|True|False"},
    {"{{ 1 + 'a' }}", nullptr, "unsupported operand type(s) for +: 'int' and 'str'"},
    {"{{ 'a' + 1 }}", nullptr, "can only concatenate str (not \"int\") to str"},
    {"{{ undefined_thing + 1 }}", nullptr, "'undefined_thing' is undefined"},
    {"{{ 1 / 0 }}", nullptr, "division by zero"},
    {"{{ 1 < 'a' }}", nullptr, "'<' not supported between instances of 'int' and 'str'"},
    {"{{ ('<a>'|safe) + '<b>' }}|{{ '<b>' + ('<a>'|safe) }}|{{ ('<a>'|safe) ~ '<b>' }}|{{ '<x>'|e }}|{{ '<x>'|safe|e }}|{{ '<x>'|forceescape }}", "<a>&lt;b&gt;|&lt;b&gt;<a>|<a><b>|&lt;x&gt;|<x>|&lt;x&gt;"},
    {"{{ [1,2,3,4][1:3] }}|{{ 'hello'[::-1] }}|{{ [1,2,3][-1] }}|{{ u[1] }}|{{ u[1:4] }}|{{ u[::-2] }}|{{ [1,2,3][5] }}|{{ [1,2,3,4,5][-2:] }}|{{ [1,2,3][:-1] }}|{{ 'abc'[1:] }}|{{ [1,2,3,4,5][::2] }}|{{ [1,2,3,4,5][4:1:-2] }}", "[2, 3]|olleh|3|é|éll|drwolh||[4, 5]|[1, 2]|bc|[1, 3, 5]|[5, 3]"},
    {"{{ msgs[0].role }}|{{ msgs[0]['content'] }}|{{ msgs.0.role }}|{{ msgs[-1].content }}|{{ d.a }}|{{ d['C'] }}", "system|Be brief.|system|Bye|1|3"},
    {"[{{ nothing }}]|{{ nothing is defined }}|{{ nothing|length }}|{{ nothing|default('dflt') }}|{{ none|default('dflt') }}|{{ ''|default('dflt', true) }}|{{ nothing == nothing }}|{{ msgs[0].missing is defined }}|{{ none.foo is defined }}", "[]|False|0|dflt|None|dflt|True|False|False"},
    {"{% for x in nothing %}x{% endfor %}|{{ nothing|list }}|{{ nothing|join(',') }}|{{ nothing|items|list }}|{% if not nothing %}falsy{% endif %}", "|[]||[]|falsy"},
    {"{{ nothing.attr }}", nullptr, "'nothing' is undefined"},
    {"{{ msgs[0].missing.attr }}", nullptr, "'dict object' has no attribute 'missing'"},
    {"{{ nothing['k'] }}", nullptr, "'nothing' is undefined"},
    {"{{ nothing() }}", nullptr, "'nothing' is undefined"},
    {"{{ msgs[0].missing }}|{{ 'abc'.missing }}", "|"},
    {"{% set x = 1 %}{% for i in [1,2] %}{{ x }}{% set x = 2 %}{% endfor %}{{ x }}", "111"},
    {"{% for i in [1,2] %}{% if i == 2 %}[{{ y }}]{% endif %}{% set y = i %}{% endfor %}", "[]"},
    {"{% if true %}{% set z = 5 %}{% endif %}{{ z }}", "5"},
    {"{% set ns = namespace(total=0) %}{% for i in range(5) %}{% set ns.total = ns.total + i %}{% endfor %}{{ ns.total }}", "10"},
    {"{% set ns = namespace() %}{% set ns.a = 'x' %}{{ ns.a }}{{ ns.b is defined }}", "xFalse"},
    {"{% set a, b = 1, 2 %}{{ b }}{{ a }}|{% set c, d = [3, 4] %}{{ c + d }}", "21|7"},
    {"{% set x = 5 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 6 %}{{ m() }}", "6"},
    {"{% macro m() %}{{ y }}{% endmacro %}{% for y in [1] %}[{{ m() }}]{% endfor %}", "[]"},
    {"{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]", "3[]"},
    {"{% set t %}  block {{ 1 + 1 }}  {% endset %}[{{ t }}]|{% set u2 | trim | upper %}  abc  {% endset %}[{{ u2 }}]", "[  block 2  ]|[ABC]"},
    {"{% filter upper %}hello {{ 'world' }}{% endfilter %}", "HELLO WORLD"},
    {"{% set ns.x = 1 %}", nullptr, "cannot assign attribute on non-namespace object"},
    {"{% for m in msgs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }},{% endfor %}", "1043TrueFalse4,2132FalseFalse4,3221FalseFalse4,4310FalseTrue4,"},
    {"{% for m in msgs %}{{ loop.previtem.role if loop.previtem is defined else '-' }}>{{ loop.nextitem.role if loop.nextitem is defined else '-' }} {% endfor %}", "->user system>assistant user>user assistant>- "},
    {"{% for i in range(10) %}{% if i == 5 %}{% break %}{% endif %}{% if i % 2 %}{% continue %}{% endif %}{{ i }}{% endfor %}", "024"},
    {"{% for i in [] %}x{% else %}empty{% endfor %}|{% for i in [1] if false %}x{% else %}filtered{% endfor %}", "empty|filtered"},
    {"{% for m in msgs if m.role == 'user' %}{{ loop.index }}/{{ loop.length }}:{{ m.content }} {% endfor %}", "1/2:Hi 2/2:Bye "},
    {"{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %}|{% for k in d %}{{ k }}{% endfor %}|{% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %}", "b=2;a=1;C=3;|baC|b2a1C3"},
    {"{% for c in 'héj' %}[{{ c }}]{% endfor %}|{% for a, b in [[1, 2], (3, 4)] %}{{ a * b }}{% endfor %}", "[h][é][j]|212"},
    {"{% for i in [1,2,3] %}{{ loop.cycle('a', 'b') }}{% endfor %}|{% for i in [1,1,2,2,1] %}{% if loop.changed(i) %}{{ i }}{% endif %}{% endfor %}", "aba|121"},
    {"{% for i in [1, 2] %}{% for j in [3, 4] %}{{ loop.index }}{% endfor %}{{ loop.index }} {% endfor %}", "121 122 "},
    {"{% for a, b in [[1, 2, 3]] %}{% endfor %}", nullptr, "too many values to unpack (expected 2)"},
    {"{% for i in 5 %}{% endfor %}", nullptr, "'int' object is not iterable"},
    {"{{ range(3)|list }}|{{ range(1, 10, 3)|list }}|{{ range(5, 0, -2)|list }}", "[0, 1, 2]|[1, 4, 7]|[5, 3, 1]"},
    {"{{ range(1000000)|length }}", nullptr, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000)."},
    {"{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', greeting='Hi') }} {{ greet(greeting='Yo', name='Cy') }} [{{ greet() }}]", "Hello, Ann! Hi, Bob! Yo, Cy! [Hello, !]"},
    {"{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * (fact(n - 1)|int) }}{% endif %}{% endmacro %}{{ fact(10) }}", "3628800"},
    {"{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k='v') }}", "1(2, 3){'k': 'v'}"},
    {"{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}", nullptr, "macro 'm' takes not more than 1 argument(s)"},
    {"{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=1) }}", nullptr, "macro 'm' takes no keyword argument 'b'"},
    {"{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ 1 + 1 }}{% endcall %}", "<b>bold 2</b>"},
    {"{% macro m(x, y=x * 2) %}{{ x }},{{ y }}{% endmacro %}{{ m(3) }}", "3,6"},
    {"{% macro m() %}{{ 'a' }}{% endmacro %}{{ m() ~ m() }}|{{ m is defined }}|{{ (m()|length) }}", "aa|True|1"},
    {"{{ msgs[2].tool_calls[0].function.arguments|tojson }}|{{ d|tojson }}|{{ 'é\"\\n<'|tojson }}|{{ [1.0, 2, none, true, 1e20]|tojson }}", "{\"b\": 1, \"a\": [1.5, \"x\"]}|{\"b\": 2, \"a\": 1, \"C\": 3}|\"é\\\"\\n<\"|[1.0, 2, null, true, 1e+20]"},
    {"{{ d|tojson(indent=2) }}|{{ {}|tojson(indent=2) }}|{{ [[]]|tojson(indent=2) }}|{{ d|tojson(sort_keys=true) }}|{{ 'é'|tojson(ensure_ascii=true) }}|{{ d|tojson(separators=(',', ':')) }}", "{\n  \"b\": 2,\n  \"a\": 1,\n  \"C\": 3\n}|{}|[\n  []\n]|{\"C\": 3, \"a\": 1, \"b\": 2}|\"\\u00e9\"|{\"b\":2,\"a\":1,\"C\":3}"},
    {"{{ nothing|tojson }}", nullptr, "Object of type Undefined is not JSON serializable"},
    {"{{ s|trim }}|{{ 'xxhixx'|trim('x') }}|{{ s|length }}|{{ u|length }}|{{ u|upper }}|{{ 'ÀÉÎ'|lower }}|{{ 'hello world-wide (test)'|title }}|{{ 'hELLO'|capitalize }}", "Hello World|hi|15|11|HÉLLO WÖRLD|àéî|Hello World-Wide (Test)|Hello"},
    {"{{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(', ') }}|{{ msgs|rejectattr('role', 'in', ['user', 'system'])|map(attribute='role')|list }}|{{ msgs|selectattr('tool_calls')|list|length }}", "Hi, Bye|['assistant']|1"},
    {"{{ msgs|map(attribute='role')|unique|list }}|{{ words|sort }}|{{ words|sort(reverse=true) }}|{{ words|sort(case_sensitive=true) }}|{{ msgs|sort(attribute='role')|map(attribute='content')|join }}", "['system', 'user', 'assistant']|['A', 'a', 'b', 'c']|['c', 'b', 'A', 'a']|['A', 'a', 'b', 'c']|HelloBe brief.HiBye"},
    {"{{ d|dictsort }}|{{ d|dictsort(reverse=true) }}|{{ d|dictsort(by='value') }}|{{ d|dictsort(true) }}|{{ d|items|list }}", "[('a', 1), ('b', 2), ('C', 3)]|[('C', 3), ('b', 2), ('a', 1)]|[('a', 1), ('b', 2), ('C', 3)]|[('C', 3), ('a', 1), ('b', 2)]|[('b', 2), ('a', 1), ('C', 3)]"},
    {"{{ words|first }}|{{ words|last }}|{{ words|reverse|list }}|{{ 'abc'|reverse }}|{{ words|join }}|{{ [1, none, 'a']|join('-') }}|{{ msgs|join(',', attribute='role') }}", "b|a|['a', 'c', 'A', 'b']|cba|bAca|1-None-a|system,user,assistant,user"},
    {"{{ [3, 1, 2]|max }}|{{ [3, 1, 2]|min }}|{{ words|max }}|{{ words|min(case_sensitive=true) }}|{{ [1, 2, 3]|sum }}|{{ [1.5, 2]|sum(start=10) }}|{{ []|max }}", "3|1|c|A|6|13.5|"},
    {"{{ '42'|int }}|{{ '4.7'|int }}|{{ 'x'|int(7) }}|{{ 3.9|int }}|{{ '0x1A'|int(0, 16) }}|{{ '3.25'|float }}|{{ 'x'|float }}|{{ 2.675|round(2) }}|{{ 2.5|round }}|{{ 3.5|round }}|{{ 2.1|round(0, 'ceil') }}|{{ 7|round }}", "42|4|7|3|26|3.25|0.0|2.67|2.0|4.0|3.0|7"},
    {"{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent('> ', blank=true) }}", "a\n    b\n\n    c|  a\n  b|a\n> \n> b"},
    {"{{ 'a b  c'|wordcount }}|{{ 'Hello, wörld_x 42'|wordcount }}|{{ 'x'|center(5) }}|{{ 'abc'|replace('b', 'B') }}|{{ 'aaa'|replace('a', 'b', 2) }}|{{ 42|string ~ '!' }}|{{ '%s-%d'|format('a', 3) }}|{{ '%05.1f|%-4s|%x'|format(3.14159, 'ab', 255) }}", "3|3|  x  |aBc|bba|42!|a-3|003.1|ab  |ff"},
    {"{{ [1, 2, 3, 4, 5]|batch(2)|list }}|{{ [1, 2, 3]|batch(2, 0)|list }}|{{ ['a', 'B']|map('upper')|list }}|{{ [1, 2, 3, 4]|select('odd')|list }}|{{ [1, 2, 3, 4]|reject('even')|list }}|{{ [0, 1, '', 'a']|select|list }}", "[[1, 2], [3, 4], [5]]|[[1, 2], [3, 0]]|['A', 'B']|[1, 3]|[1, 3]|[1, 'a']"},
    {"{{ 'foo bar baz qux'|truncate(9) }}|{{ 'foo bar baz qux'|truncate(9, true) }}|{{ 'foo bar baz qux'|truncate(11) }}|{{ '<b>x</b>  y'|striptags }}|{{ d|attr('keys') is defined }}|{{ d|attr('a') is defined }}", "foo...|foo ba...|foo bar baz qux|x y|True|False"},
    {"{{ 'x'|nosuchfilter }}", nullptr, "No filter named 'nosuchfilter'."},
    {"{{ {'a': 1}|items|list|length }}|{{ [3,1]|sort|first }}", "1|1"},
    {"{{ 1 is number }}{{ true is number }}{{ 1.5 is float }}{{ 1 is integer }}{{ true is integer }}{{ true is boolean }}{{ 'a' is string }}{{ d is mapping }}{{ [] is mapping }}", "TrueTrueTrueTrueFalseTrueTrueTrueFalse"},
    {"{{ 'a' is iterable }}{{ d is iterable }}{{ 1 is iterable }}{{ nothing is iterable }}{{ 'a' is sequence }}{{ d is sequence }}{{ nothing is sequence }}{{ none is sequence }}", "TrueTrueFalseTrueTrueTrueTrueFalse"},
    {"{{ none is none }}{{ nothing is undefined }}{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}{{ 'a' is in 'abc' }}{{ 2 is eq 2 }}{{ 2 is equalto 3 }}{{ 2 is ne 3 }}{{ 2 is lt 3 }}{{ 2 is gt 3 }}{{ 2 is ge 2 }}{{ 2 is le 1 }}", "TrueTrueTrueTrueTrueFalseTrueTrueFalseTrueTrueFalseTrueFalse"},
    {"{{ none is sameas none }}{{ true is sameas true }}{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ 'Abc' is lower }}{{ 'x'|safe is escaped }}{{ 'x' is escaped }}{{ range is callable }}{{ 'upper' is filter }}{{ 'odd' is test }}{{ t is true }}{{ t is false }}", "TrueTrueTrueTrueFalseTrueFalseTrueTrueTrueTrueFalse"},
    {"{{ 'x' is nosuchtest }}", nullptr, "No test named 'nosuchtest'."},
    {"{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ 'xxhixx'.strip('x') }}|{{ '\\n\\nhi\\n'.lstrip('\\n') }}|{{ 'hi\\n\\n'.rstrip('\\n') }}|{{ 'a,b,,c'.split(',') }}|{{ '  a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'a b c'.rsplit(' ', 1) }}|{{ 'a<x>b<x>c'.split('<x>')[-1] }}", "Hello World|Hello World  |  Hello World|hi|hi\n|hi|['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']|['a b', 'c']|c"},
    {"{{ s.startswith('  He') }}|{{ 'abc'.startswith(('x', 'a')) }}|{{ 'abc'.endswith('bc') }}|{{ u.upper() }}|{{ 'AbC'.lower() }}|{{ \"they're bill's\" .title() }}|{{ 'aaa'.replace('a', 'b', 1) }}|{{ 'abcabc'.find('c') }}|{{ u.find('w') }}|{{ 'abcabc'.rfind('x') }}|{{ 'abab'.count('ab') }}", "True|True|True|HÉLLO WÖRLD|abc|They'Re Bill'S|baa|2|6|-1|2"},
    {"{{ '-'.join(['a', 'b']) }}|{{ '{} and {}'.format(1, 'x') }}|{{ '{0}{1}{0}'.format('a', 'b') }}|{{ '{name}:{n:>4}'.format(name='x', n=7) }}|{{ 'a\\nb\\r\\nc'.splitlines() }}|{{ 'k=v=w'.partition('=') }}|{{ 'k=v=w'.rpartition('=') }}|{{ '42'.isdigit() }}|{{ 'ab'.isalpha() }}|{{ '  '.isspace() }}|{{ 'Ab'.islower() }}", "a-b|1 and x|aba|x:   7|['a', 'b', 'c']|('k', '=', 'v=w')|('k=v', '=', 'w')|True|True|True|False"},
    {"{{ 'ab'.zfill(5) }}|{{ 'ab'.center(6, '*') }}|{{ 'ab'.ljust(4, '.') }}|{{ 'ab'.rjust(4) }}|{{ 'prefix-x'.removeprefix('prefix-') }}|{{ 'ß'.upper() }}|{{ 'ǅ'|length }}", "000ab|**ab**|ab..|  ab|x|SS|1"},
    {"{{ d.get('a') }}|{{ d.get('zz') }}|{{ d.get('zz', 5) }}|{{ d.keys()|list }}|{{ d.values()|list }}|{{ d.items()|list }}|{{ [1, 2, 1].count(1) }}|{{ [1, 2].index(2) }}", "1|None|5|['b', 'a', 'C']|[2, 1, 3]|[('b', 2), ('a', 1), ('C', 3)]|2|1"},
    {"{{ [].append(1) }}", nullptr, "access to attribute 'append' of 'list' object is unsafe."},
    {"{{ d.update({}) }}", nullptr, "access to attribute 'update' of 'dict' object is unsafe."},
    {"{{ ''.__class__ }}|{{ d._x }}", "|"},
    {"{{ 'a'.split('') }}", nullptr, "empty separator"},
    {"{{ strftime_now('%Y-%m-%d %H:%M %A %B %d %b %j') }}|{{ dict(a=1, b='x') }}|{{ namespace(a=1).a }}|{% set j = joiner('+') %}{% for i in [1,2,3] %}{{ j() }}{{ i }}{% endfor %}", "2026-01-15 09:30 Thursday January 15 Jan 015|{'a': 1, 'b': 'x'}|1|1+2+3"},
    {"{% if true %}\n\n{{ raise_exception('boom') }}{% endif %}", nullptr, "boom"},
    {"  {% if true %}\nx\n  {% endif %}\ny", "x\ny"},
    {"a  {{- 'b' -}}  c|a  {%- if true -%}  b  {%- endif -%}  c", "abc|abc"},
    {"  {%+ if true %}x{% endif %}|{% if true +%}\nx{% endif %}", "  x|\nx"},
    {"a {# c #}b|  {# c #}\nb|  {#- c -#}  b|x\n", "a b|  b|b|x"},
    {"{% raw %}{{ x }}{% endraw %}|  {% raw %}  {% x %}{% endraw %}\n", "{{ x }}|    {% x %}"},
    {"x\n\n", "x\n"},
    {"  {{ 'x' }}\n  {% if true %}\ny{% endif %}", "  x\ny"},
    {"{% for i in [1,2] %}\n  {{ i }}\n{% endfor %}\nend", "  1\n  2\nend"},
};

TEST(Render, MatchesJinja2) {
  for (const Row& row : kRows) {
    SCOPED_TRACE(row.source);
    auto t = Template::parse(row.source);
    Result<std::string> out = t.ok() ? t->render(context(), fixed_time()) : Result<std::string>(t.status());
    if (row.output) {
      ASSERT_TRUE(out.ok()) << out.status().message();
      EXPECT_EQ(*out, row.output);
    } else {
      ASSERT_FALSE(out.ok()) << "rendered: " << *out;
      EXPECT_NE(out.status().message().find(row.error), std::string::npos) << out.status().message();
    }
  }
}

}  // namespace
}  // namespace zinc::chat
