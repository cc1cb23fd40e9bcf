// The two generation endpoints: request JSON → prompt tokens → scheduler → OpenAI responses, both
// whole and as server-sent events. Internal to the server.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chat/conversation.h"
#include "engine/json_constraint.h"
#include "engine/scheduler.h"
#include "server/api.h"
#include "server/metrics.h"
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
};

int64_t unix_time();
void reply_error(httplib::Response& res, const ApiError& e);
// POST /v1/chat/completions (chat) or /v1/completions.
void handle_generation(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res, bool chat);

}  // namespace zinc::server
