// Prefill matrix products y = W x for many tokens, W dequantized tile by tile into shared
// memory. Two kernels: a scalar float32 tiled GEMM (64 rows x 64 tokens per workgroup; runs
// everywhere) and an NV cooperative-matrix one (128 x 128, f16 inputs, f32 accumulation),
// chosen at creation where the device has f16 16x16x16 cooperative matrices and 32-wide
// subgroups. record() allocates nothing and adds no barrier.
#pragma once

#include <memory>

#include "vulkan/ops/op_util.h"
#include "vulkan/weights.h"

namespace zinc::vulkan::ops {

struct GemmOptions {
  bool coopmat = true;  // use the cooperative-matrix kernel where the device has it
};

class Gemm {
 public:
  static Result<std::unique_ptr<Gemm>> create(const Device& device, TensorType type, const GemmOptions& options = {});
  ~Gemm();
  // y[t][r] = sum_k W[r][k] x[t][k] (+ residual[t][r]) for t < n_tokens, r < w.rows().
  Status record(Commands& cmd, const WeightBuffer& w, const Activations& x, const Activations& y, uint32_t n_tokens,
                const Activations* residual = nullptr) const;
  bool uses_coopmat() const { return coopmat_; }

 private:
  Gemm() = default;
  TensorType type_ = TensorType::F32;
  bool coopmat_ = false;
  uint32_t tile_rows_ = 64, tile_tokens_ = 64;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace zinc::vulkan::ops
