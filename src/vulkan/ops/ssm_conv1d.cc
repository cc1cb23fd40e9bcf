#include "vulkan/ops/ssm_conv1d.h"

namespace zinc::vulkan::ops {
namespace {
struct Push {
  uint32_t channels, taps, n_tokens, in_stride, out_stride, slot_stride, state_offset, pad;
};
constexpr uint32_t kTokenGroup = 64;     // shaders/ssm_conv1d.comp: channels per workgroup
constexpr uint32_t kBatchChannels = 32;  // shaders/ssm_conv1d_batch.comp
}  // namespace

SsmConv1d::~SsmConv1d() = default;

Result<std::unique_ptr<SsmConv1d>> SsmConv1d::create(const Device& device, ConvKernel kernel) {
  if (device.caps().max_workgroup_invocations < 256) return error("ssm_conv1d needs 256-thread workgroups");
  std::unique_ptr<SsmConv1d> op(new SsmConv1d());
  op->kernel_ = kernel;
  ZINC_ASSIGN_OR_RETURN(op->tokens_, make_pipeline(device, "ssm_conv1d", 5, sizeof(Push), {}));
  ZINC_ASSIGN_OR_RETURN(op->batched_, make_pipeline(device, "ssm_conv1d_batch", 5, sizeof(Push), {}));
  return op;
}

Status SsmConv1d::record(Commands& cmd, const Activations& in, const BufferRange& kernel, const StateSlots& slots,
                         uint32_t state_offset, const Activations& out, uint32_t n_tokens, uint32_t channels,
                         uint32_t taps) const {
  if (taps == 0 || taps > kMaxTaps) return error("ssm_conv1d: %u taps, 1 to %u supported", taps, kMaxTaps);
  if (in.stride < channels || out.stride < channels)
    return error("ssm_conv1d: strides %u/%u less than %u channels", in.stride, out.stride, channels);
  if (n_tokens >= (1u << 28)) return error("ssm_conv1d: %u tokens, at most %u", n_tokens, (1u << 28) - 1);
  if (n_tokens == 0 || channels == 0) return Status();
  const Push push{channels, taps, n_tokens, in.stride, out.stride, slots.slot_floats, state_offset, 0};
  const BufferRange buffers[5] = {in.range, kernel, slots.seq_ids, slots.state, out.range};
  const bool batched = kernel_ == ConvKernel::kBatched || (kernel_ == ConvKernel::kAuto && n_tokens >= kBatchMinTokens);
  const uint32_t group = batched ? kBatchChannels : kTokenGroup;
  cmd.dispatch(batched ? *batched_ : *tokens_, buffers, &push, sizeof push, (channels + group - 1) / group);
  return Status();
}

}  // namespace zinc::vulkan::ops
