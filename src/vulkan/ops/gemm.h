// Prefill matrix products y = W x for many tokens, W dequantized tile by tile into shared
// memory. Two kernels: a scalar float32 tiled GEMM (64 rows x 64 tokens per workgroup; runs
// everywhere) and an NV cooperative-matrix one (f16 inputs, f32 accumulation, tiles of 64..128
// rows x 32..128 tokens picked per call from the shape), chosen at creation where the device
// has f16 16x16x16 cooperative matrices and 32-wide subgroups. record() allocates nothing and
// adds no barrier.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "vulkan/ops/op_util.h"
#include "vulkan/weights.h"

namespace zinc::vulkan::ops {

// One workgroup tile of the cooperative-matrix kernel: rows x tokens, its 8 subgroups in a
// sg_rows x (8 / sg_rows) grid.
struct GemmTile {
  uint32_t rows, tokens, sg_rows;
};

struct GemmOptions {
  bool coopmat = true;  // use the cooperative-matrix kernel where the device has it
  int tile = -1;        // index into Gemm::coopmat_tiles(); -1: chosen per call from the shape
};

class Gemm {
 public:
  static Result<std::unique_ptr<Gemm>> create(const Device& device, TensorType type, const GemmOptions& options = {});
  ~Gemm();
  // y[t][r] = sum_k W[r][k] x[t][k] (+ residual[t][r]) for t < n_tokens, r < w.rows().
  Status record(Commands& cmd, const WeightBuffer& w, const Activations& x, const Activations& y, uint32_t n_tokens,
                const Activations* residual = nullptr) const;
  bool uses_coopmat() const { return coopmat_; }
  static std::span<const GemmTile> coopmat_tiles();
  // The tile index record() uses for this shape (cooperative-matrix kernel).
  static uint32_t pick_tile(uint32_t rows, uint32_t n_tokens);

 private:
  Gemm() = default;
  TensorType type_ = TensorType::F32;
  bool coopmat_ = false;
  int forced_tile_ = -1;
  std::unique_ptr<Pipeline> pipeline_;              // scalar kernel
  std::vector<std::unique_ptr<Pipeline>> tiles_;    // cooperative-matrix kernel per tile, or null
};

}  // namespace zinc::vulkan::ops
