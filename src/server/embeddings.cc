#include "server/embeddings.h"

#include <httplib.h>

#include <cstring>
#include <future>

#include "core/json_depth.h"
#include "kv/cache.h"

namespace zinc::server {

namespace {

constexpr size_t kMaxInputs = 2048;  // OpenAI's limit


std::string base64(const std::vector<float>& v) {
  static const char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());  // little-endian hosts only (as zinc runs)
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t n = uint32_t(uint8_t(bytes[i])) << 16 | (i + 1 < bytes.size() ? uint32_t(uint8_t(bytes[i + 1])) << 8 : 0) |
                       (i + 2 < bytes.size() ? uint32_t(uint8_t(bytes[i + 2])) : 0);
    out += kDigits[n >> 18 & 63];
    out += kDigits[n >> 12 & 63];
    out += i + 1 < bytes.size() ? kDigits[n >> 6 & 63] : '=';
    out += i + 2 < bytes.size() ? kDigits[n & 63] : '=';
  }
  return out;
}

// The token lists of "input", or the error.
std::optional<ApiError> inputs_of(const GenerationContext& ctx, const Json& input, std::vector<std::vector<int32_t>>* out) {
  auto ids = [&](const Json& list, std::vector<int32_t>* t) {
    for (const auto& x : list) {
      if (!x.is_number_integer() || !ctx.tok.vocab().valid_id(x.get<int64_t>())) return false;
      t->push_back(int32_t(x.get<int64_t>()));
    }
    return !t->empty();
  };
  const std::string shapes = "'input' must be a string, an array of strings, an array of token ids or an array of such arrays";
  if (input.is_string()) {
    out->push_back(ctx.tok.encode(input.get<std::string>(), /*add_special=*/true, /*parse_special=*/true));
  } else if (input.is_array() && !input.empty() && input[0].is_number()) {
    out->emplace_back();
    if (!ids(input, &out->back())) return bad_request("input", "'input' token ids must lie within the vocabulary");
  } else if (input.is_array() && !input.empty() && input.size() <= kMaxInputs) {
    for (const auto& item : input) {
      out->emplace_back();
      if (item.is_string()) out->back() = ctx.tok.encode(item.get<std::string>(), true, true);
      else if (!item.is_array() || !ids(item, &out->back())) return bad_request("input", shapes + " (token ids within the vocabulary)");
    }
  } else {
    return bad_request("input", shapes + ", with 1 to " + std::to_string(kMaxInputs) + " inputs");
  }
  for (const auto& t : *out) {
    if (t.empty()) return bad_request("input", "an input has no tokens");
    if (int64_t(t.size()) > ctx.scheduler.options().n_ctx)
      return ApiError{400, "an input has " + std::to_string(t.size()) + " tokens, but the context holds " +
                               std::to_string(ctx.scheduler.options().n_ctx),
                      "invalid_request_error", "input", "context_length_exceeded"};
  }
  return std::nullopt;
}

}  // namespace

Result<std::vector<float>> embed_tokens(GenerationContext& ctx, const std::vector<int32_t>& tokens) {
  auto promise = std::make_shared<std::promise<Result<std::vector<float>>>>();
  auto done = promise->get_future();
  const engine::Runner::Pooling pooling = ctx.options.pooling;
  ctx.scheduler.run_task(
      [promise, &tokens, pooling](engine::Runner* runner) {
        if (!runner) return promise->set_value(error("the server is shutting down"));
        promise->set_value(runner->embed(tokens, pooling));
      },
      (int64_t(tokens.size()) + kv::kPageTokens - 1) / kv::kPageTokens);
  return done.get();
}

void handle_embeddings(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res) {
  if (json_depth(req.body) > kMaxJsonDepth)
    return reply_error(res, bad_request("", "the request body nests JSON more than " + std::to_string(kMaxJsonDepth) + " levels deep"));
  const Json body = Json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) return reply_error(res, bad_request("", "the request body must be a JSON object"));
  if (auto m = body.find("model"); m != body.end() && !m->is_null() && !m->is_string())
    return reply_error(res, bad_request("model", "'model' must be a string"));
  const Json format = body.value("encoding_format", Json("float"));
  if (format != "float" && format != "base64") return reply_error(res, bad_request("encoding_format", "'encoding_format' must be \"float\" or \"base64\""));
  const int64_t n_embd = ctx.scheduler.embedding_size();
  if (auto d = body.find("dimensions"); d != body.end() && !d->is_null() && (!d->is_number_integer() || d->get<int64_t>() != n_embd))
    return reply_error(res, bad_request("dimensions", "'dimensions' can only be the model's, " + std::to_string(n_embd)));
  std::vector<std::vector<int32_t>> inputs;
  if (auto e = inputs_of(ctx, body.value("input", Json()), &inputs)) return reply_error(res, *e);

  Json data = Json::array();
  int64_t n_tokens = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Result<std::vector<float>> e = embed_tokens(ctx, inputs[i]);
    if (!e.ok()) return reply_error(res, {503, "embedding: " + e.status().message(), "server_error", "", ""});
    n_tokens += int64_t(inputs[i].size());
    Json item = {{"object", "embedding"}, {"index", i}};
    item["embedding"] = format == "base64" ? Json(base64(*e)) : Json(*e);
    data.push_back(std::move(item));
  }
  res.set_content(dump(Json{{"object", "list"}, {"data", data}, {"model", ctx.options.model_name},
                            {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}}),
                  "application/json");
}

}  // namespace zinc::server
