#include "engine/generate.h"

#include <algorithm>
#include <chrono>

namespace zinc::engine {

Result<GenerateResult> generate(Runner& runner, kv::SeqId seq, std::span<const int32_t> prompt, Sampler& sampler,
                                const GenerateOptions& options, const TokenCallback& on_token) {
  if (prompt.empty()) return error("the prompt is empty");
  using clock = std::chrono::steady_clock;
  GenerateResult result;
  result.prompt_tokens = int64_t(prompt.size());
  result.tokens.reserve(size_t(std::max(options.max_new_tokens, 0)));
  for (int32_t t : prompt) sampler.accept(t);

  auto t0 = clock::now();
  ZINC_ASSIGN_OR_RETURN(std::span<const float> logits, runner.decode(seq, prompt, false));
  auto t1 = clock::now();
  result.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();

  while (int32_t(result.tokens.size()) < options.max_new_tokens) {
    const int32_t next = sampler.sample(logits);
    if (std::find(options.stop_tokens.begin(), options.stop_tokens.end(), next) != options.stop_tokens.end()) {
      result.reason = StopReason::kEndOfGeneration;
      break;
    }
    sampler.accept(next);
    result.tokens.push_back(next);
    ZINC_ASSIGN_OR_RETURN(logits, runner.decode(seq, std::span<const int32_t>(&result.tokens.back(), 1), false));
    if (on_token && !on_token(next)) {
      result.reason = StopReason::kCallback;
      break;
    }
  }
  result.decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
  return result;
}

}  // namespace zinc::engine
