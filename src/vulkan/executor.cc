#include "vulkan/executor.h"

#include <algorithm>
#include <cstring>
#include <variant>

#include "core/check.h"

namespace zinc::vulkan {
namespace {

using Range = std::pair<uint64_t, uint64_t>;  // [begin, end) in the notional address space

bool overlaps(const Range& a, std::span<const Range> set) {
  for (const Range& b : set)
    if (a.first < b.second && b.first < a.second) return true;
  return false;
}

constexpr uint64_t kStepAlignBytes = 256;  // the largest minStorageBufferOffsetAlignment Vulkan allows

// A KV layer's place in the notional address space of the barrier tracking (far above the arena).
// The private buffers' place (below the recurrent states' at 2^62).
constexpr uint64_t kPrivateBase = 1ull << 61;

}  // namespace

Range Executor::kv_range(int32_t layer, int pool) {
  const uint64_t k = ~0ull - 2 - 2 * uint64_t(layer);  // the K pool's unit; the V pool's follows
  return pool < 0 ? Range{k, k + 2} : Range{k + uint64_t(pool), k + uint64_t(pool) + 1};
}

Executor::~Executor() = default;

Result<std::unique_ptr<Executor>> Executor::create(Kernels& kernels, ModelWeights& weights, const KvPool& kv,
                                                   graph::Graph graph, int32_t max_seqs) {
  std::unique_ptr<Executor> e(new Executor(kernels, weights, kv));
  e->graph_ = std::move(graph);
  e->max_seqs_ = max_seqs;
  ZINC_RETURN_IF_ERROR(weights.add(e->graph_));
  ZINC_RETURN_IF_ERROR(e->plan());
  return e;
}

Status Executor::plan() {
  const Device& device = kernels_.device();
  if (device.caps().min_storage_offset_alignment > graph::kBufferAlignment)
    return error("%s needs buffer offsets aligned to %llu bytes; graphs plan %zu", device.caps().name.c_str(),
                 (unsigned long long)device.caps().min_storage_offset_alignment, graph::kBufferAlignment);
  const uint32_t n_tokens = uint32_t(graph_.shape().n_tokens), n_out = uint32_t(graph_.shape().n_outputs);
  n_splits_ = ops::Attention::splits_for(n_tokens, uint32_t(kv_.n_pages() * kv::kPageTokens));
  uint64_t scratch = 4, partials = 4, counters = 4, moe_order = 4, moe_tiles = 16, moe_expert_out = 4;
  for (const graph::Op& op : graph_.ops()) {
    if (const auto* m = std::get_if<graph::MoeMatmul>(&op.params)) {
      const graph::Buffer& ids = graph_.buffer(m->ids);
      const uint64_t n_slots = uint64_t(ids.rows) * uint64_t(ids.cols);
      if (uint64_t(ids.rows) > kMoeMatvecMaxTokens) {
        moe_order = std::max(moe_order, 4 * n_slots);
        moe_tiles = std::max<uint64_t>(moe_tiles, 16ull * ops::MoeGemm::max_tiles(uint32_t(n_slots), uint32_t(m->w->ne[2])));
        if (!m->up) moe_expert_out = std::max<uint64_t>(moe_expert_out, 4 * n_slots * uint64_t(graph_.buffer(m->out).cols));
      }
    }
    if (const auto* m = std::get_if<graph::Matmul>(&op.params)) {
      const graph::Buffer& in = graph_.buffer(m->in);
      const bool fused = in.rows <= kMatvecMaxTokens && m->up && m->up->type == m->w->type;
      if (m->up && !fused) scratch = std::max<uint64_t>(scratch, graph_.buffer(m->out).size_bytes());
      if (!on_matvec_path(*m))
        for (const graph::Weight* t : {m->w, m->up})
          if (t) {
            ZINC_ASSIGN_OR_RETURN(const ops::Gemm* k, kernels_.gemm(t->type));
            partials = std::max(partials, 4 * k->partial_floats(uint32_t(t->ne[1]), uint32_t(t->ne[0]),
                                                                uint32_t(in.rows)));
          }
    } else if (const auto* a = std::get_if<graph::Attention>(&op.params)) {
      const auto& spec = graph_.state().kv_layers[size_t(a->kv_layer)];
      if (n_splits_ > 1) {
        partials = std::max(partials, 4 * ops::Attention::partial_floats(n_tokens, uint32_t(a->q_heads.n_heads),
                                                                         uint32_t(spec.head_dim_v), n_splits_));
        counters = std::max(counters, 4 * ops::Attention::counter_words(n_tokens, uint32_t(a->q_heads.n_heads)));
      }
    } else if (const auto* r = std::get_if<graph::Rope>(&op.params)) {
      if (std::none_of(rope_tables_.begin(), rope_tables_.end(),
                       [&](const RopeTable& t) { return t.params == r->params; }))
        rope_tables_.push_back({r->params, 0});
    }
  }
  ZINC_ASSIGN_OR_RETURN(arena_, Buffer::create(device, std::max<uint64_t>(graph_.arena_bytes(), 4), MemoryKind::kDeviceLocal));
  ZINC_ASSIGN_OR_RETURN(scratch_, Buffer::create(device, scratch, MemoryKind::kDeviceLocal));
  ZINC_ASSIGN_OR_RETURN(partials_, Buffer::create(device, partials, MemoryKind::kDeviceLocal));
  ZINC_ASSIGN_OR_RETURN(attention_counters_, Buffer::create(device, counters, MemoryKind::kDeviceLocal));
  const uint64_t argmax_scratch = n_out <= ops::Argmax::kSlicedRows ? ops::Argmax::scratch_bytes(n_out) : 4;
  ZINC_ASSIGN_OR_RETURN(argmax_scratch_, Buffer::create(device, argmax_scratch, MemoryKind::kDeviceLocal));
  auto align = [](uint64_t bytes) { return (bytes + kStepAlignBytes - 1) / kStepAlignBytes * kStepAlignBytes; };
  moe_tiles_offset_ = align(moe_order);
  moe_expert_out_offset_ = align(moe_tiles_offset_ + moe_tiles);
  ZINC_ASSIGN_OR_RETURN(moe_scratch_, Buffer::create(device, moe_expert_out_offset_ + moe_expert_out, MemoryKind::kDeviceLocal));

  // Step data: tokens, positions, seq ids, output rows, page tables, then the RoPE tables.
  step_data_.max_pages = uint32_t(kv_.n_pages());
  tokens_word_ = 0;
  step_data_.positions = n_tokens;
  output_rows_word_ = 2 * n_tokens;
  step_data_.pages = 2 * n_tokens + n_out;
  uint64_t words = uint64_t(step_data_.pages) + uint64_t(max_seqs_) * step_data_.max_pages;
  for (RopeTable& t : rope_tables_) {
    t.word = uint32_t(words);
    words += ops::rope_table_floats(t.params, n_tokens);
  }
  // The sequence ids last, aligned: the recurrent ops bind them as a buffer of their own.
  words = align(words * 4) / 4;
  step_data_.seq_ids = uint32_t(words);
  words += n_tokens;
  if (words >= (1ull << 32)) return error("step data of %llu words", (unsigned long long)words);
  step_words_ = words;
  ZINC_ASSIGN_OR_RETURN(step_host_, Buffer::create(device, 2 * words * 4, MemoryKind::kHostVisible));
  ZINC_ASSIGN_OR_RETURN(step_, Buffer::create(device, words * 4, MemoryKind::kDeviceLocal));
  step_data_.buffer = step_.get();
  const graph::Buffer& out = graph_.buffer(graph_.output());
  ZINC_ASSIGN_OR_RETURN(logits_, Buffer::create(device, std::max<uint64_t>(out.size_bytes(), 4), MemoryKind::kHostVisible));
  ids_slot_bytes_ = align(uint64_t(out.rows) * 4);  // the chained slots bind at an aligned offset
  ZINC_ASSIGN_OR_RETURN(ids_, Buffer::create(device, 2 * ids_slot_bytes_, MemoryKind::kHostVisible));
  ZINC_RETURN_IF_ERROR(plan_fusions());
  ZINC_ASSIGN_OR_RETURN(head_counters_, Buffer::create(device, 4 * head_counter_words_, MemoryKind::kDeviceLocal));
  // The counters the kernels leave at zero start at zero.
  ZINC_ASSIGN_OR_RETURN(zero_cmd_, Commands::create(device));
  ZINC_RETURN_IF_ERROR(zero_cmd_->begin());
  zero_cmd_->zero(*attention_counters_, 0, counters);
  zero_cmd_->zero(*argmax_scratch_, 0, argmax_scratch);
  zero_cmd_->zero(*head_counters_, 0, 4 * head_counter_words_);
  zero_cmd_->barrier();
  ZINC_RETURN_IF_ERROR(zero_cmd_->end());
  ZINC_RETURN_IF_ERROR(zero_cmd_->submit_and_wait());
  ZINC_ASSIGN_OR_RETURN(private_, Buffer::create(device, std::max<uint64_t>(private_bytes_, 4), MemoryKind::kDeviceLocal));
  return Status();
}

std::pair<uint64_t, uint64_t> Executor::range_of(graph::BufferId id) const {
  const graph::Buffer& b = graph_.buffer(id);
  if (const auto p = private_offsets_.find(id.index); p != private_offsets_.end())
    return {kPrivateBase + p->second, kPrivateBase + p->second + b.size_bytes()};
  return {b.offset_bytes, b.offset_bytes + b.size_bytes()};
}

void Executor::make_private(graph::BufferId id) {
  if (private_offsets_.count(id.index)) return;
  private_offsets_[id.index] = reserve_private(graph_.buffer(id).size_bytes());
}

uint64_t Executor::reserve_private(uint64_t bytes) {
  const uint64_t offset = private_bytes_;
  private_bytes_ += (bytes + kStepAlignBytes - 1) / kStepAlignBytes * kStepAlignBytes;
  return offset;
}

std::pair<uint64_t, uint64_t> Executor::private_range(uint64_t offset, uint64_t bytes) const {
  return {kPrivateBase + offset, kPrivateBase + offset + bytes};
}

ops::Activations Executor::private_act(uint64_t offset, uint64_t bytes, uint32_t stride) const {
  return {{private_.get(), offset, std::max<uint64_t>(bytes, 4)}, stride};
}

ops::Activations Executor::act(graph::BufferId id) const {
  const graph::Buffer& b = graph_.buffer(id);
  if (const auto p = private_offsets_.find(id.index); p != private_offsets_.end())
    return {{private_.get(), p->second, std::max<uint64_t>(b.size_bytes(), 4)}, uint32_t(b.cols)};
  return {{arena_.get(), b.offset_bytes, std::max<uint64_t>(b.size_bytes(), 4)}, uint32_t(b.cols)};
}

void Executor::barrier(Commands& cmd) {
  cmd.compute_barrier();
  ++n_barriers_;
  if (stage_pool_ && !stage_ops_.empty() && profile_names_[1].size() + 1 < stage_pool_->count()) {
    profile_kinds_[1].push_back("stage");
    profile_names_[1].push_back(std::move(stage_ops_));
    cmd.write_timestamp(stage_pool_->handle(), uint32_t(profile_names_[1].size()));
    stage_ops_.clear();
  }
  pending_reads_.clear();
  pending_writes_.clear();
}

void Executor::access(Commands& cmd, std::span<const Range> reads, std::span<const Range> writes) {
  bool hazard = false;
  for (const Range& r : reads) hazard = hazard || overlaps(r, pending_writes_);
  for (const Range& w : writes) hazard = hazard || overlaps(w, pending_writes_) || overlaps(w, pending_reads_);
  if (hazard) barrier(cmd);
  pending_reads_.insert(pending_reads_.end(), reads.begin(), reads.end());
  pending_writes_.insert(pending_writes_.end(), writes.begin(), writes.end());
}

Status Executor::record(Commands& cmd, Readback readback, TimestampPool* timestamps, int chain_slot,
                        ProfileMode mode, bool short_ctx) {
  ZINC_RETURN_IF_ERROR(cmd.begin());
  pending_reads_.clear();
  pending_writes_.clear();
  n_barriers_ = 0;
  recording_short_ = short_ctx;
  const uint32_t slot = chain_slot > 0 ? 1 : 0, timer_query = chain_slot >= 0 ? 2 + 2 * slot : 0;
  if (chain_slot >= 0) cmd.barrier();  // the chained step before may still run: wait for its writes
  cmd.copy(*step_host_, slot * step_words_ * 4, *step_, 0, step_->size_bytes());
  cmd.barrier();
  if (timestamps) {
    cmd.reset_queries(timestamps->handle(), 0, timestamps->count());
    cmd.write_timestamp(timestamps->handle(), 0);
  } else if (step_timer_) {
    cmd.reset_queries(step_timer_->handle(), timer_query, 2);
    cmd.write_timestamp(step_timer_->handle(), timer_query);
  }
  uint32_t index = 0;
  const bool op_times = timestamps && mode == ProfileMode::kOps;
  const int pm = mode == ProfileMode::kOps ? 0 : 1;
  if (timestamps) {
    profile_kinds_[pm].clear();
    profile_names_[pm].clear();
  }
  stage_pool_ = timestamps && !op_times ? timestamps : nullptr;
  stage_ops_.clear();
  const auto& ops = graph_.ops();
  auto name_in_stage = [&](const std::string& name) {
    if (stage_pool_) stage_ops_ += (stage_ops_.empty() ? "" : "+") + name;
  };
  auto time_op = [&](const char* kind, const std::string& name) {  // ProfileMode::kOps: a barrier after each
    cmd.compute_barrier();
    pending_reads_.clear();
    pending_writes_.clear();
    cmd.write_timestamp(timestamps->handle(), ++index);
    profile_kinds_[0].push_back(kind);
    profile_names_[0].push_back(name);
  };
  for (size_t i = 0; i < ops.size();) {
    if (skipped_ops_.count(i) || (short_ctx && attention_o_skips_.count(i))) {
      ++i;
      continue;
    }
    const auto fused = rope_kv_.find(i);
    const RopeKvFusion* f = fused == rope_kv_.end() ? nullptr : &fused->second;
    if (f && folded_rope_kv_.count(i)) {  // done by the matvecs' epilogues
      i += f->n_ops;
      continue;
    }
    Status s;
    if (const auto sd = shared_downs_.find(i); sd != shared_downs_.end()) {
      s = record_op(cmd, sd->second.gate_up);  // beside the routed gate/up: named before the down's barrier
      name_in_stage(ops[sd->second.gate_up].name);
      if (op_times) time_op(graph::op_kind_name(ops[sd->second.gate_up].params), ops[sd->second.gate_up].name);
    }
    const auto router_fold = router_folds_.find(i);
    if (s.ok() && router_fold != router_folds_.end()) s = record_router_stream(cmd, router_fold->second);
    const auto attention_o = short_ctx ? attention_o_.find(i) : attention_o_.end();
    if (s.ok())
      s = f ? record_rope_kv(cmd, *f)
          : attention_o != attention_o_.end() ? record_attention_o(cmd, i, attention_o->second)
                                              : record_op(cmd, i);
    if (s.ok() && router_fold != router_folds_.end()) s = record_router_input(cmd, router_fold->second);
    if (!s.ok()) return error("%s (%s): %s", ops[i].name.c_str(), graph::op_kind_name(ops[i].params), s.message().c_str());
    name_in_stage(ops[f ? f->rope_q : i].name);
    if (op_times)
      time_op(f ? (f->q_norm || f->k_norm ? "norm_rope_kv_write" : "rope_kv_write")
              : attention_o != attention_o_.end() ? "attention_o"
                                                  : graph::op_kind_name(ops[i].params),
              ops[f ? f->rope_q : i].name);
    i += f ? f->n_ops : 1;
  }
  if (stage_pool_) barrier(cmd);  // closes the last stage
  stage_pool_ = nullptr;
  cmd.barrier();
  const graph::Buffer& out = graph_.buffer(graph_.output());
  if (readback == Readback::kLogits) {
    cmd.copy(*arena_, out.offset_bytes, *logits_, 0, out.size_bytes());
  } else {
    ZINC_RETURN_IF_ERROR(kernels_.argmax->record(cmd, act(graph_.output()),
                                                 {ids_.get(), slot * ids_slot_bytes_, uint64_t(out.rows) * 4},
                                                 uint32_t(out.rows), uint32_t(out.cols),
                                                 out.rows <= ops::Argmax::kSlicedRows ? argmax_scratch_.get() : nullptr));
    if (chain_slot >= 0) {  // the next chained step's token
      cmd.barrier();
      cmd.copy(*ids_, slot * ids_slot_bytes_, *step_host_, ((1 - slot) * step_words_ + tokens_word_) * 4, 4);
    }
  }
  cmd.barrier();
  if (!timestamps && step_timer_) cmd.write_timestamp(step_timer_->handle(), timer_query + 1);
  return cmd.end();
}

Status Executor::record_rope_kv(Commands& cmd, const RopeKvFusion& f) {
  const auto& ops = graph_.ops();
  const auto& q = std::get<graph::Rope>(ops[f.rope_q].params);
  const auto& w = std::get<graph::KvWrite>(ops[f.kv_write].params);
  const Range rd[3] = {range_of(q.buf), range_of(w.k), range_of(w.v)}, wr[2] = {range_of(q.buf), kv_range(w.kv_layer)};
  access(cmd, rd, wr);
  uint32_t word = 0;
  for (const RopeTable& t : rope_tables_)
    if (t.params == q.params) word = t.word;
  ops::KvWrite::RopeArgs rope{act(q.buf), q.heads, &q.params, ops::whole(*step_), word};
  ops::KvWrite::HeadNorm q_norm, k_norm;
  if (f.q_norm) {
    q_norm = {weights_.vector(f.q_norm->weight), f.q_norm->eps};
    rope.q_norm = &q_norm;
  }
  if (f.k_norm) {
    k_norm = {weights_.vector(f.k_norm->weight), f.k_norm->eps};
    rope.k_norm = &k_norm;
  }
  return kernels_.kv_write->record_rope(cmd, rope, act(w.k), w.k_heads, act(w.v), w.v_heads, kv_.layer(w.kv_layer),
                                        step_data_, uint32_t(graph_.buffer(w.k).rows));
}

Status Executor::record_attention_o(Commands& cmd, size_t index, const AttentionOPlan& f) {
  const auto& a = std::get<graph::Attention>(graph_.ops()[index].params);
  const auto& m = std::get<graph::Matmul>(graph_.ops()[f.o].params);
  const graph::BufferId stream = residual_folds_.at(f.o);
  const WeightBuffer* w = weights_.matrix(m.w);
  const ops::KvLayerBuffers layer = kv_.layer(a.kv_layer);
  const RouterFoldPlan* fold = f.router ? &router_folds_.at(f.o) : nullptr;
  const uint32_t m_rows = fold ? uint32_t(fold->weights->input->rows()) : 0;
  const uint32_t qgs = ops::AttentionO::q_groups(uint32_t(a.q_heads.n_heads), layer.n_kv_heads, fold != nullptr);
  const uint64_t partial_bytes = 4 * ops::AttentionO::partial_floats(uint32_t(w->rows()), qgs, m_rows);
  std::vector<Range> rd = {range_of(a.q), a.gate.valid() ? range_of(a.gate) : range_of(a.q), kv_range(a.kv_layer),
                           range_of(stream)};
  std::vector<Range> wr = {range_of(stream), private_range(attention_o_partials_, partial_bytes)};
  ops::AttentionORouter router;
  if (fold) {  // R s first (beside the stage before), then M a and the norm's inputs in the fused dispatch
    ZINC_RETURN_IF_ERROR(record_router_stream(cmd, *fold));
    const graph::Buffer& logits = graph_.buffer(fold->logits);
    rd.push_back(private_range(fold->stream_logits, logits.size_bytes()));
    wr.push_back(range_of(fold->logits));
    if (fold->ranked) wr.push_back(range_of(fold->ids));
    for (const Range& r : norm_out_ranges(*fold)) wr.push_back(r);
    router = {fold->weights->input.get(),
              private_act(fold->stream_logits, logits.size_bytes(), uint32_t(logits.cols)).range,
              act(fold->logits).range,
              fold->ranked ? act(fold->ids).range : BufferRange{},
              fold->ranked ? fold->k : 0,
              weights_.vector(fold->norm_weight),
              weighted_stream(*fold).range,
              norm_partials(*fold),
              partial_words(*fold)};
  }
  access(cmd, rd, wr);
  ZINC_ASSIGN_OR_RETURN(const ops::AttentionO* k,
                        kernels_.attention_o(w->type(), uint32_t(a.q_heads.n_heads) / layer.n_kv_heads, layer.head_dim_k,
                                             fold != nullptr,
                                             fold ? ops::AttentionO::rank_parts(m_rows, kernels_.device().caps().min_subgroup_size) : 1));
  ops::AttentionOArgs args;
  args.q = act(a.q);
  args.q_heads = a.q_heads;
  const ops::Activations gate = a.gate.valid() ? act(a.gate) : args.q;
  if (a.gate.valid()) {
    args.gate = &gate;
    args.gate_heads = a.gate_heads;
  }
  args.y = act(stream);
  args.scale = a.scale;
  // Not in the barrier tracking: counters private to this dispatch, left zero.
  return k->record(cmd, args, *w, layer, step_data_, {private_.get(), attention_o_partials_, partial_bytes},
                   {head_counters_.get(), 0, VK_WHOLE_SIZE}, f.counter_word, fold ? &router : nullptr);
}

Status Executor::record_op(Commands& cmd, size_t index) {
  const graph::Graph& g = graph_;
  const graph::Op& op = g.ops()[index];
  const Range scratch{g.arena_bytes(), g.arena_bytes() + scratch_->size_bytes()};
  const Range partials{scratch.second, scratch.second + partials_->size_bytes()};

  if (const auto* e = std::get_if<graph::Embed>(&op.params)) {
    const WeightBuffer* w = weights_.matrix(e->table);
    ZINC_ASSIGN_OR_RETURN(const ops::GetRows* k, kernels_.get_rows(w->type()));
    const Range wr[1] = {range_of(e->out)};
    access(cmd, {}, wr);
    return k->record(cmd, *w, ops::whole(*step_), act(e->out), uint32_t(g.buffer(e->out).rows), tokens_word_, e->scale);
  }
  if (const auto* n = std::get_if<graph::RmsNorm>(&op.params)) {
    if (!n->weight) return error("rms_norm without a weight is not supported on Vulkan");
    const graph::Buffer& b = g.buffer(n->in);
    if (n->add.valid() && !folded_adds_.count(index)) {
      const Range rd[2] = {range_of(n->in), range_of(n->add)}, wr[2] = {range_of(n->in), range_of(n->out)};
      access(cmd, rd, wr);
      const ops::Activations in = act(n->in), add = act(n->add);
      return kernels_.rms_norm->record(cmd, in, weights_.vector(n->weight), act(n->out), uint32_t(b.rows),
                                       uint32_t(b.cols), n->eps, &add, &in);
    }
    const Range rd[1] = {range_of(n->in)}, wr[1] = {range_of(n->out)};
    access(cmd, rd, wr);
    return kernels_.rms_norm->record(cmd, act(n->in), weights_.vector(n->weight), act(n->out), uint32_t(b.rows),
                                     uint32_t(b.cols), n->eps);
  }
  if (const auto* n = std::get_if<graph::QkNorm>(&op.params)) {
    const Range rw[1] = {range_of(n->buf)};
    access(cmd, rw, rw);
    return kernels_.qk_norm->record(cmd, act(n->buf), n->heads, weights_.vector(n->weight),
                                    uint32_t(g.buffer(n->buf).rows), n->eps);
  }
  if (const auto* m = std::get_if<graph::Matmul>(&op.params)) return record_matmul(cmd, index, *m);
  if (const auto* r = std::get_if<graph::Rope>(&op.params)) {
    const Range rw[1] = {range_of(r->buf)};
    access(cmd, rw, rw);
    uint32_t word = 0;
    for (const RopeTable& t : rope_tables_)
      if (t.params == r->params) word = t.word;
    return kernels_.rope->record(cmd, act(r->buf), r->heads, r->params, ops::whole(*step_), word,
                                 uint32_t(g.buffer(r->buf).rows));
  }
  if (const auto* w = std::get_if<graph::KvWrite>(&op.params)) {
    const Range rd[2] = {range_of(w->k), range_of(w->v)}, wr[1] = {kv_range(w->kv_layer)};
    access(cmd, rd, wr);
    return kernels_.kv_write->record(cmd, act(w->k), w->k_heads, act(w->v), w->v_heads, kv_.layer(w->kv_layer),
                                     step_data_, uint32_t(g.buffer(w->k).rows));
  }
  if (const auto* a = std::get_if<graph::Attention>(&op.params)) {
    const Range rd[4] = {range_of(a->q), a->gate.valid() ? range_of(a->gate) : range_of(a->q), kv_range(a->kv_layer),
                         partials};
    const Range wr[2] = {range_of(a->out), partials};
    access(cmd, rd, wr);
    ops::AttentionArgs args;
    args.q = act(a->q);
    args.q_heads = a->q_heads;
    const ops::Activations gate = a->gate.valid() ? act(a->gate) : args.q;
    if (a->gate.valid()) {
      args.gate = &gate;
      args.gate_heads = a->gate_heads;
    }
    args.out = act(a->out);
    args.scale = a->scale;
    const BufferRange part{partials_.get(), 0, VK_WHOLE_SIZE}, counters{attention_counters_.get(), 0, VK_WHOLE_SIZE};
    return kernels_.attention->record(cmd, args, kv_.layer(a->kv_layer), step_data_, uint32_t(g.buffer(a->q).rows),
                                      n_splits_, &part, &counters);
  }
  if (const auto* a = std::get_if<graph::Add>(&op.params)) {
    const Range rd[2] = {range_of(a->a), range_of(a->b)}, wr[1] = {range_of(a->out)};
    access(cmd, rd, wr);
    return kernels_.add->record(cmd, act(a->a).range, act(a->b).range, act(a->out).range,
                                uint32_t(g.buffer(a->out).n_elements()));
  }
  if (const auto* gr = std::get_if<graph::GatherRows>(&op.params)) {
    const Range rd[1] = {range_of(gr->in)}, wr[1] = {range_of(gr->out)};
    access(cmd, rd, wr);
    const graph::Buffer& out = g.buffer(gr->out);
    return kernels_.gather_rows->record(cmd, act(gr->in).range, ops::whole(*step_), output_rows_word_, act(gr->out).range,
                                        uint32_t(out.cols), uint32_t(out.rows));
  }
  if (const auto* am = std::get_if<graph::Argmax>(&op.params)) {
    const Range rd[1] = {range_of(am->in)}, wr[1] = {range_of(am->out)};
    access(cmd, rd, wr);
    const graph::Buffer& in = g.buffer(am->in);
    return kernels_.argmax->record(cmd, act(am->in), act(am->out).range, uint32_t(in.rows), uint32_t(in.cols));
  }
  return record_moe_op(cmd, index);
}

Status Executor::write_step(const graph::Batch& batch, const kv::Cache& cache, int slot, bool write_tokens) {
  ZINC_CHECK(batch.shape() == graph_.shape());
  if (cache.n_pages() != kv_.n_pages()) return error("the cache has %lld pages, the device pool %lld",
                                                     (long long)cache.n_pages(), (long long)kv_.n_pages());
  int32_t* w = static_cast<int32_t*>(step_host_->mapped()) + size_t(slot) * step_words_;
  const size_t n = batch.tokens.size();
  if (write_tokens) std::memcpy(w + tokens_word_, batch.tokens.data(), n * 4);
  std::memcpy(w + step_data_.positions, batch.positions.data(), n * 4);
  std::memcpy(w + step_data_.seq_ids, batch.seq_ids.data(), n * 4);
  std::memcpy(w + output_rows_word_, batch.output_rows.data(), batch.output_rows.size() * 4);
  int32_t last_seq = -1;
  for (size_t i = 0; i < n; ++i) {
    const int32_t s = batch.seq_ids[i];
    if (s == last_seq) continue;
    last_seq = s;
    if (s < 0 || s >= max_seqs_) return error("sequence %d outside the executor's %d slots", s, max_seqs_);
    const auto pages = cache.page_table(s);
    std::memcpy(w + step_data_.pages + size_t(s) * step_data_.max_pages, pages.data(),
                std::min<size_t>(pages.size(), step_data_.max_pages) * 4);
  }
  for (const RopeTable& t : rope_tables_) ops::rope_table(t.params, batch.positions, reinterpret_cast<float*>(w + t.word));
  return Status();
}

Status Executor::run(const graph::Batch& batch, const kv::Cache& cache, Readback readback) {
  ZINC_RETURN_IF_ERROR(write_step(batch, cache));
  ZINC_RETURN_IF_ERROR(zero_new_states(batch));
  const int cls = short_context(batch) ? 1 : 0;
  ZINC_ASSIGN_OR_RETURN(Commands * cmd, step_recording(readback == Readback::kLogits ? logits_cmd_[cls] : argmax_cmd_[cls],
                                                       readback, -1, cls == 1));
  last_timer_query_ = 0;
  return cmd->submit_and_wait();
}

Status Executor::submit_chained(const graph::Batch& batch, const kv::Cache& cache, int slot, bool token_from_host) {
  if (slot != 0 && slot != 1) return error("chained step slot %d: 0 or 1", slot);
  if (batch.tokens.size() != 1 || graph_.buffer(graph_.output()).rows != 1)
    return error("chained steps take one token and one output row, got %zu tokens", batch.tokens.size());
  ZINC_RETURN_IF_ERROR(write_step(batch, cache, slot, token_from_host));
  ZINC_RETURN_IF_ERROR(zero_new_states(batch));
  const int cls = short_context(batch) ? 1 : 0;
  ZINC_ASSIGN_OR_RETURN(Commands * cmd, step_recording(chain_cmd_[slot][cls], Readback::kArgmax, slot, cls == 1));
  chain_class_[slot] = cls;
  return cmd->submit();
}

Status Executor::wait_chained(int slot) {
  if ((slot != 0 && slot != 1) || !chain_cmd_[slot][chain_class_[slot]]) return error("no chained step in slot %d", slot);
  last_timer_query_ = 2 + 2 * uint32_t(slot);
  return chain_cmd_[slot][chain_class_[slot]]->wait();
}

int32_t Executor::chained_argmax(int slot) const {
  return static_cast<const int32_t*>(ids_->mapped())[(slot > 0 ? ids_slot_bytes_ : 0) / 4];
}

std::span<const float> Executor::output() const {
  const graph::Buffer& out = graph_.buffer(graph_.output());
  return {static_cast<const float*>(logits_->mapped()), size_t(out.n_elements())};
}

double Executor::last_step_gpu_ns() const {
  if (!step_timer_) return 0;
  Result<double> ns = step_timer_->elapsed_ns(last_timer_query_, last_timer_query_ + 1);
  return ns.ok() ? *ns : 0;
}

Result<Commands*> Executor::step_recording(std::unique_ptr<Commands>& cmd, Readback readback, int chain_slot,
                                          bool short_ctx) {
  if (!cmd) {
    if (!step_timer_ && kernels_.device().caps().timestamps) {
      ZINC_ASSIGN_OR_RETURN(step_timer_, TimestampPool::create(kernels_.device(), 6));
    }
    ZINC_ASSIGN_OR_RETURN(auto c, Commands::create(kernels_.device()));
    ZINC_RETURN_IF_ERROR(record(*c, readback, nullptr, chain_slot, ProfileMode::kOps, short_ctx));
    cmd = std::move(c);
  }
  return cmd.get();
}

std::span<const int32_t> Executor::argmax() const {
  return {static_cast<const int32_t*>(ids_->mapped()), size_t(graph_.buffer(graph_.output()).rows)};
}

Result<std::vector<OpTiming>> Executor::profile(const graph::Batch& batch, const kv::Cache& cache, ProfileMode mode) {
  ZINC_RETURN_IF_ERROR(write_step(batch, cache));
  ZINC_RETURN_IF_ERROR(zero_new_states(batch));
  const int pm = mode == ProfileMode::kOps ? 0 : 1;
  const bool short_ctx = short_context(batch);
  if (!profile_cmd_[pm] || profile_short_[pm] != short_ctx) {
    // A stage holds at least one op: at most ops + 1 timestamps either way.
    ZINC_ASSIGN_OR_RETURN(timestamps_[pm], TimestampPool::create(kernels_.device(), uint32_t(graph_.ops().size() + 2)));
    ZINC_ASSIGN_OR_RETURN(auto c, Commands::create(kernels_.device()));
    ZINC_RETURN_IF_ERROR(record(*c, Readback::kArgmax, timestamps_[pm].get(), -1, mode, short_ctx));
    profile_cmd_[pm] = std::move(c);
    profile_short_[pm] = short_ctx;
  }
  ZINC_RETURN_IF_ERROR(profile_cmd_[pm]->submit_and_wait());
  std::vector<OpTiming> out;
  for (size_t i = 0; i < profile_kinds_[pm].size(); ++i) {
    ZINC_ASSIGN_OR_RETURN(double ns, timestamps_[pm]->elapsed_ns(uint32_t(i), uint32_t(i + 1)));
    out.push_back({profile_kinds_[pm][i], profile_names_[pm][i], ns});
  }
  return out;
}

Status Executor::write_buffer(graph::BufferId id, std::span<const float> data) {
  const graph::Buffer& b = graph_.buffer(id);
  if (data.size() != size_t(b.n_elements()))
    return error("buffer %s holds %lld floats, given %zu", b.name.c_str(), (long long)b.n_elements(), data.size());
  return weights_.uploader().upload(*arena_, b.offset_bytes,
                                    {reinterpret_cast<const uint8_t*>(data.data()), data.size() * 4});
}

Result<std::vector<float>> Executor::read_buffer(graph::BufferId id) {
  const graph::Buffer& b = graph_.buffer(id);
  ZINC_ASSIGN_OR_RETURN(auto host, Buffer::create(kernels_.device(), std::max<uint64_t>(b.size_bytes(), 4), MemoryKind::kHostVisible));
  ZINC_ASSIGN_OR_RETURN(auto cmd, Commands::create(kernels_.device()));
  ZINC_RETURN_IF_ERROR(cmd->begin());
  cmd->copy(*arena_, b.offset_bytes, *host, 0, b.size_bytes());
  cmd->barrier();
  ZINC_RETURN_IF_ERROR(cmd->end());
  ZINC_RETURN_IF_ERROR(cmd->submit_and_wait());
  std::vector<float> v(size_t(b.n_elements()));
  std::memcpy(v.data(), host->mapped(), v.size() * 4);
  return v;
}

}  // namespace zinc::vulkan
