// The HTTP API against a real server on stories260K: response and chunk shapes, streaming equal
// to the whole answer, stop strings, seeds, logprobs, prefix reuse in usage, and the endpoints.
#include <gtest/gtest.h>

#include <regex>

#include <cstring>
#include <set>
#include <thread>

#include "engine/json_constraint.h"
#include "server_fixture.h"

namespace zinc::server {
namespace {

Json completion(const std::string& prompt, int max_tokens, Json extra = Json::object()) {
  Json j = {{"model", "stories"}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}};
  for (auto& [k, v] : extra.items()) j[k] = v;
  return j;
}

Json chat(const std::string& user, int max_tokens, Json extra = Json::object()) {
  Json j = {{"messages", Json::array({{{"role", "user"}, {"content", user}}})}, {"max_tokens", max_tokens}, {"temperature", 0}};
  for (auto& [k, v] : extra.items()) j[k] = v;
  return j;
}

TEST(Api, HealthModelsMetricsAndPage) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  auto c = s->client();
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(Json::parse(h->body)["status"], "ok");
  auto m = c.Get("/v1/models");
  ASSERT_TRUE(m);
  Json models = Json::parse(m->body);
  EXPECT_EQ(models["object"], "list");
  EXPECT_EQ(models["data"][0]["id"], "stories");
  EXPECT_EQ(models["data"][0]["object"], "model");
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<html"), std::string::npos);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  post(*s, "/v1/completions", completion("Once upon a time", 4));
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  for (const char* name : {"zinc_requests_total{endpoint=\"/health\",status=\"200\"} 1", "zinc_prompt_tokens_total",
                           "zinc_completion_tokens_total 4", "zinc_time_to_first_token_seconds_bucket", "zinc_time_per_output_token_seconds_count",
                           "zinc_kv_pages_used", "zinc_queue_depth 0", "zinc_prompt_tokens_cached_total"})
    EXPECT_NE(metrics->body.find(name), std::string::npos) << name << "\n" << metrics->body;
}

TEST(Api, CompletionShapeAndStreamingMatch) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  Reply r = post(*s, "/v1/completions", completion("Once upon a time", 24));
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body["object"], "text_completion");
  EXPECT_EQ(r.body["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(r.body["model"], "stories");
  EXPECT_TRUE(r.body["created"].is_number_integer());
  const Json& choice = r.body["choices"][0];
  EXPECT_EQ(choice["index"], 0);
  EXPECT_EQ(choice["finish_reason"], "length");
  EXPECT_TRUE(choice["logprobs"].is_null());
  const std::string text = choice["text"];
  EXPECT_GT(text.size(), 20u);
  EXPECT_EQ(r.body["usage"]["completion_tokens"], 24);
  EXPECT_EQ(r.body["usage"]["total_tokens"], r.body["usage"]["prompt_tokens"].get<int>() + 24);
  EXPECT_TRUE(r.body["usage"]["prompt_tokens_details"]["cached_tokens"].is_number_integer());

  Reply st = post(*s, "/v1/completions", completion("Once upon a time", 24, {{"stream", true}, {"stream_options", {{"include_usage", true}}}}));
  ASSERT_EQ(st.status, 200);
  Sse sse = parse_sse(st.text);
  EXPECT_TRUE(sse.done);
  ASSERT_GE(sse.events.size(), 3u);
  std::string streamed;
  for (size_t i = 0; i + 1 < sse.events.size(); ++i) {
    const Json& e = sse.events[i];
    EXPECT_EQ(e["object"], "text_completion");
    ASSERT_EQ(e["choices"].size(), 1u);
    streamed += e["choices"][0]["text"].get<std::string>();
    EXPECT_TRUE(e["usage"].is_null());
  }
  EXPECT_EQ(streamed, text);
  EXPECT_EQ(sse.events[sse.events.size() - 2]["choices"][0]["finish_reason"], "length");
  const Json& last = sse.events.back();  // the usage chunk
  EXPECT_TRUE(last["choices"].empty());
  EXPECT_EQ(last["usage"]["completion_tokens"], 24);
}

TEST(Api, StopStringsCutTheTextInBothModes) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  const std::string full = post(*s, "/v1/completions", completion("Once upon a time", 40)).body["choices"][0]["text"];
  ASSERT_GT(full.size(), 30u);
  const std::string stop = full.substr(15, 4);
  const std::string expected = full.substr(0, full.find(stop));
  for (bool stream : {false, true}) {
    Reply r = post(*s, "/v1/completions", completion("Once upon a time", 40, {{"stop", Json::array({stop, "zzzz"})}, {"stream", stream}}));
    ASSERT_EQ(r.status, 200);
    std::string text, finish;
    if (stream) {
      for (const auto& e : parse_sse(r.text).events) {
        text += e["choices"][0]["text"].get<std::string>();
        if (!e["choices"][0]["finish_reason"].is_null()) finish = e["choices"][0]["finish_reason"];
      }
    } else {
      text = r.body["choices"][0]["text"];
      finish = r.body["choices"][0]["finish_reason"];
    }
    EXPECT_EQ(text, expected) << "stream " << stream << " stop '" << stop << "'";
    EXPECT_EQ(finish, "stop");
  }
}

TEST(Api, SeedsReproduce) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  auto sample = [&](int seed) {
    return post(*s, "/v1/completions", completion("Once upon a time", 30, {{"temperature", 1.0}, {"seed", seed}})).body["choices"][0]["text"].get<std::string>();
  };
  const std::string a = sample(42), b = sample(42);
  EXPECT_EQ(a, b);
  bool differs = false;
  for (int seed = 1; seed < 5 && !differs; ++seed) differs = sample(seed) != a;
  EXPECT_TRUE(differs);
}

TEST(Api, ChatShapesStreamingAndCachedSecondTurn) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  Reply r = post(*s, "/v1/chat/completions", chat("Tell me a story about a cat.", 16));
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body["object"], "chat.completion");
  EXPECT_EQ(r.body["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  const Json& msg = r.body["choices"][0]["message"];
  EXPECT_EQ(msg["role"], "assistant");
  EXPECT_TRUE(msg["content"].is_string());
  EXPECT_FALSE(msg.contains("reasoning_content"));
  const std::string answer = msg["content"];

  Reply st = post(*s, "/v1/chat/completions", chat("Tell me a story about a cat.", 16, {{"stream", true}}));
  Sse sse = parse_sse(st.text);
  ASSERT_TRUE(sse.done);
  ASSERT_GE(sse.events.size(), 2u);
  EXPECT_EQ(sse.events[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(sse.events[0]["choices"][0]["delta"]["role"], "assistant");
  std::string streamed;
  for (const auto& e : sse.events) streamed += e["choices"][0]["delta"].value("content", "");
  EXPECT_EQ(streamed, answer);
  EXPECT_EQ(sse.events.back()["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(sse.events.back()["choices"][0]["delta"].empty());

  // The second turn reuses the first turn's pages.
  Json turn2 = {{"messages", Json::array({{{"role", "user"}, {"content", "Tell me a story about a cat."}},
                                          {{"role", "assistant"}, {"content", answer}},
                                          {{"role", "user"}, {"content", "And then?"}}})},
                {"max_tokens", 8}, {"temperature", 0}};
  Reply r2 = post(*s, "/v1/chat/completions", turn2);
  ASSERT_EQ(r2.status, 200) << r2.text;
  EXPECT_GT(r2.body["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 10) << r2.text;
}

// A hybrid model's state is snapshotted where a chat's history ends, so the next turn (history,
// answer, new message) resumes there; the same messages again (a regenerated answer) too.
TEST(Api, HybridChatsResumeFromTheHistorySnapshot) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start({}, "", 2, 256, "models/qwen35-f32.gguf");
  Json turn1 = {{"messages", Json::array({{{"role", "system"}, {"content", "You tell short stories."}},
                                          {{"role", "user"}, {"content", "A story about a cat."}}})},
                {"max_tokens", 6}, {"temperature", 0}};
  Reply r1 = post(*s, "/v1/chat/completions", turn1);
  ASSERT_EQ(r1.status, 200) << r1.text;
  EXPECT_EQ(r1.body["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  const int prompt1 = r1.body["usage"]["prompt_tokens"];
  Reply again = post(*s, "/v1/chat/completions", turn1);
  ASSERT_EQ(again.status, 200) << again.text;
  const int history = again.body["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GT(history, prompt1 / 2);
  EXPECT_LT(history, prompt1);  // the generation prompt runs again
  EXPECT_EQ(again.body["choices"][0]["message"]["content"], r1.body["choices"][0]["message"]["content"]);

  Json turn2 = turn1;
  turn2["messages"].push_back({{"role", "assistant"}, {"content", r1.body["choices"][0]["message"]["content"]}});
  turn2["messages"].push_back({{"role", "user"}, {"content", "And then?"}});
  Reply r2 = post(*s, "/v1/chat/completions", turn2);
  ASSERT_EQ(r2.status, 200) << r2.text;
  EXPECT_EQ(r2.body["usage"]["prompt_tokens_details"]["cached_tokens"], history);
  auto fresh = TestServer::start({}, "", 1, 256, "models/qwen35-f32.gguf");
  Reply f2 = post(*fresh, "/v1/chat/completions", turn2);
  ASSERT_EQ(f2.status, 200) << f2.text;
  EXPECT_EQ(f2.body["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  EXPECT_EQ(r2.body["choices"][0]["message"]["content"], f2.body["choices"][0]["message"]["content"]);
}

TEST(Api, ReasoningGoesToReasoningContent) {
  ZINC_REQUIRE_TEST_DATA();
  // A template that opens the thinking block in the prompt: everything generated is reasoning
  // until </think> (which stories260K never writes).
  auto s = TestServer::start({}, "{% for m in messages %}{{ m.content }}\n{% endfor %}<think>\n");
  Reply r = post(*s, "/v1/chat/completions", chat("Once upon a time", 12));
  ASSERT_EQ(r.status, 200) << r.text;
  const Json& msg = r.body["choices"][0]["message"];
  EXPECT_GT(msg["reasoning_content"].get<std::string>().size(), 5u) << r.text;
  EXPECT_EQ(msg["content"], "");
  Sse sse = parse_sse(post(*s, "/v1/chat/completions", chat("Once upon a time", 12, {{"stream", true}})).text);
  std::string reasoning;
  for (const auto& e : sse.events) reasoning += e["choices"][0]["delta"].value("reasoning_content", "");
  EXPECT_EQ(reasoning, msg["reasoning_content"]);
}

// With tools and a template whose model writes <tool_call> blocks, answers are read for calls;
// stories260K writes none, so its answers must come through whole, streamed as not, and a
// conversation holding an earlier call (arguments as JSON text) renders.
TEST(Api, ToolsLeaveAnswersWithoutCallsWhole) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start({}, kToolCallTemplate);
  const Json tools = Json::array(
      {{{"type", "function"},
        {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}}}}});
  Reply r = post(*s, "/v1/chat/completions", chat("Once upon a time", 12, {{"tools", tools}}));
  ASSERT_EQ(r.status, 200) << r.text;
  const Json& msg = r.body["choices"][0]["message"];
  ASSERT_TRUE(msg["content"].is_string()) << r.text;
  EXPECT_GT(msg["content"].get<std::string>().size(), 5u) << r.text;
  EXPECT_FALSE(msg.contains("tool_calls"));
  EXPECT_EQ(r.body["choices"][0]["finish_reason"], "length");
  Sse sse = parse_sse(post(*s, "/v1/chat/completions", chat("Once upon a time", 12, {{"tools", tools}, {"stream", true}})).text);
  ASSERT_TRUE(sse.done);
  std::string streamed;
  for (const auto& e : sse.events) {
    streamed += e["choices"][0]["delta"].value("content", "");
    EXPECT_FALSE(e["choices"][0]["delta"].contains("tool_calls"));
  }
  EXPECT_EQ(streamed, msg["content"]);
  Reply none = post(*s, "/v1/chat/completions", chat("Once upon a time", 12, {{"tools", tools}, {"tool_choice", "none"}}));
  ASSERT_EQ(none.status, 200) << none.text;
  EXPECT_EQ(none.body["choices"][0]["message"]["content"], msg["content"]);

  Json history = {{"messages",
                   Json::array({{{"role", "user"}, {"content", "Weather in Paris?"}},
                                {{"role", "assistant"},
                                 {"content", nullptr},
                                 {"tool_calls", Json::array({{{"id", "call_1"},
                                                              {"type", "function"},
                                                              {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\"}"}}}}})}},
                                {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "18 C"}}})},
                  {"tools", tools},
                  {"max_tokens", 4}};
  EXPECT_EQ(post(*s, "/v1/chat/completions", history).status, 200);
}

// JSON mode holds stories260K to JSON: what it writes, streamed or not and on both endpoints, is
// a JSON object or the beginning of one (cut by max_tokens), and a finished one parses.
TEST(Api, JsonObjectResponseFormat) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  const Json format = {{"response_format", {{"type", "json_object"}}}};
  auto check = [](const std::string& text, const std::string& finish) {
    engine::JsonPrefix prefix;
    EXPECT_TRUE(prefix.feed(text)) << text;
    EXPECT_EQ(prefix.complete(), finish == "stop") << finish << ": " << text;
    if (finish == "stop") {
      EXPECT_TRUE(Json::parse(text, nullptr, false).is_object()) << text;
    }
    EXPECT_EQ(text.substr(0, 1), "{");
  };
  for (int max_tokens : {3, 48}) {
    Reply r = post(*s, "/v1/chat/completions", chat("Once upon a time", max_tokens, format));
    ASSERT_EQ(r.status, 200) << r.text;
    const std::string content = r.body["choices"][0]["message"]["content"];
    check(content, r.body["choices"][0]["finish_reason"]);
    Sse sse = parse_sse(post(*s, "/v1/chat/completions", chat("Once upon a time", max_tokens, {{"response_format", {{"type", "json_object"}}}, {"stream", true}})).text);
    ASSERT_TRUE(sse.done);
    std::string streamed;
    for (const auto& e : sse.events) streamed += e["choices"][0]["delta"].value("content", "");
    EXPECT_EQ(streamed, content);
    Reply c = post(*s, "/v1/completions", completion("Once upon a time", max_tokens, format));
    ASSERT_EQ(c.status, 200) << c.text;
    check(c.body["choices"][0]["text"], c.body["choices"][0]["finish_reason"]);
  }
}

// A constrained answer is content even where the prompt opens a <think> block.
TEST(Api, JsonModeAnswersAreContentAfterAnOpenThinkBlock) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start({}, "{% for m in messages %}{{ m.content }}\n{% endfor %}<think>\n");
  Reply r = post(*s, "/v1/chat/completions", chat("Once upon a time", 12, {{"response_format", {{"type", "json_object"}}}}));
  ASSERT_EQ(r.status, 200) << r.text;
  const Json& msg = r.body["choices"][0]["message"];
  EXPECT_EQ(msg["content"].get<std::string>().substr(0, 1), "{") << r.text;
  EXPECT_FALSE(msg.contains("reasoning_content")) << r.text;
}

// Structured outputs hold stories260K to a schema. Every value of this one is bounded (no free
// strings or numbers), so whatever the model prefers, a whole conforming object comes within
// max_tokens.
TEST(Api, JsonSchemaResponseFormat) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  const Json schema = {{"type", "object"},
                       {"properties",
                        {{"kind", {{"enum", {"cat", "dog"}}}},
                         {"n", {{"enum", {1, 12, 123}}}},
                         {"tags", {{"type", "array"}, {"items", {{"enum", {"a", "b", 3}}}}, {"maxItems", 3}}},
                         {"ok", {{"type", {"boolean", "null"}}}}}},
                       {"required", {"kind", "n", "tags", "ok"}},
                       {"additionalProperties", false}};
  const Json format = {{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "person"}, {"strict", true}, {"schema", schema}}}}}};
  Reply r = post(*s, "/v1/chat/completions", chat("Once upon a time", 400, format));
  ASSERT_EQ(r.status, 200) << r.text;
  const std::string content = r.body["choices"][0]["message"]["content"];
  ASSERT_EQ(r.body["choices"][0]["finish_reason"], "stop") << content;
  const Json doc = Json::parse(content, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << content;
  ASSERT_EQ(doc.size(), 4u) << content;
  EXPECT_TRUE(doc["kind"] == "cat" || doc["kind"] == "dog") << content;
  EXPECT_TRUE(doc["n"] == 1 || doc["n"] == 12 || doc["n"] == 123) << content;
  EXPECT_LE(doc["tags"].size(), 3u);
  for (const auto& t : doc["tags"]) EXPECT_TRUE(t == "a" || t == "b" || t == 3) << content;
  EXPECT_TRUE(doc["ok"].is_boolean() || doc["ok"].is_null());
  Sse sse = parse_sse(post(*s, "/v1/chat/completions", chat("Once upon a time", 400, {{"response_format", format["response_format"]}, {"stream", true}})).text);
  std::string streamed;
  for (const auto& e : sse.events) streamed += e["choices"][0]["delta"].value("content", "");
  EXPECT_EQ(streamed, content);
}

// llama.cpp's `grammar` (GBNF) holds chat and completion answers to its language, streamed or not;
// the request ends where nothing can follow.
TEST(Api, GrammarHoldsTheAnswer) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  const std::string grammar = "root ::= answer (\", \" answer){0,2} \".\"\nanswer ::= \"yes\" | \"no\" | [0-9]{1,3}\n";
  const std::regex language("(yes|no|[0-9]{1,3})(, (yes|no|[0-9]{1,3})){0,2}\\.");
  Reply r = post(*s, "/v1/chat/completions", chat("Once upon a time", 60, {{"grammar", grammar}, {"temperature", 0.9}, {"seed", 4}}));
  ASSERT_EQ(r.status, 200) << r.text;
  const std::string content = r.body["choices"][0]["message"]["content"];
  EXPECT_TRUE(std::regex_match(content, language)) << content;
  EXPECT_EQ(r.body["choices"][0]["finish_reason"], "stop");
  Sse sse = parse_sse(post(*s, "/v1/completions", Json{{"prompt", "Once upon a time"}, {"max_tokens", 60}, {"grammar", grammar},
                                                       {"temperature", 0}, {"stream", true}}).text);
  std::string streamed;
  for (const auto& e : sse.events) streamed += e["choices"][0].value("text", "");
  EXPECT_TRUE(std::regex_match(streamed, language)) << streamed;
}

// Token references in a grammar (llama.cpp's `<[id]>` and `<text>`): the answer holds exactly
// those tokens, a control token among them; ids past the vocabulary and texts of several tokens
// are 400s naming the grammar.
TEST(Api, GrammarTokenReferences) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  Reply tokens = post(*s, "/tokenize", Json{{"content", "Once upon"}, {"with_pieces", true}});
  ASSERT_EQ(tokens.status, 200) << tokens.text;
  const Json last = tokens.body["tokens"].back();
  const int id = last["id"];
  const std::string piece = last["piece"];
  const std::string grammar = "root ::= \"ok\" <[" + std::to_string(id) + "]> <s> \"end\"\n";
  Reply r = post(*s, "/v1/completions", Json{{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"grammar", grammar},
                                             {"temperature", 0.9}, {"seed", 7}, {"logprobs", 1}});
  ASSERT_EQ(r.status, 200) << r.text;
  const Json& choice = r.body["choices"][0];
  EXPECT_EQ(choice["text"], "ok" + piece + "end");
  EXPECT_EQ(choice["finish_reason"], "stop");
  std::vector<std::string> drawn = choice["logprobs"]["tokens"];
  const auto at = std::find(drawn.begin(), drawn.end(), piece);
  ASSERT_NE(at, drawn.end()) << r.text;
  ASSERT_NE(at + 1, drawn.end()) << r.text;
  EXPECT_EQ(*(at + 1), "<s>") << r.text;  // a control token: in the answer's tokens, not in its text
  const Json& offsets = choice["logprobs"]["text_offset"];
  const size_t k = size_t(at - drawn.begin());
  EXPECT_EQ(offsets[k + 1], offsets[k + 2]) << r.text;

  for (const auto& [bad, why] : std::vector<std::pair<std::string, std::string>>{
           {"root ::= <[100000]>\n", "not in the vocabulary"}, {"root ::= <upon a time>\n", "not one token"}}) {
    Reply e = post(*s, "/v1/completions", Json{{"prompt", "Hi"}, {"grammar", bad}});
    EXPECT_EQ(e.status, 400) << bad;
    EXPECT_EQ(e.body["error"]["param"], "grammar") << e.text;
    EXPECT_NE(e.body["error"]["message"].get<std::string>().find(why), std::string::npos) << e.text;
  }
}

// A forced call (tool_choice "required" or a named function) with a template whose model writes
// <tool_call> blocks: stories260K comes back with a call of a given tool, its arguments following
// that tool's parameters (bounded ones, so the call ends within max_tokens), streamed or not.
TEST(Api, ForcedToolCalls) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start({}, kToolCallTemplate);
  const Json tools = Json::array(
      {{{"type", "function"},
        {"function",
         {{"name", "get_weather"},
          {"parameters", weather_parameters()}}}},
       {{"type", "function"}, {"function", {{"name", "ping"}}}}});
  for (const Json& choice : {Json("required"), Json({{"type", "function"}, {"function", {{"name", "get_weather"}}}})}) {
    Reply r = post(*s, "/v1/chat/completions", chat("Once upon a time", 200, {{"tools", tools}, {"tool_choice", choice}}));
    ASSERT_EQ(r.status, 200) << r.text;
    const Json& choice0 = r.body["choices"][0];
    EXPECT_EQ(choice0["finish_reason"], "tool_calls") << r.text;
    const Json& msg = choice0["message"];
    EXPECT_TRUE(msg["content"].is_null()) << r.text;
    ASSERT_EQ(msg["tool_calls"].size(), 1u) << r.text;
    const Json& call = msg["tool_calls"][0];
    EXPECT_EQ(call["type"], "function");
    EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
    const std::string name = call["function"]["name"];
    const Json args = Json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
    if (choice.is_object()) {
      EXPECT_EQ(name, "get_weather");
    }
    if (name == "get_weather") {
      EXPECT_TRUE(args == Json({{"unit", "c"}}) || args == Json({{"unit", "f"}})) << r.text;
    } else {
      EXPECT_EQ(name, "ping");
      EXPECT_EQ(args, Json::object()) << r.text;
    }
    Sse sse = parse_sse(post(*s, "/v1/chat/completions", chat("Once upon a time", 200, {{"tools", tools}, {"tool_choice", choice}, {"stream", true}})).text);
    ASSERT_TRUE(sse.done);
    Json streamed = Json::array();
    for (const auto& e : sse.events)
      for (const auto& c : e["choices"][0]["delta"].value("tool_calls", Json::array())) streamed.push_back(c);
    ASSERT_EQ(streamed.size(), 1u) << sse.events.size();
    EXPECT_EQ(streamed[0]["index"], 0);
    EXPECT_EQ(streamed[0]["function"]["name"], name);
    EXPECT_EQ(streamed[0]["function"]["arguments"], call["function"]["arguments"]);
    EXPECT_EQ(sse.events.back()["choices"][0]["finish_reason"], "tool_calls");
  }
}

// The same with a template whose model writes Qwen's XML calls (Qwen3-Coder, Qwen3.5): string
// parameters come back as their text, the others as the JSON their schemas ask for.
TEST(Api, ForcedToolCallsInQwenXml) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start({}, "{% if false %}<tool_call><function={% endif %}{% for m in messages %}{{ m.content }}\n{% endfor %}");
  const Json params = Json::parse(R"({"type": "object", "properties": {
      "unit": {"type": "string", "enum": ["c", "f"]}, "city": {"type": "string", "maxLength": 6},
      "days": {"type": "integer", "enum": [1, 2, 3]}, "detail": {"type": "boolean"}}, "required": ["unit", "city"]})");
  const Json tools = Json::array({{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", params}}}}});
  const Json choice = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
  Reply r = post(*s, "/v1/chat/completions", chat("Once upon a time", 300, {{"tools", tools}, {"tool_choice", choice}}));
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body["choices"][0]["finish_reason"], "tool_calls") << r.text;
  const Json& calls = r.body["choices"][0]["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 1u) << r.text;
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  const Json args = Json::parse(calls[0]["function"]["arguments"].get<std::string>(), nullptr, false);
  ASSERT_TRUE(args.is_object()) << r.text;
  EXPECT_TRUE(args["unit"] == "c" || args["unit"] == "f") << r.text;
  ASSERT_TRUE(args["city"].is_string()) << r.text;
  EXPECT_LE(args["city"].get<std::string>().size(), 6u * 4) << r.text;
  if (args.contains("days")) {
    EXPECT_TRUE(args["days"] == 1 || args["days"] == 2 || args["days"] == 3) << r.text;
  }
  if (args.contains("detail")) {
    EXPECT_TRUE(args["detail"].is_boolean()) << r.text;
  }
  for (const auto& [key, value] : args.items()) EXPECT_TRUE(params["properties"].contains(key)) << key;
  Sse sse = parse_sse(post(*s, "/v1/chat/completions", chat("Once upon a time", 300, {{"tools", tools}, {"tool_choice", choice}, {"stream", true}})).text);
  ASSERT_TRUE(sse.done);
  Json streamed = Json::array();
  for (const auto& e : sse.events)
    for (const auto& c : e["choices"][0]["delta"].value("tool_calls", Json::array())) streamed.push_back(c);
  ASSERT_EQ(streamed.size(), 1u);
  EXPECT_EQ(streamed[0]["function"]["arguments"], calls[0]["function"]["arguments"]);
}

// logit_bias: +100 on one token makes it every token drawn, whatever the sampler settings.
TEST(Api, LogitBias) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  std::vector<std::string> pieces;
  for (const char* id : {"300", "301"}) {
    Reply r = post(*s, "/v1/chat/completions", chat("Once upon a time", 5, {{"logprobs", true}, {"temperature", 1.0}, {"logit_bias", {{id, 100}}}}));
    ASSERT_EQ(r.status, 200) << r.text;
    const Json& content = r.body["choices"][0]["logprobs"]["content"];
    ASSERT_EQ(content.size(), 5u) << r.text;
    for (const auto& t : content) EXPECT_EQ(t["token"], content[0]["token"]) << r.text;
    pieces.push_back(content[0]["token"]);
  }
  EXPECT_NE(pieces[0], pieces[1]);
}

// n choices: each drawn apart (seed + i), indexed, the prompt counted once; streamed, every chunk
// names its choice and each choice ends with its own finish_reason.
TEST(Api, SeveralChoices) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  const Json opts = {{"n", 3}, {"temperature", 1.0}, {"seed", 7}};
  Reply r = post(*s, "/v1/chat/completions", chat("Once upon a time", 8, opts));
  ASSERT_EQ(r.status, 200) << r.text;
  const Json& choices = r.body["choices"];
  ASSERT_EQ(choices.size(), 3u) << r.text;
  std::set<std::string> texts;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(choices[i]["index"], i);
    EXPECT_EQ(choices[i]["finish_reason"], "length");
    texts.insert(choices[i]["message"]["content"].get<std::string>());
  }
  EXPECT_GT(texts.size(), 1u) << r.text;  // different draws
  EXPECT_EQ(r.body["usage"]["completion_tokens"], 24) << r.text;
  Reply one = post(*s, "/v1/chat/completions", chat("Once upon a time", 8, {{"temperature", 1.0}, {"seed", 7}}));
  EXPECT_EQ(one.body["usage"]["prompt_tokens"], r.body["usage"]["prompt_tokens"]);
  EXPECT_EQ(one.body["choices"][0]["message"]["content"], choices[0]["message"]["content"]);  // choice 0 keeps the seed

  Json stream_opts = opts;
  stream_opts["stream"] = true;
  stream_opts["stream_options"] = {{"include_usage", true}};
  Sse sse = parse_sse(post(*s, "/v1/chat/completions", chat("Once upon a time", 8, stream_opts)).text);
  ASSERT_TRUE(sse.done);
  std::vector<std::string> streamed(3);
  std::vector<int> finishes(3, 0);
  for (const auto& e : sse.events) {
    if (e["choices"].empty()) {
      EXPECT_EQ(e["usage"]["completion_tokens"], 24);
      continue;
    }
    const int i = e["choices"][0]["index"];
    ASSERT_TRUE(i >= 0 && i < 3);
    streamed[size_t(i)] += e["choices"][0]["delta"].value("content", "");
    if (!e["choices"][0]["finish_reason"].is_null()) ++finishes[size_t(i)];
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(streamed[size_t(i)], choices[i]["message"]["content"]) << i;
    EXPECT_EQ(finishes[size_t(i)], 1) << i;
  }
  Reply c = post(*s, "/v1/completions", completion("Once", 4, {{"n", 2}}));
  ASSERT_EQ(c.status, 200) << c.text;
  ASSERT_EQ(c.body["choices"].size(), 2u);
  EXPECT_EQ(c.body["choices"][0]["text"], c.body["choices"][1]["text"]);  // greedy: the same
  EXPECT_EQ(c.body["choices"][1]["index"], 1);
}

// llama.cpp's /tokenize and /detokenize, and OpenAI's GET /v1/models/{id}.
TEST(Api, TokenizeDetokenizeAndModelRetrieval) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  Reply t = post(*s, "/tokenize", Json{{"content", "Once upon a time"}});
  ASSERT_EQ(t.status, 200) << t.text;
  ASSERT_TRUE(t.body["tokens"].is_array() && !t.body["tokens"].empty()) << t.text;
  Reply with_bos = post(*s, "/tokenize", Json{{"content", "Once upon a time"}, {"add_special", true}});
  EXPECT_EQ(with_bos.body["tokens"].size(), t.body["tokens"].size() + 1) << with_bos.text;
  Reply d = post(*s, "/detokenize", Json{{"tokens", t.body["tokens"]}});
  ASSERT_EQ(d.status, 200) << d.text;
  EXPECT_EQ(d.body["content"], "Once upon a time");
  Reply pieces = post(*s, "/tokenize", Json{{"content", "Once upon"}, {"with_pieces", true}});
  std::string joined;
  for (const auto& p : pieces.body["tokens"]) {
    ASSERT_TRUE(p["id"].is_number_integer()) << pieces.text;
    if (p["piece"].is_string()) joined += p["piece"].get<std::string>();
  }
  EXPECT_NE(joined.find("upon"), std::string::npos) << pieces.text;
  expect_error(post(*s, "/tokenize", Json{{"content", 5}}), 400, "", "content");
  expect_error(post(*s, "/tokenize", Json{{"content", "x"}, {"add_special", "yes"}}), 400, "", "add_special");
  expect_error(post(*s, "/detokenize", Json{{"tokens", Json::array({1, 99999999})}}), 400, "", "tokens");
  expect_error(post(*s, "/detokenize", Json{{"tokens", "1 2"}}), 400, "", "tokens");
  expect_error(post(*s, "/detokenize", std::string("[1]")), 400);
  Reply m = get(*s, "/v1/models/stories");
  ASSERT_EQ(m.status, 200) << m.text;
  EXPECT_EQ(m.body["id"], "stories");
  EXPECT_EQ(m.body["object"], "model");
  Reply missing = get(*s, "/v1/models/gpt-4o");
  expect_error(missing, 404, "", "model");
  EXPECT_EQ(missing.body["error"]["code"], "model_not_found");
}

// parallel_tool_calls false: the first call only, and generation ends with it. The answer is
// made deterministic by a schema whose one value holds two calls in Qwen's XML form.
TEST(Api, ParallelToolCallsFalseKeepsTheFirstCall) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start({}, "{% if false %}<tool_call><function={% endif %}{% for m in messages %}{{ m.content }}\n{% endfor %}");
  const std::string two_calls = "<tool_call><function=f></function></tool_call><tool_call><function=g></function></tool_call>";
  const Json schema = {{"type", "object"}, {"properties", {{"a", {{"const", two_calls}}}}}, {"required", {"a"}}};
  const Json tools = Json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}, {{"type", "function"}, {"function", {{"name", "g"}}}}});
  int tokens_parallel = 0;
  for (bool parallel : {true, false}) {
    Reply r = post(*s, "/v1/chat/completions",
                   chat("Once upon a time", 200, {{"tools", tools}, {"parallel_tool_calls", parallel},
                                                  {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", schema}}}}}}));
    ASSERT_EQ(r.status, 200) << r.text;
    const Json& choice = r.body["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "tool_calls") << r.text;
    const Json& calls = choice["message"]["tool_calls"];
    ASSERT_EQ(calls.size(), parallel ? 2u : 1u) << r.text;
    EXPECT_EQ(calls[0]["function"]["name"], "f");
    const int tokens = r.body["usage"]["completion_tokens"];
    if (parallel) {
      EXPECT_EQ(calls[1]["function"]["name"], "g");
      tokens_parallel = tokens;
    } else {
      EXPECT_LT(tokens, tokens_parallel) << "generation should end with the first call";
    }
  }
}

// /v1/embeddings: one vector of the model's width and length 1 per input, the same text the same
// vector, base64 the same floats, usage counting the tokens; malformed inputs are 400s.
TEST(Api, Embeddings) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  Reply one = post(*s, "/v1/embeddings", Json{{"model", "stories"}, {"input", "Once upon a time"}});
  ASSERT_EQ(one.status, 200) << one.text;
  EXPECT_EQ(one.body["object"], "list");
  ASSERT_EQ(one.body["data"].size(), 1u);
  const Json& e = one.body["data"][0];
  EXPECT_EQ(e["object"], "embedding");
  EXPECT_EQ(e["index"], 0);
  const std::vector<float> v = e["embedding"].get<std::vector<float>>();
  EXPECT_EQ(v.size(), 64u);  // stories260K's n_embd
  EXPECT_NEAR(norm2(v), 1.0, 1e-4);
  EXPECT_GT(one.body["usage"]["prompt_tokens"].get<int>(), 1);
  Reply many = post(*s, "/v1/embeddings", Json{{"input", {"Once upon a time", "The cat sat", "Once upon a time"}}});
  ASSERT_EQ(many.status, 200) << many.text;
  ASSERT_EQ(many.body["data"].size(), 3u);
  EXPECT_EQ(many.body["data"][2]["index"], 2);
  const auto a = many.body["data"][0]["embedding"].get<std::vector<float>>(), b = many.body["data"][1]["embedding"].get<std::vector<float>>(),
             c = many.body["data"][2]["embedding"].get<std::vector<float>>();
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_NEAR(a[i], v[i], 1e-6);
    EXPECT_NEAR(c[i], v[i], 1e-6);
  }
  EXPECT_NE(a, b);
  EXPECT_EQ(many.body["usage"]["prompt_tokens"].get<int>(), 2 * one.body["usage"]["prompt_tokens"].get<int>() +
                                                              int(post(*s, "/tokenize", Json{{"content", "The cat sat"}, {"add_special", true}}).body["tokens"].size()));
  Reply b64 = post(*s, "/v1/embeddings", Json{{"input", "Once upon a time"}, {"encoding_format", "base64"}});
  ASSERT_EQ(b64.status, 200) << b64.text;
  const std::string text = b64.body["data"][0]["embedding"].get<std::string>();
  const std::string digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes;
  for (size_t i = 0; i + 3 < text.size() + 1; i += 4) {
    uint32_t n = 0;
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char ch = text[i + size_t(k)];
      n = n << 6 | (ch == '=' ? (++pad, 0u) : uint32_t(digits.find(ch)));
    }
    bytes += char(n >> 16 & 255);
    if (pad < 2) bytes += char(n >> 8 & 255);
    if (pad < 1) bytes += char(n & 255);
  }
  ASSERT_EQ(bytes.size(), v.size() * 4);
  std::vector<float> decoded(v.size());
  std::memcpy(decoded.data(), bytes.data(), bytes.size());
  EXPECT_EQ(decoded, v);
  // Between the decode steps of a running answer, and the answer is unchanged by it.
  const Json long_answer = completion("Once upon a time", 120);
  const std::string alone = post(*s, "/v1/completions", long_answer).body["choices"][0]["text"];
  std::string during;
  std::thread answer([&] { during = post(*s, "/v1/completions", long_answer).body["choices"][0]["text"]; });
  for (int k = 0; k < 5; ++k) {
    Reply again = post(*s, "/v1/embeddings", Json{{"input", "Once upon a time"}});
    ASSERT_EQ(again.status, 200) << again.text;
    EXPECT_EQ(again.body["data"][0]["embedding"].get<std::vector<float>>(), v);
  }
  answer.join();
  EXPECT_EQ(during, alone);
  Reply ids = post(*s, "/v1/embeddings", Json{{"input", Json::array({Json::array({1, 300, 400}), Json::array({1, 300})})}});
  ASSERT_EQ(ids.status, 200) << ids.text;
  EXPECT_EQ(ids.body["usage"]["prompt_tokens"], 5);
  expect_error(post(*s, "/v1/embeddings", Json{{"input", 5}}), 400, "", "input");
  expect_error(post(*s, "/v1/embeddings", Json{{"input", Json::array()}}), 400, "", "input");
  expect_error(post(*s, "/v1/embeddings", Json{{"input", Json::array({1, 99999999})}}), 400, "", "input");
  expect_error(post(*s, "/v1/embeddings", Json{{"input", "x"}, {"encoding_format", "hex"}}), 400, "", "encoding_format");
  expect_error(post(*s, "/v1/embeddings", Json{{"input", "x"}, {"dimensions", 3}}), 400, "", "dimensions");
  expect_error(post(*s, "/v1/embeddings", Json{{"input", std::string(20000, 'a')}}), 400, "", "input");
}

// reasoning_effort reaches the template as a variable (as gpt-oss's reads it); chat_template_kwargs
// says it first when it names one.
TEST(Api, ReasoningEffortReachesTheTemplate) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start({}, "{{ 'Reasoning: ' + (reasoning_effort if reasoning_effort is defined else 'none') }}\n"
                                 "{% for m in messages %}{{ m.content }}\n{% endfor %}");
  auto prompt_tokens = [&](Json extra) {
    Reply r = post(*s, "/v1/chat/completions", chat("Hi", 1, std::move(extra)));
    EXPECT_EQ(r.status, 200) << r.text;
    return r.body["usage"]["prompt_tokens"].get<int>();
  };
  auto tokens_of = [&](const std::string& text) {
    return int(post(*s, "/tokenize", Json{{"content", text}, {"add_special", true}}).body["tokens"].size());
  };
  EXPECT_EQ(prompt_tokens(Json::object()), tokens_of("Reasoning: none\nHi\n"));
  EXPECT_EQ(prompt_tokens({{"reasoning_effort", "medium"}}), tokens_of("Reasoning: medium\nHi\n"));
  EXPECT_EQ(prompt_tokens({{"reasoning_effort", "low"}, {"chat_template_kwargs", {{"reasoning_effort", "high"}}}}),
            tokens_of("Reasoning: high\nHi\n"));
  expect_error(post(*s, "/v1/chat/completions", chat("Hi", 1, {{"reasoning_effort", "max"}})), 400, "", "reasoning_effort");
}

TEST(Api, Logprobs) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  Reply r = post(*s, "/v1/chat/completions", chat("Hi", 5, {{"logprobs", true}, {"top_logprobs", 3}}));
  ASSERT_EQ(r.status, 200) << r.text;
  const Json& content = r.body["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 5u);
  for (const auto& t : content) {
    EXPECT_TRUE(t["token"].is_string());
    EXPECT_LE(t["logprob"].get<double>(), 0.0);
    EXPECT_TRUE(t["bytes"].is_array());
    ASSERT_EQ(t["top_logprobs"].size(), 3u);
    EXPECT_EQ(t["top_logprobs"][0]["logprob"], t["logprob"]);  // greedy picks the top one
  }
  Reply c = post(*s, "/v1/completions", completion("Once", 4, {{"logprobs", 2}}));
  ASSERT_EQ(c.status, 200) << c.text;
  const Json& lp = c.body["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"].size(), 4u);
  EXPECT_EQ(lp["token_logprobs"].size(), 4u);
  EXPECT_EQ(lp["top_logprobs"][0].size(), 2u);
}

// Completions' echo: the prompt's text before the answer and, with logprobs, every prompt token's
// (the first null), each row's alternatives those of a completion of the prompt up to it.
TEST(Api, EchoScoresThePrompt) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  const std::string prompt = "Once upon a time";
  Reply plain = post(*s, "/v1/completions", completion(prompt, 3, {{"logprobs", 3}}));
  ASSERT_EQ(plain.status, 200) << plain.text;
  const Json& a = plain.body["choices"][0];
  Reply echoed = post(*s, "/v1/completions", completion(prompt, 3, {{"logprobs", 3}, {"echo", true}, {"return_token_ids", true}}));
  ASSERT_EQ(echoed.status, 200) << echoed.text;
  const Json& b = echoed.body["choices"][0];
  EXPECT_EQ(b["text"], prompt + a["text"].get<std::string>());
  const size_t n = echoed.body["usage"]["prompt_tokens"].get<size_t>();
  const Json& lp = b["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), n + 3);
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  for (size_t i = 1; i < n; ++i) {
    EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0) << i;
    EXPECT_EQ(lp["top_logprobs"][i].size(), 3u) << i;
    EXPECT_LE(lp["text_offset"][i - 1].get<int64_t>(), lp["text_offset"][i].get<int64_t>()) << i;
  }
  EXPECT_EQ(lp["text_offset"][n], int64_t(prompt.size()));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(lp["tokens"][n + i], a["logprobs"]["tokens"][i]);
    EXPECT_NEAR(lp["token_logprobs"][n + i].get<double>(), a["logprobs"]["token_logprobs"][i].get<double>(), 1e-4);
    EXPECT_EQ(lp["text_offset"][n + i], a["logprobs"]["text_offset"][i].get<int64_t>() + int64_t(prompt.size()));
  }
  // Prompt token i's row is the one a completion of the first i tokens samples from.
  const Json ids = b["prompt_token_ids"];
  ASSERT_EQ(ids.size(), n);
  for (size_t i : {size_t(1), n - 1}) {
    Json head = Json::array();
    for (size_t k = 0; k < i; ++k) head.push_back(ids[k]);
    Reply c = post(*s, "/v1/completions", Json{{"prompt", head}, {"max_tokens", 1}, {"temperature", 0}, {"logprobs", 3}});
    ASSERT_EQ(c.status, 200) << c.text;
    const Json& top = c.body["choices"][0]["logprobs"]["top_logprobs"][0];
    ASSERT_EQ(top.size(), 3u);
    for (const auto& [token, value] : top.items()) {
      ASSERT_TRUE(lp["top_logprobs"][i].contains(token)) << i << " " << token;
      EXPECT_NEAR(lp["top_logprobs"][i][token].get<double>(), value.get<double>(), 1e-4) << i << " " << token;
    }
  }

  // Streamed: the prompt in a chunk of its own, then the answer.
  Reply streamed = post(*s, "/v1/completions", completion(prompt, 3, {{"logprobs", 1}, {"echo", true}, {"stream", true}}));
  ASSERT_EQ(streamed.status, 200) << streamed.text;
  Sse sse = parse_sse(streamed.text);
  EXPECT_TRUE(sse.done);
  ASSERT_GE(sse.events.size(), 2u);
  EXPECT_EQ(sse.events[0]["choices"][0]["text"], prompt);
  EXPECT_EQ(sse.events[0]["choices"][0]["logprobs"]["tokens"].size(), n);
  std::string text;
  for (const Json& e : sse.events) text += e["choices"][0].value("text", "");
  EXPECT_EQ(text, b["text"]);

  // max_tokens 0 scores the prompt alone; without echo it is refused.
  Reply scored = post(*s, "/v1/completions", completion(prompt, 0, {{"logprobs", 0}, {"echo", true}}));
  ASSERT_EQ(scored.status, 200) << scored.text;
  EXPECT_EQ(scored.body["choices"][0]["text"], prompt);
  EXPECT_EQ(scored.body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(scored.body["usage"]["completion_tokens"], 0);
  for (size_t i = 1; i < n; ++i)
    EXPECT_NEAR(scored.body["choices"][0]["logprobs"]["token_logprobs"][i].get<double>(), lp["token_logprobs"][i].get<double>(), 1e-4);
  Reply bare = post(*s, "/v1/completions", completion(prompt, 0, {{"echo", true}}));
  ASSERT_EQ(bare.status, 200) << bare.text;
  EXPECT_EQ(bare.body["choices"][0]["text"], prompt);
  EXPECT_TRUE(bare.body["choices"][0]["logprobs"].is_null());
  expect_error(post(*s, "/v1/completions", completion(prompt, 0)), 400, "", "max_tokens");
  expect_error(post(*s, "/v1/completions", completion(prompt, 2, {{"echo", "yes"}})), 400, "", "echo");
  // A prompt of ids echoes their text.
  Reply by_ids = post(*s, "/v1/completions", Json{{"prompt", ids}, {"max_tokens", 1}, {"temperature", 0}, {"echo", true}});
  ASSERT_EQ(by_ids.status, 200) << by_ids.text;
  EXPECT_EQ(by_ids.body["choices"][0]["text"].get<std::string>().find(" " + prompt), 0u) << by_ids.text;  // as /detokenize gives them
}

// vLLM's prompt_logprobs: each prompt token's logprob and rank with its top alternatives, the
// first null; on the choice for completions, beside the choices for chat.
TEST(Api, PromptLogprobs) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  const std::string prompt = "Once upon a time";
  Reply r = post(*s, "/v1/completions", completion(prompt, 2, {{"prompt_logprobs", 2}, {"return_token_ids", true}}));
  ASSERT_EQ(r.status, 200) << r.text;
  const Json& choice = r.body["choices"][0];
  const Json& ids = choice["prompt_token_ids"];
  const Json& plp = choice["prompt_logprobs"];
  ASSERT_EQ(plp.size(), ids.size());
  EXPECT_TRUE(plp[0].is_null());
  Reply echoed = post(*s, "/v1/completions", completion(prompt, 2, {{"logprobs", 1}, {"echo", true}}));
  ASSERT_EQ(echoed.status, 200) << echoed.text;
  const Json& echo_lp = echoed.body["choices"][0]["logprobs"]["token_logprobs"];
  for (size_t i = 1; i < ids.size(); ++i) {
    const std::string key = std::to_string(ids[i].get<int>());
    ASSERT_TRUE(plp[i].contains(key)) << plp[i];
    EXPECT_GE(plp[i][key]["rank"].get<int>(), 1);
    EXPECT_TRUE(plp[i][key]["decoded_token"].is_string());
    EXPECT_NEAR(plp[i][key]["logprob"].get<double>(), echo_lp[i].get<double>(), 1e-4);
    EXPECT_GE(plp[i].size(), 2u);
    EXPECT_LE(plp[i].size(), 3u);
    std::set<int> ranks;
    for (const auto& [id, e] : plp[i].items()) ranks.insert(e["rank"].get<int>());
    EXPECT_TRUE(ranks.count(1) && ranks.count(2)) << plp[i];
  }
  EXPECT_EQ(choice["text"], post(*s, "/v1/completions", completion(prompt, 2)).body["choices"][0]["text"]);

  Reply c = post(*s, "/v1/chat/completions", chat("Hi", 2, {{"prompt_logprobs", 0}}));
  ASSERT_EQ(c.status, 200) << c.text;
  ASSERT_EQ(c.body["prompt_logprobs"].size(), c.body["usage"]["prompt_tokens"].get<size_t>());
  EXPECT_EQ(c.body["prompt_logprobs"][1].size(), 1u);  // the prompt token alone
  expect_error(post(*s, "/v1/completions", completion(prompt, 2, {{"prompt_logprobs", 2}, {"stream", true}})), 400, "", "prompt_logprobs");
  expect_error(post(*s, "/v1/completions", completion(prompt, 2, {{"prompt_logprobs", 50}})), 400, "", "prompt_logprobs");
}

TEST(Api, TokenIdPrompts) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  Reply r = post(*s, "/v1/completions", Json{{"prompt", {1, 403, 407}}, {"max_tokens", 3}});
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body["usage"]["prompt_tokens"], 3);
}

}  // namespace
}  // namespace zinc::server
