// Prefill expert products: the slots (t, j) of a batch grouped by expert on the device
// (record_group), then one GEMM dispatch over all experts' groups, each workgroup reading one
// expert's weight tile once for up to 64 of its slots (64 rows x 64 slots; 128 x 32 when experts
// average fewer than 32 slots, as 512 tokens over 256 experts do); the down projection is scattered
// per slot and combined with the routing weights in slot order. Stacked experts as in
// moe_matvec.h (one chunk). Scalar float32 tiles (gemm.comp's), or NV cooperative matrices
// (gemm_coopmat.comp's K loop) where the device has f16 ones and 32-wide subgroups; no barrier
// added except between the dispatches of one record call.
#pragma once

#include <memory>

#include "vulkan/ops/op_util.h"
#include "vulkan/weights.h"

namespace zinc::vulkan::ops {

// Device scratch of one MoE layer's prefill; sizes from MoeGemm::scratch_bytes().
struct MoeScratch {
  BufferRange order;       // uint32 [n_slots]
  BufferRange tiles;       // 16 bytes x max_tiles
  Activations expert_out;  // [n_slots] rows of the down projection's rows (record_down only)
};

class MoeGemm {
 public:
  static constexpr uint32_t kMaxExperts = 1024;
  // slot_tile: 32 or 64 slots per workgroup, 0: chosen per batch (slot_tile_for).
  static Result<std::unique_ptr<MoeGemm>> create(const Device& device, TensorType type, bool swiglu,
                                                 uint32_t slot_tile = 0, bool coopmat = true);
  ~MoeGemm();

  // 32 slots per tile below 48 slots per expert on average, else 64 (on the H200 the 30B's
  // 512-token chunk, 32 slots per expert, prefills at 8283 tok/s with 32 against 8125-8150 with 64).
  static uint32_t slot_tile_for(uint32_t n_slots, uint32_t n_expert);
  bool uses_coopmat() const { return coopmat_; }
  // Tiles of a batch at the smallest slot tile (scratch.tiles holds 16 bytes each).
  static uint32_t max_tiles(uint32_t n_slots, uint32_t n_expert);
  // Groups the n_tokens * k slots of ids (int32) by expert into scratch.order and scratch.tiles;
  // the caller adds a barrier before the GEMMs. One grouping serves gate/up and down.
  Status record_group(Commands& cmd, const BufferRange& ids, uint32_t n_expert, const MoeScratch& scratch,
                      uint32_t n_tokens, uint32_t k) const;
  // y[s][r] = silu(gate[e] x[t])[r] * (up[e] x[t])[r], s = t * k + j, e = ids[s].
  Status record_swiglu(Commands& cmd, const WeightBuffer& gate, const WeightBuffer& up, uint32_t n_expert,
                       const Activations& x, const MoeScratch& scratch, const Activations& y, uint32_t n_tokens,
                       uint32_t k) const;
  // y[t][r] (+)= sum_j weights[t * k + j] * (w[e] x[t * k + j])[r]; uses scratch.expert_out.
  Status record_down(Commands& cmd, const WeightBuffer& w, uint32_t n_expert, const Activations& x,
                     const BufferRange& weights, const MoeScratch& scratch, const Activations& y, uint32_t n_tokens,
                     uint32_t k, bool accumulate = false) const;

 private:
  MoeGemm() = default;
  Status record_gemm(Commands& cmd, const WeightBuffer& w0, const WeightBuffer* w1, uint32_t n_expert,
                     const Activations& x, const MoeScratch& scratch, const Activations& y, uint32_t n_slots,
                     uint32_t k) const;

  uint32_t tile_for(uint32_t n_slots, uint32_t n_expert) const;

  TensorType type_ = TensorType::F32;
  bool swiglu_ = false;
  uint32_t slot_tile_ = 0;
  bool coopmat_ = false;
  std::unique_ptr<Pipeline> group_[2], gemm_[2], combine_;  // [0]: 32-slot tiles, [1]: 64
};

}  // namespace zinc::vulkan::ops
