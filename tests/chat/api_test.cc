// The public API around the engine: contexts, injected time, cases in cases.json's shape,
// templates read from GGUF, and concurrent renders of one parsed template.
#include <gtest/gtest.h>

#include <ctime>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "chat/render_case.h"
#include "chat/template.h"
#include "gguf/writer.h"
#include "support/test_data.h"

namespace zinc::chat {
namespace {

using nlohmann::ordered_json;

TEST(Api, ContextMustBeAnObject) {
  auto t = Template::parse("{{ x }}");
  ASSERT_TRUE(t.ok());
  auto out = t->render(ordered_json::array({1, 2}));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "the template context must be a JSON object");
  EXPECT_EQ(t->render(ordered_json::object()).value(), "");
}

TEST(Api, ContextValuesKeepJsonTypes) {
  auto t = Template::parse("{{ a }}|{{ b }}|{{ c }}|{{ d }}|{{ e }}|{{ f }}|{{ g is none }}|{{ big }}");
  ASSERT_TRUE(t.ok());
  auto ctx = ordered_json::parse(R"({"a": 1, "b": 1.0, "c": true, "d": "s", "e": [1, "x"], "f": {"k": [null]},
                                     "g": null, "big": 18446744073709551615})");
  EXPECT_EQ(t->render(ctx).value(), "1|1.0|True|s|[1, 'x']|{'k': [None]}|True|1.8446744073709552e+19");
}

TEST(Api, GenerationBlocksRenderTheirBody) {
  // Hugging Face's {% generation %} marks assistant text for training masks; rendering keeps the body.
  auto t = Template::parse("a{% generation %}{% set x = 1 %}{{ x + 1 }}{% endgeneration %}b{{ x is defined }}");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->render(ordered_json::object()).value(), "a2bFalse");
}

TEST(Api, StrftimeNowUsesTheInjectedTime) {
  auto t = Template::parse("{{ strftime_now('%d %b %Y %H:%M:%S %a') }}");
  ASSERT_TRUE(t.ok());
  RenderOptions o;
  o.now = parse_local_time("2024-02-29T23:59:58").value();
  EXPECT_EQ(t->render(ordered_json::object(), o).value(), "29 Feb 2024 23:59:58 Thu");
  // Without one it is the current local time.
  auto year = Template::parse("{{ strftime_now('%Y') }}")->render(ordered_json::object()).value();
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  EXPECT_EQ(year, std::to_string(local.tm_year + 1900));
}

TEST(Api, ParsesLocalTimes) {
  auto tm = parse_local_time("2026-01-15T09:30:00");
  ASSERT_TRUE(tm.ok());
  EXPECT_EQ(tm->tm_year, 126);
  EXPECT_EQ(tm->tm_wday, 4);  // Thursday
  EXPECT_EQ(tm->tm_yday, 14);
  EXPECT_TRUE(parse_local_time("2026-01-15 09:30:00").ok());
  EXPECT_TRUE(parse_local_time("2026-01-15").ok());
  EXPECT_FALSE(parse_local_time("2026-02-30T00:00:00").ok());
  EXPECT_FALSE(parse_local_time("15/01/2026").ok());
  EXPECT_FALSE(parse_local_time("2026-01-15T25:00:00").ok());
}

TEST(Api, CaseDefaults) {
  auto c = render_case_from_json(ordered_json::parse(R"({"messages": [{"role": "user", "content": "hi"}]})"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->context.dump(),
            R"({"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":false,"bos_token":"<s>","eos_token":"</s>"})");
  EXPECT_FALSE(c->options.now.has_value());

  auto full = render_case_from_json(ordered_json::parse(R"({"name": "x", "messages": [], "tools": [{"type": "function"}],
      "add_generation_prompt": true, "context": {"enable_thinking": false, "bos_token": "B"}, "eos_token": "E",
      "now": "2026-01-15T09:30:00"})"), "<bos>", "<eos>");
  ASSERT_TRUE(full.ok()) << full.status().message();
  EXPECT_EQ(full->context["bos_token"], "B");  // context wins
  EXPECT_EQ(full->context["eos_token"], "E");
  EXPECT_EQ(full->context["enable_thinking"], false);
  EXPECT_EQ(full->context["tools"].size(), 1u);
  EXPECT_FALSE(full->context.contains("name"));
  ASSERT_TRUE(full->options.now.has_value());
  EXPECT_EQ(full->options.now->tm_hour, 9);

  EXPECT_EQ(render_case_from_json(ordered_json::parse(R"({"msgs": []})")).status().message(),
            "a case needs \"messages\": an array");
  EXPECT_FALSE(render_case_from_json(ordered_json::parse(R"({"messages": [], "now": "soon"})")).ok());
  EXPECT_FALSE(render_case_from_json(ordered_json::parse(R"({"messages": [], "context": []})")).ok());
}

TEST(Api, ReadsTheTemplateFromGguf) {
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::string("llama"));
  w.set("tokenizer.ggml.tokens", gguf::Value::string_array({"<unk>", "<|begin|>", "<|end|>"}));
  w.set("tokenizer.ggml.bos_token_id", gguf::Value::u32(1));
  w.set("tokenizer.ggml.eos_token_id", gguf::Value::u32(2));
  w.set("tokenizer.chat_template", gguf::Value::string("{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"));
  w.set("tokenizer.chat_template.tool_use", gguf::Value::string("tools"));
  const std::string path = test::temp_path("chat_template.gguf");
  ASSERT_TRUE(w.write(path).ok());
  auto f = gguf::open_file(path);
  ASSERT_TRUE(f.ok()) << f.status().message();

  auto t = model_template(**f);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->bos_token, "<|begin|>");
  EXPECT_EQ(t->eos_token, "<|end|>");
  auto c = render_case_from_json(ordered_json::parse(R"({"messages": [{"role": "user", "content": "hi"}]})"),
                                 t->bos_token, t->eos_token);
  EXPECT_EQ(Template::parse(t->source)->render(c->context).value(), "<|begin|>hi<|end|>");
  EXPECT_EQ(model_template(**f, "tool_use")->source, "tools");
  EXPECT_EQ(model_template(**f, "rag").status().message(), "the model has no tokenizer.chat_template.rag");
}

TEST(Api, OneTemplateRendersOnManyThreads) {
  auto t = Template::parse(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
      "[{{ m.role }}:{{ m.content|trim }}]{% endfor %}{{ ns.n }}");
  ASSERT_TRUE(t.ok());
  ordered_json ctx = {{"messages", ordered_json::array()}};
  for (int i = 0; i < 50; ++i) ctx["messages"].push_back({{"role", i % 2 ? "assistant" : "user"}, {"content", " m" + std::to_string(i)}});
  const std::string expected = t->render(ctx).value();
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      Template copy = *t;  // copies share the parsed program
      for (int i = 0; i < 200; ++i) mismatches[k] += copy.render(ctx).value() != expected;
    });
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
  EXPECT_EQ(expected.substr(0, 16), "[user:m0][assist");
}

}  // namespace
}  // namespace zinc::chat
