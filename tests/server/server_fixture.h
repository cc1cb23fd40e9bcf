// A real server on an ephemeral loopback port over stories260K, with httplib clients and SSE
// parsing, for the HTTP API tests.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat/conversation.h"
#include "engine/runner.h"
#include "engine/scheduler.h"
#include "model/gguf_edit.h"
#include "model/model.h"
#include "server/server.h"
#include "support/test_data.h"
#include "tokenizer/tokenizer.h"

namespace zinc::server {

using Json = nlohmann::ordered_json;

// A template whose source mentions <tool_call> (so the server parses Qwen/Hermes calls) and
// renders each message's content on a line.
inline constexpr const char* kToolCallTemplate =
    "{% if false %}<tool_call>{% endif %}{% for m in messages %}{{ m.content }}\n{% endfor %}";

// The get_weather tool's parameters: one required "unit", "c" or "f".
inline Json weather_parameters() {
  return {{"type", "object"}, {"properties", {{"unit", {{"enum", {"c", "f"}}}}}}, {"required", {"unit"}}};
}

// The sum of squares of an embedding (1 for a unit vector).
inline double norm2(const std::vector<float>& v) {
  double n2 = 0;
  for (float x : v) n2 += double(x) * x;
  return n2;
}

// A copy of stories260K with FIM ids set (its tokens 300-302 play prefix, suffix and middle), for
// /infill and completions' suffix.
inline std::string fim_stories_model() {
  const std::string path = test::temp_path("stories-fim.gguf");
  test::GgufEdits e;
  e.set_keys.push_back({"tokenizer.ggml.fim_pre_token_id", gguf::Value::u32(300)});
  e.set_keys.push_back({"tokenizer.ggml.fim_suf_token_id", gguf::Value::u32(301)});
  e.set_keys.push_back({"tokenizer.ggml.fim_mid_token_id", gguf::Value::u32(302)});
  EXPECT_TRUE(test::copy_gguf(test::data_path("models/stories260K.gguf"), path, e).ok());
  return path;
}

struct TestServer {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::unique_ptr<chat::ChatFormat> format;
  std::unique_ptr<engine::Runner> runner;
  std::unique_ptr<engine::Scheduler> scheduler;
  std::unique_ptr<Server> server;

  // template_source "" → the model's (stories260K has none: ChatML); `model` is absolute or under
  // the test data.
  static std::unique_ptr<TestServer> start(ServerOptions o = {}, const std::string& template_source = "", int parallel = 4,
                                           int64_t n_ctx = 256, const std::string& model = "models/stories260K.gguf") {
    auto t = std::make_unique<TestServer>();
    t->model = std::move(model::Model::load(model.starts_with('/') ? model : test::data_path(model)).value());
    t->tok = std::move(tokenizer::Tokenizer::load(t->model->file()).value());
    t->format = std::make_unique<chat::ChatFormat>(chat::ChatFormat::create(t->model->file(), *t->tok, template_source).value());
    engine::RunnerOptions ro;
    ro.n_threads = 2;
    ro.max_seqs = parallel;
    ro.n_ctx = n_ctx * parallel;
    t->runner = std::move(engine::Runner::create(*t->model, ro).value());
    engine::SchedulerOptions so;
    so.parallel = parallel;
    so.n_ctx = n_ctx;
    t->scheduler = std::make_unique<engine::Scheduler>(*t->runner, so);
    o.port = 0;
    o.model_name = "stories";
    t->server = std::make_unique<Server>(*t->tok, *t->format, *t->scheduler, o);
    Status s = t->server->start();
    EXPECT_TRUE(s.ok()) << s.message();
    return t;
  }
  ~TestServer() { server.reset(); }  // before the scheduler and the runner

  httplib::Client client() const {
    httplib::Client c("127.0.0.1", server->port());
    c.set_read_timeout(std::chrono::seconds(60));
    return c;
  }
};

struct Reply {
  int status = 0;
  Json body;
  std::string text;
};

inline Reply reply_of(const httplib::Result& res) {
  Reply r;
  if (!res) return r;
  r.status = res->status;
  r.text = res->body;
  r.body = Json::parse(res->body, nullptr, false);
  return r;
}
inline Reply post(const TestServer& s, const std::string& path, const std::string& body, httplib::Headers headers = {}) {
  return reply_of(s.client().Post(path.c_str(), headers, body, "application/json"));
}
inline Reply post(const TestServer& s, const std::string& path, const Json& body, httplib::Headers headers = {}) {
  return post(s, path, body.dump(), std::move(headers));
}
inline Reply get(const TestServer& s, const std::string& path) { return reply_of(s.client().Get(path.c_str())); }

// The data lines of an SSE body; "[DONE]" stays a string, the rest are parsed.
struct Sse {
  std::vector<Json> events;
  bool done = false;  // ended with data: [DONE]
};
inline Sse parse_sse(const std::string& body) {
  Sse s;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    const std::string block = body.substr(pos, end - pos);
    pos = end + 2;
    if (block.rfind("data: ", 0) != 0) continue;
    const std::string data = block.substr(6);
    if (data == "[DONE]") s.done = true;
    else s.events.push_back(Json::parse(data, nullptr, false));
  }
  return s;
}

// The events of an SSE body that names them (Anthropic's, the Responses API's): each block is
// "event: NAME\ndata: JSON", and the JSON's type is the name.
struct NamedEvent {
  std::string name;
  Json data;
};
inline std::vector<NamedEvent> parse_named_events(const std::string& body) {
  std::vector<NamedEvent> out;
  for (size_t pos = 0; pos < body.size();) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    const std::string block = body.substr(pos, end - pos);
    pos = end + 2;
    const size_t nl = block.find('\n');
    EXPECT_EQ(block.rfind("event: ", 0), 0u) << block;
    EXPECT_EQ(block.substr(nl + 1, 6), "data: ") << block;
    if (nl == std::string::npos) continue;
    out.push_back({block.substr(7, nl - 7), Json::parse(block.substr(nl + 7), nullptr, false)});
    EXPECT_EQ(out.back().data["type"], out.back().name) << block;
  }
  return out;
}

// Checks the OpenAI error object: status, and error.{message,type,param,code} present.
inline void expect_error(const Reply& r, int status, const std::string& code = "", const std::string& param = "") {
  EXPECT_EQ(r.status, status) << r.text;
  ASSERT_TRUE(r.body.is_object() && r.body.contains("error")) << r.text;
  const Json& e = r.body["error"];
  for (const char* key : {"message", "type", "param", "code"}) EXPECT_TRUE(e.contains(key)) << key << " in " << r.text;
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << r.text;
  if (!code.empty()) {
    EXPECT_EQ(e["code"], code) << r.text;
  }
  if (!param.empty()) {
    EXPECT_EQ(e["param"], param) << r.text;
  }
}

}  // namespace zinc::server
