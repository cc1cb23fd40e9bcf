// The vector operations of kernels_impl.h for AVX2 + FMA + F16C: a chunk is two ymm registers
// (lanes 0-7, 8-15); 4-byte dot products are vpmaddubsw + vpmaddwd. Only kernels_avx2.cc,
// compiled with the matching flags, includes this file.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "cpu/kernels/kernel_table.h"

namespace zinc::cpu::kernels::avx2 {

struct Simd {
  static constexpr Isa kIsa = Isa::kAvx2;
  static constexpr int kTileRows = 2, kTileTokens = 2;
  static constexpr int kFloatTileRows = 2, kFloatTileTokens = 2;

  struct U8 {
    __m256i lo, hi;
  };
  struct I32 {
    __m256i lo, hi;
  };
  struct F32 {
    __m256 lo, hi;
  };

  static U8 load_u8(const uint8_t* p) {
    return {_mm256_loadu_si256((const __m256i*)p), _mm256_loadu_si256((const __m256i*)(p + 32))};
  }
  static void store_u8(uint8_t* p, const U8& v) {
    _mm256_storeu_si256((__m256i*)p, v.lo);
    _mm256_storeu_si256((__m256i*)(p + 32), v.hi);
  }
  static I32 zero_i32() { return {_mm256_setzero_si256(), _mm256_setzero_si256()}; }
  // u8 x s8 with w <= 128: a pair of products stays inside vpmaddubsw's int16 saturation.
  static __m256i dot4(__m256i w, __m256i a) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1));
  }
  static I32 dot_chunk(const I32& acc, const U8& w, const int8_t* a) {
    const __m256i a0 = _mm256_loadu_si256((const __m256i*)a), a1 = _mm256_loadu_si256((const __m256i*)(a + 32));
    return {_mm256_add_epi32(acc.lo, dot4(w.lo, a0)), _mm256_add_epi32(acc.hi, dot4(w.hi, a1))};
  }
  // Any u8: the top bit's products (128 * (a0 + a1) per pair) are summed separately.
  static __m256i dot4_wide(__m256i w, __m256i a) {
    const __m256i top = _mm256_set1_epi8(char(0x80));
    return _mm256_add_epi32(dot4(_mm256_andnot_si256(top, w), a), dot4(_mm256_and_si256(top, w), a));
  }
  static I32 dot_chunk_wide(const I32& acc, const U8& w, const int8_t* a) {
    const __m256i a0 = _mm256_loadu_si256((const __m256i*)a), a1 = _mm256_loadu_si256((const __m256i*)(a + 32));
    return {_mm256_add_epi32(acc.lo, dot4_wide(w.lo, a0)), _mm256_add_epi32(acc.hi, dot4_wide(w.hi, a1))};
  }

  static F32 zero_f32() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static F32 load_f32(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static void store_f32(float* p, const F32& v) {
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
  }
  static F32 cvt(const I32& a) { return {_mm256_cvtepi32_ps(a.lo), _mm256_cvtepi32_ps(a.hi)}; }
  static F32 mul(const F32& a, const F32& b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
  static F32 add(const F32& a, const F32& b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
  static F32 fma(const F32& a, const F32& b, const F32& c) {
    return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
  }
  static float hsum(const F32& a) {
    const __m256 h = _mm256_add_ps(a.lo, a.hi);
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
  }

  static F32 load_f16(const uint16_t* p) {
    return {_mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p)),
            _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(p + 8)))};
  }
  static __m256 bf16x8(const uint16_t* p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
  static F32 load_bf16(const uint16_t* p) { return {bf16x8(p), bf16x8(p + 8)}; }
  static float fp16(uint16_t h) { return _cvtsh_ss(h); }
  static float bf16(uint16_t h) {
    const uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }

  // Element order -> canonical chunks. Per 4 consecutive lanes (4 ymm of element order, two
  // lanes each): interleave the two lanes of each ymm by dword, then transpose 4 x 4 qwords.
  static void transpose_lanes(const __m256i (&y)[4], __m256i (&out)[4]) {
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256i a = _mm256_permutevar8x32_epi32(y[0], order), b = _mm256_permutevar8x32_epi32(y[1], order);
    const __m256i c = _mm256_permutevar8x32_epi32(y[2], order), d = _mm256_permutevar8x32_epi32(y[3], order);
    const __m256i ab_lo = _mm256_unpacklo_epi64(a, b), ab_hi = _mm256_unpackhi_epi64(a, b);
    const __m256i cd_lo = _mm256_unpacklo_epi64(c, d), cd_hi = _mm256_unpackhi_epi64(c, d);
    out[0] = _mm256_permute2x128_si256(ab_lo, cd_lo, 0x20);
    out[1] = _mm256_permute2x128_si256(ab_hi, cd_hi, 0x20);
    out[2] = _mm256_permute2x128_si256(ab_lo, cd_lo, 0x31);
    out[3] = _mm256_permute2x128_si256(ab_hi, cd_hi, 0x31);
  }
  static void permute_natural(const uint8_t* nat, U8 (&out)[4]) {
    __m256i lo[4], hi[4];
    const __m256i ylo[4] = {_mm256_loadu_si256((const __m256i*)nat), _mm256_loadu_si256((const __m256i*)(nat + 32)),
                            _mm256_loadu_si256((const __m256i*)(nat + 64)),
                            _mm256_loadu_si256((const __m256i*)(nat + 96))};
    const __m256i yhi[4] = {
        _mm256_loadu_si256((const __m256i*)(nat + 128)), _mm256_loadu_si256((const __m256i*)(nat + 160)),
        _mm256_loadu_si256((const __m256i*)(nat + 192)), _mm256_loadu_si256((const __m256i*)(nat + 224))};
    transpose_lanes(ylo, lo);
    transpose_lanes(yhi, hi);
    ZINC_UNROLL
    for (int j = 0; j < 4; ++j) out[j] = {lo[j], hi[j]};
  }
};

}  // namespace zinc::cpu::kernels::avx2
