// The OpenAI request fields zinc reads and the error object it answers with. Every check names
// the field (`param`) so a bad request becomes a 400 that says what to fix.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_depth.h"
#include "engine/gbnf.h"
#include "engine/json_schema.h"
#include "engine/sampler.h"

namespace zinc::server {

using Json = nlohmann::ordered_json;

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // "" → null
  std::string code;   // "" → null
};
// {"error": {"message", "type", "param", "code"}}
Json error_json(const ApiError& e);
// A 400 invalid_request_error naming `param`.
ApiError bad_request(const std::string& param, const std::string& message);
// prefix + n random alphanumerics: ids of completions, calls, messages.
std::string random_id(const char* prefix, int n = 24);
// A request body that must be a JSON object (not nested past kMaxJsonDepth).
std::optional<ApiError> parse_body(const std::string& text, Json* out);
// An OpenAI tool call's arguments (JSON text) as the object other APIs send ({} if not one).
Json call_arguments(const Json& call);
// A named server-sent event: "event: NAME\ndata: JSON\n\n".
std::string sse_event(const char* name, const Json& data);
// JSON text with invalid UTF-8 replaced (model output is checked, but never trusted to crash us).
std::string dump(const Json& j);

// How deep a request body may nest (zinc::json_depth, checked before parsing).
constexpr int kMaxJsonDepth = 128;
// Choices one request may ask for ('n'; OpenAI's limit).
constexpr int kMaxChoices = 128;

// Fields shared by /v1/chat/completions and /v1/completions.
struct GenerationParams {
  std::string model;
  engine::SamplerParams sampling;
  bool seed_given = false;
  int32_t max_tokens = -1;  // -1: until the context is full
  int32_t n = 1;            // choices, each generated apart (seed + i)
  std::vector<std::string> stop;
  bool stream = false, include_usage = false;
  int32_t top_logprobs = -1;  // -1: no logprobs
  Json tools;                 // chat: the request's tools (null: none), each {type: "function", function: {name, ...}}
  bool parse_tool_calls = true;  // chat: tool_choice "auto" (false: "none")
  bool parallel_tool_calls = true;  // chat: false: one call at most (generation ends with it)
  std::vector<std::string> forced_tools;  // chat: tool_choice "required" (every tool) or a named function
  bool json_object = false;      // response_format {"type": "json_object"}: the answer is one JSON object
  std::shared_ptr<const engine::JsonSchema> json_schema;  // response_format {"type": "json_schema"}
  std::shared_ptr<const engine::Grammar> grammar;        // llama.cpp's 'grammar': GBNF rules
  // vLLM's 'return_token_ids': each choice (and chunk) carries its token ids in `token_ids`, and
  // the prompt's go in `prompt_token_ids` (completions: on each choice; chat: beside the choices).
  bool return_token_ids = false;
  bool ignore_eos = false;  // vLLM's and llama.cpp's 'ignore_eos': the end-of-generation tokens are never drawn
  // Completions' 'echo': the prompt's text comes first in the answer (with logprobs, every prompt
  // token's too, the first one's null); max_tokens may then be 0.
  bool echo = false;
  // vLLM's 'prompt_logprobs': each prompt token's logprob and rank with this many alternatives
  // (completions: on the choice; chat: beside the choices); -1: none.
  int32_t prompt_logprobs = -1;
  // llama.cpp's 'post_sampling_probs': logprobs entries (chat, /completion) carry each token's
  // probability after the sampling chain and the chain's likeliest candidates ("prob",
  // "top_probs") instead of the raw logprobs.
  bool post_sampling_probs = false;
};

// Reads the shared fields; `chat` picks the logprobs convention (chat: logprobs bool +
// top_logprobs; completions: logprobs integer) and reads tools, tool_choice and
// parallel_tool_calls. response_format "text", "json_object" (generation held to one JSON
// object) or "json_schema" (held to the schema: engine/json_schema.h says which keywords; a
// schema using others is refused, naming them), or llama.cpp's `grammar` (GBNF, engine/gbnf.h).
// tool_choice "required" or a named function holds generation to one call (forced_tools), so it
// cannot go with a response_format or a grammar.
// `grammar_tokens` resolves the grammar's token references (the served model's vocabulary).
std::optional<ApiError> parse_generation(const Json& body, bool chat, GenerationParams* out,
                                         const engine::Grammar::Tokens* grammar_tokens = nullptr);

}  // namespace zinc::server
