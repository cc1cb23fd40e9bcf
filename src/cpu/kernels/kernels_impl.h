// The matmul kernels, written once against a small vector type S (simd_<isa>.h: Simd) and
// compiled once per instruction set by kernels_<isa>.cc. Everything here has internal linkage,
// so the copies built with different compiler flags never meet at link time.
//
// Per (weight row, token, group): 4 chunk dot products (u8 weights x s8 activations) give one
// int32 per lane; acc += float(sum) * (w.d * a.d) + w.m * a.s (see kernel_table.h).
#pragma once

#include <cstdint>
#include <cstring>

#include "cpu/kernels/attention_kernels.h"
#include "cpu/kernels/decode_groups.h"
#include "cpu/kernels/kernel_table.h"

namespace zinc::cpu::kernels {
namespace {

struct BlockGeometry {
  int elems;  // elements per storage block
  int bytes;  // bytes per storage block
};

constexpr BlockGeometry block_geometry(TensorType t) {
  switch (t) {
    case TensorType::Q4_0: return {32, 18};
    case TensorType::Q4_1: return {32, 20};
    case TensorType::Q5_0: return {32, 22};
    case TensorType::Q5_1: return {32, 24};
    case TensorType::Q8_0: return {32, 34};
    case TensorType::IQ4_NL: return {32, 18};
    case TensorType::MXFP4: return {32, 17};
    case TensorType::Q2_K: return {256, 84};
    case TensorType::Q3_K: return {256, 110};
    case TensorType::Q4_K: return {256, 144};
    case TensorType::Q5_K: return {256, 176};
    case TensorType::Q6_K: return {256, 210};
    case TensorType::IQ4_XS: return {256, 136};
    default: return {0, 0};
  }
}
constexpr int group_size_bytes(TensorType t) {
  return block_geometry(t).bytes * (kGroupElems / block_geometry(t).elems);
}
constexpr bool wide_values(TensorType t) {
  return t == TensorType::Q8_0 || t == TensorType::IQ4_NL || t == TensorType::IQ4_XS;
}

// Round to nearest, ties to even, for |v| < 2^22 (the default FP mode, like cvtps2dq).
inline int32_t round_even(float v) {
  const float t = v + 12582912.f;  // 1.5 * 2^23
  int32_t i;
  std::memcpy(&i, &t, 4);
  return i - 0x4B400000;
}

// ---- Activations ----------------------------------------------------------------------------

// Reference quantization of one group (n <= 256 valid elements, the rest zero).
template <class S>
void quantize_group_generic(const float* x, int n, ActGroup& out) {
  alignas(64) uint8_t q[kGroupElems];
  for (int k = 0; k < 8; ++k) {
    float amax = 0.f;
    for (int l = 0; l < 32; ++l) {
      const int e = 32 * k + l;
      const float v = e < n ? x[e] : 0.f;
      const float a = v < 0 ? -v : v;
      amax = a > amax ? a : amax;
    }
    const float d = amax / 127.f, id = amax > 0.f ? 127.f / amax : 0.f;
    int sum[2] = {0, 0};
    for (int l = 0; l < 32; ++l) {
      const int e = 32 * k + l;
      const int v = e < n ? round_even(x[e] * id) : 0;
      q[e] = uint8_t(int8_t(v));
      sum[l >> 4] += v;
    }
    for (int h = 0; h < 2; ++h) {
      out.d[2 * k + h] = d;
      out.s[2 * k + h] = d * float(sum[h]);
    }
  }
  typename S::U8 chunks[4];
  S::permute_natural(q, chunks);
  for (int j = 0; j < 4; ++j) S::store_u8(reinterpret_cast<uint8_t*>(out.q) + 64 * j, chunks[j]);
}

template <class S>
void quantize_row(const float* x, int64_t cols, ActGroup* out) {
  const int64_t n_groups = (cols + kGroupElems - 1) / kGroupElems;
  for (int64_t g = 0; g < n_groups; ++g) {
    const int n = int(cols - g * kGroupElems < kGroupElems ? cols - g * kGroupElems : kGroupElems);
    if constexpr (requires(ActGroup & a) { S::quantize_group(x, a); }) {
      if (n == kGroupElems) {
        S::quantize_group(x + g * kGroupElems, out[g]);
        continue;
      }
    }
    quantize_group_generic<S>(x + g * kGroupElems, n, out[g]);
  }
}

// ---- Weight groups --------------------------------------------------------------------------

template <class S, TensorType T>
ZINC_INLINE void load_group(const uint8_t* src, typename S::U8 (&w)[4], typename S::F32& d, typename S::F32& m) {
  if constexpr (requires { S::unpack_group(TypeTag<T>{}, src, w, d, m); }) {
    S::unpack_group(TypeTag<T>{}, src, w, d, m);
  } else {
    Decoded dec;
    decode_group<S, T>(src, dec);
    S::permute_natural(dec.u, w);
    d = S::load_f32(dec.d);
    m = S::load_f32(dec.m);
  }
}

// Where group g of a row starts; the last group of a 32-element format may be partial, and is
// then copied into `tail` (zero blocks after it decode to zero weights).
template <TensorType T>
ZINC_INLINE const uint8_t* group_src(const uint8_t* row, int64_t cols, int64_t g, uint8_t* tail) {
  constexpr BlockGeometry bg = block_geometry(T);
  const int64_t left = cols - g * kGroupElems;
  if (left >= kGroupElems) return row + g * group_size_bytes(T);
  std::memset(tail, 0, group_size_bytes(T));
  std::memcpy(tail, row + g * group_size_bytes(T), size_t(left / bg.elems) * bg.bytes);
  return tail;
}

// acc += the group's products (scale term), acc_m += its m * s term (a separate chain helps
// latency when there are few accumulators; pass the same one twice otherwise).
template <class S, bool kWide>
ZINC_INLINE void dot_group(const typename S::U8 (&w)[4], const typename S::F32& d, const typename S::F32& m,
                           const ActGroup& a, typename S::F32& acc, typename S::F32& acc_m) {
  auto p = S::zero_i32();
  ZINC_UNROLL
  for (int j = 0; j < 4; ++j) {
    if constexpr (kWide) {
      p = S::dot_chunk_wide(p, w[j], a.q + 64 * j);
    } else {
      p = S::dot_chunk(p, w[j], a.q + 64 * j);
    }
  }
  acc = S::fma(S::cvt(p), S::mul(d, S::load_f32(a.d)), acc);
  acc_m = S::fma(m, S::load_f32(a.s), acc_m);
}

template <class S, TensorType T>
void unpack_panel(const WeightRows& w, int64_t r0, int n_rows, int64_t g0, int64_t n_groups, WeightGroup* panel) {
  alignas(64) uint8_t tail[group_size_bytes(T)];
  for (int r = 0; r < n_rows; ++r) {
    const uint8_t* row = w.data + size_t(r0 + r) * w.row_stride_bytes;
    for (int64_t g = 0; g < n_groups; ++g) {
      typename S::U8 q[4];
      typename S::F32 d, m;
      load_group<S, T>(group_src<T>(row, w.cols, g0 + g, tail), q, d, m);
      WeightGroup& out = panel[r * n_groups + g];
      ZINC_UNROLL
      for (int j = 0; j < 4; ++j) S::store_u8(out.q + 64 * j, q[j]);
      S::store_f32(out.d, d);
      S::store_f32(out.m, m);
    }
  }
}

// ---- Matrix-vector (decode): decode each group once, use it for every token ------------------

template <class S, TensorType T, int NT>
void gemv_n(const WeightRows& w, int64_t r0, int64_t r1, const ActGroup* const* act, float* const* y) {
  constexpr bool kWide = wide_values(T);
  const int64_t n_full = w.cols / kGroupElems;
  const bool has_tail = w.cols % kGroupElems != 0;
  alignas(64) uint8_t tail[group_size_bytes(T)];
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = w.data + size_t(r) * w.row_stride_bytes;
    typename S::F32 acc[NT], acc_m[NT];
    ZINC_UNROLL
    for (int t = 0; t < NT; ++t) acc[t] = acc_m[t] = S::zero_f32();
    typename S::U8 q[4];
    typename S::F32 d, m;
    for (int64_t g = 0; g < n_full; ++g) {
      load_group<S, T>(row + g * group_size_bytes(T), q, d, m);
      ZINC_UNROLL
      for (int t = 0; t < NT; ++t) dot_group<S, kWide>(q, d, m, act[t][g], acc[t], acc_m[t]);
    }
    if (has_tail) {
      load_group<S, T>(group_src<T>(row, w.cols, n_full, tail), q, d, m);
      for (int t = 0; t < NT; ++t) dot_group<S, kWide>(q, d, m, act[t][n_full], acc[t], acc_m[t]);
    }
    ZINC_UNROLL
    for (int t = 0; t < NT; ++t) y[t][r] = S::hsum(S::add(acc[t], acc_m[t]));
  }
}

template <class S, TensorType T>
void gemv(const WeightRows& w, int64_t r0, int64_t r1, const ActGroup* const* act, int n_tok, float* const* y) {
  static_assert(kMaxGemvTokens == 4);
  switch (n_tok) {
    case 1: return gemv_n<S, T, 1>(w, r0, r1, act, y);
    case 2: return gemv_n<S, T, 2>(w, r0, r1, act, y);
    case 3: return gemv_n<S, T, 3>(w, r0, r1, act, y);
    case 4: return gemv_n<S, T, 4>(w, r0, r1, act, y);
    default: return;
  }
}

// ---- Panel GEMM (prefill): R decoded rows x NT tokens per register tile --------------------

template <class S, int R, int NT, bool kWide>
void gemm_tile(const WeightGroup* panel, int64_t n_groups, const ActGroup* const* act, float* const* y, int64_t r0,
               bool accumulate) {
  typename S::F32 acc[R][NT];
  ZINC_UNROLL
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < NT; ++t) acc[r][t] = S::zero_f32();
  for (int64_t g = 0; g < n_groups; ++g) {
    ZINC_UNROLL
    for (int r = 0; r < R; ++r) {
      const WeightGroup& wg = panel[r * n_groups + g];
      typename S::U8 q[4];
      ZINC_UNROLL
      for (int j = 0; j < 4; ++j) q[j] = S::load_u8(wg.q + 64 * j);
      const typename S::F32 d = S::load_f32(wg.d), m = S::load_f32(wg.m);
      ZINC_UNROLL
      for (int t = 0; t < NT; ++t) dot_group<S, kWide>(q, d, m, act[t][g], acc[r][t], acc[r][t]);
    }
  }
  ZINC_UNROLL
  for (int t = 0; t < NT; ++t) {
    if constexpr (R == 4 && requires { S::hsum4(acc[0][t], acc[1][t], acc[2][t], acc[3][t]); }) {
      S::store4(y[t] + r0, S::hsum4(acc[0][t], acc[1][t], acc[2][t], acc[3][t]), accumulate);
    } else {
      ZINC_UNROLL
      for (int r = 0; r < R; ++r) {
        const float v = S::hsum(acc[r][t]);
        float& out = y[t][r0 + r];
        out = accumulate ? out + v : v;
      }
    }
  }
}

using TileFn = void (*)(const WeightGroup*, int64_t, const ActGroup* const*, float* const*, int64_t, bool);

template <class S, bool kWide, int R, int NT>
TileFn pick_tile_tokens(int nt) {
  if constexpr (NT == 1) {
    return &gemm_tile<S, R, 1, kWide>;
  } else {
    return nt == NT ? &gemm_tile<S, R, NT, kWide> : pick_tile_tokens<S, kWide, R, NT - 1>(nt);
  }
}
template <class S, bool kWide, int R>
TileFn pick_tile(int r, int nt) {
  if constexpr (R == 1) {
    return pick_tile_tokens<S, kWide, 1, S::kTileTokens>(nt);
  } else {
    return r == R ? pick_tile_tokens<S, kWide, R, S::kTileTokens>(nt) : pick_tile<S, kWide, R - 1>(r, nt);
  }
}

template <class S, bool kWide>
void gemm_panel(const WeightGroup* panel, int n_rows, int64_t n_groups, const ActGroup* const* act, int n_tok,
                float* const* y, int64_t r0, bool accumulate) {
  constexpr int R = S::kTileRows, NT = S::kTileTokens;
  for (int rt = 0; rt < n_rows; rt += R) {
    const int rr = n_rows - rt < R ? n_rows - rt : R;
    for (int tt = 0; tt < n_tok; tt += NT) {
      const int nt = n_tok - tt < NT ? n_tok - tt : NT;
      pick_tile<S, kWide, R>(rr, nt)(panel + rt * n_groups, n_groups, act + tt, y + tt, r0 + rt, accumulate);
    }
  }
}

// ---- Float weights --------------------------------------------------------------------------

template <class S, TensorType T>
ZINC_INLINE typename S::F32 load_weights16(const uint8_t* row, int64_t k) {
  if constexpr (T == TensorType::F32) {
    return S::load_f32(reinterpret_cast<const float*>(row) + k);
  } else if constexpr (T == TensorType::F16) {
    return S::load_f16(reinterpret_cast<const uint16_t*>(row) + k);
  } else {
    return S::load_bf16(reinterpret_cast<const uint16_t*>(row) + k);
  }
}
template <class S, TensorType T>
inline float load_weight1(const uint8_t* row, int64_t k) {
  if constexpr (T == TensorType::F32) {
    float v;
    std::memcpy(&v, row + 4 * k, 4);
    return v;
  } else if constexpr (T == TensorType::F16) {
    return S::fp16(rd16(row + 2 * k));
  } else {
    return S::bf16(rd16(row + 2 * k));
  }
}

template <class S, TensorType T, int R, int NT>
void float_tile(const WeightRows& w, int64_t r0, const float* const* x, float* const* y) {
  const int64_t k16 = w.cols & ~int64_t(15);
  const uint8_t* rows[R];
  ZINC_UNROLL
  for (int r = 0; r < R; ++r) rows[r] = w.data + size_t(r0 + r) * w.row_stride_bytes;
  typename S::F32 acc[R][NT];
  ZINC_UNROLL
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < NT; ++t) acc[r][t] = S::zero_f32();
  for (int64_t k = 0; k < k16; k += 16) {
    typename S::F32 wv[R];
    ZINC_UNROLL
    for (int r = 0; r < R; ++r) wv[r] = load_weights16<S, T>(rows[r], k);
    ZINC_UNROLL
    for (int t = 0; t < NT; ++t) {
      const typename S::F32 xv = S::load_f32(x[t] + k);
      ZINC_UNROLL
      for (int r = 0; r < R; ++r) acc[r][t] = S::fma(wv[r], xv, acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < NT; ++t) {
      float v = S::hsum(acc[r][t]);
      for (int64_t k = k16; k < w.cols; ++k) v += load_weight1<S, T>(rows[r], k) * x[t][k];
      y[t][r0 + r] = v;
    }
}

using FloatTileFn = void (*)(const WeightRows&, int64_t, const float* const*, float* const*);

template <class S, TensorType T, int R, int NT>
FloatTileFn pick_float_tokens(int nt) {
  if constexpr (NT == 1) {
    return &float_tile<S, T, R, 1>;
  } else {
    return nt == NT ? &float_tile<S, T, R, NT> : pick_float_tokens<S, T, R, NT - 1>(nt);
  }
}
template <class S, TensorType T, int R>
FloatTileFn pick_float(int r, int nt) {
  if constexpr (R == 1) {
    return pick_float_tokens<S, T, 1, S::kFloatTileTokens>(nt);
  } else {
    return r == R ? pick_float_tokens<S, T, R, S::kFloatTileTokens>(nt) : pick_float<S, T, R - 1>(r, nt);
  }
}

template <class S, TensorType T>
void gemm_float(const WeightRows& w, int64_t r0, int64_t r1, const float* const* x, int n_tok, float* const* y) {
  constexpr int R = S::kFloatTileRows, NT = S::kFloatTileTokens;
  for (int64_t r = r0; r < r1; r += R) {
    const int rr = int(r1 - r < R ? r1 - r : R);
    for (int t = 0; t < n_tok; t += NT) {
      const int nt = n_tok - t < NT ? n_tok - t : NT;
      pick_float<S, T, R>(rr, nt)(w, r, x + t, y + t);
    }
  }
}

// ---- The table ------------------------------------------------------------------------------

template <class S, TensorType T>
void add_quantized(KernelTable& table) {
  table.unpack[int(T)] = &unpack_panel<S, T>;
  table.gemv[int(T)] = &gemv<S, T>;
}

template <class S>
KernelTable make_table() {
  KernelTable t;
  t.isa = S::kIsa;
  t.quantize_row = &quantize_row<S>;
  add_quantized<S, TensorType::Q4_0>(t);
  add_quantized<S, TensorType::Q4_1>(t);
  add_quantized<S, TensorType::Q5_0>(t);
  add_quantized<S, TensorType::Q5_1>(t);
  add_quantized<S, TensorType::Q8_0>(t);
  add_quantized<S, TensorType::IQ4_NL>(t);
  add_quantized<S, TensorType::MXFP4>(t);
  add_quantized<S, TensorType::Q2_K>(t);
  add_quantized<S, TensorType::Q3_K>(t);
  add_quantized<S, TensorType::Q4_K>(t);
  add_quantized<S, TensorType::Q5_K>(t);
  add_quantized<S, TensorType::Q6_K>(t);
  add_quantized<S, TensorType::IQ4_XS>(t);
  t.gemm_float[int(TensorType::F32)] = &gemm_float<S, TensorType::F32>;
  t.gemm_float[int(TensorType::F16)] = &gemm_float<S, TensorType::F16>;
  t.gemm_float[int(TensorType::BF16)] = &gemm_float<S, TensorType::BF16>;
  t.gemm_panel[0] = &gemm_panel<S, false>;
  t.gemm_panel[1] = &gemm_panel<S, true>;
  t.panel_rows = S::kTileRows;
  t.f16_dot_rows = &f16_dot_rows<S>;
  t.f16_axpy_rows = &f16_axpy_rows<S>;
  t.exp_shift_sum = &exp_shift_sum<S>;
  return t;
}

}  // namespace
}  // namespace zinc::cpu::kernels
