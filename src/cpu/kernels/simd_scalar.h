// The vector operations of kernels_impl.h in plain C++: the reference the SIMD builds must match.
// Compiled with the baseline flags only (kernels_scalar.cc), so it may use zinc's inline helpers.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/fp16.h"
#include "cpu/kernels/kernel_table.h"

namespace zinc::cpu::kernels::scalar {

struct Simd {
  static constexpr Isa kIsa = Isa::kScalar;
  static constexpr int kTileRows = 2, kTileTokens = 2;            // quantized panel tile
  static constexpr int kFloatTileRows = 2, kFloatTileTokens = 2;  // float-weight tile

  struct U8 {
    uint8_t v[64];
  };  // one 64-byte chunk of a group
  struct I32 {
    int32_t v[16];
  };  // one value per lane
  struct F32 {
    float v[16];
  };

  static U8 load_u8(const uint8_t* p) {
    U8 r;
    std::memcpy(r.v, p, 64);
    return r;
  }
  static void store_u8(uint8_t* p, const U8& v) { std::memcpy(p, v.v, 64); }
  static I32 zero_i32() { return I32{}; }
  // acc[i] += sum_b w[4i + b] * a[4i + b] (u8 x s8, exact).
  static I32 dot_chunk(I32 acc, const U8& w, const int8_t* a) {
    for (int i = 0; i < 16; ++i)
      for (int b = 0; b < 4; ++b) acc.v[i] += int32_t(w.v[4 * i + b]) * int32_t(a[4 * i + b]);
    return acc;
  }
  static I32 dot_chunk_wide(I32 acc, const U8& w, const int8_t* a) { return dot_chunk(acc, w, a); }

  static F32 zero_f32() { return F32{}; }
  static F32 splat(float s) {
    F32 r;
    for (int i = 0; i < 16; ++i) r.v[i] = s;
    return r;
  }
  static F32 exp_nonpositive(const F32& x) {
    F32 r;
    for (int i = 0; i < 16; ++i) r.v[i] = std::exp(x.v[i]);
    return r;
  }
  static F32 load_f32(const float* p) {
    F32 r;
    std::memcpy(r.v, p, 64);
    return r;
  }
  static void store_f32(float* p, const F32& v) { std::memcpy(p, v.v, 64); }
  static F32 cvt(const I32& a) {
    F32 r;
    for (int i = 0; i < 16; ++i) r.v[i] = float(a.v[i]);
    return r;
  }
  static F32 mul(const F32& a, const F32& b) {
    F32 r;
    for (int i = 0; i < 16; ++i) r.v[i] = a.v[i] * b.v[i];
    return r;
  }
  static F32 add(const F32& a, const F32& b) {
    F32 r;
    for (int i = 0; i < 16; ++i) r.v[i] = a.v[i] + b.v[i];
    return r;
  }
  static F32 fma(const F32& a, const F32& b, const F32& c) {  // a * b + c
    F32 r;
    for (int i = 0; i < 16; ++i) r.v[i] = a.v[i] * b.v[i] + c.v[i];
    return r;
  }
  static float hsum(const F32& a) {
    float s = 0.f;
    for (int i = 0; i < 16; ++i) s += a.v[i];
    return s;
  }

  // 16 weights of a float type as float32.
  static F32 load_f16(const uint16_t* p) {
    F32 r;
    for (int i = 0; i < 16; ++i) r.v[i] = fp16_to_f32(p[i]);
    return r;
  }
  static F32 load_bf16(const uint16_t* p) {
    F32 r;
    for (int i = 0; i < 16; ++i) r.v[i] = bf16_to_f32(p[i]);
    return r;
  }
  static float fp16(uint16_t h) { return fp16_to_f32(h); }
  static float bf16(uint16_t h) { return bf16_to_f32(h); }

  // 256 bytes in element order -> the 4 chunks of the canonical layout: bytes 4j..4j+3 of the
  // 16 elements of lane i go to chunk j, bytes 4i..4i+3.
  static void permute_natural(const uint8_t* nat, U8 (&out)[4]) {
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 4; ++j) std::memcpy(out[j].v + 4 * i, nat + 16 * i + 4 * j, 4);
  }
};

}  // namespace zinc::cpu::kernels::scalar
