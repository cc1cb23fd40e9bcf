// POST /v1/embeddings (OpenAI's shape): "input" a string, an array of strings, an array of token
// ids or an array of such arrays; "encoding_format" float or base64 (little-endian float32);
// "dimensions" only as the model's. Each input is embedded on the scheduler's worker between
// decode steps (Runner::embed: final-norm hidden states, pooled as the server is told, length 1).
// Internal to the server.
#pragma once

#include "server/generation.h"

namespace zinc::server {

void handle_embeddings(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res);

// One input's embedding, computed on the scheduler's worker between decode steps (blocks).
Result<std::vector<float>> embed_tokens(GenerationContext& ctx, const std::vector<int32_t>& tokens);

}  // namespace zinc::server
