// llama.cpp's token endpoints: POST /tokenize {"content", "add_special" (false), "parse_special"
// (true), "with_pieces" (false)} → {"tokens": [ids]} (or [{"id", "piece"}], the piece as text
// when it is whole UTF-8, else its bytes); POST /detokenize {"tokens": [ids]} → {"content"}.
// Internal to the server.
#pragma once

#include "server/generation.h"

namespace zinc::server {

void handle_tokenize(const GenerationContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_detokenize(const GenerationContext& ctx, const httplib::Request& req, httplib::Response& res);

}  // namespace zinc::server
