#include "vulkan/ops/rope.h"

#include <vector>

#include "cpu/ops/ops.h"

namespace zinc::vulkan::ops {
namespace {
struct Push {
  uint32_t stride, n_heads, head_stride, offset, n_pairs, adjacent, table_offset;
};
}  // namespace

void rope_table(const graph::RopeParams& r, std::span<const int32_t> positions, float* table) {
  const size_t n_pairs = size_t(r.n_rot / 2);
  std::vector<float> cs(n_pairs), sn(n_pairs);
  for (size_t t = 0; t < positions.size(); ++t) {
    cpu::ops::rope_cache(r, positions[t], cs.data(), sn.data());
    float* row = table + t * 2 * n_pairs;
    for (size_t i = 0; i < n_pairs; ++i) {
      row[2 * i] = cs[i];
      row[2 * i + 1] = sn[i];
    }
  }
}

Rope::~Rope() = default;

Result<std::unique_ptr<Rope>> Rope::create(const Device& device) {
  std::unique_ptr<Rope> op(new Rope());
  ZINC_ASSIGN_OR_RETURN(op->pipeline_, make_pipeline(device, "rope", 2, sizeof(Push), {}));
  return op;
}

Status Rope::record(Commands& cmd, const Activations& x, const graph::HeadLayout& heads,
                    const graph::RopeParams& params, const BufferRange& table, uint32_t table_offset,
                    uint32_t n_tokens) const {
  if (uint32_t(heads.span()) > x.stride)
    return error("rope: heads span %d elements of a %u-element row", heads.span(), x.stride);
  if (params.n_rot < 0 || params.n_rot % 2 != 0 || params.n_rot > heads.head_dim)
    return error("rope: n_rot %d must be even and at most head_dim %d", params.n_rot, heads.head_dim);
  if (n_tokens == 0 || heads.n_heads == 0 || params.n_rot == 0) return Status();
  const Push push{x.stride,          uint32_t(heads.n_heads), uint32_t(heads.head_stride), uint32_t(heads.offset),
                  uint32_t(params.n_rot / 2), params.mode == graph::RopeMode::kNorm ? 1u : 0u, table_offset};
  const BufferRange buffers[2] = {x.range, table};
  const Grid grid = grid_for(n_tokens);
  cmd.dispatch(*pipeline_, buffers, &push, sizeof push, grid.x, grid.y);
  return Status();
}

}  // namespace zinc::vulkan::ops
