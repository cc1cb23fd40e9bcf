// One step's input: tokens with their positions and sequences. A batch may mix sequences; the
// tokens of one sequence appear in position order. Graphs are built per BatchShape.
#pragma once

#include <cstdint>
#include <span>

namespace zinc::graph {

struct BatchShape {
  int64_t n_tokens = 1;
  int64_t n_outputs = 1;  // rows of logits produced; n_outputs == n_tokens means every row
  bool hidden = false;    // the rows are the final-norm hidden states [n_embd] (embeddings), not logits
  bool operator==(const BatchShape&) const = default;
};

// Views, borrowed for the duration of one run.
struct Batch {
  std::span<const int32_t> tokens;       // [n_tokens]
  std::span<const int32_t> positions;    // [n_tokens], 0 = first token of its sequence
  std::span<const int32_t> seq_ids;      // [n_tokens], kv::Cache sequence ids
  std::span<const int32_t> output_rows;  // [n_outputs] token indices whose logits are wanted
  bool hidden = false;                   // BatchShape::hidden

  BatchShape shape() const { return {int64_t(tokens.size()), int64_t(output_rows.size()), hidden}; }
};

}  // namespace zinc::graph
