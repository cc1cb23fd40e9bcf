// The executor's MoE and hybrid ops (record_moe_op) and the recurrent-state reset per step.
#include <algorithm>
#include <optional>
#include <variant>
#include <vector>

#include "vulkan/executor.h"

namespace zinc::vulkan {
namespace {

using Range = std::pair<uint64_t, uint64_t>;  // [begin, end) in the notional address space

Range ssm_state_range(int32_t layer) { return {(1ull << 62) + 2 * uint64_t(layer) + 1, (1ull << 62) + 2 * uint64_t(layer) + 2}; }

}  // namespace

// Notional address ranges of the recurrent state of one layer (conv, delta-net), for barriers.
Range Executor::conv_state_range(int32_t layer) {
  return {(1ull << 62) + 2 * uint64_t(layer), (1ull << 62) + 2 * uint64_t(layer) + 1};
}

ops::StateSlots Executor::state_slots() const {
  const uint32_t n = uint32_t(graph_.shape().n_tokens);
  return {ops::whole(*kv_.state()), {step_.get(), uint64_t(step_data_.seq_ids) * 4, uint64_t(n) * 4},
          kv_.slot_floats()};
}

Status Executor::record_moe_op(Commands& cmd, size_t index) {
  const graph::Graph& g = graph_;
  const graph::Op& op = g.ops()[index];
  const auto fold = residual_folds_.find(index);  // executor_fusion.cc: add into the stream
  const bool folded = fold != residual_folds_.end();
  const Range moe_scratch{~0ull / 2, ~0ull / 2 + 1};
  if (const auto* r = std::get_if<graph::MoeRoute>(&op.params)) {
    if (r->gating != graph::MoeGating::kSoftmax) return error("only softmax gating runs on Vulkan");
    if (r->k <= 0 || uint32_t(r->k) > ops::MoeRoute::kMaxK) return error("top-%d routing (at most %u)", r->k, ops::MoeRoute::kMaxK);
    const Range rd[1] = {range_of(r->logits)}, wr[2] = {range_of(r->ids), range_of(r->weights)};
    access(cmd, rd, wr);
    const graph::Buffer& l = g.buffer(r->logits);
    ZINC_ASSIGN_OR_RETURN(const ops::MoeRoute* k, kernels_.moe_route());
    return k->record(cmd, act(r->logits), act(r->ids).range, act(r->weights).range, uint32_t(l.rows), uint32_t(l.cols),
                     uint32_t(r->k), r->normalize);
  }
  if (const auto* m = std::get_if<graph::MoeMatmul>(&op.params)) {
    const graph::Buffer& ids = g.buffer(m->ids);
    const uint32_t n_tokens = uint32_t(ids.rows), k = uint32_t(ids.cols), n_expert = uint32_t(m->w->ne[2]);
    const WeightBuffer* w = weights_.matrix(m->w);
    const WeightBuffer* up = m->up ? weights_.matrix(m->up) : nullptr;
    if (up && up->type() != w->type())
      return error("gate (%s) and up (%s) of different types", type_name(w->type()), type_name(up->type()));
    const bool small = n_tokens <= kMoeMatvecMaxTokens;
    const graph::BufferId out = folded ? fold->second : m->out;
    std::vector<Range> rd = {range_of(m->in), range_of(m->ids)}, wr = {range_of(out)};
    if (!up) rd.push_back(range_of(m->weights));
    if (folded) rd.push_back(range_of(out));
    if (small) {
      if (const auto sd = shared_downs_.find(index); sd != shared_downs_.end()) {
        rd.push_back(range_of(std::get<graph::Matmul>(g.ops()[sd->second.down].params).in));
        if (sd->second.early_gate)  // the gate/up left the gate (SharedDown::early_gate)
          rd.push_back(private_range(sd->second.gate_values, uint64_t(n_tokens) * 4));
        else
          rd.push_back(range_of(std::get<graph::SharedExpertGate>(g.ops()[sd->second.gate].params).x));
      }
      const auto routed = routed_gate_ups_.find(index);
      // A folded router (executor_router_fold.cc): x is the projection's weighted stream,
      // normalised here from its partial sums of squares.
      const auto router_fold = folded_gate_ups_.find(index);
      const RouterFoldPlan* fold =
          router_fold != folded_gate_ups_.end() ? &router_folds_.at(router_fold->second) : nullptr;
      if (routed != routed_gate_ups_.end()) {
        const auto& r = std::get<graph::MoeRoute>(g.ops()[routed->second].params);
        rd = {range_of(m->in), range_of(r.logits)};
        wr = {range_of(m->out), range_of(r.ids), range_of(r.weights)};
        if (fold) {
          rd = norm_out_ranges(*fold);
          rd.push_back(range_of(r.logits));
          if (fold->ranked) {  // the ids are read, not written
            rd.push_back(range_of(r.ids));
            wr = {range_of(m->out), range_of(r.weights)};
          }
          if (fold->write_normed) wr.push_back(range_of(fold->normed));
        }
      }
      // The shared expert's gate computed by the routed gate/up (SharedDown::early_gate).
      std::optional<ops::MoeSharedGate> early_gate;
      if (const auto eg = early_gates_.find(index); eg != early_gates_.end()) {
        const SharedDown& sd = shared_downs_.at(eg->second);
        const auto& gate = std::get<graph::SharedExpertGate>(g.ops()[sd.gate].params);
        early_gate = ops::MoeSharedGate{weights_.vector(gate.gate), private_act(sd.gate_values, uint64_t(n_tokens) * 4, 1).range};
        wr.push_back(private_range(sd.gate_values, uint64_t(n_tokens) * 4));
      }
      const ops::MoeSharedGate* sg = early_gate ? &*early_gate : nullptr;
      access(cmd, rd, wr);
      ZINC_ASSIGN_OR_RETURN(const ops::MoeMatvec* kern, kernels_.moe_matvec(w->type(), up != nullptr));
      if (routed != routed_gate_ups_.end()) {
        const auto& r = std::get<graph::MoeRoute>(g.ops()[routed->second].params);
        ops::MoeRouting routing{act(r.logits), act(r.weights).range, r.normalize};
        if (fold) {
          routing.ranked = fold->ranked;
          const ops::Activations normed = act(fold->normed);
          const ops::MoeInputNorm norm{norm_partials(*fold), partial_words(*fold), fold->eps,
                                       fold->write_normed ? &normed : nullptr};
          return kern->record_swiglu(cmd, *w, *up, n_expert, weighted_stream(*fold), act(m->ids).range,
                                     act(m->out), n_tokens, k, &routing, &norm, sg);
        }
        return kern->record_swiglu(cmd, *w, *up, n_expert, act(m->in), act(m->ids).range, act(m->out), n_tokens, k,
                                   &routing, nullptr, sg);
      }
      if (up)
        return kern->record_swiglu(cmd, *w, *up, n_expert, act(m->in), act(m->ids).range, act(m->out), n_tokens, k,
                                   nullptr, nullptr, sg);
      const auto sd = shared_downs_.find(index);
      if (sd == shared_downs_.end())
        return kern->record_down(cmd, *w, n_expert, act(m->in), act(m->ids).range, act(m->weights).range, act(out),
                                 n_tokens, k, folded);
      const auto& mm = std::get<graph::Matmul>(g.ops()[sd->second.down].params);
      const auto& gate = std::get<graph::SharedExpertGate>(g.ops()[sd->second.gate].params);
      const BufferRange gate_values = private_act(sd->second.gate_values, uint64_t(n_tokens) * 4, 1).range;
      const ops::MoeSharedExpert shared{weights_.matrix(mm.w), act(mm.in), act(gate.x), weights_.vector(gate.gate),
                                        uint32_t(g.buffer(gate.x).cols), sd->second.early_gate ? &gate_values : nullptr};
      return kern->record_down(cmd, *w, n_expert, act(m->in), act(m->ids).range, act(m->weights).range, act(out),
                               n_tokens, k, folded, &shared);
    }
    if (folded) return error("a folded residual on the MoE GEMM path");
    ZINC_ASSIGN_OR_RETURN(const ops::MoeGemm* kern, kernels_.moe_gemm(w->type(), up != nullptr));
    const ops::MoeScratch scratch{{moe_scratch_.get(), 0, moe_tiles_offset_},
                                  {moe_scratch_.get(), moe_tiles_offset_, moe_expert_out_offset_ - moe_tiles_offset_},
                                  {{moe_scratch_.get(), moe_expert_out_offset_, VK_WHOLE_SIZE},
                                   uint32_t(g.buffer(m->out).cols)}};
    const Range ids_rd[1] = {range_of(m->ids)}, scratch_wr[1] = {moe_scratch};
    access(cmd, ids_rd, scratch_wr);
    ZINC_RETURN_IF_ERROR(kern->record_group(cmd, act(m->ids).range, n_expert, scratch, n_tokens, k));
    barrier(cmd);
    rd.push_back(moe_scratch);
    wr.push_back(moe_scratch);
    access(cmd, rd, wr);
    if (up) return kern->record_swiglu(cmd, *w, *up, n_expert, act(m->in), scratch, act(m->out), n_tokens, k);
    return kern->record_down(cmd, *w, n_expert, act(m->in), act(m->weights).range, scratch, act(m->out), n_tokens, k);
  }
  if (const auto* s = std::get_if<graph::SharedExpertGate>(&op.params)) {
    const graph::Buffer& x = g.buffer(s->x);
    const graph::BufferId target = folded ? fold->second : s->out;
    const graph::Buffer& out = g.buffer(target);
    if (g.buffer(s->shared).cols != out.cols) return error("shared expert and output rows of different widths");
    const Range rd[3] = {range_of(s->x), range_of(s->shared), range_of(target)}, wr[1] = {range_of(target)};
    access(cmd, rd, wr);
    ZINC_ASSIGN_OR_RETURN(const ops::SharedExpertGate* k, kernels_.shared_expert_gate());
    return k->record(cmd, act(s->x), weights_.vector(s->gate), act(s->shared), act(target), uint32_t(out.rows),
                     uint32_t(x.cols), uint32_t(out.cols));
  }
  if (const auto* c = std::get_if<graph::SsmConv1d>(&op.params)) {
    if (!kv_.state()) return error("no recurrent state on the device");
    const graph::Buffer& in = g.buffer(c->in);
    const uint32_t taps = uint32_t(c->kernel->ne[0]);
    if (taps < 1 || taps > ops::SsmConv1d::kMaxTaps || c->kernel->ne[1] != in.cols)
      return error("conv kernel %lld x %lld for %lld channels", (long long)c->kernel->ne[0],
                   (long long)c->kernel->ne[1], (long long)in.cols);
    const Range state = conv_state_range(c->recurrent_layer);
    const Range rd[2] = {range_of(c->in), state}, wr[2] = {range_of(c->out), state};
    access(cmd, rd, wr);
    ZINC_ASSIGN_OR_RETURN(const ops::SsmConv1d* k, kernels_.ssm_conv1d());
    return k->record(cmd, act(c->in), weights_.vector(c->kernel), state_slots(), kv_.conv_offset(c->recurrent_layer),
                     act(c->out), uint32_t(in.rows), uint32_t(in.cols), taps);
  }
  if (const auto* d = std::get_if<graph::GatedDeltaNet>(&op.params)) {
    if (!kv_.state()) return error("no recurrent state on the device");
    if (g.buffer(d->beta).cols != g.buffer(d->alpha).cols) return error("beta and alpha rows of different widths");
    const Range state = ssm_state_range(d->recurrent_layer);
    const Range rd[4] = {range_of(d->qkv), range_of(d->beta), range_of(d->alpha), state},
                wr[2] = {range_of(d->out), state};
    access(cmd, rd, wr);
    ops::DeltaNetShape shape;
    shape.n_k_heads = uint32_t(d->n_k_heads);
    shape.d_k = uint32_t(d->d_k);
    shape.n_v_heads = uint32_t(d->n_v_heads);
    shape.d_v = uint32_t(d->d_v);
    shape.grouped = d->key_map == graph::KeyHeadMap::kGrouped;
    shape.eps = d->eps;
    ZINC_ASSIGN_OR_RETURN(const ops::GatedDeltaNet* k, kernels_.gated_delta_net());
    return k->record(cmd, shape, act(d->qkv), act(d->beta), act(d->alpha), weights_.vector(d->a),
                     weights_.vector(d->dt_bias), state_slots(), kv_.ssm_offset(d->recurrent_layer), act(d->out),
                     uint32_t(g.buffer(d->qkv).rows));
  }
  if (const auto* n = std::get_if<graph::GatedRmsNorm>(&op.params)) {
    const graph::Buffer& in = g.buffer(n->in);
    if (g.buffer(n->gate).cols != in.cols || g.buffer(n->out).cols != in.cols)
      return error("input, gate and output rows of different widths");
    const Range rd[2] = {range_of(n->in), range_of(n->gate)}, wr[1] = {range_of(n->out)};
    access(cmd, rd, wr);
    ZINC_ASSIGN_OR_RETURN(const ops::GatedRmsNorm* k, kernels_.gated_rms_norm());
    return k->record(cmd, act(n->in), act(n->gate), weights_.vector(n->weight), act(n->out), uint32_t(in.rows),
                     uint32_t(in.cols), uint32_t(n->group), n->eps);
  }
  return error("not supported on Vulkan yet");
}

Status Executor::zero_new_states(const graph::Batch& batch) {
  if (!kv_.state() || graph_.state().recurrent_layers.empty()) return ok_status();
  zero_seqs_.clear();
  for (size_t i = 0; i < batch.tokens.size(); ++i)
    if (batch.positions[i] == 0 && std::find(zero_seqs_.begin(), zero_seqs_.end(), batch.seq_ids[i]) == zero_seqs_.end())
      zero_seqs_.push_back(batch.seq_ids[i]);
  if (zero_seqs_.empty()) return ok_status();
  if (!zero_cmd_) {
    ZINC_ASSIGN_OR_RETURN(zero_cmd_, Commands::create(kernels_.device()));
  }
  ZINC_RETURN_IF_ERROR(zero_cmd_->begin());
  const uint64_t slot_bytes = uint64_t(kv_.slot_floats()) * 4;
  for (int32_t s : zero_seqs_) {
    if (s < 0 || s >= kv_.max_seqs()) return error("sequence %d outside the device state's %d slots", s, kv_.max_seqs());
    zero_cmd_->zero(*kv_.state(), uint64_t(s) * slot_bytes, slot_bytes);
  }
  zero_cmd_->barrier();
  ZINC_RETURN_IF_ERROR(zero_cmd_->end());
  return zero_cmd_->submit_and_wait();
}

}  // namespace zinc::vulkan
