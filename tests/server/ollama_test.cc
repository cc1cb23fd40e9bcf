// Ollama's API on stories260K: /api/chat and /api/generate whole and as NDJSON (the same text,
// the last line done with counts and durations), num_predict, format "json", forced tool calls
// as objects, raw prompts, /api/tags, /api/show, /api/version, /api/ps, /api/embed and
// /api/embeddings, and {"error"} for bad requests.
#include <gtest/gtest.h>

#include <cmath>
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
  auto s = TestServer::start({}, kToolCallTemplate);
  const Json tools = Json::array({{{"type", "function"},
                                   {"function", {{"name", "get_weather"},
                                                 {"parameters", weather_parameters()}}}}});
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

  // Model management: pulling the served model succeeds at once (NDJSON, or one object); the
  // rest is refused with what the server has.
  Reply pull = post(*s, "/api/pull", Json{{"model", "stories:latest"}});
  ASSERT_EQ(pull.status, 200) << pull.text;
  EXPECT_EQ(pull.text, "{\"status\":\"success\"}\n");
  Reply pulled = post(*s, "/api/pull", Json{{"model", "stories"}, {"stream", false}});
  EXPECT_EQ(pulled.body, (Json{{"status", "success"}})) << pulled.text;
  Reply missing = post(*s, "/api/pull", Json{{"model", "llama3"}});
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(missing.body["error"].get<std::string>().find("stories"), std::string::npos) << missing.text;
  for (const char* path : {"/api/create", "/api/copy", "/api/push"}) {
    Reply refused = post(*s, path, Json{{"model", "x"}});
    EXPECT_EQ(refused.status, 501) << path;
    EXPECT_TRUE(refused.body["error"].is_string()) << refused.text;
  }
  Reply deleted = reply_of(s->client().Delete("/api/delete", "{\"model\":\"stories\"}", "application/json"));
  EXPECT_EQ(deleted.status, 501) << deleted.text;

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

// /api/embed: a vector of length 1 per input, the same as /v1/embeddings gives; "dimensions"
// keeps the first values, renormalised; over-long inputs are cut unless "truncate" is false;
// /api/embeddings (the older one) answers one "embedding"; /api/ps lists the loaded model.
TEST(Ollama, EmbeddingsAndRunningModels) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  Reply one = post(*s, "/api/embed", Json{{"model", "stories"}, {"input", "Once upon a time"}});
  ASSERT_EQ(one.status, 200) << one.text;
  EXPECT_EQ(one.body["model"], "stories");
  ASSERT_EQ(one.body["embeddings"].size(), 1u);
  const std::vector<float> v = one.body["embeddings"][0].get<std::vector<float>>();
  ASSERT_EQ(v.size(), 64u);  // stories260K's n_embd
  EXPECT_NEAR(norm2(v), 1.0, 1e-4);
  EXPECT_GT(one.body["prompt_eval_count"].get<int>(), 1);
  EXPECT_GT(one.body["total_duration"].get<int64_t>(), 0);
  const std::vector<float> openai =
      post(*s, "/v1/embeddings", Json{{"input", "Once upon a time"}}).body["data"][0]["embedding"].get<std::vector<float>>();
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], openai[i], 1e-6) << i;

  Reply two = post(*s, "/api/embed", Json{{"input", {"The cat sat", "Once upon a time"}}});
  ASSERT_EQ(two.status, 200) << two.text;
  ASSERT_EQ(two.body["embeddings"].size(), 2u);
  EXPECT_NE(two.body["embeddings"][0], two.body["embeddings"][1]);
  const std::vector<float> again = two.body["embeddings"][1].get<std::vector<float>>();
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(again[i], v[i], 1e-6) << i;
  Reply none = post(*s, "/api/embed", Json{{"model", "stories"}});
  ASSERT_EQ(none.status, 200) << none.text;
  EXPECT_TRUE(none.body["embeddings"].empty());

  Reply cut = post(*s, "/api/embed", Json{{"input", "Once upon a time"}, {"dimensions", 16}});
  ASSERT_EQ(cut.status, 200) << cut.text;
  const std::vector<float> c = cut.body["embeddings"][0].get<std::vector<float>>();
  ASSERT_EQ(c.size(), 16u);
  EXPECT_NEAR(norm2(c), 1.0, 1e-4);
  const double scale = std::sqrt(norm2(std::vector<float>(v.begin(), v.begin() + 16)));
  for (size_t i = 0; i < c.size(); ++i) EXPECT_NEAR(c[i], v[i] / scale, 1e-5) << i;

  // Longer than the test server's context: cut by default, refused with "truncate": false.
  std::string longer;
  for (int i = 0; i < 400; ++i) longer += "Once upon a time there was a cat. ";
  Reply truncated = post(*s, "/api/embed", Json{{"input", longer}});
  ASSERT_EQ(truncated.status, 200) << truncated.text;
  EXPECT_EQ(truncated.body["prompt_eval_count"].get<int64_t>(), s->scheduler->options().n_ctx);
  Reply refused = post(*s, "/api/embed", Json{{"input", longer}, {"truncate", false}});
  EXPECT_EQ(refused.status, 400);
  EXPECT_TRUE(refused.body["error"].is_string()) << refused.text;

  for (const Json& bad : {Json{{"input", 5}}, Json{{"input", {"a", 3}}}, Json{{"input", "a"}, {"truncate", "yes"}},
                          Json{{"input", "a"}, {"dimensions", 0}}, Json{{"input", "a"}, {"dimensions", 65}},
                          Json{{"input", "a"}, {"options", 3}}}) {
    Reply e = post(*s, "/api/embed", bad);
    EXPECT_EQ(e.status, 400) << bad;
    EXPECT_TRUE(e.body["error"].is_string()) << e.text;
  }

  Reply old = post(*s, "/api/embeddings", Json{{"model", "stories"}, {"prompt", "Once upon a time"}});
  ASSERT_EQ(old.status, 200) << old.text;
  const std::vector<float> o = old.body["embedding"].get<std::vector<float>>();
  ASSERT_EQ(o.size(), v.size());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(o[i], v[i], 1e-6) << i;
  EXPECT_TRUE(post(*s, "/api/embeddings", Json{{"prompt", ""}}).body["embedding"].empty());
  EXPECT_EQ(post(*s, "/api/embeddings", Json{{"prompt", 1}}).status, 400);

  Reply ps = get(*s, "/api/ps");
  ASSERT_EQ(ps.status, 200) << ps.text;
  ASSERT_EQ(ps.body["models"].size(), 1u);
  EXPECT_EQ(ps.body["models"][0]["name"], "stories");
  EXPECT_EQ(ps.body["models"][0]["details"]["format"], "gguf");
  EXPECT_TRUE(ps.body["models"][0]["expires_at"].is_string());
  EXPECT_EQ(ps.body["models"][0]["size_vram"], 0);  // the test server runs on the CPU
}

}  // namespace
}  // namespace zinc::server
