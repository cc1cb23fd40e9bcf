// Continuous batching over one Runner. A worker thread owns the runner: requests wait in a queue;
// up to `parallel` sequences run together, each step one Runner::decode over a batch that mixes
// one token of every decoding sequence with chunks of prompts being prefilled (at most
// prefill_chunk tokens per step in all), so a long prompt does not stall running streams. New
// requests join between steps. Each request has its own seeded Sampler; finished sequences leave
// their tokens in the PrefixCache so a later request with the same prefix prefills only the rest.
// Models with recurrent layers cache a snapshot instead, taken where the request's checkpoint
// says (the prefill is split there), since their state cannot be rewound from a sequence's end;
// a request with a checkpoint (a chat's history) is also snapshotted where it ends, for the next
// turn that repeats its answer.
//
// Results come back through the request's Stream (a thread-safe queue read by the caller);
// Stream::cancel (a client that went away) ends the sequence at the next step and frees its pages.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/prefix_cache.h"
#include "engine/runner.h"
#include "engine/sampler.h"
#include "engine/token_constraint.h"

namespace zinc::engine {

struct TokenLogprob {
  int32_t token;
  float logprob;  // log-softmax of the raw logits row
};

struct TokenProb {
  int32_t token;
  float prob;
};

enum class FinishReason : uint8_t { kStop, kLength, kCancelled, kError };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "cancelled", "error"

struct Event {
  // kPrompt: a prompt token and its score (Request::prompt_logprobs), all before the first kToken.
  enum class Kind : uint8_t { kToken, kPrompt, kDone } kind = Kind::kToken;
  int32_t token = -1;
  float logprob = 0;
  bool scored = true;  // kPrompt: false for the first prompt token (nothing comes before it)
  int32_t rank = 0;    // with logprobs: 1 + how many tokens the row rates higher than this one
  std::vector<TokenLogprob> top;  // top_logprobs alternatives, most likely first
  // Request::post_sampling_probs: the token's probability after the sampling chain (0 where the
  // chain dropped it) and the chain's likeliest candidates with theirs, most likely first.
  float prob = 0;
  std::vector<TokenProb> post_top;
  // kDone:
  FinishReason finish = FinishReason::kStop;
  std::string error;               // kError
  int64_t prompt_tokens = 0;       // in the request
  int64_t cached_tokens = 0;       // of them, reused from the prefix cache
  int64_t completion_tokens = 0;   // sampled (the end-of-generation id not counted)
};

struct Request {
  std::vector<int32_t> prompt;
  SamplerParams sampling;
  int32_t max_tokens = 128;       // tokens to generate at most
  std::vector<int32_t> stop_ids;  // end-of-generation ids (not emitted; finish = stop)
  int32_t top_logprobs = -1;      // <0: no logprobs; 0: the chosen token's only; n: n alternatives
  // >= 0: every prompt token comes back as a kPrompt event with its logprob and this many
  // alternatives (the prompt is computed whole, not taken from the prefix cache); max_tokens may
  // then be 0, which scores the prompt and generates nothing.
  int32_t prompt_logprobs = -1;
  // >= 0: every token also comes with its probability after the sampling chain and this many of the
  // chain's candidates (llama.cpp's post_sampling_probs); -1: none.
  int32_t post_sampling_probs = -1;
  // Restricts what may be sampled (logprobs still come from the raw row); when it reports
  // finished() after a token, the request ends with kStop.
  std::shared_ptr<TokenConstraint> constraint;
  // Models with recurrent layers: where the prompt's state is cached for later requests (a chat's
  // history before the generation prompt, which its next turn repeats). -1: all but the last
  // token (the same prompt again); 0: nowhere. Above 0, the state where the request ends (stop or
  // length) is cached too.
  int64_t checkpoint = -1;
};

class Stream {
 public:
  // Waits for the next event up to `timeout`; nullopt on timeout.
  std::optional<Event> next(std::chrono::milliseconds timeout);
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

 private:
  friend class Scheduler;
  void push(Event e);
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
  std::atomic<bool> cancelled_{false};
};

struct SchedulerOptions {
  int32_t parallel = 4;          // sequences decoding at once (the runner needs max_seqs >= parallel)
  int64_t n_ctx = 4096;          // tokens one sequence may hold (prompt + generated)
  int64_t prefill_chunk = 256;   // prompt tokens per step, over all prefilling sequences
  size_t max_cached_prefixes = 64;
  size_t max_prefix_state_bytes = PrefixCache::kDefaultStateBytes;  // recurrent snapshots' host memory
};

struct SchedulerStats {
  int64_t queue_depth = 0, active = 0;
  int64_t kv_pages_used = 0, kv_pages_total = 0;
  int64_t prompt_tokens_cached = 0, prompt_tokens_computed = 0;  // totals
  int64_t cached_prefixes = 0, steps = 0;
};

// One of the `parallel` sequences as llama.cpp's /slots shows it: a request holds the lowest free
// slot from its admission to its end.
struct SlotState {
  int32_t id = 0;
  bool processing = false;
  int64_t task = -1;  // the request's number (in order of submission), -1 when idle
  int64_t n_prompt = 0, n_decoded = 0;
  int32_t max_tokens = 0;
  SamplerParams sampling;
};

class Scheduler {
 public:
  // Starts the worker. The runner is borrowed; the scheduler is its only user until destroyed.
  Scheduler(Runner& runner, const SchedulerOptions& options);
  ~Scheduler();  // stops: queued and running requests end as cancelled
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request. Checks (prompt empty, too long for n_ctx, ids outside the vocabulary) end
  // the stream at once with kError.
  std::shared_ptr<Stream> submit(Request request);
  // Runs `task` on the worker between steps, with the runner to itself and a sequence free for
  // it, after making room for `pages` KV pages (an embedding's). Tasks still queued at shutdown
  // are called with nullptr.
  void run_task(std::function<void(Runner*)> task, int64_t pages);
  SchedulerStats stats() const;
  std::vector<SlotState> slots() const;
  const SchedulerOptions& options() const { return options_; }
  int64_t embedding_size() const;  // the model's n_embd (Runner::embed's length)
  // Whether prompts are cached as recurrent-state snapshots at Request::checkpoint.
  bool caches_at_checkpoints() const { return prefixes_.snapshots_state() && prefixes_.enabled(); }

 private:
  struct Active;
  void loop();
  bool admit(std::unique_ptr<Active>& a);
  void finish(Active& a, FinishReason reason, std::string error = {});
  Status step();

  Runner& runner_;
  SchedulerOptions options_;
  PrefixCache prefixes_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Active>> queue_;
  struct Task {
    std::function<void(Runner*)> run;
    int64_t pages = 0;
  };
  std::deque<Task> tasks_;
  bool stop_ = false;
  std::vector<std::unique_ptr<Active>> active_;  // worker only
  mutable std::mutex slots_mu_;
  std::vector<SlotState> slots_;  // under slots_mu_: written by the worker, read by slots()
  std::atomic<int64_t> next_task_{0};
  std::atomic<int64_t> n_active_{0}, pages_used_{0}, cached_total_{0}, computed_total_{0}, n_prefixes_{0}, steps_{0};
  // Step scratch (worker only).
  std::vector<int32_t> tokens_, positions_, seq_ids_, output_rows_;
  static constexpr int64_t kScoredChunk = 64;  // a scored prompt's tokens a step (each a logits row)
  struct RowOwner {
    Active* active = nullptr;  // nullptr: a row nobody reads
    int64_t scores = -1;       // the prompt token this row scores, or -1: the row samples
  };
  std::vector<RowOwner> row_owner_;
  std::vector<float> masked_;  // a constrained request's logits row, masked
  std::thread worker_;
};

}  // namespace zinc::engine
