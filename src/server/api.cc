#include "server/api.h"

#include <algorithm>
#include <random>

namespace zinc::server {

Json error_json(const ApiError& e) {
  Json err = {{"message", e.message}, {"type", e.type}, {"param", nullptr}, {"code", nullptr}};
  if (!e.param.empty()) err["param"] = e.param;
  if (!e.code.empty()) err["code"] = e.code;
  return Json{{"error", err}};
}

std::string random_id(const char* prefix, int n) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id = prefix;
  for (int i = 0; i < n; ++i) id += kAlphabet[rng() % 62];
  return id;
}

ApiError bad_request(const std::string& param, const std::string& message) {
  return ApiError{400, message, "invalid_request_error", param, ""};
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::optional<ApiError> parse_body(const std::string& text, Json* out) {
  if (json_depth(text) > kMaxJsonDepth)
    return ApiError{400, "the request body nests JSON more than " + std::to_string(kMaxJsonDepth) + " levels deep", "invalid_request_error", "", ""};
  *out = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (out->is_discarded()) return ApiError{400, "the request body is not valid JSON", "invalid_request_error", "", ""};
  if (!out->is_object()) return ApiError{400, "the request body must be a JSON object", "invalid_request_error", "", ""};
  return std::nullopt;
}

Json call_arguments(const Json& call) {
  Json args = Json::parse(call["function"].value("arguments", "{}"), nullptr, false);
  return args.is_object() ? args : Json::object();
}

std::string sse_event(const char* name, const Json& data) { return std::string("event: ") + name + "\ndata: " + dump(data) + "\n\n"; }

namespace {

// A number field within [lo, hi]; absent or null leaves *out unchanged.
std::optional<ApiError> number(const Json& body, const char* key, double lo, double hi, float* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return bad_request(key, std::string("'") + key + "' must be a number");
  const double v = it->get<double>();
  if (!(v >= lo && v <= hi)) return bad_request(key, std::string("'") + key + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  *out = float(v);
  return std::nullopt;
}

std::optional<ApiError> integer(const Json& body, const char* key, int64_t lo, int64_t hi, int64_t* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) return bad_request(key, std::string("'") + key + "' must be an integer");
  const int64_t v = it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(INT64_MAX) ? INT64_MAX : it->get<int64_t>();
  if (v < lo || v > hi) return bad_request(key, std::string("'") + key + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  *out = v;
  return std::nullopt;
}

std::optional<ApiError> boolean(const Json& body, const char* key, bool* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return bad_request(key, std::string("'") + key + "' must be true or false");
  *out = it->get<bool>();
  return std::nullopt;
}

std::optional<ApiError> parse_tools(const Json& body, GenerationParams* p) {
  if (auto it = body.find("tools"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) return bad_request("tools", "'tools' must be an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& t = (*it)[i];
      const std::string where = "tools[" + std::to_string(i) + "]";
      if (!t.is_object() || t.value("type", Json()) != "function")
        return bad_request("tools", where + " must be an object with \"type\": \"function\"");
      auto f = t.find("function");
      if (f == t.end() || !f->is_object() || !f->contains("name") || !(*f)["name"].is_string() ||
          (*f)["name"].get<std::string>().empty())
        return bad_request("tools", where + ".function must be an object with a non-empty string 'name'");
      if (f->contains("parameters") && !(*f)["parameters"].is_object())
        return bad_request("tools", where + ".function.parameters must be a JSON Schema object");
    }
    p->tools = *it;
  }
  if (auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) {
    if (*it == "auto" || *it == "none") {
      p->parse_tool_calls = *it == "auto";
    } else if (*it == "required") {
      if (p->tools.empty()) return bad_request("tool_choice", "'tool_choice' \"required\" needs 'tools'");
      for (const auto& t : p->tools) p->forced_tools.push_back(t["function"]["name"].get<std::string>());
    } else if (it->is_object()) {
      const Json f = it->value("function", Json());
      if (it->value("type", Json()) != "function" || !f.is_object() || !f.value("name", Json()).is_string())
        return bad_request("tool_choice", "'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", "
                                  "\"function\": {\"name\": ...}}");
      const std::string name = f["name"].get<std::string>();
      bool known = false;
      for (const auto& t : p->tools) known = known || t["function"]["name"] == name;
      if (!known) return bad_request("tool_choice", "'tool_choice' names '" + name + "', which is not in 'tools'");
      p->forced_tools.push_back(name);
    } else {
      return bad_request("tool_choice", "'tool_choice' must be \"auto\", \"none\", \"required\" or an object");
    }
  }
  return boolean(body, "parallel_tool_calls", &p->parallel_tool_calls);
}

}  // namespace

#define ZINC_API_CHECK(expr)             \
  do {                                   \
    if (auto e_ = (expr)) return e_;     \
  } while (0)

namespace {

// llama.cpp's sampling fields beyond OpenAI's (its server takes them on every endpoint).
std::optional<ApiError> parse_llama_sampling(const Json& body, GenerationParams* p) {
  auto& s = p->sampling;
  ZINC_API_CHECK(number(body, "typical_p", 0, 1, &s.typical_p));
  ZINC_API_CHECK(number(body, "top_n_sigma", -1, 100, &s.top_n_sigma));
  ZINC_API_CHECK(number(body, "xtc_probability", 0, 1, &s.xtc_probability));
  ZINC_API_CHECK(number(body, "xtc_threshold", 0, 1, &s.xtc_threshold));
  ZINC_API_CHECK(number(body, "dynatemp_range", 0, 100, &s.dynatemp_range));
  ZINC_API_CHECK(number(body, "dynatemp_exponent", 0, 100, &s.dynatemp_exponent));
  ZINC_API_CHECK(number(body, "dry_multiplier", 0, 100, &s.dry.multiplier));
  ZINC_API_CHECK(number(body, "dry_base", 0, 100, &s.dry.base));
  ZINC_API_CHECK(number(body, "mirostat_tau", 0, 100, &s.mirostat_tau));
  ZINC_API_CHECK(number(body, "mirostat_eta", 0, 1, &s.mirostat_eta));
  int64_t v = s.dry.allowed_length;
  ZINC_API_CHECK(integer(body, "dry_allowed_length", 0, 1 << 20, &v));
  s.dry.allowed_length = int32_t(v);
  v = s.dry.penalty_last_n;
  ZINC_API_CHECK(integer(body, "dry_penalty_last_n", -1, INT32_MAX, &v));
  s.dry.penalty_last_n = int32_t(v);
  v = s.penalty_last_n;
  ZINC_API_CHECK(integer(body, "repeat_last_n", -1, INT32_MAX, &v));
  s.penalty_last_n = int32_t(v);
  v = s.min_keep;
  ZINC_API_CHECK(integer(body, "min_keep", 0, 1 << 20, &v));
  s.min_keep = int32_t(v);
  v = s.mirostat;
  ZINC_API_CHECK(integer(body, "mirostat", 0, 2, &v));
  s.mirostat = int32_t(v);
  if (auto it = body.find("dry_sequence_breakers"); it != body.end() && !it->is_null()) {
    const char* shape = "'dry_sequence_breakers' must be a non-empty array of at most 64 non-empty strings";
    if (!it->is_array() || it->empty() || it->size() > 64) return bad_request("dry_sequence_breakers", shape);
    s.dry.sequence_breakers.clear();
    for (const Json& b : *it) {
      if (!b.is_string() || b.get<std::string>().empty()) return bad_request("dry_sequence_breakers", shape);
      s.dry.sequence_breakers.push_back(b.get<std::string>());
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_generation(const Json& body, bool chat, GenerationParams* out, const engine::Grammar::Tokens* grammar_tokens) {
  GenerationParams& p = *out;
  if (auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return bad_request("model", "'model' must be a string");
    p.model = it->get<std::string>();
  }
  auto& s = p.sampling;
  ZINC_API_CHECK(number(body, "temperature", 0, 100, &s.temperature));
  ZINC_API_CHECK(number(body, "top_p", 0, 1, &s.top_p));
  ZINC_API_CHECK(number(body, "min_p", 0, 1, &s.min_p));
  ZINC_API_CHECK(number(body, "presence_penalty", -2, 2, &s.presence_penalty));
  ZINC_API_CHECK(number(body, "frequency_penalty", -2, 2, &s.frequency_penalty));
  ZINC_API_CHECK(number(body, "repeat_penalty", 0.01, 100, &s.repeat_penalty));
  int64_t v = s.top_k;
  ZINC_API_CHECK(integer(body, "top_k", 0, 1 << 30, &v));
  s.top_k = int32_t(v);
  v = -1;
  ZINC_API_CHECK(integer(body, "seed", INT64_MIN, INT64_MAX, &v));
  p.seed_given = body.contains("seed") && !body["seed"].is_null();
  s.seed = p.seed_given ? uint32_t(uint64_t(v)) : std::random_device{}();
  if (!chat) ZINC_API_CHECK(boolean(body, "echo", &p.echo));
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    v = p.max_tokens;
    ZINC_API_CHECK(integer(body, key, p.echo ? 0 : 1, INT32_MAX, &v));
    p.max_tokens = int32_t(v);
  }
  if (auto it = body.find("logit_bias"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) return bad_request("logit_bias", "'logit_bias' must be an object of token ids and biases");
    for (const auto& [key, bias] : it->items()) {
      const bool id = !key.empty() && key.size() <= 9 && std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (!id) return bad_request("logit_bias", "'logit_bias' keys must be token ids, not '" + key + "'");
      if (!bias.is_number() || !(bias.get<double>() >= -100 && bias.get<double>() <= 100))
        return bad_request("logit_bias", "'logit_bias' values must be numbers between -100 and 100");
      s.logit_bias.emplace_back(int32_t(std::stol(key)), bias.get<float>());
    }
  }
  v = 1;
  ZINC_API_CHECK(integer(body, "n", 1, kMaxChoices, &v));
  p.n = int32_t(v);
  ZINC_API_CHECK(parse_llama_sampling(body, &p));
  ZINC_API_CHECK(boolean(body, "stream", &p.stream));
  ZINC_API_CHECK(boolean(body, "return_token_ids", &p.return_token_ids));
  ZINC_API_CHECK(boolean(body, "ignore_eos", &p.ignore_eos));
  ZINC_API_CHECK(boolean(body, "post_sampling_probs", &p.post_sampling_probs));
  v = -1;
  ZINC_API_CHECK(integer(body, "prompt_logprobs", 0, 20, &v));
  p.prompt_logprobs = int32_t(v);
  if (p.prompt_logprobs >= 0 && p.stream) return bad_request("prompt_logprobs", "'prompt_logprobs' is not available when 'stream' is true");
  if (auto it = body.find("stream_options"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) return bad_request("stream_options", "'stream_options' must be an object");
    if (!p.stream) return bad_request("stream_options", "'stream_options' is only allowed when 'stream' is true");
    ZINC_API_CHECK(boolean(*it, "include_usage", &p.include_usage));
  }
  if (auto it = body.find("stop"); it != body.end() && !it->is_null()) {
    if (it->is_string()) {
      p.stop.push_back(it->get<std::string>());
    } else if (it->is_array() && it->size() <= 16) {
      for (const auto& x : *it) {
        if (!x.is_string()) return bad_request("stop", "'stop' must be a string or an array of strings");
        p.stop.push_back(x.get<std::string>());
      }
    } else {
      return bad_request("stop", "'stop' must be a string or an array of at most 16 strings");
    }
  }
  if (auto it = body.find("response_format"); it != body.end() && !it->is_null()) {
    const Json type = it->is_object() ? it->value("type", Json()) : Json();
    if (type == "json_object") {
      p.json_object = true;
    } else if (type == "json_schema") {
      const Json js = it->value("json_schema", Json());
      if (!js.is_object() || !js.contains("schema"))
        return bad_request("response_format", "'response_format' json_schema needs {\"json_schema\": {\"name\": ..., \"schema\": {...}}}");
      auto compiled = engine::JsonSchema::compile(js["schema"]);
      if (!compiled.ok()) return bad_request("response_format", "response_format json_schema: " + compiled.status().message());
      p.json_schema = std::move(*compiled);
    } else if (type != "text") {
      return bad_request("response_format", "'response_format' type must be \"text\", \"json_object\" or \"json_schema\"");
    }
  }
  if (auto it = body.find("grammar"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return bad_request("grammar", "'grammar' must be a string of GBNF rules");
    if (p.json_object || p.json_schema) return bad_request("grammar", "'grammar' cannot go with a 'response_format' json_object or json_schema");
    auto compiled = engine::Grammar::compile(it->get<std::string>(), grammar_tokens);
    if (!compiled.ok()) return bad_request("grammar", compiled.status().message());
    p.grammar = std::move(*compiled);
  }
  if (chat) {
    ZINC_API_CHECK(parse_tools(body, &p));
    if (!p.forced_tools.empty() && (p.json_object || p.json_schema))
      return bad_request("tool_choice", "a forced tool call ('tool_choice' \"required\" or a function) cannot go with a 'response_format'");
    if (!p.forced_tools.empty() && p.grammar)
      return bad_request("tool_choice", "a forced tool call ('tool_choice' \"required\" or a function) cannot go with a 'grammar'");
    bool logprobs = false;
    ZINC_API_CHECK(boolean(body, "logprobs", &logprobs));
    v = -1;
    ZINC_API_CHECK(integer(body, "top_logprobs", 0, 20, &v));
    if (v >= 0 && !logprobs) return bad_request("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    p.top_logprobs = logprobs ? int32_t(std::max<int64_t>(v, 0)) : -1;
  } else {
    v = -1;
    ZINC_API_CHECK(integer(body, "logprobs", 0, 20, &v));
    p.top_logprobs = int32_t(v);
  }
  return std::nullopt;
}

}  // namespace zinc::server
