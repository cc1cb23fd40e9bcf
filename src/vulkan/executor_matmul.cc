// The executor's Matmul ops: the matvec kernels for decode-sized batches (with the fusions of
// executor_fusion.cc: input normalised on the fly (RMSNorm or gated RMSNorm), output added into
// the residual stream or passed through a delta-net conv), the GEMM above; SwiGLU pairs in one
// dispatch where gate and up share a type.
#include <variant>
#include <vector>

#include "vulkan/executor.h"

namespace zinc::vulkan {

Status Executor::record_matmul(Commands& cmd, size_t index, const graph::Matmul& matmul) {
  using Range = std::pair<uint64_t, uint64_t>;
  const graph::Graph& g = graph_;
  const graph::Matmul* m = &matmul;
  const Range scratch{g.arena_bytes(), g.arena_bytes() + scratch_->size_bytes()};
  const uint32_t rows = uint32_t(g.buffer(m->in).rows);
  const WeightBuffer* w = weights_.matrix(m->w);
  const WeightBuffer* up = m->up ? weights_.matrix(m->up) : nullptr;
  const bool small = on_matvec_path(*m);
  // Fusions (executor_fusion.cc): x normalised on the fly, y added into the residual stream.
  auto deferred = deferred_norms_.find(m->in.index);
  const auto materialized = materialized_norms_.find(index);
  const bool normed = deferred != deferred_norms_.end() || materialized != materialized_norms_.end();
  const DeferredNorm* dn = !normed ? nullptr
                           : deferred != deferred_norms_.end() ? &deferred->second : &materialized->second;
  const auto fold = residual_folds_.find(index);
  const auto conv_fold = conv_folds_.find(index);
  const auto gated_fold = gated_norms_.find(m->in.index);
  const graph::SsmConv1d* conv =
      conv_fold != conv_folds_.end() ? &std::get<graph::SsmConv1d>(g.ops()[conv_fold->second].params) : nullptr;
  const graph::GatedRmsNorm* gated =
      gated_fold != gated_norms_.end() ? &std::get<graph::GatedRmsNorm>(g.ops()[gated_fold->second].params) : nullptr;
  const graph::BufferId in = dn ? dn->in : gated ? gated->in : m->in;
  const graph::BufferId out = fold != residual_folds_.end() ? fold->second : conv ? conv->out : m->out;
  const ops::Activations x = act(in), y = act(out);
  ops::Activations normed_out;
  ops::InputNorm norm_args;
  const ops::InputNorm* norm = nullptr;
  if (dn) {
    norm_args = {weights_.vector(dn->weight), dn->eps, nullptr};
    if (dn->out.valid()) {
      normed_out = act(dn->out);
      norm_args.out = &normed_out;
    }
    norm = &norm_args;
  }
  const ops::Activations* residual = fold != residual_folds_.end() ? &y : nullptr;
  std::vector<Range> rd = {range_of(in)}, wr = {range_of(out)};
  if (residual) rd.push_back(range_of(out));
  if (up) wr.push_back(scratch);
  if (!small) {  // the K splits of a GEMM (ops::Gemm::k_splits) meet in partials_
    const Range partials{scratch.second, scratch.second + partials_->size_bytes()};
    rd.push_back(partials);
    wr.push_back(partials);
  }
  if (norm_args.out) wr.push_back(range_of(dn->out));
  ops::MatvecFusion fusion{residual, norm, nullptr, nullptr};
  ops::GatedInputNorm gated_args;
  if (gated) {
    gated_args = {act(gated->gate), weights_.vector(gated->weight), uint32_t(gated->group), gated->eps};
    fusion.gated = &gated_args;
    rd.push_back(range_of(gated->gate));
  }
  ops::OutputConv conv_args;
  if (conv) {
    if (!kv_.state()) return error("no recurrent state on the device");
    conv_args = {weights_.vector(conv->kernel), state_slots(), kv_.conv_offset(conv->recurrent_layer),
                 uint32_t(conv->kernel->ne[0])};
    fusion.conv = &conv_args;
    rd.push_back(conv_state_range(conv->recurrent_layer));
    wr.push_back(conv_state_range(conv->recurrent_layer));
  }
  ops::OutputRopeKv rope_kv_args;
  BufferRange head_norm_weight;
  if (const auto e = rope_kv_epilogues_.find(index); e != rope_kv_epilogues_.end()) {
    const RopeKvEpilogue& ep = e->second;
    uint32_t word = 0;
    for (const RopeTable& t : rope_tables_)
      if (ep.rope && t.params == *ep.rope) word = t.word;
    const ops::KvLayerBuffers layer = ep.kv_layer >= 0 ? kv_.layer(ep.kv_layer) : ops::KvLayerBuffers{};
    rope_kv_args = {&step_data_, uint32_t(ep.head_dim), ep.rope ? uint32_t(ep.rope->n_rot / 2) : 0u, word,
                    ep.kv_layer < 0 ? nullptr : ep.v ? layer.v : layer.k};
    rope_kv_args.per_head = ep.per_head;
    rope_kv_args.head_stride = uint32_t(ep.head_stride);
    // Not in the barrier tracking: counters private to this dispatch, left zero.
    rope_kv_args.counters = {head_counters_.get(), 0, VK_WHOLE_SIZE};
    rope_kv_args.counter_word = ep.counter_word;
    rope_kv_args.adjacent = !ep.rope || ep.rope->mode == graph::RopeMode::kNorm;
    if (ep.norm) {
      head_norm_weight = weights_.vector(ep.norm->weight);
      rope_kv_args.norm_weight = &head_norm_weight;
      rope_kv_args.norm_eps = ep.norm->eps;
    }
    fusion.rope_kv = &rope_kv_args;
    if (ep.kv_layer >= 0) wr.push_back(kv_range(ep.kv_layer, ep.v ? 1 : 0));  // k and v stay concurrent
  }
  // A folded router's projection (executor_router_fold.cc) also writes the next norm's inputs.
  ops::NormOut norm_out;
  if (const auto rf = router_folds_.find(index); rf != router_folds_.end()) {
    norm_out = {weights_.vector(rf->second.norm_weight), weighted_stream(rf->second), norm_partials(rf->second)};
    fusion.norm_out = &norm_out;
    for (const Range& r : norm_out_ranges(rf->second)) wr.push_back(r);
  }
  access(cmd, rd, wr);
  if (gated || conv || fusion.rope_kv || fusion.norm_out) {
    if (up || !small) return error("a fused gated norm, conv or rope on a split or GEMM matmul");
    ZINC_ASSIGN_OR_RETURN(const ops::Matvec* k,
                          fusion.norm_out ? kernels_.norm_out_matvec(w->type()) : plain_matvec(*w));
    return k->record_fused(cmd, *w, x, y, rows, fusion);
  }
  if (up && small && up->type() == w->type()) {
    ZINC_ASSIGN_OR_RETURN(const ops::Matvec* k, kernels_.matvec(w->type(), true));
    ZINC_RETURN_IF_ERROR(k->record_swiglu(cmd, *w, *up, x, y, rows, residual, norm));
  } else {
    if ((norm || residual) && (up || !small)) return error("a fused norm or residual on a split or GEMM matmul");
    auto mul = [&](const WeightBuffer& wb, const ops::Activations& out) -> Status {
      if (small) {
        ZINC_ASSIGN_OR_RETURN(const ops::Matvec* k, plain_matvec(wb));
        return k->record(cmd, wb, x, out, rows, residual, norm);
      }
      ZINC_ASSIGN_OR_RETURN(const ops::Gemm* k, kernels_.gemm(wb.type()));
      const BufferRange part{partials_.get(), 0, VK_WHOLE_SIZE};
      return k->record(cmd, wb, x, out, rows, nullptr, &part);
    };
    ZINC_RETURN_IF_ERROR(mul(*w, y));
    if (up) {
      const ops::Activations u{{scratch_.get(), 0, VK_WHOLE_SIZE}, y.stride};
      ZINC_RETURN_IF_ERROR(mul(*up, u));
      barrier(cmd);
      const uint32_t n = uint32_t(g.buffer(m->out).n_elements());
      ZINC_RETURN_IF_ERROR(kernels_.swiglu->record(cmd, y.range, u.range, y.range, n));
      const Range wr2[1] = {range_of(out)}, rd2[2] = {range_of(out), scratch};
      access(cmd, rd2, wr2);
    }
  }
  if (m->bias) {
    barrier(cmd);
    const Range rw[1] = {range_of(out)};
    access(cmd, rw, rw);
    return kernels_.add_bias->record(cmd, y, weights_.vector(m->bias), uint32_t(m->w->rows()), rows);
  }
  return Status();
}

}  // namespace zinc::vulkan
