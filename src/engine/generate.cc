#include "engine/generate.h"

#include <algorithm>
#include <chrono>

namespace zinc::engine {

std::optional<int32_t> sample_next(std::span<const float> row, Sampler& sampler, const GenerateOptions& options,
                                   std::vector<float>& masked) {
  if (options.constraint) {
    masked.assign(row.begin(), row.end());
    options.constraint->mask(masked);
    row = masked;
  }
  const int32_t next = sampler.sample(row);
  if (std::find(options.stop_tokens.begin(), options.stop_tokens.end(), next) != options.stop_tokens.end()) return std::nullopt;
  sampler.accept(next);
  if (options.constraint) options.constraint->accept(next);
  return next;
}

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

  auto is_stop = [&](int32_t t) {
    return std::find(options.stop_tokens.begin(), options.stop_tokens.end(), t) != options.stop_tokens.end();
  };
  if (runner.on_vulkan() && sampler.greedy() && !options.constraint && options.max_new_tokens > 0) {
    // Greedy on the device: each step's argmax feeds the next there (Runner::decode_greedy_chain),
    // as many steps as the cache has room for; past that the host loop below gives the usual
    // error when the cache is full.
    const int32_t first = sampler.sample(logits);
    if (is_stop(first)) {
      result.reason = StopReason::kEndOfGeneration;
      result.decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
      return result;
    }
    sampler.accept(first);
    result.tokens.push_back(first);
    const kv::Cache& cache = runner.cache();
    const int64_t room = cache.capacity(seq) - cache.length(seq) + cache.free_pages() * kv::kPageTokens;
    const int n = int(std::min<int64_t>(options.max_new_tokens, room));
    bool stopped = false;
    size_t step = 0;  // step i decodes tokens[i]; its argmax is the next token
    auto on_step = [&](int32_t next) {
      const int32_t decoded = result.tokens[step++];
      stopped = true;
      if (on_token && !on_token(decoded)) {
        result.reason = StopReason::kCallback;
        return false;
      }
      if (int32_t(result.tokens.size()) >= options.max_new_tokens) return false;
      if (is_stop(next)) {
        result.reason = StopReason::kEndOfGeneration;
        return false;
      }
      sampler.accept(next);
      result.tokens.push_back(next);
      stopped = false;
      return true;
    };
    ZINC_RETURN_IF_ERROR(runner.decode_greedy_chain(seq, first, n, on_step).status());
    if (stopped) {
      result.decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
      return result;
    }
    // Out of room with the last token not decoded: decode it on the host path (normally the
    // cache-full error), then go on there.
    const int32_t last = result.tokens.back();
    ZINC_ASSIGN_OR_RETURN(logits, runner.decode(seq, std::span<const int32_t>(&last, 1), false));
    if (on_token && !on_token(last)) {
      result.reason = StopReason::kCallback;
      result.decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
      return result;
    }
  }

  std::vector<float> masked;
  while (int32_t(result.tokens.size()) < options.max_new_tokens) {
    const std::optional<int32_t> sampled = sample_next(logits, sampler, options, masked);
    if (!sampled) {
      result.reason = StopReason::kEndOfGeneration;
      break;
    }
    const int32_t next = *sampled;
    result.tokens.push_back(next);
    ZINC_ASSIGN_OR_RETURN(logits, runner.decode(seq, std::span<const int32_t>(&result.tokens.back(), 1), false));
    if (on_token && !on_token(next)) {
      result.reason = StopReason::kCallback;
      break;
    }
    if (options.constraint && options.constraint->finished()) {  // the document is whole
      result.reason = StopReason::kEndOfGeneration;
      break;
    }
  }
  result.decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
  return result;
}

}  // namespace zinc::engine
