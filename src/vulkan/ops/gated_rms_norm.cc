#include "vulkan/ops/gated_rms_norm.h"

#include <algorithm>

namespace zinc::vulkan::ops {
namespace {
struct Push {
  uint32_t group, groups, stride;
  float eps;
  uint32_t total;
};
}  // namespace

GatedRmsNorm::~GatedRmsNorm() = default;

Result<std::unique_ptr<GatedRmsNorm>> GatedRmsNorm::create(const Device& device, bool use_subgroups) {
  const Reduction red = reduction_for(device.caps(), use_subgroups);
  std::unique_ptr<GatedRmsNorm> op(new GatedRmsNorm());
  // With subgroup arithmetic one subgroup takes a (token, group), with no barrier (H200, Qwen3.5-35B-A3B
  // pp512: 7620-7655 -> 7707 tok/s against one workgroup per group).
  const bool per_subgroup = !red.suffix.empty();
  ZINC_ASSIGN_OR_RETURN(op->pipeline_, make_pipeline(device, per_subgroup ? "gated_rms_norm_per_sg" : "gated_rms_norm",
                                                     4, sizeof(Push), {red.group_size, red.min_subgroup_size}));
  // Subgroups per workgroup at the largest subgroup size the driver may pick (surplus ones return
  // at once).
  if (per_subgroup)
    op->groups_per_workgroup_ =
        std::max<uint32_t>(red.group_size / std::max<uint32_t>(device.caps().max_subgroup_size, 1), 1);
  return op;
}

Status GatedRmsNorm::record(Commands& cmd, const Activations& in, const Activations& gate, const BufferRange& weight,
                            const Activations& out, uint32_t n_tokens, uint32_t cols, uint32_t group,
                            float eps) const {
  if (group == 0 || cols % group != 0) return error("gated_rms_norm: %u columns in groups of %u", cols, group);
  if (in.stride != gate.stride || in.stride != out.stride || in.stride < cols)
    return error("gated_rms_norm: strides %u/%u/%u differ or are less than %u", in.stride, gate.stride, out.stride,
                 cols);
  if (n_tokens == 0) return Status();
  const uint32_t total = n_tokens * (cols / group);
  const Push push{group, cols / group, in.stride, eps, total};
  const BufferRange buffers[4] = {in.range, gate.range, weight, out.range};
  const Grid grid = grid_for((total + groups_per_workgroup_ - 1) / groups_per_workgroup_);
  cmd.dispatch(*pipeline_, buffers, &push, sizeof push, grid.x, grid.y);
  return Status();
}

}  // namespace zinc::vulkan::ops
