// Tool calls in generated text: the syntax found in real templates, the streaming parser fed
// whole, one byte at a time and split at every point, text that is not a call kept verbatim, and
// OpenAI's JSON-text arguments reaching a template as objects.
#include "chat/tool_calls.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chat/conversation.h"
#include "chat/render_case.h"
#include "chat/template.h"
#include "gguf/file.h"
#include "support/test_data.h"
#include "tokenizer/tokenizer.h"

namespace zinc::chat {
namespace {

using nlohmann::ordered_json;

struct Parsed {
  std::string content;
  std::vector<ToolCall> calls;
};

// Feeds `pieces` in turn, then flushes.
Parsed run(ToolCallSyntax syntax, const std::vector<std::string>& pieces, const ordered_json& tools = nullptr) {
  ToolCallParser p(syntax, tools);
  Parsed out;
  auto take = [&](ToolCallParser::Delta d) {
    out.content += d.content;
    for (auto& c : d.calls) out.calls.push_back(std::move(c));
  };
  for (const auto& s : pieces) take(p.push(s));
  take(p.flush());
  EXPECT_EQ(p.found_calls(), !out.calls.empty());
  return out;
}

// The same text whole, byte by byte, and split in two at every point: the results must agree.
Parsed parse_every_way(ToolCallSyntax syntax, const std::string& text, const ordered_json& tools = nullptr) {
  const Parsed whole = run(syntax, {text}, tools);
  std::vector<std::string> bytes;
  for (char c : text) bytes.push_back(std::string(1, c));
  const Parsed single = run(syntax, bytes, tools);
  EXPECT_EQ(single.content, whole.content);
  EXPECT_EQ(single.calls.size(), whole.calls.size());
  for (size_t i = 0; i <= text.size(); ++i) {
    const Parsed split = run(syntax, {text.substr(0, i), text.substr(i)}, tools);
    EXPECT_EQ(split.content, whole.content) << "split at " << i;
    EXPECT_EQ(split.calls.size(), whole.calls.size()) << "split at " << i;
    for (size_t c = 0; c < std::min(split.calls.size(), whole.calls.size()); ++c) {
      EXPECT_EQ(split.calls[c].name, whole.calls[c].name);
      EXPECT_EQ(split.calls[c].arguments, whole.calls[c].arguments);
    }
  }
  return whole;
}

TEST(ToolCallSyntax, FoundInRealTemplates) {
  ZINC_REQUIRE_TEST_DATA();
  const std::vector<std::pair<std::string, ToolCallSyntax>> cases = {
      {"Qwen-Qwen2.5-7B-Instruct", ToolCallSyntax::kHermes},
      {"Qwen-Qwen3-0.6B", ToolCallSyntax::kHermes},
      {"Qwen-QwQ-32B", ToolCallSyntax::kHermes},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", ToolCallSyntax::kHermes},
      {"Qwen3-Coder", ToolCallSyntax::kQwenXml},
      {"Qwen3.5-4B", ToolCallSyntax::kQwenXml},
      {"meta-llama-Llama-3.1-8B-Instruct", ToolCallSyntax::kLlama3},
      {"meta-llama-Llama-3.2-3B-Instruct", ToolCallSyntax::kLlama3},
      {"google-gemma-2-2b-it", ToolCallSyntax::kNone},
      {"microsoft-Phi-3.5-mini-instruct", ToolCallSyntax::kNone},
      {"mistralai-Mistral-Nemo-Instruct-2407", ToolCallSyntax::kMistral},
      {"mistralai-Ministral-3-14B-Reasoning-2512", ToolCallSyntax::kMistral},
      {"openai-gpt-oss-120b", ToolCallSyntax::kNone},
  };
  for (const auto& [name, syntax] : cases) {
    auto bytes = test::read_file(test::data_path("templates/sources/" + name + ".jinja"));
    EXPECT_EQ(detect_tool_call_syntax(std::string(bytes.begin(), bytes.end())), syntax) << name;
  }
  EXPECT_EQ(detect_tool_call_syntax(kChatmlTemplate), ToolCallSyntax::kNone);
}

// Mistral: everything after [TOOL_CALLS] is calls, as Nemo's JSON array or Ministral's NAME[ARGS]{...}
// (with [CALL_ID] in some templates); text that is not calls comes back with its marker.
TEST(ToolCallParser, MistralCallsRunToTheEnd) {
  const Parsed nemo = parse_every_way(ToolCallSyntax::kMistral,
                                      "Let me look.[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": 1}, \"id\": \"abcdefghi\"}, "
                                      "{\"name\": \"g\", \"arguments\": \"{\\\"b\\\": 2}\"}]");
  EXPECT_EQ(nemo.content, "Let me look.");
  ASSERT_EQ(nemo.calls.size(), 2u);
  EXPECT_EQ(nemo.calls[0].name, "f");
  EXPECT_EQ(nemo.calls[0].arguments, R"({"a":1})");
  EXPECT_EQ(nemo.calls[1].arguments, R"({"b":2})");
  const Parsed ministral =
      parse_every_way(ToolCallSyntax::kMistral, "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]ping[CALL_ID]x1[ARGS]{}");
  EXPECT_EQ(ministral.content, "");
  ASSERT_EQ(ministral.calls.size(), 2u);
  EXPECT_EQ(ministral.calls[0].name, "get_weather");
  EXPECT_EQ(ministral.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(ministral.calls[1].name, "ping");
  EXPECT_EQ(ministral.calls[1].arguments, "{}");
  const std::string not_calls = "Hi [TOOL_CALLS]I cannot call anything";
  const Parsed plain = parse_every_way(ToolCallSyntax::kMistral, not_calls);
  EXPECT_TRUE(plain.calls.empty());
  EXPECT_EQ(plain.content, not_calls);
  EXPECT_EQ(tool_call_control_texts(ToolCallSyntax::kMistral).size(), 3u);
  EXPECT_TRUE(tool_call_control_texts(ToolCallSyntax::kHermes).empty());
}

TEST(ToolCallParser, HermesCallsAreTakenOutOfTheContent) {
  const std::string text =
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": \"{\\\"zone\\\": \\\"CET\\\"}\"}\n</tool_call>\n";
  const Parsed p = parse_every_way(ToolCallSyntax::kHermes, text);
  EXPECT_EQ(p.content, "Let me check.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(ordered_json::parse(p.calls[0].arguments), ordered_json({{"city", "Paris"}}));
  EXPECT_EQ(p.calls[1].name, "get_time");
  EXPECT_EQ(ordered_json::parse(p.calls[1].arguments), ordered_json({{"zone", "CET"}}));
  // Text after a call stays, with the whitespace before it.
  const Parsed q = parse_every_way(ToolCallSyntax::kHermes, "A\n<tool_call>{\"name\": \"f\"}</tool_call>\n\nB \n");
  EXPECT_EQ(q.content, "A\n\nB");
  ASSERT_EQ(q.calls.size(), 1u);
  EXPECT_EQ(q.calls[0].arguments, "{}");
}

TEST(ToolCallParser, TextWithoutCallsIsUnchanged) {
  for (const std::string text : {"Plain answer.\n\n", "  a < b and <tool isn't a tag\n", "<tool_cal", "\n", ""}) {
    const Parsed p = parse_every_way(ToolCallSyntax::kHermes, text);
    EXPECT_EQ(p.content, text);
    EXPECT_TRUE(p.calls.empty());
  }
}

TEST(ToolCallParser, WhatIsNotACallStaysContentVerbatim) {
  const std::string bad = "Hi <tool_call>\n{\"name\": 3}\n</tool_call> there";
  Parsed p = parse_every_way(ToolCallSyntax::kHermes, bad);
  EXPECT_EQ(p.content, bad);
  EXPECT_TRUE(p.calls.empty());
  const std::string open = "Hi <tool_call>{\"oops\"";
  p = parse_every_way(ToolCallSyntax::kHermes, open);
  EXPECT_EQ(p.content, open);
  const std::string deep = "<tool_call>{\"name\": \"f\", \"arguments\": " + std::string(200, '[') + std::string(200, ']') + "}</tool_call>";
  p = run(ToolCallSyntax::kHermes, {deep});
  EXPECT_EQ(p.content, deep);
}

TEST(ToolCallParser, AnUnclosedCallAtTheEndIsParsed) {
  const Parsed p = parse_every_way(ToolCallSyntax::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n");
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "f");
  EXPECT_EQ(p.calls[0].arguments, "{}");
}

TEST(ToolCallParser, QwenXmlParametersFollowTheToolSchema) {
  const ordered_json tools = ordered_json::array(
      {{{"type", "function"},
        {"function",
         {{"name", "book"},
          {"parameters",
           {{"type", "object"},
            {"properties", {{"code", {{"type", "string"}}}, {"seats", {{"type", "integer"}}}, {"opts", {{"type", "object"}}}}}}}}}}});
  const std::string text =
      "<tool_call>\n<function=book>\n<parameter=code>\n007\n</parameter>\n<parameter=seats>\n2\n</parameter>\n"
      "<parameter=opts>\n{\"window\": true}\n</parameter>\n<parameter=note>\nTwo lines\nof text\n</parameter>\n"
      "</function>\n</tool_call>";
  const Parsed p = parse_every_way(ToolCallSyntax::kQwenXml, text, tools);
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "book");
  const ordered_json args = ordered_json::parse(p.calls[0].arguments);
  EXPECT_EQ(args["code"], "007");  // a string by its schema, though it reads as a number
  EXPECT_EQ(args["seats"], 2);
  EXPECT_EQ(args["opts"], ordered_json({{"window", true}}));
  EXPECT_EQ(args["note"], "Two lines\nof text");  // no schema, not JSON: text
  // A body that is not a function stays content.
  const std::string bad = "<tool_call>\n{\"name\": \"book\"}\n</tool_call>";
  EXPECT_EQ(parse_every_way(ToolCallSyntax::kQwenXml, bad, tools).content, bad);
}

TEST(ToolCallParser, Llama3TakesAWholeJsonAnswer) {
  Parsed p = parse_every_way(ToolCallSyntax::kLlama3, "\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}");
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(ordered_json::parse(p.calls[0].arguments), ordered_json({{"city", "Paris"}}));
  // JSON that is not a call, and text, come through as they are.
  for (const std::string text : {"{\"answer\": 42}", "The answer is {\"name\": \"x\", \"parameters\": {}}", " \n"}) {
    p = parse_every_way(ToolCallSyntax::kLlama3, text);
    EXPECT_EQ(p.content, text);
    EXPECT_TRUE(p.calls.empty());
  }
}

TEST(ToolCallArguments, JsonTextBecomesAnObjectForTheTemplate) {
  ordered_json m = {{"role", "assistant"},
                    {"tool_calls", ordered_json::array({{{"id", "a"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", "{\"x\": 1}"}}}},
                                                        {{"id", "b"}, {"type", "function"}, {"function", {{"name", "g"}, {"arguments", "not json"}}}}})}};
  tool_call_arguments_to_objects(m);
  EXPECT_EQ(m["tool_calls"][0]["function"]["arguments"], ordered_json({{"x", 1}}));
  EXPECT_EQ(m["tool_calls"][1]["function"]["arguments"], "not json");
}

std::string read_text(const std::string& rel) {
  auto b = test::read_file(test::data_path(rel));
  return std::string(b.begin(), b.end());
}

// The shared tool-call case with its arguments as an OpenAI client sends them: JSON text.
ordered_json openai_round_trip_case() {
  ordered_json c;
  for (const auto& x : ordered_json::parse(read_text("templates/cases.json")))
    if (x["name"] == "tool_call_round_trip") c = x;
  for (auto& m : c["messages"])
    if (m.contains("tool_calls"))
      for (auto& tc : m["tool_calls"]) tc["function"]["arguments"] = tc["function"]["arguments"].dump();
  return c;
}

// Converted, the case renders with Llama 3.1's template (which tojson-s the arguments) exactly as
// the reference did from objects.
TEST(ToolCallArguments, OpenAiRoundTripRendersAsTheReference) {
  ZINC_REQUIRE_TEST_DATA();
  ordered_json c = openai_round_trip_case();
  ASSERT_TRUE(c.is_object());
  for (auto& m : c["messages"]) tool_call_arguments_to_objects(m);
  auto tmpl = Template::parse(read_text("templates/sources/meta-llama-Llama-3.1-8B-Instruct.jinja"));
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().message();
  auto rc = render_case_from_json(c);
  ASSERT_TRUE(rc.ok()) << rc.status().message();
  auto text = tmpl->render(rc->context, rc->options);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, read_text("templates/expected/meta-llama-Llama-3.1-8B-Instruct/tool_call_round_trip.txt"));
}

// ChatFormat converts them itself.
TEST(ToolCallArguments, ChatFormatPassesObjects) {
  ZINC_REQUIRE_TEST_DATA();
  auto file = gguf::open_file(test::data_path("vocab/ggml-vocab-llama3.gguf"));
  ASSERT_TRUE(file.ok());
  auto tok = tokenizer::Tokenizer::load(**file);
  ASSERT_TRUE(tok.ok());
  auto format = ChatFormat::from_source(read_text("templates/sources/meta-llama-Llama-3.1-8B-Instruct.jinja"), **tok,
                                        "<|begin_of_text|>", "<|eot_id|>");
  ASSERT_TRUE(format.ok()) << format.status().message();
  EXPECT_EQ(format->tool_syntax(), ToolCallSyntax::kLlama3);
  const ordered_json c = openai_round_trip_case();
  ChatRequest r;
  r.messages = c["messages"];
  r.tools = c["tools"];
  auto text = format->render(r);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_NE(text->find("{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"), std::string::npos) << *text;
}

}  // namespace
}  // namespace zinc::chat
