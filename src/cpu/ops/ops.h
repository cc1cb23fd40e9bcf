// CPU implementations of the graph ops, one file each (ops/<op>.cc), each exactly the contract
// stated in graph/ops.h. The executor calls run() for every op in graph order; scratch_bytes()
// says how much temporary memory an op needs (planned once per graph, zero by default).
#pragma once

#include <cmath>
#include <cstdint>
#include <span>

#include "cpu/thread_pool.h"
#include "graph/batch.h"
#include "graph/graph.h"
#include "kv/cache.h"

namespace zinc::cpu {

struct WeightView;

struct OpContext {
  const graph::Graph& graph;
  uint8_t* arena;
  const graph::Batch& batch;
  kv::Cache& cache;
  ThreadPool& pool;
  std::span<uint8_t> scratch;

  const graph::Buffer& buf(graph::BufferId id) const { return graph.buffer(id); }
  float* f32(graph::BufferId id) const {
    return id.valid() ? reinterpret_cast<float*>(arena + graph.buffer(id).offset_bytes) : nullptr;
  }
  int32_t* i32(graph::BufferId id) const { return reinterpret_cast<int32_t*>(arena + graph.buffer(id).offset_bytes); }
};

// pool.parallel_for without a std::function allocation for `fn` (it is passed by reference).
template <class F>
void parallel_for(ThreadPool& pool, int64_t n, int64_t grain, const F& fn) {
  pool.parallel_for(n, grain, [&fn](int64_t begin, int64_t end) { fn(begin, end); });
}

// The matmul view of a weight (expert `e` of a stack).
WeightView weight_view(const graph::Weight& w, int64_t expert = 0);

namespace ops {

void run(const graph::Embed& op, const OpContext& ctx);
void run(const graph::RmsNorm& op, const OpContext& ctx);
void run(const graph::QkNorm& op, const OpContext& ctx);
void run(const graph::Matmul& op, const OpContext& ctx);
void run(const graph::Rope& op, const OpContext& ctx);
void run(const graph::KvWrite& op, const OpContext& ctx);
void run(const graph::Attention& op, const OpContext& ctx);
void run(const graph::Add& op, const OpContext& ctx);
void run(const graph::MoeRoute& op, const OpContext& ctx);
void run(const graph::MoeMatmul& op, const OpContext& ctx);
void run(const graph::SharedExpertGate& op, const OpContext& ctx);
void run(const graph::SsmConv1d& op, const OpContext& ctx);
void run(const graph::GatedDeltaNet& op, const OpContext& ctx);
void run(const graph::GatedRmsNorm& op, const OpContext& ctx);
void run(const graph::GatherRows& op, const OpContext& ctx);
void run(const graph::Argmax& op, const OpContext& ctx);

template <class Op>
size_t scratch_bytes(const Op&, const graph::Graph&) {
  return 0;
}
size_t scratch_bytes(const graph::Matmul& op, const graph::Graph& g);
size_t scratch_bytes(const graph::MoeMatmul& op, const graph::Graph& g);

// Scalar helpers shared by several ops, as ggml computes them.
inline float silu(float x) { return x / (1.f + std::exp(-x)); }
inline float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }
// 1 / sqrt(mean(x^2) + eps) with the sum of squares in double.
float rms_scale(const float* x, int64_t n, float eps);
// RoPE cos/sin of every pair (n_rot / 2 of them) at position p, as ggml computes them (also
// used by the Vulkan backend to fill its per-step tables).
void rope_cache(const graph::RopeParams& r, int32_t p, float* cos_out, float* sin_out);

}  // namespace ops
}  // namespace zinc::cpu
