// Attention inner loops over f16 K/V rows, written against S like kernels_impl.h (included there,
// internal linkage). Dimensions that are not a multiple of 16 finish with a scalar tail.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/kernels/kernel_table.h"

namespace zinc::cpu::kernels {
namespace {

template <class S>
void f16_dot_rows(const float* q, const uint8_t* k, size_t k_stride_bytes, int n_rows, int dim, float scale,
                  float* out) {
  const int vec_dim = dim / 16 * 16;
  int j = 0;
  // Two rows at a time: two independent accumulator chains per query load.
  for (; j + 2 <= n_rows; j += 2) {
    const auto* k0 = reinterpret_cast<const uint16_t*>(k + size_t(j) * k_stride_bytes);
    const auto* k1 = reinterpret_cast<const uint16_t*>(k + size_t(j + 1) * k_stride_bytes);
    typename S::F32 a0 = S::zero_f32(), a1 = S::zero_f32();
    for (int i = 0; i < vec_dim; i += 16) {
      const typename S::F32 qv = S::load_f32(q + i);
      a0 = S::fma(qv, S::load_f16(k0 + i), a0);
      a1 = S::fma(qv, S::load_f16(k1 + i), a1);
    }
    float s0 = S::hsum(a0), s1 = S::hsum(a1);
    for (int i = vec_dim; i < dim; ++i) {
      s0 += q[i] * S::fp16(k0[i]);
      s1 += q[i] * S::fp16(k1[i]);
    }
    out[j] = s0 * scale;
    out[j + 1] = s1 * scale;
  }
  for (; j < n_rows; ++j) {
    const auto* k0 = reinterpret_cast<const uint16_t*>(k + size_t(j) * k_stride_bytes);
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
  for (int i = 0; i < vec_dim; i += 16) {
    typename S::F32 a = S::load_f32(acc + i);
    for (int j = 0; j < n_rows; ++j) {
      const auto* vj = reinterpret_cast<const uint16_t*>(v + size_t(j) * v_stride_bytes);
      a = S::fma(S::load_f16(vj + i), S::splat(w[j]), a);
    }
    S::store_f32(acc + i, a);
  }
  for (int i = vec_dim; i < dim; ++i) {
    float a = acc[i];
    for (int j = 0; j < n_rows; ++j) a += w[j] * S::fp16(reinterpret_cast<const uint16_t*>(v + size_t(j) * v_stride_bytes)[i]);
    acc[i] = a;
  }
}

}  // namespace
}  // namespace zinc::cpu::kernels
