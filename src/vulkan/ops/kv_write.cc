#include "vulkan/ops/kv_write.h"

#include <string>

namespace zinc::vulkan::ops {
namespace {
struct Push {
  uint32_t k_stride, k_heads, k_dim, k_head_stride, k_offset;
  uint32_t v_stride, v_heads, v_dim, v_head_stride, v_offset;
  uint32_t pos_offset, seq_offset, pages_offset, max_pages;
};
struct RopePush {
  Push kv;
  uint32_t q_stride, q_heads, q_head_stride, q_offset;
  uint32_t n_pairs, adjacent, table_offset;
};
struct NormPush {
  RopePush rope;
  uint32_t q_dim, flags;  // flags: bit 0 q normalised, bit 1 k
  float q_eps, k_eps;
};
static_assert(sizeof(NormPush) <= 128, "push constants: 128 bytes are guaranteed");
// One invocation per K word, V word and rotated query pair of each token (shaders/kv_write.comp).
Result<Grid> grid_of(const Push& push, bool f16, uint32_t q_pairs, uint32_t n_tokens) {
  if (n_tokens > 65535) return error("kv_write of %u tokens in one step: at most 65535", n_tokens);
  const uint32_t per = f16 ? 2 : 1;
  const uint32_t units = push.k_heads * push.k_dim / per + push.v_heads * push.v_dim / per + q_pairs;
  return Grid{(units + 63) / 64, n_tokens};
}

}  // namespace

KvWrite::~KvWrite() = default;

Result<std::unique_ptr<KvWrite>> KvWrite::create(const Device& device, bool f16, bool use_subgroups) {
  std::unique_ptr<KvWrite> op(new KvWrite());
  op->f16_ = f16;
  ZINC_ASSIGN_OR_RETURN(op->pipeline_, make_pipeline(device, f16 ? "kv_write" : "kv_write_f32", 5, sizeof(Push), {}));
  ZINC_ASSIGN_OR_RETURN(op->rope_pipeline_,
                        make_pipeline(device, f16 ? "rope_kv_write" : "rope_kv_write_f32", 7, sizeof(RopePush), {}));
  Reduction red = reduction_for(device.caps(), use_subgroups);
  red.group_size = 64;  // heads are short
  if (red.min_subgroup_size > red.group_size) red.min_subgroup_size = red.group_size;
  const std::string norm = std::string(f16 ? "norm_rope_kv_write" : "norm_rope_kv_write_f32") + red.suffix;
  ZINC_ASSIGN_OR_RETURN(op->norm_pipeline_, make_pipeline(device, norm, 9, sizeof(NormPush),
                                                          {red.group_size, red.min_subgroup_size}));
  return op;
}

Status KvWrite::check(const graph::HeadLayout& k_heads, const graph::HeadLayout& v_heads,
                      const KvLayerBuffers& layer) const {
  if (layer.f16 != f16_) return error("kv_write made for %s given an %s cache", f16_ ? "f16" : "f32", layer.f16 ? "f16" : "f32");
  if (uint32_t(k_heads.n_heads) != layer.n_kv_heads || uint32_t(k_heads.head_dim) != layer.head_dim_k ||
      uint32_t(v_heads.n_heads) != layer.n_kv_heads || uint32_t(v_heads.head_dim) != layer.head_dim_v)
    return error("kv_write: heads %dx%d / %dx%d do not match the cache layer's %ux%u / %ux%u", k_heads.n_heads,
                 k_heads.head_dim, v_heads.n_heads, v_heads.head_dim, layer.n_kv_heads, layer.head_dim_k,
                 layer.n_kv_heads, layer.head_dim_v);
  if (f16_ && (layer.head_dim_k % 2 != 0 || layer.head_dim_v % 2 != 0))
    return error("kv_write: an f16 cache needs even head dims (%u, %u)", layer.head_dim_k, layer.head_dim_v);
  return Status();
}

Status KvWrite::record(Commands& cmd, const Activations& k, const graph::HeadLayout& k_heads, const Activations& v,
                       const graph::HeadLayout& v_heads, const KvLayerBuffers& layer, const StepData& step,
                       uint32_t n_tokens) const {
  ZINC_RETURN_IF_ERROR(check(k_heads, v_heads, layer));
  if (n_tokens == 0) return Status();
  const Push push{k.stride, uint32_t(k_heads.n_heads), uint32_t(k_heads.head_dim), uint32_t(k_heads.head_stride),
                  uint32_t(k_heads.offset), v.stride, uint32_t(v_heads.n_heads), uint32_t(v_heads.head_dim),
                  uint32_t(v_heads.head_stride), uint32_t(v_heads.offset), step.positions, step.seq_ids, step.pages,
                  step.max_pages};
  const BufferRange buffers[5] = {k.range, v.range, whole(*step.buffer), whole(*layer.k), whole(*layer.v)};
  ZINC_ASSIGN_OR_RETURN(const Grid grid, grid_of(push, f16_, 0, n_tokens));
  cmd.dispatch(*pipeline_, buffers, &push, sizeof push, grid.x, grid.y);
  return Status();
}

Status KvWrite::record_rope(Commands& cmd, const RopeArgs& rope, const Activations& k,
                            const graph::HeadLayout& k_heads, const Activations& v, const graph::HeadLayout& v_heads,
                            const KvLayerBuffers& layer, const StepData& step, uint32_t n_tokens) const {
  ZINC_RETURN_IF_ERROR(check(k_heads, v_heads, layer));
  const graph::RopeParams& r = *rope.params;
  if (r.n_rot < 0 || r.n_rot % 2 != 0 || r.n_rot > k_heads.head_dim || r.n_rot > rope.q_heads.head_dim)
    return error("rope_kv_write: n_rot %d must be even and at most the head dims %d, %d", r.n_rot, k_heads.head_dim,
                 rope.q_heads.head_dim);
  const bool norm = rope.q_norm || rope.k_norm;
  if (norm && k_heads.head_dim > kMaxNormHeadDim)
    return error("norm_rope_kv_write: key head dim %d exceeds %d", k_heads.head_dim, kMaxNormHeadDim);
  if (n_tokens == 0) return Status();
  NormPush push{};
  push.rope.kv = {k.stride, uint32_t(k_heads.n_heads), uint32_t(k_heads.head_dim), uint32_t(k_heads.head_stride),
                  uint32_t(k_heads.offset), v.stride, uint32_t(v_heads.n_heads), uint32_t(v_heads.head_dim),
                  uint32_t(v_heads.head_stride), uint32_t(v_heads.offset), step.positions, step.seq_ids, step.pages,
                  step.max_pages};
  push.rope.q_stride = rope.q.stride;
  push.rope.q_heads = uint32_t(rope.q_heads.n_heads);
  push.rope.q_head_stride = uint32_t(rope.q_heads.head_stride);
  push.rope.q_offset = uint32_t(rope.q_heads.offset);
  push.rope.n_pairs = uint32_t(r.n_rot / 2);
  push.rope.adjacent = r.mode == graph::RopeMode::kNorm ? 1u : 0u;
  push.rope.table_offset = rope.table_offset;
  if (!norm) {
    const BufferRange buffers[7] = {k.range,         v.range,         whole(*step.buffer), whole(*layer.k),
                                    whole(*layer.v), rope.q.range, rope.table};
    const uint32_t q_pairs = push.rope.q_heads * push.rope.n_pairs;
    ZINC_ASSIGN_OR_RETURN(const Grid grid, grid_of(push.rope.kv, f16_, q_pairs, n_tokens));
    cmd.dispatch(*rope_pipeline_, buffers, &push.rope, sizeof push.rope, grid.x, grid.y);
    return Status();
  }
  if (n_tokens > 65535) return error("norm_rope_kv_write of %u tokens in one step: at most 65535", n_tokens);
  push.q_dim = uint32_t(rope.q_heads.head_dim);
  push.flags = (rope.q_norm ? 1u : 0u) | (rope.k_norm ? 2u : 0u);
  push.q_eps = rope.q_norm ? rope.q_norm->eps : 0.f;
  push.k_eps = rope.k_norm ? rope.k_norm->eps : 0.f;
  // A side without a norm never reads its weight binding; it is given the other's.
  const BufferRange& qw = rope.q_norm ? rope.q_norm->weight : rope.k_norm->weight;
  const BufferRange& kw = rope.k_norm ? rope.k_norm->weight : rope.q_norm->weight;
  const BufferRange buffers[9] = {k.range,         v.range,      whole(*step.buffer), whole(*layer.k), whole(*layer.v),
                                  rope.q.range, rope.table, qw,                  kw};
  cmd.dispatch(*norm_pipeline_, buffers, &push, sizeof push, push.rope.q_heads + push.rope.kv.k_heads, n_tokens);
  return Status();
}

}  // namespace zinc::vulkan::ops
