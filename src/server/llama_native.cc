#include "server/llama_native.h"

#include <httplib.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace zinc::server {
namespace {

// What the answer needs of the native request beside OpenAI's fields.
struct NativeRequest {
  std::string prompt_text;
  bool return_tokens = false;
  int n_probs = 0;
  Json settings = Json::object();  // generation_settings: the fields the request set
};

std::optional<ApiError> translate(const GenerationContext& ctx, const Json& in, Json* out, NativeRequest* info) {
  Json& o = *out;
  o = Json::object();
  const auto it = in.find("prompt");
  if (it == in.end()) return bad_request("prompt", "'prompt' is required");
  const Json* prompt = &*it;
  if (prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()) prompt = &(*prompt)[0];
  if (prompt->is_string()) {
    info->prompt_text = prompt->get<std::string>();
  } else if (prompt->is_array()) {  // token ids, which the completion checks as it reads them
    std::vector<int32_t> ids;
    for (const Json& x : *prompt)
      if (x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() <= INT32_MAX) ids.push_back(x.get<int32_t>());
    if (ids.size() == prompt->size())
      if (auto text = ctx.tok.decode(ids); text.ok()) info->prompt_text = *text;
  } else {
    return bad_request("prompt", "'prompt' must be a string or an array of token ids (one prompt a request)");
  }
  o["prompt"] = *prompt;
  for (const char* k : {"temperature", "top_k", "top_p", "min_p", "presence_penalty", "frequency_penalty", "repeat_penalty", "repeat_last_n",
                        "stop", "stream", "grammar", "ignore_eos", "typical_p", "top_n_sigma", "xtc_probability", "xtc_threshold",
                        "dynatemp_range", "dynatemp_exponent", "dry_multiplier", "dry_base", "dry_allowed_length", "dry_penalty_last_n",
                        "dry_sequence_breakers", "mirostat", "mirostat_tau", "mirostat_eta", "min_keep", "post_sampling_probs"})
    if (in.contains(k) && !in[k].is_null()) info->settings[k] = o[k] = in[k];
  if (auto s = in.find("seed"); s != in.end() && !s->is_null() && *s != -1) info->settings["seed"] = o["seed"] = *s;
  if (auto n = in.find("n_predict"); n != in.end() && !n->is_null()) {
    if (!n->is_number_integer() || (n->get<int64_t>() != -1 && n->get<int64_t>() < 1))
      return bad_request("n_predict", "'n_predict' must be -1 (until the context is full) or a positive number of tokens");
    if (*n != -1) o["max_tokens"] = *n;
    info->settings["n_predict"] = *n;
  }
  if (auto n = in.find("n_probs"); n != in.end() && !n->is_null()) {
    if (!n->is_number_integer() || n->get<int64_t>() < 0 || n->get<int64_t>() > 20)
      return bad_request("n_probs", "'n_probs' must be an integer from 0 to 20");
    info->n_probs = n->get<int>();
    if (info->n_probs > 0) o["logprobs"] = info->n_probs;
    info->settings["n_probs"] = *n;
  }
  if (auto r = in.find("return_tokens"); r != in.end() && !r->is_null()) {
    if (!r->is_boolean()) return bad_request("return_tokens", "'return_tokens' must be true or false");
    info->return_tokens = r->get<bool>();
  }
  o["return_token_ids"] = true;  // for tokens_evaluated while streaming, tokens and the probabilities' ids
  if (auto s = in.find("json_schema"); s != in.end() && !s->is_null()) {
    if (!s->is_object()) return bad_request("json_schema", "'json_schema' must be a JSON schema object");
    o["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "schema"}, {"schema", *s}}}};
  }
  if (auto b = in.find("logit_bias"); b != in.end() && !b->is_null()) {
    if (b->is_object()) {
      o["logit_bias"] = *b;
    } else if (b->is_array()) {  // [[token id or text, bias or false], ...]
      Json biases = Json::object();
      for (const Json& pair : *b) {
        if (!pair.is_array() || pair.size() != 2 || !(pair[0].is_number_integer() || pair[0].is_string()) ||
            !(pair[1].is_number() || pair[1] == false))
          return bad_request("logit_bias", "'logit_bias' must be an object, or an array of [token id or text, bias or false] pairs");
        const Json bias = pair[1] == false ? Json(-100) : pair[1];
        if (pair[0].is_number_integer()) biases[std::to_string(pair[0].get<int64_t>())] = bias;
        else
          for (int32_t id : ctx.tok.encode(pair[0].get<std::string>(), false, false)) biases[std::to_string(id)] = bias;
      }
      o["logit_bias"] = std::move(biases);
    } else {
      return bad_request("logit_bias", "'logit_bias' must be an object, or an array of [token id or text, bias or false] pairs");
    }
  }
  if (o.value("stream", false) == true) o["stream_options"] = {{"include_usage", true}};
  return std::nullopt;
}

// The logprobs entries of some tokens (AnswerShape::logprob_entries) as llama.cpp's completion_probabilities.
Json probabilities(const Json& logprobs) {
  if (!logprobs.is_object() || !logprobs["content"].is_array()) return Json::array();
  return logprobs["content"];
}

class LlamaShape : public AnswerShape {
 public:
  LlamaShape(std::string model, NativeRequest info) : model_(std::move(model)), info_(std::move(info)) {}

  void error(httplib::Response& res, const ApiError& e) const override { reply_error(res, e); }

  Json whole(const Json& completion) const override {
    const Json& choice = completion["choices"][0];
    const std::string content = choice.value("text", "");
    Json r = head(content, info_.return_tokens ? choice["token_ids"] : Json::array(), true);
    if (info_.n_probs > 0) r["completion_probabilities"] = probabilities(choice["logprobs"]);
    finish(r, choice.value("finish_reason", "stop"), choice.value("stop_reason", Json()), completion["usage"], completion["timings"]);
    return r;
  }

  std::string chunk(const Json& c) override {
    if (c.contains("error")) return "data: " + dump(c) + "\n\n";
    if (c.contains("usage") && c["usage"].is_object()) {  // the last: the counts and timings
      Json r = head("", Json::array(), true);
      finish(r, finish_, stop_word_, c["usage"], c["timings"]);
      return "data: " + dump(r) + "\n\n";
    }
    const Json& choice = c["choices"][0];
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) finish_ = choice["finish_reason"];
    if (choice.contains("stop_reason")) stop_word_ = choice["stop_reason"];
    if (choice.contains("prompt_token_ids")) prompt_n_ = int64_t(choice["prompt_token_ids"].size());
    const Json ids = choice.value("token_ids", Json::array());
    predicted_ += int64_t(ids.size());
    const std::string text = choice.value("text", "");
    const bool probs = info_.n_probs > 0 && choice["logprobs"].is_object();
    if (text.empty() && !probs && !(info_.return_tokens && !ids.empty())) return "";
    Json r = head(text, info_.return_tokens ? ids : Json::array(), false);
    r["tokens_predicted"] = predicted_;
    r["tokens_evaluated"] = prompt_n_;
    if (probs) r["completion_probabilities"] = probabilities(choice["logprobs"]);
    return "data: " + dump(r) + "\n\n";
  }
  std::string end() override { return ""; }
  bool logprob_entries() const override { return true; }

 private:
  Json head(const std::string& content, const Json& tokens, bool stop) const {
    return {{"index", 0}, {"content", content}, {"tokens", tokens}, {"id_slot", -1}, {"stop", stop}, {"model", model_}};
  }
  void finish(Json& r, const std::string& reason, const Json& stop_word, const Json& usage, const Json& timings) const {
    const bool word = stop_word.is_string();
    r["tokens_predicted"] = usage.value("completion_tokens", 0);
    r["tokens_evaluated"] = usage.value("prompt_tokens", 0);
    Json settings = info_.settings;
    settings["model"] = model_;
    r["generation_settings"] = settings;
    r["prompt"] = info_.prompt_text;
    r["has_new_line"] = r["content"].get<std::string>().find('\n') != std::string::npos;
    r["truncated"] = false;
    r["stop_type"] = reason == "length" ? "limit" : word ? "word" : "eos";
    r["stopping_word"] = word ? stop_word : Json("");
    r["tokens_cached"] = usage.contains("prompt_tokens_details") ? usage["prompt_tokens_details"].value("cached_tokens", 0) : 0;
    Json t = timings.is_object() ? timings : Json::object();
    const double prompt_ms = t.value("prompt_ms", 0.0), predicted_ms = t.value("predicted_ms", 0.0);
    const double prompt_n = t.value("prompt_n", 0.0), predicted_n = t.value("predicted_n", 0.0);
    t["prompt_per_token_ms"] = prompt_n > 0 ? prompt_ms / prompt_n : 0.0;
    t["prompt_per_second"] = prompt_ms > 0 ? prompt_n * 1000.0 / prompt_ms : 0.0;
    t["predicted_per_token_ms"] = predicted_n > 0 ? predicted_ms / predicted_n : 0.0;
    r["timings"] = t;
  }

  std::string model_;
  NativeRequest info_;
  std::string finish_ = "stop";
  Json stop_word_;
  int64_t prompt_n_ = 0, predicted_ = 0;
};

}  // namespace

void handle_llama_completion(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res) {
  Json body;
  if (auto e = parse_body(req.body, &body)) return reply_error(res, *e);
  answer_llama_completion(ctx, body, res);
}

void answer_llama_completion(GenerationContext& ctx, const Json& body, httplib::Response& res) {
  Json translated;
  NativeRequest info;
  if (auto e = translate(ctx, body, &translated, &info)) return reply_error(res, *e);
  handle_translated(ctx, translated, false, res, std::make_unique<LlamaShape>(ctx.options.model_name, std::move(info)));
}

namespace {

// A slot's sampling settings under llama.cpp's names.
Json slot_params(const engine::SamplerParams& d, int64_t n_predict, int64_t seed) {
  return {{"n_predict", n_predict}, {"temperature", d.temperature}, {"top_k", d.top_k}, {"top_p", d.top_p}, {"min_p", d.min_p},
          {"repeat_last_n", d.penalty_last_n}, {"repeat_penalty", d.repeat_penalty}, {"presence_penalty", d.presence_penalty},
          {"frequency_penalty", d.frequency_penalty}, {"typical_p", d.typical_p}, {"top_n_sigma", d.top_n_sigma},
          {"xtc_probability", d.xtc_probability}, {"xtc_threshold", d.xtc_threshold}, {"dynatemp_range", d.dynatemp_range},
          {"dynatemp_exponent", d.dynatemp_exponent}, {"dry_multiplier", d.dry.multiplier}, {"dry_base", d.dry.base},
          {"dry_allowed_length", d.dry.allowed_length}, {"dry_penalty_last_n", d.dry.penalty_last_n},
          {"dry_sequence_breakers", d.dry.sequence_breakers}, {"mirostat", d.mirostat}, {"mirostat_tau", d.mirostat_tau},
          {"mirostat_eta", d.mirostat_eta}, {"min_keep", d.min_keep}, {"seed", seed}, {"n_probs", 0}, {"ignore_eos", false}};
}

}  // namespace

void handle_slots(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const int64_t n_ctx = ctx.scheduler.options().n_ctx;
  Json slots = Json::array();
  bool idle = false;
  for (const engine::SlotState& s : ctx.scheduler.slots()) {
    idle = idle || !s.processing;
    const int64_t remain = s.processing ? s.max_tokens - s.n_decoded : -1;
    slots.push_back({{"id", s.id},
                     {"id_task", s.task},
                     {"n_ctx", n_ctx},
                     {"speculative", false},
                     {"is_processing", s.processing},
                     {"n_prompt_tokens", s.n_prompt},
                     {"params", slot_params(s.sampling, s.processing ? s.max_tokens : -1, s.processing ? int64_t(s.sampling.seed) : -1)},
                     {"next_token", {{"has_next_token", s.processing}, {"has_new_line", false}, {"n_remain", remain},
                                     {"n_decoded", s.n_decoded}, {"stopping_word", ""}}}});
  }
  if (req.get_param_value("fail_on_no_slot") == "1" && !idle)
    return reply_error(res, {503, "no slot available", "unavailable_error", "", "unavailable"});
  res.set_content(dump(slots), "application/json");
}

void handle_slot_action(GenerationContext&, const httplib::Request& req, httplib::Response& res) {
  const std::string action = req.get_param_value("action");
  if (action != "save" && action != "restore" && action != "erase")
    return reply_error(res, {400, "action must be save, restore or erase", "invalid_request_error", "action", "invalid_value"});
  reply_error(res, {501, "slot " + action + " is not supported: zinc's prompt cache is shared by every slot, not kept per slot",
                    "not_supported_error", "action", "not_supported"});
}

void handle_props(GenerationContext& ctx, httplib::Response& res) {
  const Json params = slot_params(engine::SamplerParams{}, -1, -1);
  const int64_t n_ctx = ctx.scheduler.options().n_ctx;
  Json props = {{"default_generation_settings", {{"id", 0}, {"n_ctx", n_ctx}, {"params", params}, {"is_processing", false}}},
                {"total_slots", ctx.scheduler.options().parallel},
                {"model_alias", ctx.options.model_name},
                {"model_path", ctx.options.card.path},
                {"modalities", {{"vision", false}, {"audio", false}}},
                {"chat_template", ctx.format.source()},
                {"bos_token", ctx.format.bos_token()},
                {"eos_token", ctx.format.eos_token()},
                {"build_info", "zinc " ZINC_VERSION}};
  res.set_content(dump(props), "application/json");
}

void handle_apply_template(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res) {
  Json body;
  if (auto e = parse_body(req.body, &body)) return reply_error(res, *e);
  const Json tools = body.contains("tools") && body["tools"].is_array() ? body["tools"] : Json();
  chat::ChatRequest r;
  if (auto e = chat_request(body, tools, &r)) return reply_error(res, *e);
  auto text = ctx.format.render(r);
  if (!text.ok()) return reply_error(res, bad_request("messages", "chat template: " + text.status().message()));
  res.set_content(dump(Json{{"prompt", *text}}), "application/json");
}

}  // namespace zinc::server
