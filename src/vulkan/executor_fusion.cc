// Decode-step fusions of the Executor, planned once per graph:
// - a Matmul on the matvec path whose output is only the residual added by the next RMSNorm
//   adds into the residual stream itself (the matvec's residual epilogue), and the norm skips
//   its add;
// - an RMSNorm whose output feeds only matvecs is not dispatched: each matvec normalises its
//   input on the fly (ops::InputNorm).
#include <variant>

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

void Executor::plan_fusions() {
  deferred_norms_.clear();
  residual_folds_.clear();
  folded_adds_.clear();
  skipped_ops_.clear();
  const auto& ops = graph_.ops();
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
    // The producer of the added residual: the last op before the norm that references it.
    size_t p = n;
    while (p > 0 && !references(ops[p - 1], norm->add)) --p;
    if (p == 0) continue;
    const size_t producer = p - 1;
    const auto* m = std::get_if<graph::Matmul>(&ops[producer].params);
    if (!m || m->out != norm->add || m->in == norm->in || !fusable_matvec(*m)) continue;
    if (graph_.buffer(m->out).cols != x.cols || graph_.buffer(m->out).rows != x.rows) continue;
    if (x.first_op >= int32_t(producer)) continue;
    bool clean = true;
    for (size_t i = producer + 1; i < n && clean; ++i) clean = !references(ops[i], norm->in);
    for (size_t i = n + 1; i < ops.size() && clean; ++i) clean = !references(ops[i], norm->add);
    if (!clean) continue;
    residual_folds_[producer] = norm->in;
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
