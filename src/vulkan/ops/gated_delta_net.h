// Gated delta rule with per-sequence state (graph::GatedDeltaNet): L2-normalised q/k, beta and
// decay gates, the state update and output, token by token in batch order (several sequences
// may be interleaved). A workgroup owns 4 rows of one head's d_v x d_k state; no barrier added.
#pragma once

#include <memory>

#include "vulkan/ops/recurrent_state.h"

namespace zinc::vulkan::ops {

struct DeltaNetShape {
  uint32_t n_k_heads = 0, d_k = 0, n_v_heads = 0, d_v = 0;
  bool grouped = false;  // graph::KeyHeadMap::kGrouped (else kTiled)
  float eps = 1e-6f;
};

class GatedDeltaNet {
 public:
  static constexpr uint32_t kMaxDk = 256;
  static Result<std::unique_ptr<GatedDeltaNet>> create(const Device& device, bool use_subgroups = true);
  ~GatedDeltaNet();
  // qkv: n_tokens rows of [q heads, k heads, v heads]; beta, alpha: rows of n_v_heads logits
  // (one stride for both); a, dt_bias: n_v_heads floats; out: rows of n_v_heads * d_v. The
  // layer's state (n_v_heads x d_v x d_k) at state_offset floats into each slot.
  Status record(Commands& cmd, const DeltaNetShape& shape, const Activations& qkv, const Activations& beta,
                const Activations& alpha, const BufferRange& a, const BufferRange& dt_bias,
                const StateSlots& slots, uint32_t state_offset, const Activations& out, uint32_t n_tokens) const;

 private:
  GatedDeltaNet() = default;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace zinc::vulkan::ops
