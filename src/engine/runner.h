// Runs a model step by step: owns the thread pool, the KV cache and one executor per batch shape
// (graphs are built on first use and reused). decode() checks the batch (outside input), reserves
// cache pages, runs the graph and advances the sequences.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "core/status.h"
#include "cpu/executor.h"
#include "cpu/thread_pool.h"
#include "graph/batch.h"
#include "kv/cache.h"
#include "model/model.h"
#include "vulkan/executor.h"

namespace zinc::engine {

enum class Backend : uint8_t { kAuto, kCpu, kVulkan };
Result<Backend> parse_backend(std::string_view name);  // "auto" | "cpu" | "vulkan"

// Whether the Vulkan executor runs this model's architecture (llama, qwen2, qwen3, qwen3moe,
// qwen35, qwen35moe); when not, `why` says so.
bool vulkan_supports(const model::Model& model, std::string* why = nullptr);

struct RunnerOptions {
  // auto: the first discrete or integrated GPU when the architecture runs on Vulkan, else the
  // CPU (with a one-line notice on stderr when a GPU was passed over).
  Backend backend = Backend::kAuto;
  int device = -1;                   // Vulkan device index (zinc devices); -1: auto
  bool verbose = false;              // weight-upload progress on stderr even when it is not a tty
  int n_threads = 0;                 // 0: one per hardware thread
  int64_t n_ctx = 4096;              // KV pool size in tokens, shared by all sequences
  int32_t max_seqs = 1;              // sequences that may exist at once
  int64_t max_batch = 512;           // tokens per graph run; longer inputs are split
  kv::KvType kv_type = kv::KvType::kF16;
  bool resident_weights = true;      // CPU: copy the weights out of the file mapping (Model::make_weights_resident)
};

class Runner {
 public:
  // `model` is borrowed and must outlive the runner.
  static Result<std::unique_ptr<Runner>> create(const model::Model& model, const RunnerOptions& options);

  const model::Model& model() const { return model_; }
  const RunnerOptions& options() const { return options_; }
  kv::Cache& cache() { return *cache_; }
  cpu::ThreadPool& pool() { return pool_; }
  const char* backend_name() const { return vk_ ? "vulkan" : "cpu"; }
  bool on_vulkan() const { return vk_ != nullptr; }
  // "NVIDIA H200 (discrete)", or "cpu".
  std::string device_name() const;

  // Appends `tokens` to sequence `seq` (positions continue from its length) and returns logits
  // [rows, n_vocab]: every token's row when all_logits, else only the last token's. Inputs longer
  // than max_batch run in several steps. The view is valid until the next call.
  Result<std::span<const float>> decode(kv::SeqId seq, std::span<const int32_t> tokens, bool all_logits);

  // An embedding of `tokens`: their final-norm hidden states in a sequence of their own (removed
  // after), pooled over the tokens (mean, the last, or the first) and scaled to length 1.
  enum class Pooling : uint8_t { kMean, kLast, kFirst };
  Result<std::vector<float>> embed(std::span<const int32_t> tokens, Pooling pooling);

  // One step over a batch that may mix sequences (tokens of a sequence in position order, each
  // sequence continuing from its length). Returns logits [batch.output_rows.size(), n_vocab].
  Result<std::span<const float>> decode(const graph::Batch& batch);

  // As decode(seq, tokens, false), returning only the index of the last row's largest logit
  // (on Vulkan only that id is read back).
  Result<int32_t> decode_greedy(kv::SeqId seq, std::span<const int32_t> tokens);
  // Greedy decoding of up to n steps on `seq`: step 0 decodes `token`, every later step the
  // argmax of the step before. on_step (optional) gets each step's argmax in order, once the step
  // has run; returning false ends the chain there (that step stays decoded, later ones are not).
  // Returns how many steps were decoded. On Vulkan the argmax reaches the next step on the device
  // and step i + 1 is queued before step i is read back, so the host's turnaround between tokens
  // is hidden (for models with recurrent state only without on_step: a queued step cannot be
  // taken back from that state, so with on_step each step waits for the one before); elsewhere it
  // runs decode_greedy step by step. gpu_ns (optional) accumulates the steps' GPU time.
  using StepCallback = std::function<bool(int32_t argmax)>;
  Result<int> decode_greedy_chain(kv::SeqId seq, int32_t token, int n, const StepCallback& on_step = nullptr,
                                  double* gpu_ns = nullptr);
  // Vulkan: GPU time of the last step (0 on the CPU or without device timestamps).
  double last_step_gpu_ns() const;

  // The recurrent state of `seq` (kv::Cache's slot layout: per recurrent layer its conv then its
  // delta-net state; empty for models without recurrent layers). On Vulkan the state lives on the
  // device and the cache's host copy is stale: save and restore it only through these.
  Result<std::vector<float>> save_recurrent_state(kv::SeqId seq);
  // Writes back a state from save_recurrent_state (rewinding the sequence's state; the caller sets
  // the cache length to the position it was saved at). A sequence decoded from position 0 starts
  // from zero state whatever was written.
  Status restore_recurrent_state(kv::SeqId seq, std::span<const float> state);

  // Vulkan only: one step of `tokens` (a decode token or a prefill chunk of at most max_batch)
  // for `seq`, logits of the last only, with a GPU timestamp after every op (the sequence
  // advances as with decode()).
  Result<std::vector<vulkan::OpTiming>> profile_step(
      kv::SeqId seq, std::span<const int32_t> tokens,
      vulkan::Executor::ProfileMode mode = vulkan::Executor::ProfileMode::kOps);

  // The executor for a shape (built on first use; at most kMaxExecutors are kept). The reference
  // is valid until the next call that builds another shape.
  cpu::Executor& executor(graph::BatchShape shape);
  static constexpr size_t kMaxExecutors = 8;
  size_t n_executors() const { return executors_.size(); }

 private:
  Runner(const model::Model& model, const RunnerOptions& options);
  Status check_batch(const graph::Batch& batch);
  Status init_vulkan(int device_index);
  Result<vulkan::Executor*> vk_executor(graph::BatchShape shape);
  // Checks the batch, reserves pages; after the run, advances the sequences.
  Status begin_step(const graph::Batch& batch);
  void end_step(const graph::Batch& batch);

  // An executor is made per batch shape: tokens, output rows, and whether the rows are hidden
  // states (embeddings) or logits.
  using ShapeKey = std::tuple<int64_t, int64_t, bool>;
  struct VulkanState {
    std::unique_ptr<vulkan::Instance> instance;
    std::unique_ptr<vulkan::Device> device;
    std::unique_ptr<vulkan::Kernels> kernels;
    std::unique_ptr<vulkan::ModelWeights> weights;
    std::unique_ptr<vulkan::KvPool> kv;
    std::map<ShapeKey, std::unique_ptr<vulkan::Executor>> executors;
    const vulkan::Executor* last = nullptr;  // that ran the last step
  };
  std::unique_ptr<VulkanState> vk_;

  const model::Model& model_;
  RunnerOptions options_;
  cpu::ThreadPool pool_;
  std::unique_ptr<kv::Cache> cache_;
  std::map<ShapeKey, std::unique_ptr<cpu::Executor>> executors_;
  std::vector<int32_t> positions_, seq_ids_, output_rows_;  // scratch for decode(seq, ...)
  std::vector<float> logits_;                                // all_logits over several steps
  std::vector<int64_t> next_position_;                       // per sequence, while checking a batch
};

}  // namespace zinc::engine
