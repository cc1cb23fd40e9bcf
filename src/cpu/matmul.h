// Matrix products with stored (possibly quantized) weights: the hot path of the CPU backend.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor_type.h"
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

}  // namespace zinc::cpu
