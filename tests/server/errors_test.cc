// Every malformed or refused request is a 4xx with OpenAI's error object, and the server keeps
// serving; a client that drops a stream frees its sequence.
#include <gtest/gtest.h>

#include <thread>

#include "server_fixture.h"

namespace zinc::server {
namespace {

Json hi() { return {{"messages", Json::array({{{"role", "user"}, {"content", "Hi"}}})}, {"max_tokens", 2}}; }

Json with(Json j, const std::string& key, Json value) {
  j[key] = std::move(value);
  return j;
}

TEST(Errors, MalformedRequestsAre400) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  const std::string chat = "/v1/chat/completions", comp = "/v1/completions";
  expect_error(post(*s, chat, std::string("{not json")), 400);
  expect_error(post(*s, chat, std::string("")), 400);
  expect_error(post(*s, chat, std::string("[1,2]")), 400);
  expect_error(post(*s, chat, Json{{"max_tokens", 2}}), 400, "", "messages");
  expect_error(post(*s, chat, with(hi(), "messages", "hello")), 400, "", "messages");
  expect_error(post(*s, chat, with(hi(), "messages", Json::array())), 400, "", "messages");
  expect_error(post(*s, chat, with(hi(), "messages", Json::array({{{"content", "x"}}}))), 400, "", "messages");
  expect_error(post(*s, chat, with(hi(), "messages", Json::array({{{"role", "user"}, {"content", 5}}}))), 400, "", "messages");
  expect_error(post(*s, chat, with(hi(), "n", 0)), 400, "", "n");
  expect_error(post(*s, chat, with(hi(), "n", 129)), 400, "", "n");
  expect_error(post(*s, chat, with(hi(), "temperature", "hot")), 400, "", "temperature");
  expect_error(post(*s, chat, with(hi(), "temperature", -1)), 400, "", "temperature");
  expect_error(post(*s, chat, with(hi(), "top_p", 2)), 400, "", "top_p");
  expect_error(post(*s, chat, with(hi(), "top_k", 1.5)), 400, "", "top_k");
  expect_error(post(*s, chat, with(hi(), "max_tokens", 0)), 400, "", "max_tokens");
  expect_error(post(*s, chat, with(hi(), "max_completion_tokens", -3)), 400, "", "max_completion_tokens");
  expect_error(post(*s, chat, with(hi(), "seed", "x")), 400, "", "seed");
  expect_error(post(*s, chat, with(hi(), "logit_bias", "x")), 400, "", "logit_bias");
  expect_error(post(*s, chat, with(hi(), "logit_bias", {{"abc", 1}})), 400, "", "logit_bias");
  expect_error(post(*s, chat, with(hi(), "logit_bias", {{"-5", 1}})), 400, "", "logit_bias");
  expect_error(post(*s, chat, with(hi(), "logit_bias", {{"5", 101}})), 400, "", "logit_bias");
  expect_error(post(*s, chat, with(hi(), "logit_bias", {{"5", "up"}})), 400, "", "logit_bias");
  expect_error(post(*s, comp, Json{{"prompt", "Hi"}, {"logit_bias", {{"99999999", 1}}}}), 400, "", "logit_bias");
  expect_error(post(*s, chat, with(hi(), "stop", 3)), 400, "", "stop");
  expect_error(post(*s, chat, with(hi(), "stop", Json::array({"a", 1}))), 400, "", "stop");
  expect_error(post(*s, chat, with(hi(), "stream", "yes")), 400, "", "stream");
  expect_error(post(*s, chat, with(hi(), "stream_options", {{"include_usage", true}})), 400, "", "stream_options");
  expect_error(post(*s, chat, with(hi(), "top_logprobs", 2)), 400, "", "top_logprobs");
  expect_error(post(*s, chat, with(with(hi(), "logprobs", true), "top_logprobs", 50)), 400, "", "top_logprobs");
  expect_error(post(*s, chat, with(hi(), "chat_template_kwargs", 3)), 400, "", "messages");
  expect_error(post(*s, chat, with(hi(), "model", 7)), 400, "", "model");
  expect_error(post(*s, chat, with(hi(), "tools", "get_weather")), 400, "", "tools");
  expect_error(post(*s, chat, with(hi(), "tools", Json::array({{{"type", "function"}}}))), 400, "", "tools");
  expect_error(post(*s, chat, with(hi(), "tools", Json::array({{{"type", "retrieval"}, {"function", {{"name", "f"}}}}}))), 400, "",
               "tools");
  expect_error(post(*s, chat, with(hi(), "tools", Json::array({{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", 1}}}}}))),
               400, "", "tools");
  expect_error(post(*s, chat, with(hi(), "tool_choice", "required")), 400, "", "tool_choice");  // no tools
  const Json f_tool = Json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}});
  expect_error(post(*s, chat, with(with(hi(), "tools", f_tool), "tool_choice", {{"type", "function"}, {"function", {{"name", "g"}}}})),
               400, "", "tool_choice");  // not a tool
  expect_error(post(*s, chat, with(with(hi(), "tools", f_tool), "tool_choice", {{"type", "function"}})), 400, "", "tool_choice");
  expect_error(post(*s, chat, with(with(with(hi(), "tools", f_tool), "tool_choice", "required"), "response_format", {{"type", "json_object"}})),
               400, "", "tool_choice");
  // stories260K's template (ChatML) shows no tool-call format to hold generation to.
  expect_error(post(*s, chat, with(with(hi(), "tools", f_tool), "tool_choice", "required")), 400, "", "tool_choice");
  expect_error(post(*s, chat, with(hi(), "tool_choice", 5)), 400, "", "tool_choice");
  expect_error(post(*s, chat, with(hi(), "parallel_tool_calls", "yes")), 400, "", "parallel_tool_calls");
  expect_error(post(*s, chat, with(hi(), "response_format", "json_object")), 400, "", "response_format");
  expect_error(post(*s, chat, with(hi(), "response_format", {{"type", "xml"}})), 400, "", "response_format");
  expect_error(post(*s, chat, with(hi(), "response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}}}})), 400, "",
               "response_format");
  const Json patterned = {{"type", "object"}, {"patternProperties", {{"^d", {{"type", "integer"}}}}}};
  Reply unsupported = post(*s, chat, with(hi(), "response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", patterned}}}}));
  expect_error(unsupported, 400, "", "response_format");
  EXPECT_NE(unsupported.text.find("'patternProperties' is not supported"), std::string::npos) << unsupported.text;
  expect_error(post(*s, chat, with(hi(), "grammar", 5)), 400, "", "grammar");
  Reply bad_grammar = post(*s, comp, Json{{"prompt", "Hi"}, {"grammar", "root ::= [a-z\n"}});
  expect_error(bad_grammar, 400, "", "grammar");
  EXPECT_NE(bad_grammar.text.find("grammar line 1: unterminated character class"), std::string::npos) << bad_grammar.text;
  expect_error(post(*s, chat, with(with(hi(), "grammar", "root ::= \"a\""), "response_format", {{"type", "json_object"}})), 400, "",
               "grammar");
  expect_error(post(*s, chat, with(with(with(hi(), "tools", f_tool), "tool_choice", "required"), "grammar", "root ::= \"a\"")), 400, "",
               "tool_choice");
  expect_error(post(*s, comp, Json{{"max_tokens", 2}}), 400, "", "prompt");
  expect_error(post(*s, comp, Json{{"prompt", 5}}), 400, "", "prompt");
  expect_error(post(*s, comp, Json{{"prompt", {1, 99999}}}), 400, "", "prompt");
  expect_error(post(*s, comp, Json{{"prompt", "Hi"}, {"logprobs", true}}), 400, "", "logprobs");
  expect_error(post(*s, chat, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\", \"deep\": " + std::string(100000, '[') +
                                  std::string(100000, ']') + "}]}"), 400);
  expect_error(post(*s, chat, std::string("{\"messages\": \"\xff\xfe\"}")), 400);  // invalid UTF-8
  // Still serving.
  EXPECT_EQ(post(*s, chat, hi()).status, 200);
}

// Fields of the wrong type that a handler reads without its own check are 400s in the shape of
// the API asked (OpenAI's, Anthropic's or Ollama's error), never a server error.
TEST(Errors, FieldsOfTheWrongTypeAre400InEachApisShape) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  Reply ollama = post(*s, "/api/chat", Json{{"model", 5}, {"messages", Json::array({{{"role", "user"}, {"content", "x"}}})}});
  EXPECT_EQ(ollama.status, 400) << ollama.text;
  EXPECT_TRUE(ollama.body["error"].is_string()) << ollama.text;
  Reply anthropic = post(*s, "/v1/messages", Json{{"model", "s"}, {"max_tokens", 2},
                                                  {"messages", Json::array({{{"role", 5}, {"content", "x"}}})}});
  EXPECT_EQ(anthropic.status, 400) << anthropic.text;
  EXPECT_EQ(anthropic.body["type"], "error") << anthropic.text;
  EXPECT_EQ(anthropic.body["error"]["type"], "invalid_request_error") << anthropic.text;
  Reply count = post(*s, "/v1/messages/count_tokens", Json{{"model", "s"}, {"messages", Json::array({{{"role", true}, {"content", "x"}}})}});
  EXPECT_EQ(count.status, 400) << count.text;
  EXPECT_EQ(post(*s, "/api/generate", Json{{"model", "s"}, {"prompt", "x"}, {"raw", "yes"}}).status, 400);
  EXPECT_EQ(post(*s, "/api/pull", Json{{"model", Json::array()}}).status, 400);
  EXPECT_EQ(post(*s, "/v1/chat/completions", hi()).status, 200);  // still serving
}

// An embedding whose batch has a decode step's shape (one token, one row) and that decode step
// use executors of their own: the hidden-state graph is not the logits graph.
TEST(Errors, EmbeddingAndDecodeOfOneTokenBothRun) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  for (int round = 0; round < 2; ++round) {
    Reply e = post(*s, "/v1/embeddings", Json{{"input", Json::array({5})}});
    ASSERT_EQ(e.status, 200) << e.text;
    EXPECT_EQ(e.body["data"][0]["embedding"].size(), 64u) << e.text;
    Reply c = post(*s, "/v1/completions", Json{{"prompt", Json::array({5})}, {"max_tokens", 2}});
    ASSERT_EQ(c.status, 200) << c.text;
  }
}

TEST(Errors, ContextOverflowIsContextLengthExceeded) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();  // 256-token context
  std::string long_text;
  for (int i = 0; i < 200; ++i) long_text += "the cat sat. ";
  Reply r = post(*s, "/v1/completions", Json{{"prompt", long_text}, {"max_tokens", 4}});
  expect_error(r, 400, "context_length_exceeded", "prompt");
  expect_error(post(*s, "/v1/chat/completions", Json{{"messages", Json::array({{{"role", "user"}, {"content", long_text}}})}}), 400,
               "context_length_exceeded", "messages");
}

TEST(Errors, UnknownEndpointsAndBigBodies) {
  ZINC_REQUIRE_TEST_DATA();
  ServerOptions o;
  o.max_body_bytes = 4096;
  auto s = TestServer::start(o);
  auto c = s->client();
  auto nf = c.Get("/v1/nothing");
  ASSERT_TRUE(nf);
  expect_error({nf->status, Json::parse(nf->body, nullptr, false), nf->body}, 404, "not_found");
  auto get_chat = c.Get("/v1/chat/completions");
  ASSERT_TRUE(get_chat);
  EXPECT_EQ(get_chat->status / 100, 4);
  expect_error(post(*s, "/v1/completions", Json{{"prompt", std::string(10000, 'a')}}), 413, "request_too_large");
}

TEST(Errors, ApiKeyAndHostChecks) {
  ZINC_REQUIRE_TEST_DATA();
  ServerOptions o;
  o.api_key = "sekret";
  auto s = TestServer::start(o);
  expect_error(post(*s, "/v1/chat/completions", hi()), 401, "invalid_api_key");
  expect_error(post(*s, "/v1/chat/completions", hi(), {{"Authorization", "Bearer wrong"}}), 401, "invalid_api_key");
  EXPECT_EQ(post(*s, "/v1/chat/completions", hi(), {{"Authorization", "Bearer sekret"}}).status, 200);
  auto c = s->client();
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 401);
  auto health = c.Get("/health");  // open: load balancers probe it
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  // DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends its own Host.
  auto rebound = c.Get("/health", {{"Host", "evil.example:9090"}});
  ASSERT_TRUE(rebound);
  expect_error({rebound->status, Json::parse(rebound->body, nullptr, false), rebound->body}, 403, "forbidden_host");
  auto local = c.Get("/health", {{"Host", "localhost:9090"}});
  ASSERT_TRUE(local);
  EXPECT_EQ(local->status, 200);
}

TEST(Errors, ClientThatDisconnectsCancelsItsSequence) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start({}, "", 2, 2048);
  auto c = s->client();
  Json body = {{"prompt", "Once upon a time"}, {"max_tokens", 2000}, {"stream", true}};
  int chunks = 0;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 3; };
  httplib::Response out;
  httplib::Error err;
  c.send(req, out, err);
  EXPECT_GE(chunks, 3);
  // The server notices at its next write and the scheduler frees the sequence.
  bool freed = false;
  for (int i = 0; i < 100 && !freed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto st = s->scheduler->stats();
    freed = st.active == 0 && st.queue_depth == 0;
  }
  EXPECT_TRUE(freed);
  EXPECT_LT(s->scheduler->stats().steps, 1000);  // stopped long before its 2000 tokens
  EXPECT_EQ(post(*s, "/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 2}}).status, 200);
}

}  // namespace
}  // namespace zinc::server
