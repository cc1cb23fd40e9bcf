// Ollama's API over the chat and completion machinery, for the tools that speak it: POST /api/chat
// and /api/generate (streamed as NDJSON by default, as Ollama does; `"stream": false` for one
// object), GET /api/tags, /api/ps and /api/version, POST /api/show, POST /api/embed ("input"
// a string or strings, "truncate", "dimensions"; vectors of length 1, as Ollama's) and the
// older POST /api/embeddings ("prompt"), and of model management what one served model allows
// (/api/pull of it succeeds; create, copy, push and delete are refused). Requests map to OpenAI's fields
// (options.num_predict → max_tokens, format "json" or a schema → response_format, think →
// the template's enable_thinking or reasoning effort, tools as OpenAI's) and answers come back
// through an AnswerShape with Ollama's message, done_reason, counts and durations (ns). Errors
// are {"error": "..."}. Internal to the server.
#pragma once

#include "server/generation.h"

namespace zinc::server {

// {"error": message} with `status`: Ollama's error shape.
void reply_ollama_error(httplib::Response& res, int status, const std::string& message);
void handle_ollama_generation(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res, bool chat);
void handle_ollama_tags(GenerationContext& ctx, httplib::Response& res);
void handle_ollama_ps(GenerationContext& ctx, httplib::Response& res);
void handle_ollama_embed(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_ollama_embeddings(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_ollama_show(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res);
// POST /api/pull of the served model: success at once (it is here); any other is a 404.
void handle_ollama_pull(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res);
// /api/create, /api/copy, /api/push, DELETE /api/delete: a 501 naming what zinc serves.
void handle_ollama_unsupported(GenerationContext& ctx, const std::string& what, httplib::Response& res);

}  // namespace zinc::server
