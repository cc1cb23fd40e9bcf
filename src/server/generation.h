// The two generation endpoints: request JSON → prompt tokens → scheduler → OpenAI responses, both
// whole and as server-sent events (or another API's, through an AnswerShape). Internal to the
// server.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chat/conversation.h"
#include "engine/json_constraint.h"
#include "engine/scheduler.h"
#include "server/api.h"
#include "server/metrics.h"
#include "server/response_store.h"
#include "server/server.h"
#include "tokenizer/tokenizer.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace zinc::server {

struct GenerationContext {
  const tokenizer::Tokenizer& tok;
  const chat::ChatFormat& format;
  engine::Scheduler& scheduler;
  ServerOptions options;
  Metrics metrics;
  std::atomic<bool> stopping{false};  // the server is shutting down: end streams
  // Every token's text (control tokens ""), for JSON mode and structured outputs; made once.
  std::shared_ptr<const engine::TokenVocab> token_vocab;
  engine::Grammar::Tokens grammar_tokens;  // the vocabulary a request's grammar refers to by `<token>`
  ResponseStore responses;  // /v1/responses kept for previous_response_id (options.responses_store_bytes)
  // DRY's breaker tables by breaker list, built from the vocabulary on first use (a few kept).
  std::mutex dry_mu;
  std::map<std::vector<std::string>, std::shared_ptr<const engine::DryBreakers>> dry_tables;
};

// The shape answers go out in: OpenAI's unless a request comes through another API (Anthropic's
// messages), which rewrites the chat answer as it would have been sent. Each streamed request
// gets its own (it may keep state between chunks).
class AnswerShape {
 public:
  virtual ~AnswerShape() = default;
  virtual void error(httplib::Response& res, const ApiError& e) const = 0;
  virtual Json whole(const Json& completion) const = 0;  // a chat.completion body
  // The server-sent-event text for a chat.completion.chunk (an error chunk: {"error": ...}).
  virtual std::string chunk(const Json& chunk) = 0;
  virtual std::string end() = 0;  // after the last chunk
  virtual const char* stream_type() const { return "text/event-stream"; }
  // Logprobs as chat's ordered entries, each with its token id ("id"), on either endpoint.
  virtual bool logprob_entries() const { return false; }
};

int64_t unix_time();
void reply_error(httplib::Response& res, const ApiError& e);
// POST /v1/chat/completions (chat) or /v1/completions.
void handle_generation(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res, bool chat);
// The template's input from a chat body's messages, `tools`, chat_template_kwargs and
// reasoning_effort, or the error to answer with.
std::optional<ApiError> chat_request(const Json& body, const Json& tools, chat::ChatRequest* out);
// How many tokens a chat request's prompt renders to, or the error to answer with.
std::optional<ApiError> chat_prompt_size(GenerationContext& ctx, const Json& body, int64_t* n);
// A chat (or completion) request already parsed and translated into OpenAI's fields, answered in
// `shape` (which then sees chat.completion or text_completion bodies and chunks).
void handle_translated(GenerationContext& ctx, const Json& body, bool chat, httplib::Response& res, std::unique_ptr<AnswerShape> shape);

}  // namespace zinc::server
