// OpenAI's Responses API on stories260K: the response object and its usage, the same answer as its
// stream of events (sequence numbers in order, items opened and closed), function calls whole and
// streamed, histories with function_call / function_call_output items, and what is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server_fixture.h"

namespace zinc::server {
namespace {

using Event = NamedEvent;

// Named events whose sequence numbers count from 0.
std::vector<Event> parse_events(const std::string& body) {
  std::vector<Event> events = parse_named_events(body);
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].data["sequence_number"], i) << events[i].name;
  return events;
}

Json request(int max_tokens, Json extra = Json::object()) {
  Json body = {{"model", "stories"}, {"instructions", "You tell stories."}, {"input", "Once upon a time"},
               {"max_output_tokens", max_tokens}, {"temperature", 0}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

TEST(Responses, ResponseAndItsStream) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  Reply r = post(*s, "/v1/responses", request(20));
  ASSERT_EQ(r.status, 200) << r.text;
  const Json& resp = r.body;
  EXPECT_EQ(resp["object"], "response");
  EXPECT_EQ(resp["id"].get<std::string>().rfind("resp_", 0), 0u);
  EXPECT_EQ(resp["status"], "incomplete");
  EXPECT_EQ(resp["incomplete_details"]["reason"], "max_output_tokens");
  ASSERT_EQ(resp["output"].size(), 1u) << r.text;
  const Json& msg = resp["output"][0];
  EXPECT_EQ(msg["type"], "message");
  EXPECT_EQ(msg["role"], "assistant");
  EXPECT_EQ(msg["content"][0]["type"], "output_text");
  const std::string text = msg["content"][0]["text"];
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(resp["usage"]["output_tokens"], 20);
  EXPECT_EQ(resp["usage"]["total_tokens"], resp["usage"]["input_tokens"].get<int>() + 20);

  Reply st = post(*s, "/v1/responses", request(20, {{"stream", true}}));
  ASSERT_EQ(st.status, 200) << st.text;
  const auto events = parse_events(st.text);
  ASSERT_GE(events.size(), 8u);
  EXPECT_EQ(events[0].name, "response.created");
  EXPECT_EQ(events[1].name, "response.in_progress");
  EXPECT_EQ(events[2].name, "response.output_item.added");
  EXPECT_EQ(events[3].name, "response.content_part.added");
  std::string streamed;
  for (const Event& e : events)
    if (e.name == "response.output_text.delta") streamed += e.data["delta"].get<std::string>();
  EXPECT_EQ(streamed, text);
  const Event& last = events.back();
  EXPECT_EQ(last.name, "response.incomplete");
  EXPECT_EQ(last.data["response"]["id"], events[0].data["response"]["id"]);
  EXPECT_EQ(last.data["response"]["output"][0]["content"][0]["text"], text);
  EXPECT_EQ(last.data["response"]["usage"]["output_tokens"], 20);
  EXPECT_EQ(events[events.size() - 2].name, "response.output_item.done");

  // A whole answer within max_output_tokens completes.
  Reply grammar = post(*s, "/v1/responses", request(40, {{"text", {{"format", {{"type", "json_schema"}, {"name", "n"},
                                                                                  {"schema", {{"type", "object"},
                                                                                              {"properties", {{"n", {{"enum", {1, 2}}}}}},
                                                                                              {"required", {"n"}}}}}}}}}));
  ASSERT_EQ(grammar.status, 200) << grammar.text;
  EXPECT_EQ(grammar.body["status"], "completed") << grammar.text;
  const Json doc = Json::parse(grammar.body["output"][0]["content"][0]["text"].get<std::string>(), nullptr, false);
  EXPECT_TRUE(doc["n"] == 1 || doc["n"] == 2) << grammar.text;
}

TEST(Responses, FunctionCallsAndTheirOutputs) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start({}, kToolCallTemplate);
  const Json tools = Json::array({{{"type", "function"},
                                   {"name", "get_weather"},
                                   {"parameters", weather_parameters()}}});
  const Json extra = {{"tools", tools}, {"tool_choice", {{"type", "function"}, {"name", "get_weather"}}}};
  Reply r = post(*s, "/v1/responses", request(200, extra));
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body["status"], "completed");
  const Json& call = r.body["output"].back();
  EXPECT_EQ(call["type"], "function_call") << r.text;
  EXPECT_EQ(call["name"], "get_weather");
  EXPECT_EQ(call["call_id"].get<std::string>().rfind("call_", 0), 0u);
  const Json args = Json::parse(call["arguments"].get<std::string>(), nullptr, false);
  EXPECT_TRUE(args["unit"] == "c" || args["unit"] == "f") << r.text;

  Json streamed_extra = extra;
  streamed_extra["stream"] = true;
  const auto events = parse_events(post(*s, "/v1/responses", request(200, streamed_extra)).text);
  std::string arguments;
  for (const Event& e : events)
    if (e.name == "response.function_call_arguments.done") arguments = e.data["arguments"];
  EXPECT_EQ(Json::parse(arguments, nullptr, false), args);
  EXPECT_EQ(events.back().name, "response.completed");

  Json turn2 = request(8);
  turn2["tools"] = tools;
  turn2["input"] = Json::array({{{"role", "user"}, {"content", "Weather?"}},
                                {{"type", "function_call"}, {"call_id", call["call_id"]}, {"name", "get_weather"}, {"arguments", call["arguments"]}},
                                {{"type", "function_call_output"}, {"call_id", call["call_id"]}, {"output", "Sunny"}},
                                {{"role", "user"}, {"content", Json::array({{{"type", "input_text"}, {"text", "Thanks"}}})}}});
  Reply r2 = post(*s, "/v1/responses", turn2);
  ASSERT_EQ(r2.status, 200) << r2.text;
  EXPECT_EQ(r2.body["output"][0]["type"], "message") << r2.text;
}

TEST(Responses, RefusedRequests) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  expect_error(post(*s, "/v1/responses", request(4, {{"previous_response_id", "resp_x"}})), 400, "", "previous_response_id");
  expect_error(post(*s, "/v1/responses", request(4, {{"input", Json::array()}})), 400, "", "input");
  expect_error(post(*s, "/v1/responses", request(4, {{"input", Json::array({{{"role", "user"}, {"content", Json::array({{{"type", "input_image"}, {"image_url", "x"}}})}}})}})),
               400, "", "input");
  expect_error(post(*s, "/v1/responses", request(4, {{"tools", Json::array({{{"type", "web_search"}}})}})), 400, "", "tools");
  expect_error(post(*s, "/v1/responses", request(4, {{"text", {{"format", {{"type", "xml"}}}}}})), 400, "", "text");
  expect_error(post(*s, "/v1/responses", request(0)), 400, "", "max_output_tokens");
  expect_error(post(*s, "/v1/responses", std::string("[1]")), 400);
}

}  // namespace
}  // namespace zinc::server
