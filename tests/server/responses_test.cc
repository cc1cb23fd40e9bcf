// OpenAI's Responses API on stories260K: the response object and its usage, the same answer as its
// stream of events (sequence numbers in order, items opened and closed), function calls whole and
// streamed, histories with function_call / function_call_output items, stored responses
// (previous_response_id, GET / DELETE, input items; the store's budget), and what is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/response_store.h"
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

Reply del(const TestServer& s, const std::string& path) { return reply_of(s.client().Delete(path.c_str())); }

TEST(Responses, PreviousResponseContinuesTheStoredConversation) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  Reply first = post(*s, "/v1/responses", request(8));
  ASSERT_EQ(first.status, 200) << first.text;
  EXPECT_EQ(first.body["store"], true);
  EXPECT_TRUE(first.body["previous_response_id"].is_null());
  const std::string id = first.body["id"];
  Reply kept = get(*s, "/v1/responses/" + id);
  ASSERT_EQ(kept.status, 200) << kept.text;
  EXPECT_EQ(kept.body, first.body);

  // The continuation sees the first turn (not its instructions) as if it had been sent whole.
  const Json next = {{"instructions", "You tell short stories."}, {"input", "The end"}};
  Reply second = post(*s, "/v1/responses", request(8, {{"instructions", next["instructions"]}, {"input", next["input"]},
                                                        {"previous_response_id", id}}));
  ASSERT_EQ(second.status, 200) << second.text;
  EXPECT_EQ(second.body["previous_response_id"], id);
  const Json whole_input = Json::array({{{"role", "user"}, {"content", "Once upon a time"}},
                                        first.body["output"][0],
                                        {{"role", "user"}, {"content", "The end"}}});
  Reply whole = post(*s, "/v1/responses", request(8, {{"instructions", next["instructions"]}, {"input", whole_input}, {"store", false}}));
  ASSERT_EQ(whole.status, 200) << whole.text;
  EXPECT_EQ(second.body["usage"]["input_tokens"], whole.body["usage"]["input_tokens"]);
  EXPECT_GT(second.body["usage"]["input_tokens"].get<int>(), first.body["usage"]["input_tokens"].get<int>() + 8);
  EXPECT_EQ(second.body["output"][0]["content"][0]["text"], whole.body["output"][0]["content"][0]["text"]);
  EXPECT_EQ(whole.body["store"], false);
  expect_error(get(*s, "/v1/responses/" + whole.body["id"].get<std::string>()), 404);

  // A streamed response is kept as its last event shows it, and a chain goes on from it.
  const auto events = parse_events(post(*s, "/v1/responses", request(8, {{"previous_response_id", second.body["id"]}, {"stream", true}})).text);
  ASSERT_FALSE(events.empty());
  const Json& streamed = events.back().data["response"];
  Reply streamed_kept = get(*s, "/v1/responses/" + streamed["id"].get<std::string>());
  ASSERT_EQ(streamed_kept.status, 200) << streamed_kept.text;
  EXPECT_EQ(streamed_kept.body, streamed);
  EXPECT_GT(streamed["usage"]["input_tokens"].get<int>(), second.body["usage"]["input_tokens"].get<int>() + 8);

  // Deleted, it is gone for good.
  Reply gone = del(*s, "/v1/responses/" + id);
  ASSERT_EQ(gone.status, 200) << gone.text;
  EXPECT_EQ(gone.body, (Json{{"id", id}, {"object", "response"}, {"deleted", true}}));
  expect_error(get(*s, "/v1/responses/" + id), 404);
  expect_error(del(*s, "/v1/responses/" + id), 404);
  expect_error(post(*s, "/v1/responses", request(4, {{"previous_response_id", id}})), 400, "previous_response_not_found",
               "previous_response_id");
}

TEST(Responses, InputItemsOfAStoredResponse) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  const Json input = Json::array({{{"role", "user"}, {"content", "Once upon a time"}},
                                  {{"type", "message"}, {"role", "assistant"}, {"content", "there was a cat."}},
                                  {{"role", "user"}, {"content", Json::array({{{"type", "input_text"}, {"text", "Go on"}}})}}});
  Reply r = post(*s, "/v1/responses", request(4, {{"input", input}}));
  ASSERT_EQ(r.status, 200) << r.text;
  const std::string base = "/v1/responses/" + r.body["id"].get<std::string>() + "/input_items";
  Reply all = get(*s, base + "?order=asc");
  ASSERT_EQ(all.status, 200) << all.text;
  EXPECT_EQ(all.body["object"], "list");
  const Json& data = all.body["data"];
  ASSERT_EQ(data.size(), 3u) << all.text;
  EXPECT_EQ(data[0]["type"], "message");
  EXPECT_EQ(data[0]["content"][0], (Json{{"type", "input_text"}, {"text", "Once upon a time"}}));
  EXPECT_EQ(data[1]["content"][0], (Json{{"type", "output_text"}, {"text", "there was a cat."}}));
  EXPECT_EQ(data[2]["content"][0]["text"], "Go on");
  EXPECT_EQ(all.body["first_id"], data[0]["id"]);
  EXPECT_EQ(all.body["last_id"], data[2]["id"]);
  EXPECT_EQ(all.body["has_more"], false);

  Reply newest = get(*s, base + "?limit=2");  // newest first by default
  ASSERT_EQ(newest.status, 200) << newest.text;
  ASSERT_EQ(newest.body["data"].size(), 2u);
  EXPECT_EQ(newest.body["data"][0]["id"], data[2]["id"]);
  EXPECT_EQ(newest.body["has_more"], true);
  Reply rest = get(*s, base + "?limit=2&after=" + newest.body["last_id"].get<std::string>());
  ASSERT_EQ(rest.status, 200) << rest.text;
  ASSERT_EQ(rest.body["data"].size(), 1u);
  EXPECT_EQ(rest.body["data"][0]["id"], data[0]["id"]);
  EXPECT_EQ(rest.body["has_more"], false);

  expect_error(get(*s, base + "?limit=0"), 400, "", "limit");
  expect_error(get(*s, base + "?limit=x"), 400, "", "limit");
  expect_error(get(*s, base + "?order=up"), 400, "", "order");
  expect_error(get(*s, base + "?after=msg_nope"), 400, "", "after");
  expect_error(get(*s, "/v1/responses/resp_nope/input_items"), 404);
}

TEST(Responses, NothingIsKeptWithoutAStore) {
  ZINC_REQUIRE_TEST_DATA();
  ServerOptions o;
  o.responses_store_bytes = 0;
  auto s = TestServer::start(o);
  Reply r = post(*s, "/v1/responses", request(4));
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body["store"], false);
  expect_error(get(*s, "/v1/responses/" + r.body["id"].get<std::string>()), 404);
  expect_error(post(*s, "/v1/responses", request(4, {{"previous_response_id", r.body["id"]}})), 400, "previous_response_not_found");
}

TEST(ResponseStore, DropsTheLeastRecentlyUsedPastItsBudget) {
  auto entry = [](int n) { return StoredResponse{Json{{"text", std::string(size_t(n), 'x')}}, Json::array(), Json::array()}; };
  ResponseStore store(1000);
  ASSERT_TRUE(store.put("a", entry(400)));
  ASSERT_TRUE(store.put("b", entry(400)));
  ASSERT_TRUE(store.get("a"));  // a is now the most recent
  ASSERT_TRUE(store.put("c", entry(400)));  // past 1000 bytes: b goes
  EXPECT_TRUE(store.get("a"));
  EXPECT_FALSE(store.get("b"));
  EXPECT_TRUE(store.get("c"));
  EXPECT_LE(store.bytes(), 1000u);
  EXPECT_FALSE(store.put("huge", entry(2000)));  // over the whole budget: not kept, nothing dropped
  EXPECT_FALSE(store.get("huge"));
  EXPECT_TRUE(store.get("a") && store.get("c"));
  ASSERT_TRUE(store.put("a", entry(10)));  // replaced, not counted twice
  EXPECT_EQ(store.get("a")->response["text"], std::string(10, 'x'));
  EXPECT_TRUE(store.erase("a"));
  EXPECT_FALSE(store.erase("a"));
  store.set_max_bytes(0);
  EXPECT_FALSE(store.enabled());
  EXPECT_FALSE(store.get("c"));
  EXPECT_EQ(store.bytes(), 0u);
}

TEST(Responses, RefusedRequests) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  expect_error(post(*s, "/v1/responses", request(4, {{"previous_response_id", "resp_x"}})), 400, "previous_response_not_found",
               "previous_response_id");
  expect_error(post(*s, "/v1/responses", request(4, {{"previous_response_id", 7}})), 400, "", "previous_response_id");
  expect_error(post(*s, "/v1/responses", request(4, {{"conversation", "conv_1"}})), 400, "", "conversation");
  expect_error(post(*s, "/v1/responses", request(4, {{"store", "yes"}})), 400, "", "store");
  // Fields of the wrong type are 400s naming the field, never a server error.
  for (const Json& input : {Json::array({{{"role", 5}, {"content", "x"}}}), Json::array({{{"type", 7}, {"content", "x"}}}),
                            Json::array({{{"role", "user"}, {"content", Json::array({{{"type", "refusal"}, {"refusal", 3}}})}}})})
    expect_error(post(*s, "/v1/responses", request(4, {{"input", input}})), 400, "", "input");
  expect_error(post(*s, "/v1/responses", request(4, {{"tools", Json::array({{{"type", 1}, {"name", "f"}}})}})), 400, "", "tools");
  expect_error(post(*s, "/v1/responses", request(4, {{"text", {{"format", {{"type", false}}}}}})), 400, "", "text");
  Reply null_store = post(*s, "/v1/responses", request(4, {{"store", nullptr}}));  // null: the default, kept
  ASSERT_EQ(null_store.status, 200) << null_store.text;
  EXPECT_EQ(null_store.body["store"], true);
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
