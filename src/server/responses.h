// OpenAI's Responses API over the chat machinery: POST /v1/responses, whole or streamed as its
// events. The request (instructions, input as text or items: messages, function_call,
// function_call_output, reasoning; function tools, tool_choice, text.format, reasoning.effort,
// max_output_tokens, previous_response_id, store) is translated into chat fields and answered
// through an AnswerShape that writes the response object and its output items (reasoning,
// message, function_call). Finished responses are kept (unless store is false) in the context's
// ResponseStore, so that a later request can continue one (previous_response_id: its
// conversation without its instructions, then the new input) and GET /v1/responses/{id},
// DELETE /v1/responses/{id} and GET /v1/responses/{id}/input_items find it. Internal to the
// server.
#pragma once

#include <string>

#include "server/generation.h"

namespace zinc::server {

void handle_responses(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res);
// GET /v1/responses/{id} (remove false) or DELETE /v1/responses/{id}.
void handle_stored_response(GenerationContext& ctx, const std::string& id, bool remove, httplib::Response& res);
// GET /v1/responses/{id}/input_items: limit (1-100, 20), order (asc, desc: the default), after.
void handle_input_items(GenerationContext& ctx, const httplib::Request& req, const std::string& id, httplib::Response& res);

}  // namespace zinc::server
