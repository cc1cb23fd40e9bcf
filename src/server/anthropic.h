// Anthropic's Messages API over the chat machinery: POST /v1/messages (whole or streamed as its
// events) and /v1/messages/count_tokens. A request is translated into OpenAI's chat fields
// (system, content blocks, tool_use / tool_result, tools with input_schema, tool_choice,
// stop_sequences, thinking) and answered through an AnswerShape that writes Anthropic's message,
// content blocks, stop_reason and usage. Images and documents are refused. Internal to the server.
#pragma once

#include <string>

#include "server/generation.h"

namespace zinc::server {

void handle_messages(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_count_tokens(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res);
// Anthropic's error body ({"type": "error", "error": {"type", "message"}}), its type from the status.
void reply_anthropic_error(httplib::Response& res, int status, const std::string& message);

}  // namespace zinc::server
