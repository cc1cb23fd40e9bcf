// Decode matrix-vector products with dequantization fused: y = W x for a few tokens (batched
// decode; tokens run one after another in one dispatch, the rows re-read from the cache),
// optionally with two matrices sharing x and a SwiGLU output (silu(W_gate x) * (W_up x)), and
// optionally adding a residual. The pipeline is made at creation; record() allocates nothing
// and adds no barrier (the caller orders dependent work with Commands::barrier()).
#pragma once

#include <memory>
#include <vector>

#include "vulkan/ops/kv_write.h"
#include "vulkan/ops/op_util.h"
#include "vulkan/ops/recurrent_state.h"
#include "vulkan/weights.h"

namespace zinc::vulkan::ops {

struct MatvecOptions {
  bool swiglu = false;      // record_swiglu() instead of record()
  // Quantize x to int8 per 32 elements and use integer dot products, where the device has them
  // and the type is linear (all but F16/BF16/F32, IQ4_NL, IQ4_XS, MXFP4). Relative error of
  // the result about 1e-3 instead of 1e-6.
  bool int8 = true;
  bool subgroup = true;     // use subgroup arithmetic where the device has it
  // On the int8 path with subgroups: x quantized once per workgroup into shared memory and one
  // subgroup per pair of rows (shaders/matvec_staged.comp), where cols allow.
  bool staged = true;
  uint32_t group_size = 0;  // threads per workgroup (power of two); 0: default (staged 256, else 128)
  uint32_t rows = 0;        // rows per workgroup; 0: default (for the staged kernel, per shape)
  uint32_t k_slices = 0;    // staged kernel with `rows` set: subgroups per row step; 0: 1
  uint32_t steps = 0;       // staged kernel: groups per lane and row loaded ahead (1..4); 0: 2
  // Staged kernel (Q4_K and Q6_K): time its phases into this buffer (shaders/phase_clock.glsl,
  // kPhaseClockBytes a workgroup), for bench/vulkan_phase_bench.cc. Needs DeviceCaps::shader_clock.
  const Buffer* phase_clock = nullptr;
  // Staged kernel (Q4_K and Q6_K): x arrives as prequantize_x's records instead of floats, and
  // each workgroup copies them into shared memory as they are (no norm, no quantization). A
  // measured candidate, not used by the executor; x's stride a multiple of 32, no gated norm,
  // epilogues, written norm or k_slices.
  bool prequantized_x = false;
  // Staged kernel: the variant that can write the next norm's inputs (MatvecFusion::norm_out),
  // or (Q8_0) the one that can rank each token's rows (MatvecFusion::topk).
  bool norm_out = false;
  bool topk = false;
};
inline constexpr uint64_t kPhaseClockBytes = 16 * 16;

// RMS normalisation of x on the fly: x is used as x * weight / sqrt(mean(x^2) + eps), the mean
// over the cols of the matrix; weight holds cols floats.
struct InputNorm {
  BufferRange weight;
  float eps = 1e-6f;
  const Activations* out = nullptr;  // also write the normalised x here (x's stride); not with SwiGLU
};

// Gated RMS normalisation of x on the fly (graph::GatedRmsNorm feeding the matvec): per group of
// `group` columns, x * weight[c % group] * silu(gate) / sqrt(mean over the group of x^2 + eps).
// group a multiple of 32 dividing cols; staged kernel only (Matvec::supports_gated_norm).
struct GatedInputNorm {
  Activations gate;    // n_tokens rows of cols floats
  BufferRange weight;  // group floats
  uint32_t group = 0;
  float eps = 1e-6f;
};

// Causal depthwise conv + SiLU of the output (graph::SsmConv1d consuming the matvec): y[t][r] =
// silu(conv of channel r over its state and the product), and slot seq_ids[t]'s state of channel
// r rolls (tokens in order). Rows = channels; not with a residual or a SwiGLU pair.
struct OutputConv {
  BufferRange kernel;  // rows x taps floats
  StateSlots slots;
  uint32_t state_offset = 0;  // floats into a slot: this layer's (taps - 1) x rows conv state
  uint32_t taps = 0;          // 1 to kMaxTaps
  static constexpr uint32_t kMaxTaps = 8;
};

// RoPE of adjacent pairs (graph::RopeMode::kNorm) on the output, and the output stored into a
// layer's f16 KV pool (graph::KvWrite): the output rows are packed heads of head_dim, and rows
// (2i, 2i + 1) of a head are rotated by token t's angle of pair i for i < n_pairs (n_pairs 0: no
// rotation), with the cos/sin table of ops::Rope at word table_offset of the step buffer. With
// `pool`, the (rotated) row pairs are stored as f16 words into pool row (page * 16 + slot) of
// the token's (seq, position) (StepData); pool rows hold the output's row count of elements.
// Staged kernel only (uses_staged), no residual or pair; rows and chunk starts even.
// per_head: each head is finished by one workgroup, the last of those computing its rows (one
// chunk, head_dim <= kMaxHeadDim), so that the head is first normalised (graph::QkNorm:
// norm_weight of head_dim floats) and its pairs may be (i, i + n_pairs) (NEOX, IMROPE: adjacent
// false). Heads start every head_stride rows (0: head_dim; rows past a head's head_dim are
// written unchanged; only packed heads are stored); the workgroups meet in `counters`: n_tokens x
// (rows / head_stride) words from word counter_word of the range, zero and left zero, used by no
// concurrent dispatch.
struct OutputRopeKv {
  const StepData* step = nullptr;
  uint32_t head_dim = 0, n_pairs = 0, table_offset = 0;
  const Buffer* pool = nullptr;
  bool per_head = false;
  bool adjacent = true;
  const BufferRange* norm_weight = nullptr;
  float norm_eps = 1e-6f;
  uint32_t head_stride = 0;
  BufferRange counters;
  uint32_t counter_word = 0;
  static constexpr uint32_t kMaxHeadDim = 256;  // shaders/matvec_rope_kv.glsl
};

// The next RMSNorm's inputs, computed from the finished rows of y (a folded router's gate/up
// reads them: vulkan/router_fold.h): y times `weight` into `weighted` (y's stride), and per
// token the sums of squares of each workgroup's rows into `partials` (norm_partials(w) floats a
// token). Staged kernel, one chunk; not with a pair, conv or RoPE / KV epilogue.
struct NormOut {
  BufferRange weight;  // rows floats
  Activations weighted;
  BufferRange partials;
};

// The k largest rows of each token (a folded router's logits), ranked by the last workgroup to
// finish the token: their indices, largest first (ties: the lower index), into `ids` (k ints a
// token). The workgroups meet in `counters` (n_tokens words from counter_word, zero and left
// zero, used by no concurrent dispatch). A Matvec made with MatvecOptions::topk, one chunk, rows
// at most kMaxRows.
struct TopK {
  BufferRange ids;
  uint32_t k = 0;
  BufferRange counters;
  uint32_t counter_word = 0;
  static constexpr uint32_t kMaxRows = 512;  // shaders/matvec_topk.glsl: kRankRows
};

// What a matvec fuses around the product; at most one of norm and gated, one of conv, rope_kv,
// norm_out and topk.
struct MatvecFusion {
  const Activations* residual = nullptr;  // added to y (may be y's range)
  const InputNorm* norm = nullptr;
  const GatedInputNorm* gated = nullptr;
  const OutputConv* conv = nullptr;
  const OutputRopeKv* rope_kv = nullptr;
  const NormOut* norm_out = nullptr;
  const TopK* topk = nullptr;
};

class Matvec {
 public:
  static Result<std::unique_ptr<Matvec>> create(const Device& device, TensorType type, const MatvecOptions& options);
  ~Matvec();

  // y[t][r] = sum_k W[r][k] x[t][k] (+ residual[t][r]) for t < n_tokens, r < w.rows().
  // residual may be the same range as y; x must not overlap y. With norm, x is normalised first.
  Status record(Commands& cmd, const WeightBuffer& w, const Activations& x, const Activations& y, uint32_t n_tokens,
                const Activations* residual = nullptr, const InputNorm* norm = nullptr) const;
  // record() with any of the fusions.
  Status record_fused(Commands& cmd, const WeightBuffer& w, const Activations& x, const Activations& y,
                      uint32_t n_tokens, const MatvecFusion& fusion) const;
  // y[t][r] = silu(gate x)[t][r] * (up x)[t][r] (+ residual); gate and up of one shape and type.
  Status record_swiglu(Commands& cmd, const WeightBuffer& gate, const WeightBuffer& up, const Activations& x,
                       const Activations& y, uint32_t n_tokens, const Activations* residual = nullptr,
                       const InputNorm* norm = nullptr) const;

  TensorType type() const { return type_; }
  // What a prequantized_x matvec reads for x: per token and 32-group of x (times norm_weight
  // where given), 16 words: the int8 codes (element 4j+i in byte i of word j), the scale
  // (amax / 127), the float sums of elements 0-15 and 16-31 and the group's sum of x^2 (before
  // the weight), then the code sums of the two halves and two zeros. x: n_tokens rows at
  // `stride` floats (a multiple of 32); cols a multiple of 32.
  static std::vector<uint32_t> prequantize_x(const float* x, uint32_t n_tokens, uint32_t stride, uint32_t cols,
                                             const float* norm_weight);
  static constexpr uint32_t kPrequantWordsPerGroup = 16;
  bool uses_int8() const { return int8_; }
  bool uses_staged(int64_t cols) const;  // the staged kernel for matrices of `cols` columns
  bool supports_gated_norm(int64_t cols, int64_t group) const;  // GatedInputNorm for this shape
  // NormOut's partial sums a token for `w` (its workgroups); 0 where NormOut is not supported
  // (a Matvec made without MatvecOptions::norm_out, or no staged kernel for w).
  uint32_t norm_partials(const WeightBuffer& w) const;

 private:
  Matvec() = default;
  Status record_pair(Commands& cmd, const WeightBuffer& w0, const WeightBuffer* w1, const Activations& x,
                     const Activations& y, uint32_t n_tokens, const MatvecFusion& fusion) const;

  TensorType type_ = TensorType::F32;
  MatvecOptions options_;
  bool int8_ = false;
  uint32_t rows_per_group_ = 1;
  std::unique_ptr<Pipeline> pipeline_;
  // Staged kernels by the most groups of 32 columns they hold (ascending): the smallest that
  // fits a matrix is used, since shared memory is reserved for the most.
  struct Staged {
    uint32_t max_groups = 0;
    uint32_t threads = 256;  // per workgroup
    std::unique_ptr<Pipeline> pipeline;
  };
  std::vector<Staged> staged_;
  uint32_t subgroup_size_ = 32;
  struct StagedShape {
    uint32_t rows_per_group = 1, k_slices = 1;
  };
  StagedShape staged_shape(const Staged& staged, uint32_t rows) const;
  const Staged* staged_for(int64_t cols) const;
};

}  // namespace zinc::vulkan::ops
