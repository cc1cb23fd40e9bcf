// Prefill matrix products y = W x for many tokens, W dequantized tile by tile into shared
// memory. Two kernels: a scalar float32 tiled GEMM (64 rows x 64 tokens per workgroup; runs
// everywhere) and an NV cooperative-matrix one (f16 inputs, f32 accumulation, tiles of 64..128
// rows x 32..128 tokens picked per call from the shape), chosen at creation where the device
// has f16 16x16x16 cooperative matrices and 32-wide subgroups. Where the tiles of a shape are
// too few to fill the GPU (a few hundred rows), K is split given a partials buffer and the
// splits are added by a second dispatch. record() allocates nothing and adds no barrier after
// its work.
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
  // With `partials` (partial_floats(...) floats) and k_splits(...) > 1: the products of the K
  // splits go there, then a barrier and their sum into y.
  Status record(Commands& cmd, const WeightBuffer& w, const Activations& x, const Activations& y, uint32_t n_tokens,
                const Activations* residual = nullptr, const BufferRange* partials = nullptr) const;
  // Splits of K that record() makes for this shape given partials: 1 where the tiles are
  // enough workgroups, else up to 8, each at least 256 columns.
  uint32_t k_splits(uint32_t rows, uint32_t cols, uint32_t n_tokens) const;
  // Floats of `partials` that record() needs for this shape (0 without a split).
  uint64_t partial_floats(uint32_t rows, uint32_t cols, uint32_t n_tokens) const;
  bool uses_coopmat() const { return coopmat_; }
  static std::span<const GemmTile> coopmat_tiles();
  // The tile index record() uses for this shape (cooperative-matrix kernel).
  static uint32_t pick_tile(uint32_t rows, uint32_t n_tokens);

 private:
  Gemm() = default;
  TensorType type_ = TensorType::F32;
  bool coopmat_ = false;
  int forced_tile_ = -1;
  uint32_t tile_index(uint32_t rows, uint32_t n_tokens) const;  // cooperative-matrix kernel
  GemmTile tile_for(uint32_t rows, uint32_t n_tokens) const;
  std::unique_ptr<Pipeline> pipeline_;              // scalar kernel
  std::unique_ptr<Pipeline> reduce_;                // shaders/splitk_reduce.comp
  std::vector<std::unique_ptr<Pipeline>> tiles_;    // cooperative-matrix kernel per tile, or null
};

}  // namespace zinc::vulkan::ops
