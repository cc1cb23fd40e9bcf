// The generation loop: prefill the prompt as one batch (split at the runner's max batch), then
// decode one token per step, sampling each next token, until an end-of-generation token, the
// token limit, or the callback says stop. Greedy sampling on Vulkan runs as a chain of steps that
// hand their argmax to the next on the device (Runner::decode_greedy_chain), with the same tokens,
// unless a constraint masks each step's logits on the host.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/status.h"
#include "engine/runner.h"
#include "engine/sampler.h"
#include "engine/token_constraint.h"

namespace zinc::engine {

struct GenerateOptions {
  int32_t max_new_tokens = 128;
  std::vector<int32_t> stop_tokens;  // end-of-generation ids (from the tokenizer); not emitted
  // Holds generation to what it accepts (JSON mode, a schema); generation ends when it is finished.
  std::shared_ptr<TokenConstraint> constraint;
};

enum class StopReason : uint8_t { kEndOfGeneration, kMaxTokens, kCallback };

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated, without the prompt or the stop token
  StopReason reason = StopReason::kMaxTokens;
  double prefill_seconds = 0, decode_seconds = 0;
  int64_t prompt_tokens = 0;
};

// Called with every generated token; returning false stops generation.
using TokenCallback = std::function<bool(int32_t token)>;

// One token from a logits row: the row masked by the constraint (`masked`: scratch), sampled,
// and accepted into the sampler and the constraint; nullopt for a stop token (not accepted).
std::optional<int32_t> sample_next(std::span<const float> row, Sampler& sampler, const GenerateOptions& options,
                                   std::vector<float>& masked);

// Runs on sequence `seq` of the runner's cache, continuing from its length (a chat appends
// turns). Afterwards the sequence holds the prompt and every generated token (a stop token is
// not evaluated). Prompt tokens are accepted into the sampler's penalty window.
Result<GenerateResult> generate(Runner& runner, kv::SeqId seq, std::span<const int32_t> prompt, Sampler& sampler,
                                const GenerateOptions& options, const TokenCallback& on_token = nullptr);

}  // namespace zinc::engine
