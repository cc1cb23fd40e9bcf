// Expert-indexed decode matvecs over stacked experts: a WeightBuffer of n_expert * rows rows
// (ggml ne = [cols, rows, n_expert] uploaded as one matrix; expert e's rows start at e * rows;
// it must be one chunk), expert ids read from a device buffer (int32 [n_tokens, k], e.g.
// MoeRoute's). One dispatch per projection for all k experts of all tokens; the rows of a
// workgroup are re-read per token, so this is for decode (few tokens). record() allocates nothing
// and adds no barrier.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vulkan/ops/op_util.h"
#include "vulkan/weights.h"

namespace zinc::vulkan::ops {

struct MoeMatvecOptions {
  bool swiglu = false;      // record_swiglu() (gate/up pair) instead of record_down()
  bool int8 = true;         // as MatvecOptions::int8
  bool subgroup = true;
  uint32_t group_size = 0;  // threads per workgroup (power of two); 0: default
  uint32_t rows = 0;        // rows per thread set; 0: default
  // Cap on the threads per row (a power of two, at least `rows`): fewer lanes make more row sets
  // per workgroup, so fewer workgroups, each lane taking more of the row's groups; 0: a lane per
  // (expert, group) term up to the workgroup size.
  uint32_t max_lanes = 0;
};

// Routing done by the gate/up dispatch itself (as MoeRoute: softmax gating): the ids range
// passed with it is written, with the weights, for the down projection.
struct MoeRouting {
  Activations logits;  // n_tokens rows of n_expert floats
  BufferRange weights;
  bool normalize = true;
  // The ids hold each token's top k already (ranked by the logits' producer: ops::TopK), so only
  // the weights are computed (and the ids not written). Needs subgroups.
  bool ranked = false;
};

// x normalised by the gate/up dispatch (graph::RmsNorm feeding it), x arriving as h * weight
// from a producer that also stored partial sums of squares of h (ops::NormOut): x * n, n = 1 /
// sqrt(sum of token t's n_partials partials / cols + eps); with `out`, x * n is also written
// there; the routing logits are multiplied by n first (a router folded into the projection
// before it: vulkan/router_fold.h; shader flags bits 4 and 6 always together).
struct MoeInputNorm {
  BufferRange partials;  // n_partials floats a token
  uint32_t n_partials = 0;
  float eps = 1e-6f;
  const Activations* out = nullptr;
};

// The shared expert's down projection as one more term of the routed down projection:
// y[t] += sigmoid(gate_weight . gate_in[t]) * (w x[t]), w of the experts' type and shape; with
// gate_values, y[t] += gate_values[t] * (w x[t]) (a gate/up dispatch's MoeSharedGate).
struct MoeSharedExpert {
  const WeightBuffer* w = nullptr;
  Activations x;
  Activations gate_in;  // gate_cols floats per token
  BufferRange gate_weight;
  uint32_t gate_cols = 0;
  const BufferRange* gate_values = nullptr;
};

// The shared expert's gate, sigmoid(weight . x[t] n) (x as the gate/up dispatch reads it, n its
// norm factor, 1 without MoeInputNorm), written to values[t] by the gate/up dispatch.
struct MoeSharedGate {
  BufferRange weight;  // cols floats
  BufferRange values;  // a float a token
};

// About one wave of the kernel's 128-thread workgroups on the H200 (5 a multiprocessor).
inline constexpr uint32_t kMoeWaveWorkgroups = 640;

class MoeMatvec {
 public:
  static Result<std::unique_ptr<MoeMatvec>> create(const Device& device, TensorType type,
                                                   const MoeMatvecOptions& options);
  ~MoeMatvec();

  // y[s][r] = silu(gate[e] x[t])[r] * (up[e] x[t])[r] for slots s = t * k + j < n_tokens * k,
  // e = ids[s], r < rows = gate.rows() / n_expert.
  // With `routing`, e = the expert of rank j = s % k for token t (ids is then written).
  // With `norm` (and routing), x is normalised first.
  // With `shared_gate`, the shared expert's gate too.
  Status record_swiglu(Commands& cmd, const WeightBuffer& gate, const WeightBuffer& up, uint32_t n_expert,
                       const Activations& x, const BufferRange& ids, const Activations& y, uint32_t n_tokens,
                       uint32_t k, const MoeRouting* routing = nullptr, const MoeInputNorm* norm = nullptr,
                       const MoeSharedGate* shared_gate = nullptr) const;
  // y[t][r] (+)= sum_j weights[t * k + j] * (w[ids[t * k + j]] x[t * k + j])[r]; adds to y when
  // `accumulate`.
  Status record_down(Commands& cmd, const WeightBuffer& w, uint32_t n_expert, const Activations& x,
                     const BufferRange& ids, const BufferRange& weights, const Activations& y, uint32_t n_tokens,
                     uint32_t k, bool accumulate = false, const MoeSharedExpert* shared = nullptr) const;

  bool uses_int8() const { return int8_; }
  bool takes_ranked_ids() const { return subgroup_; }  // MoeRouting::ranked

 private:
  MoeMatvec() = default;
  Status record_any(Commands& cmd, const WeightBuffer& w0, const WeightBuffer* w1, uint32_t n_expert,
                    const Activations& x, const BufferRange& ids, const BufferRange* weights, const Activations& y,
                    uint32_t n_items, uint32_t k, bool accumulate, const MoeRouting* routing,
                    const MoeSharedExpert* shared, const MoeInputNorm* norm, const MoeSharedGate* shared_gate) const;

  TensorType type_ = TensorType::F32;
  MoeMatvecOptions options_;
  bool int8_ = false;
  bool subgroup_ = false;
  uint32_t group_size_ = 128;
  uint32_t rows_per_set_ = 1;
  // One pipeline per combination of flags a record meets, compiled with exactly those
  // (moe_matvec.comp's kFlagsUsed), so that the others' code is left out: on the H200 the
  // decode step pays for each kernel's code (docs/DECODE_LOG.md, "Session 20"). Made by the
  // first record that needs it; a MoeMatvec is recorded from one thread.
  const Device* device_ = nullptr;
  std::string shader_;
  std::vector<uint32_t> spec_;  // without kFlagsUsed
  mutable std::map<uint32_t, std::unique_ptr<Pipeline>> by_flags_;
  Result<const Pipeline*> pipeline_for(uint32_t flags) const;
};

}  // namespace zinc::vulkan::ops
