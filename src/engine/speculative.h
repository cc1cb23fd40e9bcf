// Speculative decoding with a draft model (llama.cpp's --model-draft): a small model sharing the
// vocabulary guesses the next tokens greedily, the target evaluates the last token and every
// guess in one batch, and its sampler takes the rows in order, keeping guesses while they are
// what it samples. The first token it samples differently (or after the last guess) is its own.
// Each emitted token is one draw of the target's sampler from the target's row, so the output
// is the target's (as generate() gives it, up to the rounding of batched rows); the draft only
// sets how many rows a batch holds. Both caches are cut back to what was kept, so the models
// must be attention-only: a recurrent state cannot be rolled back.
#pragma once

#include <cstdint>

#include "engine/generate.h"

namespace zinc::engine {

struct DraftOptions {
  int32_t max_tokens = 16;  // guesses per batch at most (llama.cpp's --draft-max)
  int32_t min_tokens = 0;   // fewer guesses than this are not checked (--draft-min)
  float p_min = 0.75f;      // the draft stops guessing below this probability of its best token (--draft-p-min)
};

struct DraftStats {
  int64_t drafted = 0, accepted = 0;  // guesses checked by the target, and kept
};

// As generate(), with `draft` (on `draft_seq` of its own runner, at the same length as `seq`)
// guessing ahead. Returns the same result; `stats` (optional) counts the guesses. Afterwards both
// sequences hold the prompt and every generated token (a stop token is not evaluated).
Result<GenerateResult> generate_speculative(Runner& target, kv::SeqId seq, Runner& draft, kv::SeqId draft_seq,
                                            std::span<const int32_t> prompt, Sampler& sampler, const GenerateOptions& options,
                                            const DraftOptions& draft_options, const TokenCallback& on_token = nullptr,
                                            DraftStats* stats = nullptr);

}  // namespace zinc::engine
