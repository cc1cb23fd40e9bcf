// The op IR: a small fixed set of ops over named activation buffers. Every backend implements
// each op exactly as stated here; architectures are expressed only by which ops a builder emits.
//
// Buffers are 2-D, row-major: [rows, cols] of float32 (or int32 where stated); "rows" is the
// token axis unless stated. A HeadLayout picks heads out of a row: head h occupies elements
// [offset + h * head_stride, + head_dim) of each row. Weights follow GGUF order: a matrix with
// ne = [cols, rows] maps a vector of `cols` to one of `rows` (y = W x).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <variant>

#include "graph/weight.h"

namespace zinc::graph {

struct BufferId {
  int32_t index = -1;
  bool valid() const { return index >= 0; }
  bool operator==(const BufferId&) const = default;
};

struct HeadLayout {
  int32_t n_heads = 0;
  int32_t head_dim = 0;
  int32_t head_stride = 0;  // elements between consecutive heads in a row
  int32_t offset = 0;       // element offset of head 0
  // Heads packed back to back from the start of the row.
  static HeadLayout packed(int32_t n_heads, int32_t head_dim) { return {n_heads, head_dim, head_dim, 0}; }
  int32_t span() const { return n_heads == 0 ? 0 : offset + (n_heads - 1) * head_stride + head_dim; }
  bool operator==(const HeadLayout&) const = default;
};

// out[t] = dequantized row tokens[t] of `table` ([n_embd, n_vocab]), times `scale`.
struct Embed {
  BufferId out;
  const Weight* table = nullptr;
  float scale = 1.f;
  template <class F> void buffers(F&& f) const { f(out); }
};

// With `add`: in[t] += add[t] first (the residual stream is updated in place). Then
// out[t] = in[t] / sqrt(mean(in[t]^2) + eps) * weight, over the whole row (sum in double).
// `out` may equal `in`; `weight` may be null (no scaling).
struct RmsNorm {
  BufferId in, add, out;
  const Weight* weight = nullptr;
  float eps = 1e-6f;
  template <class F> void buffers(F&& f) const { f(in); f(add); f(out); }
};

// In place, per head of `heads`: x = x / sqrt(mean(x^2) + eps) * weight ([head_dim]).
struct QkNorm {
  BufferId buf;
  HeadLayout heads;
  const Weight* weight = nullptr;
  float eps = 1e-6f;
  template <class F> void buffers(F&& f) const { f(buf); }
};

// out[t] = W in[t] (+ bias). in [rows, W.cols], out [rows, W.rows]. With `up` set (a matrix of
// the same shape as W): out[t] = silu(W in[t]) * (up in[t]) -- the fused SwiGLU gate/up pair.
struct Matmul {
  BufferId in, out;
  const Weight* w = nullptr;
  const Weight* bias = nullptr;  // [W.rows], optional
  const Weight* up = nullptr;    // optional
  template <class F> void buffers(F&& f) const { f(in); f(out); }
};

enum class RopeMode : uint8_t {
  kNorm,    // pairs (2i, 2i+1)
  kNeox,    // pairs (i, i + n_rot/2)
  kImrope,  // NEOX pairing; pair i takes the t/h/w/e position by `sections` (text: t=h=w=pos, e=0)
};

struct RopeParams {
  RopeMode mode = RopeMode::kNorm;
  int32_t n_rot = 0;  // rotated dims per head (even, <= head_dim); the rest is copied
  float freq_base = 10000.f;
  float freq_scale = 1.f;   // linear scaling: theta *= freq_scale
  float ext_factor = 0.f;   // YaRN mix (0 = off)
  float attn_factor = 1.f;  // multiplies cos and sin
  std::array<float, 2> corr_dims{0.f, 0.f};  // YaRN ramp range over pair index
  std::array<int32_t, 4> sections{0, 0, 0, 0};  // kImrope only
  const Weight* freq_factors = nullptr;  // [n_rot/2] divisors, optional
  bool operator==(const RopeParams&) const = default;  // the same angles (freq_factors by identity)
};

// In place on every head of `heads`, at each token's position p: pair i rotates by
// theta_i = p * freq_base^(-2i/n_rot) / freq_factors[i] (theta computed as ggml does, by
// repeated multiplication in float), with linear/YaRN scaling as in model-spec 3.0.3.
struct Rope {
  BufferId buf;
  HeadLayout heads;
  RopeParams params;
  template <class F> void buffers(F&& f) const { f(buf); }
};

// Stores each token's K and V heads in the cache of `kv_layer` at (seq, position).
struct KvWrite {
  BufferId k, v;
  HeadLayout k_heads, v_heads;
  int32_t kv_layer = 0;
  template <class F> void buffers(F&& f) const { f(k); f(v); }
};

// Causal GQA attention over the cache of `kv_layer`: token t of sequence s at position p
// attends to positions 0..p of s (its own K/V must already be written). Query head h uses KV
// head h / (n_q_heads / n_kv_heads). Softmax(scale * q.k) in float32. out [rows, n_q_heads *
// head_dim_v], heads concatenated. With `gate` set: out_h *= sigmoid(gate_h) element-wise.
struct Attention {
  BufferId q;
  HeadLayout q_heads;
  BufferId gate;  // optional, usually the same buffer as q
  HeadLayout gate_heads;
  BufferId out;
  int32_t kv_layer = 0;
  float scale = 1.f;
  template <class F> void buffers(F&& f) const { f(q); f(gate); f(out); }
};

// out = a + b, element-wise over equal shapes; out may be a or b.
struct Add {
  BufferId a, b, out;
  template <class F> void buffers(F&& f) const { f(a); f(b); f(out); }
};

enum class MoeGating : uint8_t { kSoftmax };

// Router: p = softmax(logits[t]) over n_expert; the k largest p (ties: lower id first) give
// ids[t] (int32 [rows, k]) and weights[t] = p (renormalised to sum 1 when `normalize`, dividing
// by max(sum, 6.103515625e-5)).
struct MoeRoute {
  BufferId logits, ids, weights;
  int32_t k = 0;
  bool normalize = true;
  MoeGating gating = MoeGating::kSoftmax;
  template <class F> void buffers(F&& f) const { f(logits); f(ids); f(weights); }
};

// Expert-indexed matmul over stacked experts (W.ne = [cols, rows, n_expert]), k = ids.cols.
// * `up` set (gate/up pair): in [T, cols] -> out [T * k, rows]; row t*k + j =
//   silu(W[e] in[t]) * (up[e] in[t]) with e = ids[t][j].
// * else (down projection): in [T * k, cols] -> out [T, rows], out[t] = sum_j weights[t][j] *
//   W[ids[t][j]] in[t*k + j].
struct MoeMatmul {
  BufferId in, ids, weights, out;
  const Weight* w = nullptr;
  const Weight* up = nullptr;
  template <class F> void buffers(F&& f) const { f(in); f(ids); f(weights); f(out); }
};

// out[t] += sigmoid(gate . x[t]) * shared[t]; gate is one row of x's width.
struct SharedExpertGate {
  BufferId x, shared, out;
  const Weight* gate = nullptr;
  template <class F> void buffers(F&& f) const { f(x); f(shared); f(out); }
};

// Causal depthwise conv + SiLU with per-sequence state (the previous kernel-1 inputs of the
// sequence, kept in recurrent slot `recurrent_layer`): for channel c, out[t][c] =
// silu(sum_i kernel[c][i] * window_i[c]) over window = [state..., in[t]]. kernel ne = [K, channels].
struct SsmConv1d {
  BufferId in, out;
  const Weight* kernel = nullptr;
  int32_t recurrent_layer = 0;
  template <class F> void buffers(F&& f) const { f(in); f(out); }
};

// How value head h finds its query/key head.
enum class KeyHeadMap : uint8_t {
  kTiled,    // h mod n_k_heads (value heads stored tiled)
  kGrouped,  // h / (n_v_heads / n_k_heads) (value heads grouped by key head)
};

// Gated delta rule (model-spec 3.8 steps 4-7) with per-sequence state in `recurrent_layer`.
// qkv [T, 2*n_k*d_k + n_v*d_v] (q heads, k heads, v heads), beta/alpha [T, n_v] (logits);
// out [T, n_v * d_v]. q,k are L2-normalised (eps), q scaled by 1/sqrt(d_k); beta = sigmoid;
// decay = exp(a[h] * softplus(alpha + dt_bias[h])). State per head: d_v x d_k, row = value dim.
struct GatedDeltaNet {
  BufferId qkv, beta, alpha, out;
  const Weight* a = nullptr;        // [n_v], already -exp(A_log)
  const Weight* dt_bias = nullptr;  // [n_v]
  int32_t n_k_heads = 0, d_k = 0, n_v_heads = 0, d_v = 0;
  KeyHeadMap key_map = KeyHeadMap::kTiled;
  float eps = 1e-6f;
  int32_t recurrent_layer = 0;
  template <class F> void buffers(F&& f) const { f(qkv); f(beta); f(alpha); f(out); }
};

// Per group of `group` elements: out = rmsnorm(in; weight [group], eps) * silu(gate).
struct GatedRmsNorm {
  BufferId in, gate, out;
  const Weight* weight = nullptr;
  int32_t group = 0;
  float eps = 1e-6f;
  template <class F> void buffers(F&& f) const { f(in); f(gate); f(out); }
};

// out[i] = in[output_rows[i]] (output-row selection before the head).
struct GatherRows {
  BufferId in, out;
  template <class F> void buffers(F&& f) const { f(in); f(out); }
};

// out[r] (int32 [rows, 1]) = index of the largest value of in[r] (lowest index on ties).
struct Argmax {
  BufferId in, out;
  template <class F> void buffers(F&& f) const { f(in); f(out); }
};

using OpParams = std::variant<Embed, RmsNorm, QkNorm, Matmul, Rope, KvWrite, Attention, Add, MoeRoute, MoeMatmul,
                              SharedExpertGate, SsmConv1d, GatedDeltaNet, GatedRmsNorm, GatherRows, Argmax>;

struct Op {
  std::string name;  // "blk.3.attn_q": where it comes from, for messages and dumps
  OpParams params;
};

const char* op_kind_name(const OpParams& p);  // "rms_norm"

}  // namespace zinc::graph
