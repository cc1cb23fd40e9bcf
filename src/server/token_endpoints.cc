#include "server/token_endpoints.h"

#include <httplib.h>

#include "core/json_depth.h"
#include "engine/json_lex.h"

namespace zinc::server {

namespace {

// The request body as a JSON object, or the error already answered.
bool read_body(const httplib::Request& req, httplib::Response& res, Json* body) {
  if (json_depth(req.body) > kMaxJsonDepth) {
    reply_error(res, {400, "the request body nests JSON more than " + std::to_string(kMaxJsonDepth) + " levels deep", "invalid_request_error", "", ""});
    return false;
  }
  *body = Json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (body->is_discarded() || !body->is_object()) {
    reply_error(res, {400, "the request body must be a JSON object", "invalid_request_error", "", ""});
    return false;
  }
  return true;
}

bool flag(const Json& body, const char* key, bool fallback, httplib::Response& res, bool* out) {
  const Json v = body.value(key, Json());
  if (v.is_null()) {
    *out = fallback;
  } else if (v.is_boolean()) {
    *out = v.get<bool>();
  } else {
    reply_error(res, {400, std::string("'") + key + "' must be true or false", "invalid_request_error", key, ""});
    return false;
  }
  return true;
}

}  // namespace

void handle_tokenize(const GenerationContext& ctx, const httplib::Request& req, httplib::Response& res) {
  Json body;
  if (!read_body(req, res, &body)) return;
  const Json content = body.value("content", Json());
  if (!content.is_string()) return reply_error(res, {400, "'content' must be a string", "invalid_request_error", "content", ""});
  bool add_special = false, parse_special = true, with_pieces = false;
  if (!flag(body, "add_special", false, res, &add_special) || !flag(body, "parse_special", true, res, &parse_special) ||
      !flag(body, "with_pieces", false, res, &with_pieces))
    return;
  const std::vector<int32_t> ids = ctx.tok.encode(content.get<std::string>(), add_special, parse_special);
  Json tokens = Json::array();
  for (int32_t id : ids) {
    if (!with_pieces) {
      tokens.push_back(id);
      continue;
    }
    const std::string_view piece = ctx.tok.decode_piece(id, /*render_special=*/true);
    Json p = Json::array();
    if (engine::json_lex::whole_utf8(piece)) p = std::string(piece);
    else
      for (char c : piece) p.push_back(int(uint8_t(c)));
    tokens.push_back({{"id", id}, {"piece", p}});
  }
  res.set_content(dump(Json{{"tokens", tokens}}), "application/json");
}

void handle_detokenize(const GenerationContext& ctx, const httplib::Request& req, httplib::Response& res) {
  Json body;
  if (!read_body(req, res, &body)) return;
  const Json tokens = body.value("tokens", Json());
  if (!tokens.is_array()) return reply_error(res, {400, "'tokens' must be an array of token ids", "invalid_request_error", "tokens", ""});
  std::vector<int32_t> ids;
  for (const auto& t : tokens) {
    if (!t.is_number_integer() || !ctx.tok.vocab().valid_id(t.get<int64_t>()))
      return reply_error(res, {400, "'tokens' must hold ids within the vocabulary (" + std::to_string(ctx.tok.n_tokens()) + " tokens)",
                               "invalid_request_error", "tokens", ""});
    ids.push_back(int32_t(t.get<int64_t>()));
  }
  auto text = ctx.tok.decode(ids);
  if (!text.ok()) return reply_error(res, {400, text.status().message(), "invalid_request_error", "tokens", ""});
  res.set_content(dump(Json{{"content", *text}}), "application/json");
}

}  // namespace zinc::server
