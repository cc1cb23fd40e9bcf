// Decode-step fusions of the Executor, planned once per graph:
// - a Matmul on the matvec path (or a decode MoE down projection and the shared-expert gate)
//   whose output is only the residual added by the next RMSNorm adds into the residual stream
//   itself, and the norm skips its add;
// - an RMSNorm whose output feeds only matvecs is not dispatched: each matvec normalises its
//   input on the fly (ops::InputNorm);
// and for any batch: QkNorm(q), QkNorm(k) (where present), Rope(q), Rope(k), KvWrite is one
// dispatch (ops::KvWrite::record_rope).
#include <variant>
#include <vector>

#include "vulkan/executor.h"

namespace zinc::vulkan {
namespace {

bool references(const graph::Op& op, graph::BufferId id) {
  bool found = false;
  std::visit([&](const auto& p) { p.buffers([&](graph::BufferId b) { found = found || b == id; }); }, op.params);
  return found;
}

}  // namespace

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

void Executor::plan_fusions() {
  deferred_norms_.clear();
  residual_folds_.clear();
  folded_adds_.clear();
  skipped_ops_.clear();
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
    if (!only_matvecs || last == n || graph_.buffer(norm->in).last_op < int32_t(last)) continue;
    bool stable = true;  // nothing writes the stream while the deferred norm's consumers read it
    for (size_t i = n + 1; i <= last && stable; ++i) stable = !touches(i, norm->in);
    if (!stable) continue;
    deferred_norms_[norm->out.index] = {norm->in, norm->weight, norm->eps};
    skipped_ops_.insert(n);
  }
}

}  // namespace zinc::vulkan
