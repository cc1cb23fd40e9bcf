// The decode MoE router folded into the projection before it (vulkan/router_fold.h): planned
// once per graph, after the other fusions (it needs the routed gate/up, the router's
// materialised norm and the projection's residual fold), and recorded around the projection.
// The router's own stage (its dispatch, and the barrier before it) goes: R s runs in the stage
// before the projection, M a beside the projection, which also leaves the norm's inputs
// (ops::NormOut) for the gate/up (docs/ARCHITECTURE.md, "Executor", has the H200 figures: the
// router stage's 8-9.5 us a layer go, the gate/up and the projection's stage grow). In
// short-context recordings a fused attention + projection (ops::AttentionO, executor_fusion.cc)
// does M a and the norm's inputs itself.
#include <variant>
#include <vector>

#include "core/quant.h"
#include "vulkan/executor.h"
#include "vulkan/router_fold.h"

namespace zinc::vulkan {
namespace {

using Range = std::pair<uint64_t, uint64_t>;

}  // namespace

Status Executor::plan_router_folds() {
  router_folds_.clear();
  folded_gate_ups_.clear();
  const auto& ops = graph_.ops();
  const uint32_t topk_word = uint32_t(head_counter_words_), n_tokens = uint32_t(graph_.shape().n_tokens);
  for (const auto& [gate_up, route] : routed_gate_ups_) {
    const auto& r = std::get<graph::MoeRoute>(ops[route].params);
    const auto& gu = std::get<graph::MoeMatmul>(ops[gate_up].params);
    // The router: the matvec writing the logits, normalising the stream and writing it.
    size_t router = ops.size();
    for (size_t j = 0; j < route; ++j)
      if (references(ops[j], r.logits)) router = j;
    const auto* rm = router < ops.size() ? std::get_if<graph::Matmul>(&ops[router].params) : nullptr;
    const auto mat = materialized_norms_.find(router);
    if (!rm || rm->out != r.logits || rm->up || rm->bias || mat == materialized_norms_.end() ||
        !mat->second.out.valid() || rm->in != mat->second.out || gu.in != rm->in)
      continue;
    const DeferredNorm dn = mat->second;
    const int32_t norm_op = graph_.buffer(dn.out).first_op;
    const auto* norm = norm_op >= 0 ? std::get_if<graph::RmsNorm>(&ops[size_t(norm_op)].params) : nullptr;
    if (!norm || norm->out != dn.out || norm->in != dn.in || !folded_adds_.count(size_t(norm_op))) continue;
    // The projection: the matvec adding into the stream right before the norm.
    size_t projection = ops.size();
    for (const auto& [i, stream] : residual_folds_) {
      const auto* m = std::get_if<graph::Matmul>(&ops[i].params);
      if (m && m->out == norm->add && stream == norm->in && i < size_t(norm_op)) projection = i;
    }
    if (projection == ops.size()) continue;
    const auto& pm = std::get<graph::Matmul>(ops[projection].params);
    if (pm.up || pm.bias || !on_matvec_path(pm) || conv_folds_.count(projection) || rope_kv_epilogues_.count(projection) ||
        deferred_norms_.count(pm.in.index) || materialized_norms_.count(projection) || pm.w->cols() % 32 != 0 ||
        pm.w->ne[2] != 1 || rm->w->ne[2] != 1 || rm->w->cols() != pm.w->rows() ||
        dn.weight->n_elements() != rm->w->cols() || !can_dequantize(rm->w->type) || !can_dequantize(pm.w->type))
      continue;
    bool quiet = true;  // the stream stays as the projection leaves it until the gate/up reads it
    for (size_t j = projection + 1; j <= gate_up && quiet; ++j) quiet = j == size_t(norm_op) || !references(ops[j], dn.in);
    if (!quiet) continue;
    auto projection_kernel = kernels_.norm_out_matvec(pm.w->type);
    const WeightBuffer* pw = weights_.matrix(pm.w);
    if (!projection_kernel.ok() || !pw) continue;
    const uint32_t n_partials = (*projection_kernel)->norm_partials(*pw);
    if (n_partials == 0) continue;
    // The projection's staged product quantizes x to int8: M in Q8_0 is about as precise.
    const TensorType input_type = TensorType::Q8_0;
    auto input_kernel = kernels_.narrow_matvec(input_type, false);
    auto stream_kernel = kernels_.matvec(RouterFold::kStreamType, false);
    if (!input_kernel.ok() || !stream_kernel.ok()) continue;
    if (const auto gated = gated_norms_.find(pm.in.index); gated != gated_norms_.end()) {
      const auto& gn = std::get<graph::GatedRmsNorm>(ops[gated->second].params);
      if (!(*input_kernel)->supports_gated_norm(pm.w->cols(), gn.group)) continue;
    }
    // Other readers of the normalised vector: a shared expert's gate/up, recorded beside the
    // routed gate/up, normalises the stream itself; the rest read what the gate/up writes.
    std::vector<size_t> beside;
    bool write_normed = false;
    for (size_t j = 0; j < ops.size(); ++j) {
      if (j == router || j == gate_up || j == size_t(norm_op) || !references(ops[j], dn.out)) continue;
      bool early = false;
      for (const auto& [down, sd] : shared_downs_) early = early || sd.gate_up == j;
      if (early) beside.push_back(j);
      else write_normed = true;
    }
    ZINC_ASSIGN_OR_RETURN(const ModelWeights::FoldedRouter* folded,
                          weights_.folded_router(*rm->w, *dn.weight, *pm.w, input_type));
    const graph::Buffer& logits = graph_.buffer(r.logits);
    RouterFoldPlan plan{projection, gate_up, folded, norm->in, dn.out, r.logits, dn.weight, dn.eps, n_partials};
    plan.stream_logits = reserve_private(logits.size_bytes());
    plan.weighted = reserve_private(graph_.buffer(norm->in).size_bytes());
    plan.partials = reserve_private(uint64_t(logits.rows) * n_partials * 4);
    plan.write_normed = write_normed;
    auto gate_up_kernel = kernels_.moe_matvec(weights_.matrix(gu.w)->type(), true);
    // Ranking at the end of M a's dispatch (the gate/up then skips it) paid on the H200 with 128
    // experts (qwen3-30b-a3b tg128 260.2 -> 265.1) and lost with 256 (qwen35-35b-a3b 296.3 ->
    // 285.4) while one subgroup ranked; ranked by the whole workgroup (topk_rank.glsl) it pays
    // with 256 too (H100: 331.1 -> 333.3).
    plan.ranked = gate_up_kernel.ok() && (*gate_up_kernel)->takes_ranked_ids() &&
                  logits.cols <= int64_t(ops::TopK::kMaxRows) && kernels_.narrow_matvec(input_type, true).ok();
    plan.ids = r.ids;
    plan.k = uint32_t(r.k);
    plan.counter_word = topk_word;
    if (plan.ranked) head_counter_words_ = std::max<uint64_t>(head_counter_words_, topk_word + n_tokens);
    router_folds_[projection] = plan;
    folded_gate_ups_[gate_up] = projection;
    for (size_t j : beside) materialized_norms_[j] = {norm->in, dn.weight, dn.eps, {}};
    materialized_norms_.erase(router);
    skipped_ops_.insert(router);
  }
  return Status();
}

Result<const ops::Matvec*> Executor::plain_matvec(const WeightBuffer& w) {
  ZINC_ASSIGN_OR_RETURN(const ops::Matvec* plain, kernels_.matvec(w.type(), false));
  if (router_folds_.empty() || !plain->uses_staged(w.cols())) return plain;
  // The variant reserves a little more shared memory: where that changes whether the staged
  // kernel takes w, the fusions planned on the plain kernel's answer keep it.
  auto variant = kernels_.norm_out_matvec(w.type());
  if (!variant.ok() || !(*variant)->uses_staged(w.cols())) return plain;
  return *variant;
}

ops::Activations Executor::weighted_stream(const RouterFoldPlan& f) const {
  const graph::Buffer& s = graph_.buffer(f.stream);
  return private_act(f.weighted, s.size_bytes(), uint32_t(s.cols));
}

uint32_t Executor::partial_words(const RouterFoldPlan& f) const {
  return recording_short_ && f.fused_partials ? f.fused_partials : f.n_partials;
}

BufferRange Executor::norm_partials(const RouterFoldPlan& f) const {
  return private_act(f.partials, uint64_t(graph_.buffer(f.stream).rows) * partial_words(f) * 4, 0).range;
}

std::vector<Range> Executor::norm_out_ranges(const RouterFoldPlan& f) const {
  const graph::Buffer& s = graph_.buffer(f.stream);
  return {private_range(f.weighted, s.size_bytes()), private_range(f.partials, uint64_t(s.rows) * partial_words(f) * 4)};
}

Status Executor::record_router_stream(Commands& cmd, const RouterFoldPlan& f) {
  const graph::Buffer& logits = graph_.buffer(f.logits);
  const Range rd[1] = {range_of(f.stream)}, wr[1] = {private_range(f.stream_logits, logits.size_bytes())};
  access(cmd, rd, wr);
  const WeightBuffer& w = *f.weights->stream;
  ZINC_ASSIGN_OR_RETURN(const ops::Matvec* k, kernels_.matvec(w.type(), false));
  return k->record(cmd, w, act(f.stream), private_act(f.stream_logits, logits.size_bytes(), uint32_t(logits.cols)),
                   uint32_t(logits.rows));
}

Status Executor::record_router_input(Commands& cmd, const RouterFoldPlan& f) {
  const auto& ops = graph_.ops();
  const auto& pm = std::get<graph::Matmul>(ops[f.projection].params);
  const auto gated_fold = gated_norms_.find(pm.in.index);
  const graph::GatedRmsNorm* gated =
      gated_fold != gated_norms_.end() ? &std::get<graph::GatedRmsNorm>(ops[gated_fold->second].params) : nullptr;
  const graph::BufferId in = gated ? gated->in : pm.in;
  const graph::Buffer& logits = graph_.buffer(f.logits);
  std::vector<Range> rd = {range_of(in), private_range(f.stream_logits, logits.size_bytes())};
  if (gated) rd.push_back(range_of(gated->gate));
  std::vector<Range> wr = {range_of(f.logits)};
  if (f.ranked) wr.push_back(range_of(f.ids));  // the counters are the dispatch's own, left zero
  access(cmd, rd, wr);
  const ops::Activations stream_logits = private_act(f.stream_logits, logits.size_bytes(), uint32_t(logits.cols));
  ops::MatvecFusion fusion{&stream_logits, nullptr, nullptr, nullptr, nullptr};
  const ops::TopK topk{act(f.ids).range, f.k, {head_counters_.get(), 0, VK_WHOLE_SIZE}, f.counter_word};
  if (f.ranked) fusion.topk = &topk;
  ops::GatedInputNorm gated_args;
  if (gated) {
    gated_args = {act(gated->gate), weights_.vector(gated->weight), uint32_t(gated->group), gated->eps};
    fusion.gated = &gated_args;
  }
  const WeightBuffer& w = *f.weights->input;
  ZINC_ASSIGN_OR_RETURN(const ops::Matvec* k, kernels_.narrow_matvec(w.type(), f.ranked));
  return k->record_fused(cmd, w, act(in), act(f.logits), uint32_t(logits.rows), fusion);
}

}  // namespace zinc::vulkan
