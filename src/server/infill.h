// llama.cpp server's POST /infill: fill-in-the-middle for code completion. input_prefix and
// input_suffix (text, or arrays of text and token ids), input_extra (chunks of other files:
// [{filename, text}]) and prompt (text that continues the prefix, special tokens parsed) become
// one prompt of token ids in the layout FIM-trained models (Qwen2.5-Coder, StarCoder, CodeLlama)
// were trained on, which is then answered as POST /completion with the body's other fields.
// A model without FIM prefix, suffix and middle tokens answers 501. Internal to the server.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "server/generation.h"
#include "tokenizer/tokenizer.h"

namespace zinc::server {

// llama.cpp's default batch, which bounds its prefix and suffix (the window of infill_tokens).
inline constexpr int64_t kInfillWindow = 2048;

struct InfillParts {
  std::vector<int32_t> prefix, suffix, prompt;
  std::vector<std::pair<std::string, std::string>> extra;  // (filename, text)
};

// The prompt's token ids:
//   [FIM_REP "myproject\n"] per chunk: (FIM_SEP filename "\n" | "\n\n--- snippet ---\n\n") text
//   [FIM_SEP "filename\n"] [BOS] FIM_PRE prefix prompt FIM_SUF suffix FIM_MID
// The prefix keeps its last 3/4 of `window` tokens, the suffix its first window/4 - 2 - |prompt|,
// and the extra context its last `extra_budget` tokens (llama.cpp's rules, with its batch size as
// the window). The vocabulary must have FIM_PRE, FIM_SUF and FIM_MID.
std::vector<int32_t> infill_tokens(const tokenizer::Tokenizer& tok, const InfillParts& parts, int64_t window, int64_t extra_budget);

void handle_infill(GenerationContext& ctx, const httplib::Request& req, httplib::Response& res);

}  // namespace zinc::server
