// Attention inner loops over f16 K/V rows, written against S like kernels_impl.h (included there,
// internal linkage). Dimensions that are not a multiple of 16 finish with a scalar tail.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "cpu/kernels/kernel_table.h"

namespace zinc::cpu::kernels {
namespace {

ZINC_INLINE const uint16_t* f16_row(const uint8_t* base, size_t stride_bytes, int j) {
  return reinterpret_cast<const uint16_t*>(base + size_t(j) * stride_bytes);
}

template <class S>
void f16_dot_rows(const float* q, const uint8_t* k, size_t k_stride_bytes, int n_rows, int dim, float scale,
                  float* out) {
  const int vec_dim = dim / 16 * 16;
  int j = 0;
  // Four rows at a time: four independent accumulator chains per query load, one 4-way reduction.
  for (; j + 4 <= n_rows; j += 4) {
    const uint16_t* kr[4];
    typename S::F32 a[4];
    ZINC_UNROLL
    for (int r = 0; r < 4; ++r) {
      kr[r] = f16_row(k, k_stride_bytes, j + r);
      a[r] = S::zero_f32();
    }
    for (int i = 0; i < vec_dim; i += 16) {
      const typename S::F32 qv = S::load_f32(q + i);
      ZINC_UNROLL
      for (int r = 0; r < 4; ++r) a[r] = S::fma(qv, S::load_f16(kr[r] + i), a[r]);
    }
    float sums[4];
    if constexpr (requires { S::hsum4(a[0], a[1], a[2], a[3]); }) {
      S::store4(sums, S::hsum4(a[0], a[1], a[2], a[3]), false);
    } else {
      ZINC_UNROLL
      for (int r = 0; r < 4; ++r) sums[r] = S::hsum(a[r]);
    }
    for (int r = 0; r < 4; ++r) {
      for (int i = vec_dim; i < dim; ++i) sums[r] += q[i] * S::fp16(kr[r][i]);
      out[j + r] = sums[r] * scale;
    }
  }
  for (; j < n_rows; ++j) {
    const uint16_t* k0 = f16_row(k, k_stride_bytes, j);
    typename S::F32 a0 = S::zero_f32();
    for (int i = 0; i < vec_dim; i += 16) a0 = S::fma(S::load_f32(q + i), S::load_f16(k0 + i), a0);
    float s0 = S::hsum(a0);
    for (int i = vec_dim; i < dim; ++i) s0 += q[i] * S::fp16(k0[i]);
    out[j] = s0 * scale;
  }
}

template <class S>
void f16_axpy_rows(const float* w, const uint8_t* v, size_t v_stride_bytes, int n_rows, int dim, float* acc) {
  const int vec_dim = dim / 16 * 16;
  int i = 0;
  // 64 columns at a time: four independent chains over the rows.
  for (; i + 64 <= vec_dim; i += 64) {
    typename S::F32 a[4];
    ZINC_UNROLL
    for (int c = 0; c < 4; ++c) a[c] = S::load_f32(acc + i + 16 * c);
    for (int j = 0; j < n_rows; ++j) {
      const uint16_t* vj = f16_row(v, v_stride_bytes, j) + i;
      const typename S::F32 wj = S::splat(w[j]);
      ZINC_UNROLL
      for (int c = 0; c < 4; ++c) a[c] = S::fma(S::load_f16(vj + 16 * c), wj, a[c]);
    }
    ZINC_UNROLL
    for (int c = 0; c < 4; ++c) S::store_f32(acc + i + 16 * c, a[c]);
  }
  for (; i < vec_dim; i += 16) {
    typename S::F32 a = S::load_f32(acc + i);
    for (int j = 0; j < n_rows; ++j) a = S::fma(S::load_f16(f16_row(v, v_stride_bytes, j) + i), S::splat(w[j]), a);
    S::store_f32(acc + i, a);
  }
  for (; i < dim; ++i) {
    float a = acc[i];
    for (int j = 0; j < n_rows; ++j) a += w[j] * S::fp16(f16_row(v, v_stride_bytes, j)[i]);
    acc[i] = a;
  }
}

template <class S>
float exp_shift_sum(float* s, int n, float m) {
  if (n == 16) {
    const typename S::F32 e = S::exp_nonpositive(S::add(S::load_f32(s), S::splat(-m)));
    S::store_f32(s, e);
    return S::hsum(e);
  }
  float sum = 0.f;
  for (int j = 0; j < n; ++j) sum += (s[j] = std::exp(s[j] - m));
  return sum;
}

}  // namespace
}  // namespace zinc::cpu::kernels
