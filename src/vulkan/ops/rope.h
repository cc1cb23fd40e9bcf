// Rotary position embedding in place (graph::Rope) from a cos/sin table the host fills per step
// (rope_table(), the CPU's own angle computation, so every mode -- NORM, NEOX, IMROPE, YaRN,
// freq_factors -- matches it exactly). One workgroup per token; no barrier added.
#pragma once

#include <memory>
#include <span>

#include "graph/ops.h"
#include "vulkan/ops/op_util.h"

namespace zinc::vulkan::ops {

// Floats of the table for n_tokens tokens: n_tokens * n_rot / 2 (cos, sin) pairs.
inline size_t rope_table_floats(const graph::RopeParams& r, size_t n_tokens) { return n_tokens * size_t(r.n_rot); }
// Fills `table` with cos, sin of every pair at each position.
void rope_table(const graph::RopeParams& r, std::span<const int32_t> positions, float* table);

class Rope {
 public:
  static Result<std::unique_ptr<Rope>> create(const Device& device);
  ~Rope();
  // table: the buffer holding the table, table_offset its first float.
  Status record(Commands& cmd, const Activations& x, const graph::HeadLayout& heads, const graph::RopeParams& params,
                const BufferRange& table, uint32_t table_offset, uint32_t n_tokens) const;

 private:
  Rope() = default;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace zinc::vulkan::ops
