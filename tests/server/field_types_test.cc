// Every field of a valid request to each generation endpoint, replaced by values of other JSON
// types: the answer is a success or a 4xx with an error body, never a server error, and the
// server keeps serving.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "server_fixture.h"

namespace zinc::server {
namespace {

// Calls fn(copy) for each copy of `body` with one value (at any depth) replaced by each of `values`.
void each_mutation(const Json& body, const std::vector<Json>& values, const std::function<void(const Json&)>& fn) {
  std::function<void(Json&, Json&)> walk = [&](Json& root, Json& node) {
    auto visit = [&](Json& child) {
      const Json saved = child;
      for (const Json& v : values) {
        child = v;
        fn(root);
      }
      child = saved;
      walk(root, child);
    };
    if (node.is_object())
      for (auto& [key, child] : node.items()) visit(child);
    else if (node.is_array())
      for (Json& child : node) visit(child);
  };
  Json root = body;
  walk(root, root);
}

// Posts every mutation of each request (values of other types) and checks each answer: a success
// or a 4xx with an error body. Returns how many were posted.
int post_mutations(const TestServer& s, const std::vector<std::pair<std::string, Json>>& requests) {
  const std::vector<Json> values = {5, "x", Json::array({5}), Json::object({{"a", 1}}), nullptr, true};
  int n = 0;
  for (const auto& [path, body] : requests)
    each_mutation(body, values, [&](const Json& mutated) {
      ++n;
      const Reply r = post(s, path, mutated);
      EXPECT_TRUE(r.status == 200 || (r.status >= 400 && r.status < 500 && r.body.is_object() && r.body.contains("error")))
          << path << " " << mutated.dump() << " -> " << r.status << " " << r.text;
    });
  return n;
}

TEST(FieldTypes, NoFieldOfAnotherTypeIsAServerError) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start();
  const std::vector<std::pair<std::string, Json>> requests = {
      {"/v1/chat/completions",
       Json::parse(R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":1,"stop":["x"],"logit_bias":{"1":1},
                      "tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]})")},
      {"/v1/completions", Json::parse(R"({"prompt":"hi","max_tokens":1,"logprobs":1})")},
      {"/v1/responses", Json::parse(R"({"input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]},
                                               {"type":"function_call","call_id":"c","name":"f","arguments":"{}"},
                                               {"type":"function_call_output","call_id":"c","output":"o"}],
                                       "max_output_tokens":1,"text":{"format":{"type":"json_object"}}})")},
      {"/v1/messages", Json::parse(R"({"model":"s","max_tokens":1,"system":"s","stop_sequences":["x"],
                                      "messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},
                                                  {"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},
                                                  {"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}],
                                      "tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto"}})")},
      {"/api/chat", Json::parse(R"({"model":"s","messages":[{"role":"user","content":"hi"}],"stream":false,
                                   "options":{"num_predict":1},"format":"json"})")},
      {"/api/generate", Json::parse(R"({"model":"s","prompt":"hi","stream":false,"options":{"num_predict":1},"raw":false})")},
      {"/api/embed", Json::parse(R"({"model":"s","input":["hi"],"truncate":true,"dimensions":2})")},
      {"/v1/embeddings", Json::parse(R"({"input":"hi","encoding_format":"float"})")},
      {"/completion", Json::parse(R"({"prompt":"hi","n_predict":1,"n_probs":1,"return_tokens":true,"seed":3,"stop":["x"],
                                     "logit_bias":[[5,false],["a",1]],"json_schema":{"type":"string"},"ignore_eos":false,
                                     "dry_multiplier":0.5,"dry_sequence_breakers":["a"],"mirostat":2,"typical_p":0.9,
                                     "xtc_probability":0.1,"top_n_sigma":1,"dynatemp_range":0.2,"repeat_last_n":8})")},
      {"/apply-template", Json::parse(R"({"messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":{"a":1}})")},
      {"/tokenize", Json::parse(R"({"content":"hi","add_special":true})")},
      {"/detokenize", Json::parse(R"({"tokens":[1,2]})")},
  };
  EXPECT_GT(post_mutations(*s, requests), 300);
  EXPECT_EQ(post(*s, "/v1/chat/completions", requests[0].second).status, 200);
}

// The same for the fill-in-the-middle fields, on a model with FIM tokens.
TEST(FieldTypes, NoInfillFieldOfAnotherTypeIsAServerError) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start({}, "", 2, 256, fim_stories_model());
  const std::vector<std::pair<std::string, Json>> requests = {
      {"/infill", Json::parse(R"({"input_prefix":"a","input_suffix":["b",5],"prompt":"c","n_predict":1,
                                 "input_extra":[{"filename":"f","text":"t"}]})")},
      {"/v1/completions", Json::parse(R"({"prompt":"a","suffix":"b","max_tokens":1})")},
      {"/api/generate", Json::parse(R"({"model":"s","prompt":"a","suffix":"b","stream":false,"options":{"num_predict":1}})")},
  };
  EXPECT_GT(post_mutations(*s, requests), 80);
  EXPECT_EQ(post(*s, "/infill", requests[0].second).status, 200);
}

}  // namespace
}  // namespace zinc::server
