#include "graph/graph.h"

#include <algorithm>
#include <numeric>

#include "core/check.h"
#include "graph/validate.h"

namespace zinc::graph {

BufferId Graph::find_buffer(std::string_view name) const {
  for (size_t i = 0; i < buffers_.size(); ++i)
    if (buffers_[i].name == name) return BufferId{int32_t(i)};
  return {};
}

size_t Graph::unplanned_bytes() const {
  size_t total = 0;
  for (const auto& b : buffers_) total += b.size_bytes();
  return total;
}

GraphBuilder::GraphBuilder(BatchShape shape, StateLayout state) {
  ZINC_CHECK(shape.n_tokens > 0 && shape.n_outputs > 0 && shape.n_outputs <= shape.n_tokens);
  graph_.shape_ = shape;
  graph_.state_ = std::move(state);
}

BufferId GraphBuilder::buffer(std::string name, int64_t cols, int64_t rows, DType dtype) {
  ZINC_CHECK(cols > 0);
  Buffer b;
  b.name = std::move(name);
  b.dtype = dtype;
  b.rows = rows < 0 ? n_tokens() : rows;
  b.cols = cols;
  ZINC_CHECK(b.rows > 0);
  graph_.buffers_.push_back(std::move(b));
  return BufferId{int32_t(graph_.buffers_.size() - 1)};
}

BufferId GraphBuilder::input(std::string name, int64_t cols, int64_t rows) {
  BufferId id = buffer(std::move(name), cols, rows);
  graph_.buffers_[size_t(id.index)].is_input = true;
  return id;
}

void GraphBuilder::add(std::string name, OpParams params) {
  Op op{std::move(name), std::move(params)};
  std::visit([&](const auto& p) {
    p.buffers([&](BufferId id) { ZINC_CHECK(id.index < int32_t(graph_.buffers_.size())); });
  }, op.params);
  validate_op(op, graph_.buffers_, graph_.shape_, graph_.state_);
  graph_.ops_.push_back(std::move(op));
}

Graph GraphBuilder::finish(BufferId logits) {
  ZINC_CHECK(logits.valid());
  graph_.output_ = logits;
  auto& bufs = graph_.buffers_;
  for (auto& b : bufs) b.first_op = b.last_op = -1;
  for (size_t i = 0; i < graph_.ops_.size(); ++i) {
    std::visit([&](const auto& p) {
      p.buffers([&](BufferId id) {
        if (!id.valid()) return;
        Buffer& b = bufs[size_t(id.index)];
        if (b.first_op < 0) b.first_op = int32_t(i);
        b.last_op = int32_t(i);
      });
    }, graph_.ops_[i].params);
  }
  for (auto& b : bufs)
    if (b.is_input && b.first_op >= 0) b.first_op = 0;
  // The output is read after the last op.
  Buffer& out = bufs[size_t(logits.index)];
  ZINC_CHECK(out.first_op >= 0);
  out.last_op = int32_t(graph_.ops_.size());
  graph_.arena_bytes_ = plan_buffers(bufs);
  return std::move(graph_);
}

size_t plan_buffers(std::vector<Buffer>& buffers) {
  // Greedy by size: each buffer takes the lowest aligned offset that does not overlap a placed
  // buffer whose op range intersects its own.
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers[a].size_bytes() > buffers[b].size_bytes(); });
  auto align = [](size_t n) { return (n + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; };
  std::vector<size_t> placed;
  std::vector<std::pair<size_t, size_t>> busy;  // [begin, end) byte ranges of live neighbours
  size_t arena = 0;
  for (size_t i : order) {
    Buffer& b = buffers[i];
    if (b.first_op < 0) {  // never used: no memory
      b.offset_bytes = 0;
      continue;
    }
    busy.clear();
    for (size_t j : placed) {
      const Buffer& o = buffers[j];
      if (o.first_op <= b.last_op && b.first_op <= o.last_op)
        busy.emplace_back(o.offset_bytes, o.offset_bytes + align(o.size_bytes()));
    }
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    const size_t need = align(b.size_bytes());
    for (const auto& [begin, end] : busy) {
      if (offset + need <= begin) break;
      offset = std::max(offset, end);
    }
    b.offset_bytes = offset;
    arena = std::max(arena, offset + need);
    placed.push_back(i);
  }
  return arena;
}

}  // namespace zinc::graph
