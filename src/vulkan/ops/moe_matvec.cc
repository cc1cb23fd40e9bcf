#include "vulkan/ops/moe_matvec.h"

#include <algorithm>

#include "vulkan/ops/op_util.h"

namespace zinc::vulkan::ops {
namespace {

struct Push {
  uint32_t rows, cols, k, n_expert, x_stride, y_stride, flags, lanes;
  uint32_t planes0[4], planes1[4];
  uint32_t logit_stride, sx_stride, h_stride, h_cols;
  float eps;
};
static_assert(sizeof(Push) == 84, "mirrors the push block of shaders/moe_matvec.comp");
constexpr uint32_t kMaxRoutedExperts = 1024, kMaxRoutedK = 64;  // moe_matvec.comp's kMaxExperts, kMaxK

}  // namespace

MoeMatvec::~MoeMatvec() = default;

Result<std::unique_ptr<MoeMatvec>> MoeMatvec::create(const Device& device, TensorType type,
                                                     const MoeMatvecOptions& options) {
  ZINC_ASSIGN_OR_RETURN(const WeightFormat f, weight_format(type));
  const DeviceCaps& caps = device.caps();
  std::unique_ptr<MoeMatvec> m(new MoeMatvec());
  m->type_ = type;
  m->options_ = options;
  m->int8_ = options.int8 && caps.int8_dot && int8_capable(type);
  const bool sg = options.subgroup && caps.subgroup_arithmetic;
  m->subgroup_ = sg;
  const uint32_t group_size = options.group_size ? options.group_size : 128;
  if ((group_size & (group_size - 1)) != 0 || group_size > caps.max_workgroup_invocations)
    return error("moe_matvec workgroup of %u threads: not a power of two or over the device's %u", group_size,
                 caps.max_workgroup_invocations);
  const uint32_t min_sg = sg ? std::max<uint32_t>(caps.min_subgroup_size, 1) : 1;
  const uint32_t mats = options.swiglu ? 2 : 1;
  uint32_t rows = options.rows ? options.rows : (f.q_bytes > 32 ? 2 : 4);
  if ((rows & (rows - 1)) != 0) return error("moe_matvec: %u rows per set is not a power of two", rows);
  while (rows > 1 && uint64_t(mats) * rows * group_size * 4 + 64 > caps.max_compute_shared_bytes) rows /= 2;
  if (rows > group_size) return error("moe_matvec: %u rows per set exceed %u threads", rows, group_size);
  m->group_size_ = group_size;
  m->rows_per_set_ = rows;
  const std::string shader = "moe_matvec_" + shader_type_suffix(type) + (m->int8_ ? "_int8" : "") + (sg ? "_sg" : "");
  m->device_ = &device;
  m->shader_ = shader;
  m->spec_ = {group_size, rows, options.swiglu ? 1u : 0u, min_sg};
  return m;
}

Result<const Pipeline*> MoeMatvec::pipeline_for(uint32_t flags) const {
  std::unique_ptr<Pipeline>& p = by_flags_[flags];
  if (!p) {
    std::vector<uint32_t> spec = spec_;
    spec.push_back(flags);
    auto made = make_pipeline(*device_, shader_, 11, sizeof(Push), std::move(spec));
    if (!made.ok()) {
      by_flags_.erase(flags);
      return made.status();
    }
    p = std::move(*made);
  }
  return p.get();
}

Status MoeMatvec::record_swiglu(Commands& cmd, const WeightBuffer& gate, const WeightBuffer& up, uint32_t n_expert,
                                const Activations& x, const BufferRange& ids, const Activations& y,
                                uint32_t n_tokens, uint32_t k, const MoeRouting* routing,
                                const MoeInputNorm* norm, const MoeSharedGate* shared_gate) const {
  if (!options_.swiglu) return error("this moe_matvec was not made for gate/up pairs");
  if (up.type() != gate.type() || up.rows() != gate.rows() || up.cols() != gate.cols())
    return error("moe_matvec gate/up differ: gate %s %lld x %lld, up %s %lld x %lld",
                 std::string(type_name(gate.type())).c_str(), (long long)gate.rows(), (long long)gate.cols(),
                 std::string(type_name(up.type())).c_str(), (long long)up.rows(), (long long)up.cols());
  if (routing && (n_expert > kMaxRoutedExperts || k > kMaxRoutedK || k > n_expert || routing->logits.stride < n_expert))
    return error("moe_matvec routing of top-%u among %u experts (at most %u of %u; logits stride %u)", k, n_expert,
                 kMaxRoutedK, kMaxRoutedExperts, routing->logits.stride);
  if (norm && !routing) return error("moe_matvec: x normalised by a dispatch that does not route");
  if (routing && routing->ranked && !subgroup_) return error("moe_matvec: ranked ids need subgroups");
  if (norm && norm->out && norm->out->stride < gate.cols())
    return error("moe_matvec normalised x stride %u is less than cols %lld", norm->out->stride, (long long)gate.cols());
  if (norm && norm->n_partials == 0) return error("moe_matvec: x normalised from no partial sums");
  return record_any(cmd, gate, &up, n_expert, x, ids, nullptr, y, n_tokens * k, k, false, routing, nullptr, norm,
                    shared_gate);
}

Status MoeMatvec::record_down(Commands& cmd, const WeightBuffer& w, uint32_t n_expert, const Activations& x,
                              const BufferRange& ids, const BufferRange& weights, const Activations& y,
                              uint32_t n_tokens, uint32_t k, bool accumulate, const MoeSharedExpert* shared) const {
  if (options_.swiglu) return error("this moe_matvec was made for gate/up pairs: use record_swiglu");
  if (shared) {
    const WeightBuffer& s = *shared->w;
    if (s.type() != w.type() || n_expert == 0 || s.rows() * n_expert != w.rows() || s.cols() != w.cols() ||
        s.chunks().size() != 1)
      return error("moe_matvec shared expert %s %lld x %lld does not match the experts (%s, %u x %lld x %lld)",
                   std::string(type_name(s.type())).c_str(), (long long)s.rows(), (long long)s.cols(),
                   std::string(type_name(w.type())).c_str(), n_expert, n_expert ? (long long)(w.rows() / n_expert) : 0ll,
                   (long long)w.cols());
    if (shared->x.stride % 4 != 0 || shared->x.stride < s.cols() || shared->gate_in.stride < shared->gate_cols)
      return error("moe_matvec shared expert strides %u / %u", shared->x.stride, shared->gate_in.stride);
  }
  return record_any(cmd, w, shared ? shared->w : nullptr, n_expert, x, ids, &weights, y, n_tokens, k, accumulate,
                    nullptr, shared, nullptr, nullptr);
}

Status MoeMatvec::record_any(Commands& cmd, const WeightBuffer& w0, const WeightBuffer* w1, uint32_t n_expert,
                             const Activations& x, const BufferRange& ids, const BufferRange* weights,
                             const Activations& y, uint32_t n_items, uint32_t k, bool accumulate,
                             const MoeRouting* routing, const MoeSharedExpert* shared,
                             const MoeInputNorm* norm, const MoeSharedGate* shared_gate) const {
  if (w0.type() != type_)
    return error("moe_matvec for %s given a %s matrix", std::string(type_name(type_)).c_str(),
                 std::string(type_name(w0.type())).c_str());
  if (n_expert == 0 || w0.rows() % n_expert != 0)
    return error("moe_matvec: %lld stacked rows do not split into %u experts", (long long)w0.rows(), n_expert);
  if (w0.chunks().size() != 1 || (w1 && w1->chunks().size() != 1))
    return error("moe_matvec: stacked experts (%lld rows) must fit one buffer, got %zu chunks", (long long)w0.rows(),
                 w0.chunks().size());
  if (k == 0) return error("moe_matvec: k is 0");
  if (n_items == 0) return Status();
  if (n_items > 65535) return error("moe_matvec: %u %s in one dispatch, at most 65535", n_items, w1 ? "slots" : "tokens");
  const uint32_t rows = uint32_t(w0.rows() / n_expert);
  if (x.stride % 4 != 0 || x.stride < w0.cols())
    return error("moe_matvec x stride %u: must be a multiple of 4 and at least cols %lld", x.stride,
                 (long long)w0.cols());
  if (y.stride < rows) return error("moe_matvec y stride %u is less than rows %u", y.stride, rows);
  // Enough lanes per row for its terms (and for the row set's writers), the rest make more row sets.
  const bool pair = w1 && !shared;
  const uint32_t terms = w0.groups_per_row() * (pair ? 1 : k + (shared ? 1 : 0));  // (expert, group) pairs per row
  uint32_t lanes = rows_per_set_;
  while (lanes < terms && lanes < group_size_ && (options_.max_lanes == 0 || lanes < options_.max_lanes)) lanes *= 2;
  // Where that takes more than about a wave of workgroups, each lane takes two terms in half as
  // many. On the H200 the Qwen3-30B-A3B's gate/up (8 experts of 768 rows, 64 groups a row: 768
  // workgroups) decodes at 264.8 -> 279.1 tok/s so (384); the Qwen3.5-35B-A3B's, 512 workgroups
  // (512 rows), loses that way: 312.0 -> 307.1.
  auto workgroups = [&](uint32_t l) {
    const uint32_t per = rows_per_set_ * (group_size_ / l);
    return (rows + per - 1) / per * n_items;
  };
  if (options_.max_lanes == 0 && lanes / 2 >= rows_per_set_ && workgroups(lanes) > kMoeWaveWorkgroups) {
    lanes /= 2;
  }
  const uint32_t rows_per_group = rows_per_set_ * (group_size_ / lanes);
  // A row set of exactly one subgroup (of a size the device does not vary) sums its lanes with
  // subgroupAdd alone.
  const DeviceCaps& caps = device_->caps();
  const bool one_subgroup = subgroup_ && caps.min_subgroup_size == caps.max_subgroup_size && lanes == caps.subgroup_size;
  const WeightChunk& c0 = w0.chunks()[0];
  const WeightChunk& c1 = w1 ? w1->chunks()[0] : c0;
  const uint32_t flags = (accumulate ? 1u : 0u) | (routing ? 2u : 0u) | (routing && routing->normalize ? 4u : 0u) |
                         (shared ? 8u : 0u) | (norm ? 16u : 0u) | (norm && norm->out ? 32u : 0u) |
                         (norm ? 64u : 0u) | (routing && routing->ranked ? 128u : 0u) |
                         (shared_gate || (shared && shared->gate_values) ? 256u : 0u) |
                         (one_subgroup ? 512u : 0u);
  const Push push{rows, uint32_t(w0.cols()), k, n_expert, x.stride, y.stride, flags, lanes,
                  {c0.q_word, c0.h_word, c0.m_word, 0}, {c1.q_word, c1.h_word, c1.m_word, 0},
                  routing ? routing->logits.stride : 0,
                  shared ? shared->x.stride : norm && norm->out ? norm->out->stride : 0,
                  shared ? shared->gate_in.stride : 0,
                  shared ? shared->gate_cols : norm ? norm->n_partials : 0, norm ? norm->eps : 0.f};
  const BufferRange buffers[11] = {whole(*c0.buffer), whole(*c1.buffer), x.range, y.range, ids,
                                   routing ? routing->weights : weights ? *weights : ids,
                                   routing ? routing->logits.range : shared ? shared->x.range : ids,
                                   shared ? shared->gate_in.range : norm ? norm->partials : ids,
                                   shared ? shared->gate_weight : norm && norm->out ? norm->out->range : ids,
                                   shared_gate ? shared_gate->weight : ids,
                                   shared_gate ? shared_gate->values : shared && shared->gate_values ? *shared->gate_values : ids};
  ZINC_ASSIGN_OR_RETURN(const Pipeline* pipeline, pipeline_for(flags));
  cmd.dispatch(*pipeline, buffers, &push, sizeof push, (rows + rows_per_group - 1) / rows_per_group, n_items);
  return Status();
}

}  // namespace zinc::vulkan::ops
