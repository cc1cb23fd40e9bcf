// Matrix products with stored (possibly quantized) weights: the hot path of the CPU backend.
//
// Quantized weights multiply 8-bit activations (quantized per 32 values, Q8_0 numerics, for every
// quantized weight type; model-spec §2.4) with integer dot products; F32/F16/BF16 weights multiply
// float activations with float32 accumulation. Relative error of a quantized product: about 1e-2
// of |W[r]| * |x[t]| (the 8-bit activations), far inside the weights' own quantization error.
// Kernels: the fastest instruction set of this CPU (cpu/kernels/isa.h) unless told otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/tensor_type.h"
#include "cpu/kernels/isa.h"
#include "cpu/kernels/kernel_table.h"
#include "cpu/thread_pool.h"

namespace zinc::cpu {

// A weight matrix as stored: `rows` rows of `cols` elements of `type`, row r at
// data + r * row_stride_bytes (ggml ne = [cols, rows]).
struct WeightView {
  TensorType type = TensorType::F32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  size_t row_stride_bytes = 0;
};

// y[t * rows + r] = sum_k W[r][k] * x[t * cols + k] for t < n_tokens (y = W x per token).
// x: [n_tokens, cols] float32, y: [n_tokens, rows] float32, no aliasing.
void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);

// An input x: [n_tokens, cols] shared by several matmuls (q/k/v, gate/up, the experts of a MoE
// layer): quantized once, on first use with quantized weights (one format serves every quantized
// type). Borrows x, which must stay unchanged until the next reset(); owns its buffer, kept
// across resets (no allocation once warm). Used by one calling thread at a time.
class MatmulInput {
 public:
  MatmulInput() = default;
  MatmulInput(const float* x, int64_t n_tokens, int64_t cols) { reset(x, n_tokens, cols); }
  void reset(const float* x, int64_t n_tokens, int64_t cols);

  const float* x() const { return x_; }
  int64_t n_tokens() const { return n_tokens_; }
  int64_t cols() const { return cols_; }
  int64_t n_groups() const { return (cols_ + kernels::kGroupElems - 1) / kernels::kGroupElems; }
  // The quantized rows ([n_tokens, n_groups]), made by `kt` on first call; cols % 32 must be 0.
  const kernels::ActGroup* quantized(const kernels::KernelTable& kt, ThreadPool& pool);

 private:
  const float* x_ = nullptr;
  int64_t n_tokens_ = 0, cols_ = 0;
  const kernels::KernelTable* quantized_by_ = nullptr;  // null: not quantized yet
  std::vector<kernels::ActGroup> q_;
};

// y = W x with a prepared input; `isa` must be one the CPU supports (tests and benchmarks pick
// it; everyone else takes the default).
void matmul(const WeightView& w, MatmulInput& x, float* y, ThreadPool& pool, Isa isa = best_isa());

// Several matrices with the same input (q/k/v, gate/up) in one parallel dispatch: for each o,
// outs[o].y = outs[o].w x ([n_tokens, outs[o].w.rows]).
struct MatmulOutput {
  WeightView w;
  float* y = nullptr;
};
void matmul_many(const MatmulOutput* outs, int n_outs, MatmulInput& x, ThreadPool& pool, Isa isa = best_isa());

// Mixture of experts: n_experts matrices of the same shape stacked as [n_experts, rows, cols],
// expert e's at w.data + e * expert_stride_bytes. For pair p < n_pairs:
// y[p * rows + r] = sum_k W_{expert_ids[p]}[r][k] * x[token_ids[p] * cols + k].
// Each expert's weights are read once for all of its tokens.
struct ExpertWeights {
  WeightView w;  // one expert: type, rows, cols, row stride; data = expert 0
  size_t expert_stride_bytes = 0;
  int64_t n_experts = 0;
};
void matmul_experts(const ExpertWeights& w, MatmulInput& x, const int32_t* expert_ids, const int32_t* token_ids,
                    int64_t n_pairs, float* y, ThreadPool& pool, Isa isa = best_isa());

// True when matmul has a kernel for `t` (other types fall back to dequantize_row, if it can).
bool has_matmul_kernel(TensorType t);

}  // namespace zinc::cpu
