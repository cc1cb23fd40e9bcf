// Decode-step fusions of the Executor, planned once per graph:
// - a Matmul on the matvec path (or a decode MoE down projection and the shared-expert gate)
//   whose output is only the residual added by the next RMSNorm adds into the residual stream
//   itself, and the norm skips its add;
// - an RMSNorm whose output feeds only matvecs is not dispatched: each matvec normalises its
//   input on the fly (ops::InputNorm); one feeding other ops too (a MoE router and experts) is
//   done by its first consumer, a single-matrix matvec, which also writes the normalised vector;
// - a MoeRoute is done by the decode gate/up expert dispatch right after it;
// - a shared expert's down projection and sigmoid gate join the routed down projection as one
//   more term, its gate/up matvec recorded just before (beside the routed gate/up);
// - delta-net layers: an SsmConv1d whose input only a matvec writes runs as that matvec's
//   epilogue (ops::OutputConv), and a GatedRmsNorm whose output only a matvec reads is done by
//   that matvec while it stages x (ops::GatedInputNorm, where the kernel supports the shape);
// - one-token steps whose keys fit ops::AttentionO::kMaxKeys: an Attention and the output
//   projection after it (adding into the stream, with its folded router where it has one) are
//   one dispatch (ops::AttentionO), in recordings of their own (Executor::short_context);
// and for any batch: QkNorm(q), QkNorm(k) (where present), Rope(q), Rope(k), KvWrite is one
// dispatch (ops::KvWrite::record_rope).
#include <variant>
#include <vector>

#include "vulkan/executor.h"

namespace zinc::vulkan {

bool Executor::references(const graph::Op& op, graph::BufferId id) {
  bool found = false;
  std::visit([&](const auto& p) { p.buffers([&](graph::BufferId b) { found = found || b == id; }); }, op.params);
  return found;
}

bool Executor::on_matvec_path(const graph::Matmul& m) const {
  return graph_.buffer(m.in).rows <= kMatvecMaxTokens;
}

bool Executor::fusable_matvec(const graph::Matmul& m) const {
  return on_matvec_path(m) && (!m.up || m.up->type == m.w->type);
}

bool Executor::foldable_writers(std::span<const size_t> writers, graph::BufferId r, graph::BufferId stream) const {
  const auto& ops = graph_.ops();
  const auto* m = std::get_if<graph::Matmul>(&ops[writers[0]].params);
  if (m) return writers.size() == 1 && m->out == r && m->in != stream && fusable_matvec(*m);
  const auto* moe = std::get_if<graph::MoeMatmul>(&ops[writers[0]].params);
  if (!moe || moe->up || moe->out != r || moe->in == stream || moe->in == r ||
      graph_.buffer(moe->ids).rows > kMoeMatvecMaxTokens)
    return false;
  for (size_t i = 1; i < writers.size(); ++i) {
    const auto* s = std::get_if<graph::SharedExpertGate>(&ops[writers[i]].params);
    if (!s || s->out != r || s->x == r || s->shared == r || s->x == stream || s->shared == stream) return false;
  }
  return true;
}

std::optional<Executor::RopeKvFusion> Executor::match_rope_kv(size_t i) const {
  const auto& ops = graph_.ops();
  std::vector<const graph::QkNorm*> norms;
  size_t j = i;
  for (; j < ops.size() && norms.size() < 2; ++j) {
    const auto* n = std::get_if<graph::QkNorm>(&ops[j].params);
    if (!n) break;
    norms.push_back(n);
  }
  if (j + 2 >= ops.size()) return std::nullopt;
  const auto* a = std::get_if<graph::Rope>(&ops[j].params);
  const auto* b = std::get_if<graph::Rope>(&ops[j + 1].params);
  const auto* w = std::get_if<graph::KvWrite>(&ops[j + 2].params);
  if (!a || !b || !w) return std::nullopt;
  const bool k_first = a->buf == w->k;
  const graph::Rope& q = k_first ? *b : *a;
  const graph::Rope& k = k_first ? *a : *b;
  if (k.buf != w->k || q.buf == w->k || q.buf == w->v || q.params != k.params || k.heads != w->k_heads ||
      graph_.buffer(w->k).last_op != int32_t(j + 2))
    return std::nullopt;
  RopeKvFusion f{k_first ? j + 1 : j, j + 2, nullptr, nullptr, j + 3 - i};
  for (const graph::QkNorm* n : norms) {
    if (n->buf != q.buf && n->buf != k.buf) return std::nullopt;
    const bool on_q = n->buf == q.buf;
    const graph::QkNorm*& slot = on_q ? f.q_norm : f.k_norm;
    if (slot || !n->weight || n->heads != (on_q ? q.heads : k.heads) ||
        k.heads.head_dim > ops::KvWrite::kMaxNormHeadDim)
      return std::nullopt;
    slot = n;
  }
  return f;
}

Status Executor::plan_fusions() {
  deferred_norms_.clear();
  materialized_norms_.clear();
  routed_gate_ups_.clear();
  shared_downs_.clear();
  private_offsets_.clear();
  private_bytes_ = 0;
  residual_folds_.clear();
  folded_adds_.clear();
  skipped_ops_.clear();
  plan_routing();
  conv_folds_.clear();
  gated_norms_.clear();
  rope_kv_.clear();
  const auto& ops = graph_.ops();
  for (size_t i = 0; i < ops.size();) {
    const std::optional<RopeKvFusion> f = match_rope_kv(i);
    if (f) rope_kv_[i] = *f;
    i += f ? f->n_ops : 1;
  }
  const graph::BufferId output = graph_.output();
  auto touches = [&](size_t i, graph::BufferId id) {
    if (references(ops[i], id)) return true;
    const auto f = residual_folds_.find(i);
    return f != residual_folds_.end() && f->second == id;
  };

  for (size_t n = 0; n < ops.size(); ++n) {
    const auto* norm = std::get_if<graph::RmsNorm>(&ops[n].params);
    if (!norm || !norm->add.valid() || norm->add == output) continue;
    const graph::Buffer& x = graph_.buffer(norm->in);
    // The writers of the added residual: a matvec Matmul alone, or a decode MoE down projection
    // (accumulating) followed by SharedExpertGates adding into it.
    std::vector<size_t> writers;
    for (size_t i = 0; i < n; ++i)
      if (references(ops[i], norm->add)) writers.push_back(i);
    if (writers.empty() || !foldable_writers(writers, norm->add, norm->in)) continue;
    const graph::Buffer& r = graph_.buffer(norm->add);
    if (r.cols != x.cols || r.rows != x.rows || x.first_op >= int32_t(writers.front())) continue;
    bool clean = true;
    for (size_t i = writers.front() + 1; i < n && clean; ++i) clean = !references(ops[i], norm->in);
    for (size_t i = n + 1; i < ops.size() && clean; ++i) clean = !references(ops[i], norm->add);
    if (!clean) continue;
    for (size_t w : writers) residual_folds_[w] = norm->in;
    folded_adds_.insert(n);
  }

  for (size_t n = 0; n < ops.size(); ++n) {
    const auto* norm = std::get_if<graph::RmsNorm>(&ops[n].params);
    if (!norm || !norm->weight || norm->out == output || norm->out == norm->in) continue;
    if (norm->add.valid() && !folded_adds_.count(n)) continue;
    size_t last = n;
    bool only_matvecs = true;
    for (size_t i = n + 1; i < ops.size() && only_matvecs; ++i) {
      if (!references(ops[i], norm->out)) continue;
      const auto* m = std::get_if<graph::Matmul>(&ops[i].params);
      only_matvecs = m && m->in == norm->out && m->out != norm->out && fusable_matvec(*m);
      last = i;
    }
    if (last == n) continue;
    if (!only_matvecs) {
      materialize_norm(n);
      continue;
    }
    if (graph_.buffer(norm->in).last_op < int32_t(last)) continue;
    bool stable = true;  // nothing writes the stream while the deferred norm's consumers read it
    for (size_t i = n + 1; i <= last && stable; ++i) stable = !touches(i, norm->in);
    if (!stable) continue;
    deferred_norms_[norm->out.index] = {norm->in, norm->weight, norm->eps, {}};
    skipped_ops_.insert(n);
  }
  plan_delta_net_fusions();
  plan_shared_experts();
  plan_rope_kv_epilogues();
  ZINC_RETURN_IF_ERROR(plan_router_folds());
  plan_early_gates();
  plan_attention_o();
  return Status();
}

void Executor::plan_attention_o() {
  attention_o_.clear();
  attention_o_skips_.clear();
  if (graph_.shape().n_tokens != 1) return;
  const auto& ops = graph_.ops();
  uint64_t partial_bytes = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto* a = std::get_if<graph::Attention>(&ops[i].params);
    if (!a) continue;
    size_t j = i + 1;
    while (j < ops.size() && skipped_ops_.count(j)) ++j;
    const auto* m = j < ops.size() ? std::get_if<graph::Matmul>(&ops[j].params) : nullptr;
    if (!m || m->in != a->out || m->up || m->bias || !on_matvec_path(*m) || !residual_folds_.count(j) ||
        graph_.buffer(a->out).last_op != int32_t(j) || conv_folds_.count(j) ||
        materialized_norms_.count(j) || rope_kv_epilogues_.count(j) || gated_norms_.count(m->in.index) ||
        deferred_norms_.count(m->in.index))
      continue;
    const WeightBuffer* w = weights_.matrix(m->w);
    const ops::KvLayerBuffers layer = kv_.layer(a->kv_layer);
    if (!w || ops::AttentionO::refusal(kernels_.device().caps(), layer, uint32_t(a->q_heads.n_heads), *w) ||
        uint32_t(a->q_heads.head_dim) != layer.head_dim_k ||
        (a->gate.valid() && a->gate_heads.head_dim != a->q_heads.head_dim))
      continue;
    const uint32_t rows = uint32_t(w->rows());
    const auto fold = router_folds_.find(j);
    RouterFoldPlan* rf = fold == router_folds_.end() ? nullptr : &fold->second;
    const uint32_t qgs = ops::AttentionO::q_groups(uint32_t(a->q_heads.n_heads), layer.n_kv_heads, rf != nullptr);
    const uint32_t fused_partials = std::max(rf ? rf->n_partials : 0, ops::AttentionO::row_blocks(rows, qgs));
    if (rf && ops::AttentionO::router_refusal(*w, qgs, *rf->weights->input, rf->ranked ? rf->k : 0, fused_partials))
      continue;
    if (rf && fused_partials > rf->n_partials) rf->partials = reserve_private(uint64_t(fused_partials) * 4);  // one token
    if (rf) rf->fused_partials = fused_partials;
    const uint32_t m_rows = rf ? uint32_t(rf->weights->input->rows()) : 0;
    attention_o_[i] = {j, uint32_t(head_counter_words_), rf != nullptr};
    head_counter_words_ += ops::AttentionO::counter_words(rows, qgs, m_rows);
    attention_o_skips_.insert(j);
    partial_bytes = std::max<uint64_t>(partial_bytes, 4 * ops::AttentionO::partial_floats(rows, qgs, m_rows));
  }
  if (partial_bytes) attention_o_partials_ = reserve_private(partial_bytes);
}

bool Executor::short_context(const graph::Batch& batch) const {
  if (attention_o_.empty()) return false;
  for (int32_t pos : batch.positions)
    if (pos < 0 || uint32_t(pos) >= ops::AttentionO::kMaxKeys) return false;
  return true;
}

void Executor::plan_rope_kv_epilogues() {
  rope_kv_epilogues_.clear();
  folded_rope_kv_.clear();
  head_counter_words_ = 1;
  const auto& ops = graph_.ops();
  const uint64_t n_tokens = uint64_t(graph_.shape().n_tokens);
  for (const auto& [first, f] : rope_kv_) {
    const auto& q = std::get<graph::Rope>(ops[f.rope_q].params);
    const auto& w = std::get<graph::KvWrite>(ops[f.kv_write].params);
    // Adjacent pairs without norms: each subgroup's row pair; else per head (the last
    // workgroup of a head's rows finishes it).
    const bool per_head = f.q_norm || f.k_norm || q.params.mode != graph::RopeMode::kNorm;
    if (!kv_.layer(w.kv_layer).f16 || (per_head && q.heads.head_dim > int32_t(ops::OutputRopeKv::kMaxHeadDim)))
      continue;
    const graph::BufferId bufs[3] = {q.buf, w.k, w.v};
    const graph::HeadLayout heads[3] = {q.heads, w.k_heads, w.v_heads};
    size_t producers[3];
    bool ok = true;
    for (int b = 0; b < 3 && ok; ++b) {  // a staged matvec writing its heads, read by nothing before
      const graph::Buffer& buf = graph_.buffer(bufs[b]);
      // Packed heads, or (q, per head) heads at a stride from the row start, other rows between.
      const graph::HeadLayout& hl = heads[b];
      const bool strided = b == 0 && per_head && hl.offset == 0 && hl.head_stride >= hl.head_dim &&
                           hl.head_stride % 2 == 0 && buf.cols == hl.n_heads * hl.head_stride;
      const size_t i = buf.first_op >= 0 ? size_t(buf.first_op) : ops.size();
      const auto* m = i < first ? std::get_if<graph::Matmul>(&ops[i].params) : nullptr;
      const WeightBuffer* wb = m ? weights_.matrix(m->w) : nullptr;
      auto k = wb ? kernels_.matvec(wb->type(), false) : Result<const ops::Matvec*>(error("no matrix"));
      const auto mat = materialized_norms_.find(i);
      ok = m && m->out == bufs[b] && !m->up && !m->bias && on_matvec_path(*m) && k.ok() &&
           (*k)->uses_staged(wb->cols()) && hl.head_dim % 2 == 0 && wb->rows() == buf.cols &&
           (strided || (hl == graph::HeadLayout::packed(hl.n_heads, hl.head_dim) && buf.cols == hl.span())) &&
           !residual_folds_.count(i) && !conv_folds_.count(i) && !gated_norms_.count(m->in.index) &&
           (mat == materialized_norms_.end() || !mat->second.out.valid());
      if (ok)
        for (const WeightChunk& c : wb->chunks()) ok = ok && c.rows % 2 == 0;
      ok = ok && (!per_head || b == 2 || wb->chunks().size() == 1);
      for (size_t j = i + 1; j < first && ok; ++j) ok = !references(ops[j], bufs[b]);
      producers[b] = i;
    }
    if (!ok) continue;
    // q and k run concurrently: their head counters do not overlap.
    const uint64_t q_words = n_tokens * uint64_t(q.heads.n_heads), k_words = n_tokens * uint64_t(w.k_heads.n_heads);
    rope_kv_epilogues_[producers[0]] = {&q.params, q.heads.head_dim, -1, false, per_head, f.q_norm,
                                        q.heads.head_stride, 0};
    rope_kv_epilogues_[producers[1]] = {&q.params, w.k_heads.head_dim, w.kv_layer, false, per_head, f.k_norm,
                                        w.k_heads.head_dim, uint32_t(q_words)};
    rope_kv_epilogues_[producers[2]] = {nullptr, w.v_heads.head_dim, w.kv_layer, true, false, nullptr};
    if (per_head) head_counter_words_ = std::max(head_counter_words_, q_words + k_words);
    folded_rope_kv_.insert(first);
  }
}

void Executor::plan_shared_experts() {
  const auto& ops = graph_.ops();
  auto writer = [&](graph::BufferId id) -> size_t {  // the first op referencing id: its producer
    for (size_t i = 0; i < ops.size(); ++i)
      if (references(ops[i], id)) return i;
    return ops.size();
  };
  for (size_t i6 = 0; i6 < ops.size(); ++i6) {
    const auto* s = std::get_if<graph::SharedExpertGate>(&ops[i6].params);
    if (!s) continue;
    const size_t i3 = writer(s->out), i5 = writer(s->shared);
    if (i3 >= i6 || i5 >= i6 || i5 <= i3) continue;
    const auto* down = std::get_if<graph::MoeMatmul>(&ops[i3].params);
    const auto* sd = std::get_if<graph::Matmul>(&ops[i5].params);
    if (!down || down->up || down->out != s->out || graph_.buffer(down->ids).rows > kMoeMatvecMaxTokens) continue;
    if (!sd || sd->up || sd->bias || sd->out != s->shared || !on_matvec_path(*sd)) continue;
    const size_t i4 = writer(sd->in);
    const auto* gu = i4 < ops.size() ? std::get_if<graph::Matmul>(&ops[i4].params) : nullptr;
    if (!gu || i4 <= i3 || i4 >= i5 || gu->out != sd->in || !gu->up || gu->bias || !fusable_matvec(*gu) ||
        materialized_norms_.count(i4))
      continue;
    const WeightBuffer* we = weights_.matrix(down->w);
    const WeightBuffer* ws = weights_.matrix(sd->w);
    const int64_t n_expert = down->w->ne[2];
    if (ws->type() != we->type() || n_expert <= 0 || ws->rows() * n_expert != we->rows() || ws->cols() != we->cols() ||
        ws->chunks().size() != 1)
      continue;
    // Nothing from the down projection up to the gate/up's place touches its input or x.
    bool clean = graph_.buffer(sd->in).last_op == int32_t(i5) && graph_.buffer(s->shared).last_op == int32_t(i6) &&
                 graph_.buffer(s->x).last_op >= int32_t(i6) && graph_.buffer(gu->in).last_op >= int32_t(i4);
    for (size_t i = i3; i < i4 && clean; ++i) clean = !references(ops[i], gu->in) && !references(ops[i], s->x);
    if (!clean) continue;
    make_private(sd->in);
    shared_downs_[i3] = {i4, i5, i6};
    skipped_ops_.insert(i4);
    skipped_ops_.insert(i5);
    skipped_ops_.insert(i6);
  }
}

void Executor::plan_early_gates() {
  early_gates_.clear();
  const auto& ops = graph_.ops();
  for (auto& [di, sd] : shared_downs_) {
    const auto& down = std::get<graph::MoeMatmul>(ops[di].params);
    const size_t gi = size_t(std::max(graph_.buffer(down.in).first_op, 0));
    const auto* gu = std::get_if<graph::MoeMatmul>(&ops[gi].params);
    if (!gu || !gu->up || gu->out != down.in || gi >= di) continue;
    // The gate reads x as the gate/up normalises it: a folded router's gate/up the stream.
    const auto& gate = std::get<graph::SharedExpertGate>(ops[sd.gate].params);
    const auto rf = folded_gate_ups_.find(gi);
    const graph::BufferId x = rf != folded_gate_ups_.end() ? router_folds_.at(rf->second).normed : gu->in;
    if (gate.x != x || gate.gate->n_elements() != graph_.buffer(x).cols) continue;
    sd.early_gate = true;
    sd.gate_values = reserve_private(uint64_t(graph_.buffer(down.ids).rows) * 4);
    early_gates_[gi] = di;
  }
}

void Executor::plan_routing() {
  const auto& ops = graph_.ops();
  for (size_t i = 0; i + 1 < ops.size(); ++i) {
    const auto* r = std::get_if<graph::MoeRoute>(&ops[i].params);
    const auto* m = std::get_if<graph::MoeMatmul>(&ops[i + 1].params);
    if (!r || !m || !m->up || m->ids != r->ids || r->gating != graph::MoeGating::kSoftmax) continue;
    const graph::Buffer& ids = graph_.buffer(r->ids);
    const graph::Buffer& logits = graph_.buffer(r->logits);
    if (ids.rows > kMoeMatvecMaxTokens || r->k <= 0 || r->k > 64 || logits.cols > 1024 || m->in == r->logits ||
        logits.last_op != int32_t(i))
      continue;
    int writers = 0;  // the router matmul alone
    for (size_t j = 0; j < i; ++j)
      if (references(ops[j], r->logits)) writers += std::holds_alternative<graph::Matmul>(ops[j].params) ? 1 : 2;
    if (writers != 1) continue;
    routed_gate_ups_[i + 1] = i;
    make_private(r->logits);
    skipped_ops_.insert(i);
  }
}

void Executor::materialize_norm(size_t n) {
  const auto& ops = graph_.ops();
  const auto& norm = std::get<graph::RmsNorm>(ops[n].params);
  size_t first = n + 1;
  while (first < ops.size() && !references(ops[first], norm.out)) ++first;
  if (first == ops.size()) return;
  const auto* m = std::get_if<graph::Matmul>(&ops[first].params);
  if (!m || m->in != norm.out || m->out == norm.out || m->up || m->bias || !on_matvec_path(*m) ||
      weights_.matrix(m->w)->chunks().size() != 1 || graph_.buffer(norm.in).last_op < int32_t(first) ||
      graph_.buffer(norm.in).cols != graph_.buffer(norm.out).cols)
    return;
  for (size_t i = n + 1; i < first; ++i)
    if (references(ops[i], norm.in) || residual_folds_.count(i)) return;
  materialized_norms_[first] = {norm.in, norm.weight, norm.eps, norm.out};
  skipped_ops_.insert(n);
}

bool Executor::untouched(int32_t buffer) const {
  // The outputs of norms the matvecs do on the fly, of products added into the stream instead,
  // and of products whose conv runs in their epilogue.
  if (deferred_norms_.count(buffer) || gated_norms_.count(buffer)) return true;
  const auto& ops = graph_.ops();
  for (size_t n : folded_adds_)
    if (std::get<graph::RmsNorm>(ops[n].params).add.index == buffer) return true;
  for (const auto& [matmul, conv] : conv_folds_)
    if (std::get<graph::SsmConv1d>(ops[conv].params).in.index == buffer) return true;
  return false;
}

bool Executor::unclobbered(graph::BufferId b, int32_t from, int32_t to) const {
  const graph::Buffer& x = graph_.buffer(b);
  const auto& all = graph_.buffers();
  for (size_t i = 0; i < all.size(); ++i) {
    const graph::Buffer& o = all[i];
    if (int32_t(i) == b.index || o.first_op < 0 || o.first_op > to || o.last_op < from) continue;
    if (untouched(int32_t(i))) continue;
    if (o.offset_bytes < x.offset_bytes + x.size_bytes() && x.offset_bytes < o.offset_bytes + o.size_bytes())
      return false;
  }
  return true;
}

void Executor::plan_delta_net_fusions() {
  const auto& ops = graph_.ops();
  // The one op referencing `id` in [begin, end), or ops.size() when none or several do.
  auto only_user = [&](graph::BufferId id, size_t begin, size_t end) {
    size_t found = ops.size(), count = 0;
    for (size_t i = begin; i < end; ++i)
      if (references(ops[i], id)) {
        found = i;
        ++count;
      }
    return count == 1 ? found : ops.size();
  };
  auto plain_matvec = [&](size_t i) -> const graph::Matmul* {
    const auto* m = i < ops.size() ? std::get_if<graph::Matmul>(&ops[i].params) : nullptr;
    return m && !m->up && !m->bias && on_matvec_path(*m) ? m : nullptr;
  };
  for (size_t n = 0; n < ops.size(); ++n) {
    if (const auto* c = std::get_if<graph::SsmConv1d>(&ops[n].params)) {
      const graph::Buffer& in = graph_.buffer(c->in);
      const size_t i = only_user(c->in, 0, n);
      const graph::Matmul* m = plain_matvec(i);
      if (!kv_.state() || !m || residual_folds_.count(i) || m->out != c->in || m->in == c->in ||
          in.last_op != int32_t(n) || c->kernel->ne[0] < 1 || c->kernel->ne[0] > ops::OutputConv::kMaxTaps || c->kernel->ne[1] != in.cols ||
          !unclobbered(c->out, int32_t(i), int32_t(n)))
        continue;
      conv_folds_[i] = n;
      skipped_ops_.insert(n);
    } else if (const auto* gn = std::get_if<graph::GatedRmsNorm>(&ops[n].params)) {
      const graph::Buffer& out = graph_.buffer(gn->out);
      const size_t j = only_user(gn->out, n + 1, ops.size());
      const graph::Matmul* m = plain_matvec(j);
      if (!m || m->in != gn->out || m->out == gn->in || m->out == gn->gate || out.last_op != int32_t(j)) continue;
      bool quiet = true;  // the norm's inputs stay as they are until the matvec reads them
      for (size_t k = n + 1; k < j && quiet; ++k) quiet = !references(ops[k], gn->in) && !references(ops[k], gn->gate);
      if (!quiet || !unclobbered(gn->in, int32_t(n), int32_t(j)) || !unclobbered(gn->gate, int32_t(n), int32_t(j)))
        continue;
      const WeightBuffer* w = weights_.matrix(m->w);
      if (!w) continue;
      auto k = kernels_.matvec(w->type(), false);
      if (!k.ok() || !(*k)->supports_gated_norm(w->cols(), gn->group)) continue;
      gated_norms_[gn->out.index] = n;
      skipped_ops_.insert(n);
    }
  }
}

}  // namespace zinc::vulkan
