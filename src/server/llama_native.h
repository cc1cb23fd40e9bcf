// llama.cpp server's own endpoints, for the clients written against it: POST /completion (its
// native completion: prompt as text or token ids, n_predict, n_probs, return_tokens, ignore_eos,
// logit_bias as [[id or text, bias or false], ...], json_schema, grammar and the sampling fields;
// answered with content, stop, stop_type, tokens_predicted / evaluated / cached, timings and
// completion_probabilities, streamed as server-sent events of the same objects without a
// [DONE]), GET /props (the defaults, slots, context, template and model path) and POST
// /apply-template (a chat's prompt text). Requests map to OpenAI's completion fields and answers
// come back through an AnswerShape; errors are OpenAI's. Internal to the server.
#pragma once

#include "server/generation.h"

namespace zinc::server {

void handle_llama_completion(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res);
// POST /completion's answer to a body already parsed.
void answer_llama_completion(GenerationContext& ctx, const Json& body, httplib::Response& res);
void handle_props(GenerationContext& ctx, httplib::Response& res);
// GET /slots: each parallel sequence's state (llama.cpp's fields); ?fail_on_no_slot=1 answers 503
// when every slot is busy. POST /slots/{id}?action=...: save, restore and erase are answered 501.
void handle_slots(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_slot_action(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_apply_template(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res);

}  // namespace zinc::server
