// Gated delta rule with per-sequence state (graph::GatedDeltaNet): L2-normalised q/k, beta and
// decay gates, the state update and output, in batch order (several sequences may be
// interleaved). Two kernels: token by token (a workgroup owns 4 rows of one head's d_v x d_k
// state; for decode) and the chunked parallel form (chunks of up to 16 tokens of one sequence,
// a workgroup owning 16 or 8 state rows, kept on chip for a run of one sequence; for prefill,
// d_k <= 128). No barrier added.
#pragma once

#include <memory>

#include "vulkan/ops/recurrent_state.h"

namespace zinc::vulkan::ops {

struct DeltaNetShape {
  uint32_t n_k_heads = 0, d_k = 0, n_v_heads = 0, d_v = 0;
  bool grouped = false;  // graph::KeyHeadMap::kGrouped (else kTiled)
  float eps = 1e-6f;
};

enum class DeltaNetKernel {
  kAuto,     // chunked from kChunkedMinTokens tokens on (where d_k allows), else by token
  kTokens,
  kChunked,  // where d_k <= kMaxChunkedDk, else by token
};

class GatedDeltaNet {
 public:
  static constexpr uint32_t kMaxDk = 256, kMaxChunkedDk = 128, kChunkedMinTokens = 8;
  // chunked_rows: state rows per workgroup of the chunked kernel, 8 or 16 (H200, 32 heads of
  // 128 x 128, 512 tokens: 441 and 261 us).
  static Result<std::unique_ptr<GatedDeltaNet>> create(const Device& device, bool use_subgroups = true,
                                                       DeltaNetKernel kernel = DeltaNetKernel::kAuto,
                                                       uint32_t chunked_rows = 16);
  ~GatedDeltaNet();
  // qkv: n_tokens rows of [q heads, k heads, v heads]; beta, alpha: rows of n_v_heads logits
  // (one stride for both); a, dt_bias: n_v_heads floats; out: rows of n_v_heads * d_v. The
  // layer's state (n_v_heads x d_v x d_k) at state_offset floats into each slot.
  Status record(Commands& cmd, const DeltaNetShape& shape, const Activations& qkv, const Activations& beta,
                const Activations& alpha, const BufferRange& a, const BufferRange& dt_bias,
                const StateSlots& slots, uint32_t state_offset, const Activations& out, uint32_t n_tokens) const;

 private:
  GatedDeltaNet() = default;
  DeltaNetKernel kernel_ = DeltaNetKernel::kAuto;
  uint32_t chunked_rows_ = 16;
  std::unique_ptr<Pipeline> tokens_, tokens_short_, chunked_;  // tokens_short_: d_k <= 128
};

}  // namespace zinc::vulkan::ops
