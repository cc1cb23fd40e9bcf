#include "server/infill.h"

#include <httplib.h>

#include <algorithm>
#include <optional>

#include "server/llama_native.h"

namespace zinc::server {
namespace {

void append(std::vector<int32_t>& out, const std::vector<int32_t>& more) { out.insert(out.end(), more.begin(), more.end()); }

// A field of text or of text and token ids (special tokens as plain text, as llama.cpp reads them).
std::optional<ApiError> read_tokens(const tokenizer::Tokenizer& tok, const Json& body, const char* name, bool required, bool parse_special,
                                    std::vector<int32_t>* out) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) {
    if (required) return bad_request(name, std::string("'") + name + "' is required");
    return std::nullopt;
  }
  const std::string wrong = std::string("'") + name + "' must be a string or an array of strings and token ids";
  if (it->is_string()) {
    *out = tok.encode(it->get<std::string>(), false, parse_special);
    return std::nullopt;
  }
  if (!it->is_array()) return bad_request(name, wrong);
  for (const Json& x : *it) {
    if (x.is_string()) {
      append(*out, tok.encode(x.get<std::string>(), false, parse_special));
    } else if (x.is_number_integer()) {
      if (!tok.vocab().valid_id(x.get<int64_t>()))
        return bad_request(name, std::string("'") + name + "' names token " + x.dump() + ", but the vocabulary has " +
                                     std::to_string(tok.vocab().n_tokens()) + " tokens");
      out->push_back(x.get<int32_t>());
    } else {
      return bad_request(name, wrong);
    }
  }
  return std::nullopt;
}

std::optional<ApiError> read_extra(const Json& body, std::vector<std::pair<std::string, std::string>>* out) {
  const auto it = body.find("input_extra");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_array()) return bad_request("input_extra", "'input_extra' must be an array of {\"filename\": string, \"text\": string}");
  for (const Json& chunk : *it) {
    if (!chunk.is_object() || !chunk.contains("text") || !chunk["text"].is_string())
      return bad_request("input_extra", "each 'input_extra' chunk must have a \"text\" field with a string value");
    std::string filename = "tmp";
    if (auto f = chunk.find("filename"); f != chunk.end() && !f->is_null()) {
      if (!f->is_string()) return bad_request("input_extra", "an 'input_extra' chunk's \"filename\" must be a string");
      filename = f->get<std::string>();
    }
    out->emplace_back(std::move(filename), chunk["text"].get<std::string>());
  }
  return std::nullopt;
}

}  // namespace

std::vector<int32_t> infill_tokens(const tokenizer::Tokenizer& tok, const InfillParts& parts, int64_t window, int64_t extra_budget) {
  const tokenizer::SpecialIds& s = tok.vocab().special();
  auto text = [&tok](const std::string& t) { return tok.encode(t, false, false); };
  std::vector<int32_t> extra;
  if (s.fim_rep != tokenizer::kNoToken) {
    extra.push_back(s.fim_rep);
    append(extra, text("myproject\n"));
  }
  for (const auto& [filename, body] : parts.extra) {
    if (s.fim_sep != tokenizer::kNoToken) {
      extra.push_back(s.fim_sep);
      append(extra, text(filename + "\n"));
    } else {
      append(extra, text("\n\n--- snippet ---\n\n"));
    }
    append(extra, text(body));
  }
  if (s.fim_sep != tokenizer::kNoToken) {  // the file being completed
    extra.push_back(s.fim_sep);
    append(extra, text("filename\n"));
  }
  const int64_t n_prefix = std::min<int64_t>(int64_t(parts.prefix.size()), 3 * (window / 4));
  const int64_t n_suffix = std::min<int64_t>(int64_t(parts.suffix.size()), std::max<int64_t>(0, window / 4 - 2 - int64_t(parts.prompt.size())));
  const int64_t n_extra = std::min<int64_t>(int64_t(extra.size()), std::max<int64_t>(0, extra_budget));

  std::vector<int32_t> out(extra.end() - n_extra, extra.end());
  if (tok.vocab().flags().add_bos && s.bos != tokenizer::kNoToken) out.push_back(s.bos);
  out.push_back(s.fim_pre);
  out.insert(out.end(), parts.prefix.end() - n_prefix, parts.prefix.end());
  append(out, parts.prompt);
  out.push_back(s.fim_suf);
  out.insert(out.end(), parts.suffix.begin(), parts.suffix.begin() + n_suffix);
  out.push_back(s.fim_mid);
  return out;
}

void handle_infill(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const tokenizer::SpecialIds& s = ctx.tok.vocab().special();
  std::string missing;
  if (s.fim_pre == tokenizer::kNoToken) missing += " prefix token is missing.";
  if (s.fim_suf == tokenizer::kNoToken) missing += " suffix token is missing.";
  if (s.fim_mid == tokenizer::kNoToken) missing += " middle token is missing.";
  if (!missing.empty()) return reply_error(res, {501, "Infill is not supported by this model:" + missing, "not_supported_error", "", ""});

  Json body;
  if (auto e = parse_body(req.body, &body)) return reply_error(res, *e);
  InfillParts parts;
  if (auto e = read_tokens(ctx.tok, body, "input_prefix", true, false, &parts.prefix)) return reply_error(res, *e);
  if (auto e = read_tokens(ctx.tok, body, "input_suffix", true, false, &parts.suffix)) return reply_error(res, *e);
  if (auto e = read_tokens(ctx.tok, body, "prompt", false, true, &parts.prompt)) return reply_error(res, *e);
  if (auto e = read_extra(body, &parts.extra)) return reply_error(res, *e);

  // The extra context fills what the window and twice the answer leave of a sequence's context.
  const int64_t n_ctx = ctx.scheduler.options().n_ctx;
  const int64_t window = std::min(kInfillWindow, n_ctx / 2);
  const auto n_predict = body.find("n_predict");
  const int64_t answer = n_predict != body.end() && n_predict->is_number_integer() ? std::max<int64_t>(0, n_predict->get<int64_t>()) : 0;
  Json native = body;
  for (const char* k : {"input_prefix", "input_suffix", "input_extra"}) native.erase(k);
  native["prompt"] = infill_tokens(ctx.tok, parts, window, n_ctx - window - 2 * answer);
  answer_llama_completion(ctx, native, res);
}

}  // namespace zinc::server
