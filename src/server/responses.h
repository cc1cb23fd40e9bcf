// OpenAI's Responses API over the chat machinery: POST /v1/responses, whole or streamed as its
// events. The request (instructions, input as text or items: messages, function_call,
// function_call_output; function tools, tool_choice, text.format, reasoning.effort,
// max_output_tokens) is translated into chat fields and answered through an AnswerShape that
// writes the response object and its output items (reasoning, message, function_call). Nothing
// is stored: previous_response_id is refused. Internal to the server.
#pragma once

#include "server/generation.h"

namespace zinc::server {

void handle_responses(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res);

}  // namespace zinc::server
