// A graph: a flat, topologically ordered op list over named buffers, built once for one batch
// shape and reused for every step of that shape. finish() checks every op's shapes and plans
// buffer memory (lifetimes, reuse) into one arena, so running it allocates nothing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/batch.h"
#include "graph/ops.h"
#include "graph/state.h"

namespace zinc::graph {

enum class DType : uint8_t { kF32, kI32 };

struct Buffer {
  std::string name;
  DType dtype = DType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  // Planned by finish(): byte offset in the arena and the op range [first_op, last_op] using it.
  size_t offset_bytes = 0;
  int32_t first_op = -1;
  int32_t last_op = -1;
  bool is_input = false;  // filled by the caller before a run: live from the first op

  size_t size_bytes() const { return size_t(rows * cols) * 4; }
  int64_t n_elements() const { return rows * cols; }
};

class Graph {
 public:
  const BatchShape& shape() const { return shape_; }
  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<Buffer>& buffers() const { return buffers_; }
  const Buffer& buffer(BufferId id) const { return buffers_[size_t(id.index)]; }
  BufferId find_buffer(std::string_view name) const;  // invalid id when absent
  BufferId output() const { return output_; }         // logits [n_outputs, n_vocab] (hidden: [n_outputs, n_embd])
  const StateLayout& state() const { return state_; }
  size_t arena_bytes() const { return arena_bytes_; }  // planned size of all buffers
  size_t unplanned_bytes() const;                      // sum of buffer sizes without reuse

 private:
  friend class GraphBuilder;
  BatchShape shape_;
  std::vector<Op> ops_;
  std::vector<Buffer> buffers_;
  BufferId output_;
  StateLayout state_;
  size_t arena_bytes_ = 0;
};

class GraphBuilder {
 public:
  GraphBuilder(BatchShape shape, StateLayout state);

  int64_t n_tokens() const { return graph_.shape_.n_tokens; }
  int64_t n_outputs() const { return graph_.shape_.n_outputs; }
  bool hidden_output() const { return graph_.shape_.hidden; }
  const StateLayout& state() const { return graph_.state_; }

  // A new buffer of [rows, cols]; rows < 0 means n_tokens. Names should be unique.
  BufferId buffer(std::string name, int64_t cols, int64_t rows = -1, DType dtype = DType::kF32);
  const Buffer& info(BufferId id) const { return graph_.buffer(id); }
  // A buffer the caller fills before each run (its memory is not shared with earlier ops).
  BufferId input(std::string name, int64_t cols, int64_t rows = -1);

  // Appends an op (validated immediately: a bad shape is a bug in the builder).
  void add(std::string name, OpParams params);

  // Marks `logits` as the output, plans memory and returns the graph.
  Graph finish(BufferId logits);

 private:
  Graph graph_;
};

// Arena planning used by finish(): assigns offsets so buffers whose op ranges overlap never share
// bytes. Exposed for tests. Every offset is a multiple of kBufferAlignment.
constexpr size_t kBufferAlignment = 64;
size_t plan_buffers(std::vector<Buffer>& buffers);

}  // namespace zinc::graph
