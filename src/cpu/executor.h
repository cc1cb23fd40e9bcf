// Runs a graph on the CPU: float32 activations in one planned arena, weights as stored, K/V and
// recurrent state in a kv::Cache. All memory is allocated at construction; run() allocates
// nothing of its own.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "cpu/matmul.h"
#include "cpu/thread_pool.h"
#include "graph/batch.h"
#include "graph/graph.h"
#include "kv/cache.h"

namespace zinc::cpu {

class Executor {
 public:
  // Takes the graph; `pool` is borrowed and must outlive the executor.
  Executor(graph::Graph graph, ThreadPool& pool);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  const graph::Graph& graph() const { return graph_; }

  // Runs every op for `batch` (its shape must be the graph's). The caller has checked the batch
  // (token ids < n_vocab, positions continue each sequence) and reserved cache pages for every
  // position written. K/V and recurrent state of the batch's sequences are updated.
  void run(const graph::Batch& batch, kv::Cache& cache);

  // The output buffer after run(): logits [n_outputs, n_vocab].
  std::span<const float> output() const { return buffer(graph_.output()); }
  // Any float buffer's current contents (valid for buffers live at the end of the graph, or
  // during run() for ops that read it). For tests and debugging.
  std::span<const float> buffer(graph::BufferId id) const;
  // Write access, for filling graph inputs (GraphBuilder::input) before run().
  std::span<float> mutable_buffer(graph::BufferId id);

  size_t arena_bytes() const { return graph_.arena_bytes(); }
  size_t scratch_bytes() const { return scratch_bytes_; }

 private:
  graph::Graph graph_;
  ThreadPool& pool_;
  uint8_t* arena_ = nullptr;  // 64-byte aligned
  uint8_t* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  MatmulInput matmul_input_;
  // Runs of consecutive matmuls over one input, run as one dispatch: matmul_run_[i] is the
  // length of the run that starts at op i (0 inside a run, 1 for a lone op).
  std::vector<uint8_t> matmul_run_;
  std::vector<const graph::Matmul*> matmul_ops_;  // per op: its Matmul params, or null
};

}  // namespace zinc::cpu
