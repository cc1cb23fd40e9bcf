// Ollama's API on stories260K: /api/chat and /api/generate whole and as NDJSON (the same text,
// the last line done with counts and durations), num_predict, format "json", forced tool calls
// as objects, raw prompts, /api/tags, /api/show, /api/version, and {"error"} for bad requests.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "server_fixture.h"

namespace zinc::server {
namespace {

std::vector<Json> ndjson(const std::string& body) {
  std::vector<Json> lines;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(Json::parse(line, nullptr, false));
    EXPECT_TRUE(lines.back().is_object()) << line;
  }
  return lines;
}

Json chat_body(int num_predict, Json extra = Json::object()) {
  Json body = {{"model", "stories"},
               {"messages", Json::array({{{"role", "user"}, {"content", "Once upon a time"}}})},
               {"stream", false},
               {"options", {{"temperature", 0}, {"num_predict", num_predict}}}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

void expect_done_line(const Json& r, int eval_count) {
  EXPECT_EQ(r["done"], true) << r;
  EXPECT_EQ(r["eval_count"], eval_count) << r;
  EXPECT_GT(r["prompt_eval_count"].get<int>(), 0) << r;
  for (const char* k : {"total_duration", "prompt_eval_duration", "eval_duration"}) EXPECT_GT(r[k].get<int64_t>(), 0) << k;
  EXPECT_GE(r["total_duration"].get<int64_t>(), r["prompt_eval_duration"].get<int64_t>() + r["eval_duration"].get<int64_t>());
  EXPECT_EQ(r["created_at"].get<std::string>().back(), 'Z');
}

TEST(Ollama, ChatAndGenerateWholeAndStreamed) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  Reply r = post(*s, "/api/chat", chat_body(16));
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body["model"], "stories");
  EXPECT_EQ(r.body["message"]["role"], "assistant");
  const std::string text = r.body["message"]["content"];
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(r.body["done_reason"], "length");
  expect_done_line(r.body, 16);

  // Streamed by default, one JSON object a line.
  Json streamed_body = chat_body(16);
  streamed_body.erase("stream");
  const std::vector<Json> lines = ndjson(s->client().Post("/api/chat", streamed_body.dump(), "application/json")->body);
  ASSERT_GE(lines.size(), 2u);
  std::string streamed;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["done"], false);
    streamed += lines[i]["message"]["content"].get<std::string>();
  }
  EXPECT_EQ(streamed, text);
  expect_done_line(lines.back(), 16);
  EXPECT_EQ(lines.back()["done_reason"], "length");

  // /api/generate: the prompt as a user turn, or raw.
  Reply g = post(*s, "/api/generate", Json{{"model", "stories"}, {"prompt", "Once upon a time"}, {"stream", false},
                                           {"options", {{"temperature", 0}, {"num_predict", 16}}}});
  ASSERT_EQ(g.status, 200) << g.text;
  EXPECT_EQ(g.body["response"], text);
  expect_done_line(g.body, 16);
  Reply raw = post(*s, "/api/generate", Json{{"prompt", "Once upon a time"}, {"raw", true}, {"options", {{"temperature", 0}, {"num_predict", 8}}}});
  ASSERT_EQ(raw.status, 200);
  const std::vector<Json> raw_lines = ndjson(raw.text);
  ASSERT_FALSE(raw_lines.empty());
  EXPECT_TRUE(raw_lines[0].contains("response")) << raw.text;
  expect_done_line(raw_lines.back(), 8);

  // format: a schema (bounded, so the answer ends by itself), or "json".
  const Json schema = {{"type", "object"}, {"properties", {{"n", {{"enum", {1, 2}}}}}}, {"required", {"n"}}};
  Reply j = post(*s, "/api/chat", chat_body(60, {{"format", schema}}));
  ASSERT_EQ(j.status, 200) << j.text;
  const Json doc = Json::parse(j.body["message"]["content"].get<std::string>(), nullptr, false);
  EXPECT_TRUE(doc["n"] == 1 || doc["n"] == 2) << j.text;
  EXPECT_EQ(j.body["done_reason"], "stop");
  Reply any = post(*s, "/api/chat", chat_body(12, {{"format", "json"}}));
  ASSERT_EQ(any.status, 200) << any.text;
  EXPECT_EQ(any.body["message"]["content"].get<std::string>().rfind("{", 0), 0u) << any.text;
}

TEST(Ollama, ToolCallsModelsAndErrors) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start({}, "{% if false %}<tool_call>{% endif %}{% for m in messages %}{{ m.content }}\n{% endfor %}");
  const Json tools = Json::array({{{"type", "function"},
                                   {"function", {{"name", "get_weather"},
                                                 {"parameters", {{"type", "object"}, {"properties", {{"unit", {{"enum", {"c", "f"}}}}}}, {"required", {"unit"}}}}}}}});
  // Ollama has no tool_choice; the model calls or not. History with a call and its result renders.
  Json turn = chat_body(8, {{"tools", tools}});
  turn["messages"].push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", Json::array({{{"function", {{"name", "get_weather"}, {"arguments", {{"unit", "c"}}}}}}})}});
  turn["messages"].push_back({{"role", "tool"}, {"content", "Sunny"}, {"tool_name", "get_weather"}});
  Reply r = post(*s, "/api/chat", turn);
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_TRUE(r.body["message"]["content"].is_string());

  Reply tags = get(*s, "/api/tags");
  ASSERT_EQ(tags.status, 200);
  EXPECT_EQ(tags.body["models"][0]["name"], "stories");
  EXPECT_EQ(tags.body["models"][0]["details"]["format"], "gguf");
  Reply show = post(*s, "/api/show", Json{{"model", "stories"}});
  ASSERT_EQ(show.status, 200) << show.text;
  EXPECT_TRUE(show.body["capabilities"].is_array());
  EXPECT_EQ(post(*s, "/api/show", Json{{"model", "llama3"}}).status, 404);
  Reply version = get(*s, "/api/version");
  EXPECT_TRUE(version.body["version"].is_string()) << version.text;

  for (const Json& bad : {Json{{"messages", Json::array()}}, Json{{"messages", "hi"}},
                          chat_body(4, {{"format", 5}}), chat_body(4, {{"think", 3}}),
                          chat_body(4, {{"messages", Json::array({{{"role", "user"}, {"content", "x"}, {"images", {"AAAA"}}}})}}),
                          chat_body(4, {{"options", {{"temperature", "hot"}}}})}) {
    Reply e = post(*s, "/api/chat", bad);
    EXPECT_EQ(e.status, 400) << bad;
    EXPECT_TRUE(e.body["error"].is_string()) << e.text;
  }
  Reply e = post(*s, "/api/generate", Json{{"prompt", 5}});
  EXPECT_EQ(e.status, 400);
  EXPECT_TRUE(e.body["error"].is_string()) << e.text;
}

}  // namespace
}  // namespace zinc::server
