// The MoE router folded into the projection before it, for decode (executor_router_fold.cc).
// The router reads n(h) = h * w / sqrt(mean(h^2) + eps) with h = s + P a: s the residual stream
// before the projection P (a layer's attention output or delta-net out projection), a P's
// input. Its logits are then r(h) * (R s + M a), with R = W_r diag(w), M = R P and the scalar
// r(h) = 1 / sqrt(mean(h^2) + eps): R s can be computed before P runs, M a beside P (both read
// only what P reads), and r(h) by whoever reads h next. RouterFold holds R and M as stored
// tensor bytes, ready for WeightBuffer::upload: R as float32, M as float32 or Q8_0 (for a
// projection whose product quantizes its input to int8 anyway).
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor_type.h"
#include "graph/weight.h"

namespace zinc::vulkan {

struct RouterFold {
  static constexpr TensorType kStreamType = TensorType::F32;  // R, n_expert x n_embd
  TensorType input_type = TensorType::F32;                    // M, n_expert x P's cols
  int64_t n_expert = 0, n_embd = 0, in_cols = 0;
  std::vector<uint8_t> stream, input;
};

// router: n_embd cols, n_expert rows; norm: n_embd floats; projection: in_cols cols (a multiple
// of 32), n_embd rows. Any types dequantize_row handles; input_type F32 or Q8_0. Uses every
// hardware thread.
Result<RouterFold> fold_router(const graph::Weight& router, const graph::Weight& norm, const graph::Weight& projection,
                               TensorType input_type);

}  // namespace zinc::vulkan
