// Anthropic's Messages API on stories260K: the message and its usage, the same answer streamed as
// Anthropic's events, stop sequences, forced tool use (whole and streamed), histories with
// tool_use / tool_result blocks, count_tokens, x-api-key, and errors in Anthropic's shape.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server_fixture.h"

namespace zinc::server {
namespace {

using Event = NamedEvent;

Json story(int max_tokens, Json extra = Json::object()) {
  Json body = {{"model", "stories"},
               {"max_tokens", max_tokens},
               {"system", "You tell stories."},
               {"messages", Json::array({{{"role", "user"}, {"content", "Once upon a time"}}})},
               {"temperature", 0}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

void expect_anthropic_error(const Reply& r, int status, const std::string& type, const std::string& says = "") {
  EXPECT_EQ(r.status, status) << r.text;
  EXPECT_EQ(r.body["type"], "error") << r.text;
  EXPECT_EQ(r.body["error"]["type"], type) << r.text;
  EXPECT_TRUE(r.body["error"]["message"].is_string()) << r.text;
  if (!says.empty()) {
    EXPECT_NE(r.text.find(says), std::string::npos) << r.text;
  }
}

TEST(Anthropic, MessageStreamAndStopSequence) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  Reply r = post(*s, "/v1/messages", story(24));
  ASSERT_EQ(r.status, 200) << r.text;
  const Json& m = r.body;
  EXPECT_EQ(m["type"], "message");
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(m["model"], "stories");
  ASSERT_EQ(m["content"].size(), 1u) << r.text;
  EXPECT_EQ(m["content"][0]["type"], "text");
  const std::string text = m["content"][0]["text"];
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(m["stop_reason"], "max_tokens");
  EXPECT_TRUE(m["stop_sequence"].is_null());
  EXPECT_EQ(m["usage"]["output_tokens"], 24);
  EXPECT_GT(m["usage"]["input_tokens"].get<int>() + m["usage"]["cache_read_input_tokens"].get<int>(), 5);

  Reply st = post(*s, "/v1/messages", story(24, {{"stream", true}}));
  ASSERT_EQ(st.status, 200) << st.text;
  const std::vector<Event> events = parse_named_events(st.text);
  ASSERT_GE(events.size(), 5u);
  EXPECT_EQ(events.front().name, "message_start");
  EXPECT_EQ(events.front().data["message"]["role"], "assistant");
  EXPECT_EQ(events[1].name, "content_block_start");
  EXPECT_EQ(events[1].data["content_block"]["type"], "text");
  std::string streamed;
  for (const Event& e : events)
    if (e.name == "content_block_delta") {
      EXPECT_EQ(e.data["index"], 0);
      EXPECT_EQ(e.data["delta"]["type"], "text_delta");
      streamed += e.data["delta"]["text"].get<std::string>();
    }
  EXPECT_EQ(streamed, text);
  const Event& delta = events[events.size() - 2];
  EXPECT_EQ(delta.name, "message_delta");
  EXPECT_EQ(delta.data["delta"]["stop_reason"], "max_tokens");
  EXPECT_EQ(delta.data["usage"]["output_tokens"], 24);
  EXPECT_EQ(events[events.size() - 3].name, "content_block_stop");
  EXPECT_EQ(events.back().name, "message_stop");

  // A stop sequence from inside the greedy answer ends it there and is named.
  const std::string stop = text.substr(text.size() / 2, 3);
  Reply stopped = post(*s, "/v1/messages", story(24, {{"stop_sequences", {stop}}}));
  ASSERT_EQ(stopped.status, 200) << stopped.text;
  EXPECT_EQ(stopped.body["stop_reason"], "stop_sequence") << stopped.text;
  EXPECT_EQ(stopped.body["stop_sequence"], stop);
  EXPECT_EQ(text.rfind(stopped.body["content"][0]["text"].get<std::string>(), 0), 0u) << stopped.text;

  // count_tokens counts what the message reported as its input.
  Reply count = post(*s, "/v1/messages/count_tokens", story(1));
  ASSERT_EQ(count.status, 200) << count.text;
  EXPECT_EQ(count.body["input_tokens"], m["usage"]["input_tokens"].get<int>() + m["usage"]["cache_read_input_tokens"].get<int>());
}

TEST(Anthropic, ToolUseWholeAndStreamed) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start({}, kToolCallTemplate);
  const Json tools = Json::array({{{"name", "get_weather"},
                                   {"description", "The weather"},
                                   {"input_schema", weather_parameters()}}});
  const Json extra = {{"tools", tools}, {"tool_choice", {{"type", "tool"}, {"name", "get_weather"}}}};
  Reply r = post(*s, "/v1/messages", story(200, extra));
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body["stop_reason"], "tool_use") << r.text;
  const Json& block = r.body["content"].back();
  EXPECT_EQ(block["type"], "tool_use") << r.text;
  EXPECT_EQ(block["name"], "get_weather");
  EXPECT_TRUE(block["input"]["unit"] == "c" || block["input"]["unit"] == "f") << r.text;
  const std::string id = block["id"];

  Json streamed_extra = extra;
  streamed_extra["stream"] = true;
  Reply st = post(*s, "/v1/messages", story(200, streamed_extra));
  const std::vector<Event> events = parse_named_events(st.text);
  bool started = false;
  std::string input;
  for (const Event& e : events) {
    if (e.name == "content_block_start" && e.data["content_block"]["type"] == "tool_use") {
      started = true;
      EXPECT_EQ(e.data["content_block"]["name"], "get_weather");
    }
    if (e.name == "content_block_delta" && e.data["delta"]["type"] == "input_json_delta") input += e.data["delta"]["partial_json"].get<std::string>();
    if (e.name == "message_delta") {
      EXPECT_EQ(e.data["delta"]["stop_reason"], "tool_use");
    }
  }
  EXPECT_TRUE(started) << st.text;
  EXPECT_EQ(Json::parse(input, nullptr, false), block["input"]) << st.text;

  // The call and its result go back in the history as content blocks.
  Json turn2 = story(8);
  turn2["tools"] = tools;
  turn2["messages"].push_back({{"role", "assistant"},
                               {"content", Json::array({{{"type", "text"}, {"text", "Let me look."}},
                                                        {{"type", "tool_use"}, {"id", id}, {"name", "get_weather"}, {"input", block["input"]}}})}});
  turn2["messages"].push_back(
      {{"role", "user"},
       {"content", Json::array({{{"type", "tool_result"}, {"tool_use_id", id}, {"content", "Sunny, 21 degrees"}},
                                {{"type", "text"}, {"text", "Thanks"}}})}});
  Reply r2 = post(*s, "/v1/messages", turn2);
  ASSERT_EQ(r2.status, 200) << r2.text;
  EXPECT_EQ(r2.body["content"][0]["type"], "text") << r2.text;
}

TEST(Anthropic, ErrorsAndKeys) {
  ZINC_REQUIRE_TEST_DATA();
  ServerOptions o;
  o.api_key = "sekrit";
  auto s = TestServer::start(o);
  const httplib::Headers key = {{"x-api-key", "sekrit"}, {"anthropic-version", "2023-06-01"}};
  expect_anthropic_error(post(*s, "/v1/messages", story(4)), 401, "authentication_error", "x-api-key");
  expect_anthropic_error(post(*s, "/v1/messages", story(4), {{"x-api-key", "wrong"}}), 401, "authentication_error");
  EXPECT_EQ(post(*s, "/v1/messages", story(4), key).status, 200);
  EXPECT_EQ(post(*s, "/v1/messages", story(4), {{"Authorization", "Bearer sekrit"}}).status, 200);

  Json no_max = story(4);
  no_max.erase("max_tokens");
  expect_anthropic_error(post(*s, "/v1/messages", no_max, key), 400, "invalid_request_error", "'max_tokens' is required");
  Json image = story(4);
  image["messages"][0]["content"] = Json::array({{{"type", "image"}, {"source", {{"type", "base64"}, {"data", "AAAA"}}}}});
  expect_anthropic_error(post(*s, "/v1/messages", image, key), 400, "invalid_request_error", "messages[0].content[0]: image blocks");
  Json bad_role = story(4);
  bad_role["messages"][0]["role"] = "system";
  expect_anthropic_error(post(*s, "/v1/messages", bad_role, key), 400, "invalid_request_error", "messages[0].role");
  Json misplaced = story(4);
  misplaced["messages"][0]["content"] = Json::array({{{"type", "tool_use"}, {"id", "x"}, {"name", "f"}, {"input", Json::object()}}});
  expect_anthropic_error(post(*s, "/v1/messages", misplaced, key), 400, "invalid_request_error", "cannot be in a user message");
  expect_anthropic_error(post(*s, "/v1/messages", story(4, {{"tool_choice", {{"type", "maybe"}}}}), key), 400, "invalid_request_error",
                         "tool_choice");
  expect_anthropic_error(post(*s, "/v1/messages", story(4, {{"temperature", "hot"}}), key), 400, "invalid_request_error", "temperature");
  expect_anthropic_error(post(*s, "/v1/messages", std::string("{"), key), 400, "invalid_request_error");
  expect_anthropic_error(post(*s, "/v1/messages/count_tokens", Json{{"messages", Json::array()}}, key), 400, "invalid_request_error",
                         "'messages'");
}

}  // namespace
}  // namespace zinc::server
