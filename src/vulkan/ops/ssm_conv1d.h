// Causal depthwise conv + SiLU with rolling per-sequence state (graph::SsmConv1d). Two kernels:
// by token (one thread per channel walks the batch's tokens in order) and batched (every output
// independent: a workgroup owns a block of channels for all tokens and writes each sequence's
// new state after its barrier). No barrier added.
#pragma once

#include <memory>

#include "vulkan/ops/recurrent_state.h"

namespace zinc::vulkan::ops {

enum class ConvKernel {
  kAuto,     // batched from kBatchMinTokens tokens on, else by token
  kTokens,
  kBatched,
};

class SsmConv1d {
 public:
  // H200, 8192 channels: the per-token kernel takes 4.3 us for one token (5.7 for 4 sequences),
  // the batched one 6.2 (6.5); at 512 tokens 188 against 31 us.
  static constexpr uint32_t kMaxTaps = 8, kBatchMinTokens = 9;
  static Result<std::unique_ptr<SsmConv1d>> create(const Device& device, ConvKernel kernel = ConvKernel::kAuto);
  ~SsmConv1d();
  // in/out: n_tokens rows of `channels`; kernel: channels x taps floats; the layer's conv state
  // ((taps - 1) x channels floats, oldest first) at state_offset floats into each slot.
  Status record(Commands& cmd, const Activations& in, const BufferRange& kernel, const StateSlots& slots,
                uint32_t state_offset, const Activations& out, uint32_t n_tokens, uint32_t channels,
                uint32_t taps) const;

 private:
  SsmConv1d() = default;
  ConvKernel kernel_ = ConvKernel::kAuto;
  std::unique_ptr<Pipeline> tokens_, batched_;
};

}  // namespace zinc::vulkan::ops
