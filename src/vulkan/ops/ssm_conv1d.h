// Causal depthwise conv + SiLU with rolling per-sequence state (graph::SsmConv1d). One thread
// per channel walks the batch's tokens in order; no barrier added.
#pragma once

#include <memory>

#include "vulkan/ops/recurrent_state.h"

namespace zinc::vulkan::ops {

class SsmConv1d {
 public:
  static constexpr uint32_t kMaxTaps = 8;
  static Result<std::unique_ptr<SsmConv1d>> create(const Device& device);
  ~SsmConv1d();
  // in/out: n_tokens rows of `channels`; kernel: channels x taps floats; the layer's conv state
  // ((taps - 1) x channels floats, oldest first) at state_offset floats into each slot.
  Status record(Commands& cmd, const Activations& in, const BufferRange& kernel, const StateSlots& slots,
                uint32_t state_offset, const Activations& out, uint32_t n_tokens, uint32_t channels,
                uint32_t taps) const;

 private:
  SsmConv1d() = default;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace zinc::vulkan::ops
