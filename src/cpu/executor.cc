#include "cpu/executor.h"

#include <cstdlib>
#include <variant>

#include "core/check.h"
#include "cpu/ops/ops.h"

namespace zinc::cpu {

namespace {
uint8_t* aligned_alloc_bytes(size_t n) {
  if (n == 0) return nullptr;
  void* p = std::aligned_alloc(graph::kBufferAlignment, (n + graph::kBufferAlignment - 1) / graph::kBufferAlignment *
                                                            graph::kBufferAlignment);
  ZINC_CHECK(p != nullptr);
  return static_cast<uint8_t*>(p);
}
}  // namespace

Executor::Executor(graph::Graph graph, ThreadPool& pool) : graph_(std::move(graph)), pool_(pool) {
  arena_ = aligned_alloc_bytes(graph_.arena_bytes());
  for (const auto& op : graph_.ops())
    scratch_bytes_ = std::max(scratch_bytes_, std::visit([&](const auto& p) { return ops::scratch_bytes(p, graph_); }, op.params));
  scratch_ = aligned_alloc_bytes(scratch_bytes_);
  const auto& all = graph_.ops();
  matmul_ops_.assign(all.size(), nullptr);
  for (size_t i = 0; i < all.size(); ++i) matmul_ops_[i] = std::get_if<graph::Matmul>(&all[i].params);
  matmul_run_.assign(all.size(), 1);
  constexpr size_t kMaxRun = 8;
  for (size_t i = 0; i < all.size();) {
    size_t n = 1;
    if (matmul_ops_[i])
      while (i + n < all.size() && n < kMaxRun && matmul_ops_[i + n] &&
             ops::can_share_input(*matmul_ops_[i], *matmul_ops_[i + n]))
        ++n;
    matmul_run_[i] = uint8_t(n);
    for (size_t j = 1; j < n; ++j) matmul_run_[i + j] = 0;
    i += n;
  }
}

Executor::~Executor() {
  std::free(arena_);
  std::free(scratch_);
}

void Executor::run(const graph::Batch& batch, kv::Cache& cache) {
  ZINC_CHECK(batch.shape() == graph_.shape());
  ZINC_CHECK(batch.positions.size() == batch.tokens.size() && batch.seq_ids.size() == batch.tokens.size());
  const OpContext ctx{graph_, arena_, batch, cache, pool_, {scratch_, scratch_bytes_}, matmul_input_};
  const auto& all = graph_.ops();
  for (size_t i = 0; i < all.size(); i += matmul_run_[i]) {
    if (matmul_run_[i] > 1) {
      ops::run_group({&matmul_ops_[i], matmul_run_[i]}, ctx);
    } else {
      std::visit([&](const auto& p) { ops::run(p, ctx); }, all[i].params);
    }
  }
}

std::span<const float> Executor::buffer(graph::BufferId id) const {
  const graph::Buffer& b = graph_.buffer(id);
  return {reinterpret_cast<const float*>(arena_ + b.offset_bytes), size_t(b.n_elements())};
}

std::span<float> Executor::mutable_buffer(graph::BufferId id) {
  const graph::Buffer& b = graph_.buffer(id);
  return {reinterpret_cast<float*>(arena_ + b.offset_bytes), size_t(b.n_elements())};
}

}  // namespace zinc::cpu
