#include "vulkan/ops/ssm_conv1d.h"

namespace zinc::vulkan::ops {
namespace {
struct Push {
  uint32_t channels, taps, n_tokens, in_stride, out_stride, slot_stride, state_offset, pad;
};
}  // namespace

SsmConv1d::~SsmConv1d() = default;

Result<std::unique_ptr<SsmConv1d>> SsmConv1d::create(const Device& device) {
  std::unique_ptr<SsmConv1d> op(new SsmConv1d());
  ZINC_ASSIGN_OR_RETURN(op->pipeline_, make_pipeline(device, "ssm_conv1d", 5, sizeof(Push), {}));
  return op;
}

Status SsmConv1d::record(Commands& cmd, const Activations& in, const BufferRange& kernel, const StateSlots& slots,
                         uint32_t state_offset, const Activations& out, uint32_t n_tokens, uint32_t channels,
                         uint32_t taps) const {
  if (taps == 0 || taps > kMaxTaps) return error("ssm_conv1d: %u taps, 1 to %u supported", taps, kMaxTaps);
  if (in.stride < channels || out.stride < channels)
    return error("ssm_conv1d: strides %u/%u less than %u channels", in.stride, out.stride, channels);
  if (n_tokens == 0 || channels == 0) return Status();
  const Push push{channels, taps, n_tokens, in.stride, out.stride, slots.slot_floats, state_offset, 0};
  const BufferRange buffers[5] = {in.range, kernel, slots.seq_ids, slots.state, out.range};
  cmd.dispatch(*pipeline_, buffers, &push, sizeof push, (channels + 63) / 64);
  return Status();
}

}  // namespace zinc::vulkan::ops
