// The matmul kernels of one instruction set, behind a table of plain function pointers.
//
// Quantized weights and 8-bit activations meet in one canonical layout, whatever the weight type.
// A row is cut into groups of 256 elements (kGroupElems). Inside a group, element e = 16*i + 4*j + b
// (lane i < 16, chunk j < 4, byte b < 4) is stored at byte 64*j + 4*i + b, so a 4-byte dot product
// over chunk j gives one partial sum per lane, and the 4 chunks add up to the lane's 16 elements.
// Every scale of every supported format covers whole lanes (16 or 32 elements), so one integer dot
// product per (row, token, group) is followed by one float multiply-add per lane.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor_type.h"
#include "cpu/kernels/isa.h"

// Fully unrolls a loop with a small constant trip count, so that arrays of vectors stay in
// registers (kernel sources only).
#define ZINC_UNROLL _Pragma("GCC unroll 16")
// Forces inlining of the small vector helpers: an out-of-line call passes vectors through memory.
#define ZINC_INLINE inline __attribute__((always_inline))

namespace zinc::cpu::kernels {

constexpr int kGroupElems = 256;
constexpr int kLanes = 16;
// Byte position of element e (< 256) of a group in the canonical layout.
constexpr int canonical_pos(int e) { return 64 * ((e & 15) >> 2) + 4 * (e >> 4) + (e & 3); }

// One token's activations for one group, quantized per 32 elements like Q8_0 (q in [-127, 127]):
// x[e] ~= d[lane(e)] * q[pos(e)]; s[lane] = d[lane] * (sum of the lane's 16 q). Lanes 2k and 2k+1
// share the scale of elements [32k, 32k+32). A zero-padded tail has d = s = q = 0.
struct alignas(64) ActGroup {
  int8_t q[kGroupElems];
  float d[kLanes];
  float s[kLanes];
};

// One weight row's group, decoded: w[e] = d[lane(e)] * q[pos(e)] + m[lane(e)] with q unsigned
// (formats with signed values are stored with an offset that m removes, e.g. Q8_0: q + 128, m = -128 d).
struct alignas(64) WeightGroup {
  uint8_t q[kGroupElems];
  float d[kLanes];
  float m[kLanes];
};

// Rows of a stored weight matrix: row r at data + r * row_stride_bytes, `cols` elements each.
struct WeightRows {
  TensorType type = TensorType::F32;
  const uint8_t* data = nullptr;
  size_t row_stride_bytes = 0;
  int64_t cols = 0;
};

// Selects a weight type at compile time (per-ISA specialised decoders overload on it).
template <TensorType T>
struct TypeTag {};

constexpr int kMaxGemvTokens = 4;  // the fused matrix-vector kernel handles up to this many tokens

using QuantizeRowFn = void (*)(const float* x, int64_t cols, ActGroup* out);
// Decodes groups [g0, g0 + n_groups) of rows [r0, r0 + n_rows) into
// panel[(r - r0) * n_groups + (g - g0)].
using UnpackFn = void (*)(const WeightRows& w, int64_t r0, int n_rows, int64_t g0, int64_t n_groups,
                          WeightGroup* panel);
// For t < n_tok and r < n_rows: y[t][r0 + r] (+)= sum over the groups of panel row r . act[t][0..n_groups).
// act[t] points at the token's first group of the range; y[t] at the token's output row.
using GemmPanelFn = void (*)(const WeightGroup* panel, int n_rows, int64_t n_groups, const ActGroup* const* act,
                             int n_tok, float* const* y, int64_t r0, bool accumulate);
// Fused decode for n_tok <= kMaxGemvTokens: y[t][r] = W[r] . act[t] for r in [r0, r1).
using GemvFn = void (*)(const WeightRows& w, int64_t r0, int64_t r1, const ActGroup* const* act, int n_tok,
                        float* const* y);
// Float weights (F32, F16, BF16) with float activations: y[t][r] = W[r] . x[t] for r in [r0, r1).
using GemmFloatFn = void (*)(const WeightRows& w, int64_t r0, int64_t r1, const float* const* x, int n_tok,
                             float* const* y);

// Attention over f16 rows (row j at base + j * stride_bytes, `dim` halves each):
// scores: out[j] = scale * (q . K[j]); axpy: acc[i] += sum_j w[j] * V[j][i].
using F16DotRowsFn = void (*)(const float* q, const uint8_t* k, size_t k_stride_bytes, int n_rows, int dim,
                              float scale, float* out);
// Softmax weights of one page: s[j] = e^(s[j] - m) for j < n <= 16 (every s[j] <= m); returns
// their sum. A full page (n = 16) goes through a vector exp within 3e-7 relative of exp().
using ExpShiftSumFn = float (*)(float* s, int n, float m);
using F16AxpyRowsFn = void (*)(const float* w, const uint8_t* v, size_t v_stride_bytes, int n_rows, int dim,
                               float* acc);

struct KernelTable {
  Isa isa = Isa::kScalar;
  QuantizeRowFn quantize_row = nullptr;
  // Indexed by TensorType id; nullptr where the type has no kernel.
  UnpackFn unpack[kMaxTensorTypeId + 1] = {};
  GemvFn gemv[kMaxTensorTypeId + 1] = {};
  GemmFloatFn gemm_float[kMaxTensorTypeId + 1] = {};
  // [wide]: wide = some weight q exceed 128 (AVX2 then needs an exact, slower product).
  GemmPanelFn gemm_panel[2] = {};
  int panel_rows = 4;  // rows the panel kernel prefers per call
  F16DotRowsFn f16_dot_rows = nullptr;
  F16AxpyRowsFn f16_axpy_rows = nullptr;
  ExpShiftSumFn exp_shift_sum = nullptr;
};

// Weight types whose products are integer dot products with quantized activations.
bool is_quantized_kernel_type(TensorType t);
// Types whose decoded q may exceed 128 (see KernelTable::gemm_panel).
bool is_wide_type(TensorType t);
// Elements per storage block and bytes per group (kGroupElems elements) of a quantized type.
int64_t group_bytes(TensorType t);

// The table for `isa`, or nullptr when this build or this CPU lacks it.
// kernel_table(best_isa()) is never null.
const KernelTable* kernel_table(Isa isa);

// Per-ISA tables, defined in kernels_<isa>.cc; call only when cpu_supports(isa).
const KernelTable& scalar_kernel_table();
const KernelTable& avx2_kernel_table();
const KernelTable& avx512_kernel_table();

}  // namespace zinc::cpu::kernels
