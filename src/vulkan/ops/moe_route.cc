#include "vulkan/ops/moe_route.h"

namespace zinc::vulkan::ops {
namespace {
struct Push {
  uint32_t n_expert, k, stride, flags;
};
constexpr uint32_t kMaxPerThread = 8;  // shaders/moe_route.comp
}  // namespace

MoeRoute::~MoeRoute() = default;

Result<std::unique_ptr<MoeRoute>> MoeRoute::create(const Device& device, bool use_subgroups) {
  const Reduction red = reduction_for(device.caps(), use_subgroups);
  std::unique_ptr<MoeRoute> op(new MoeRoute());
  op->group_size_ = red.group_size;
  ZINC_ASSIGN_OR_RETURN(op->pipeline_, make_pipeline(device, "moe_route" + red.suffix, 3, sizeof(Push),
                                                     {red.group_size, red.min_subgroup_size}));
  return op;
}

Status MoeRoute::record(Commands& cmd, const Activations& logits, const BufferRange& ids, const BufferRange& weights,
                        uint32_t n_tokens, uint32_t n_expert, uint32_t k, bool normalize) const {
  if (n_expert == 0 || n_expert > kMaxPerThread * group_size_)
    return error("moe_route: %u experts, this device handles 1 to %u", n_expert, kMaxPerThread * group_size_);
  if (k == 0 || k > n_expert || k > kMaxK) return error("moe_route: k %u of %u experts (at most %u)", k, n_expert, kMaxK);
  if (logits.stride < n_expert) return error("moe_route: logits stride %u is less than %u experts", logits.stride, n_expert);
  if (n_tokens == 0) return Status();
  const Push push{n_expert, k, logits.stride, normalize ? 1u : 0u};
  const BufferRange buffers[3] = {logits.range, ids, weights};
  const Grid grid = grid_for(n_tokens);
  cmd.dispatch(*pipeline_, buffers, &push, sizeof push, grid.x, grid.y);
  return Status();
}

}  // namespace zinc::vulkan::ops
