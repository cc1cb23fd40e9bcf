#include "vulkan/ops/qk_norm.h"

namespace zinc::vulkan::ops {
namespace {
struct Push {
  uint32_t stride, head_dim, head_stride, offset;
  float eps;
};
}  // namespace

QkNorm::~QkNorm() = default;

Result<std::unique_ptr<QkNorm>> QkNorm::create(const Device& device, bool use_subgroups) {
  Reduction red = reduction_for(device.caps(), use_subgroups);
  red.group_size = 64;  // heads are short
  if (red.min_subgroup_size > red.group_size) red.min_subgroup_size = red.group_size;
  std::unique_ptr<QkNorm> op(new QkNorm());
  ZINC_ASSIGN_OR_RETURN(op->pipeline_, make_pipeline(device, "qk_norm" + red.suffix, 2, sizeof(Push),
                                                     {red.group_size, red.min_subgroup_size}));
  return op;
}

Status QkNorm::record(Commands& cmd, const Activations& x, const graph::HeadLayout& heads, const BufferRange& weight,
                      uint32_t n_tokens, float eps) const {
  if (uint32_t(heads.span()) > x.stride)
    return error("qk_norm: heads span %d elements of a %u-element row", heads.span(), x.stride);
  if (n_tokens == 0 || heads.n_heads == 0) return Status();
  if (n_tokens > 65535) return error("qk_norm: %u rows exceed one dispatch", n_tokens);
  const Push push{x.stride, uint32_t(heads.head_dim), uint32_t(heads.head_stride), uint32_t(heads.offset), eps};
  const BufferRange buffers[2] = {x.range, weight};
  cmd.dispatch(*pipeline_, buffers, &push, sizeof push, uint32_t(heads.n_heads), n_tokens);
  return Status();
}

}  // namespace zinc::vulkan::ops
