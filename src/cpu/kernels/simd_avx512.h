// The vector operations of kernels_impl.h for AVX-512 (F/BW/VL/DQ + VNNI + VBMI): one chunk is a
// zmm register, the 4-byte dot products are vpdpbusd. Also a decoder straight into the canonical
// layout for every weight type (decode_groups.h is the reference they must match bit for bit).
// Only kernels_avx512.cc, compiled with the matching flags, includes this file.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "cpu/kernels/kernel_table.h"

namespace zinc::cpu::kernels::avx512 {

struct Simd {
  static constexpr Isa kIsa = Isa::kAvx512;
  static constexpr int kTileRows = 4, kTileTokens = 4;
  static constexpr int kFloatTileRows = 4, kFloatTileTokens = 4;

  using U8 = __m512i;
  using I32 = __m512i;
  using F32 = __m512;

  ZINC_INLINE static U8 load_u8(const uint8_t* p) { return _mm512_loadu_si512(p); }
  ZINC_INLINE static void store_u8(uint8_t* p, U8 v) { _mm512_storeu_si512(p, v); }
  ZINC_INLINE static I32 zero_i32() { return _mm512_setzero_si512(); }
  ZINC_INLINE static I32 dot_chunk(I32 acc, U8 w, const int8_t* a) {
    return _mm512_dpbusd_epi32(acc, w, _mm512_loadu_si512(a));
  }
  ZINC_INLINE static I32 dot_chunk_wide(I32 acc, U8 w, const int8_t* a) { return dot_chunk(acc, w, a); }

  ZINC_INLINE static F32 zero_f32() { return _mm512_setzero_ps(); }
  ZINC_INLINE static F32 splat(float s) { return _mm512_set1_ps(s); }
  // e^x for x <= 0 (attention's softmax), within 3e-7 relative of exp(x).
  ZINC_INLINE static F32 exp_nonpositive(F32 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-104.f));  // below: 0 either way
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.f / 720);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
    return _mm512_scalef_ps(p, n);
  }
  ZINC_INLINE static F32 load_f32(const float* p) { return _mm512_loadu_ps(p); }
  ZINC_INLINE static void store_f32(float* p, F32 v) { _mm512_storeu_ps(p, v); }
  ZINC_INLINE static F32 cvt(I32 a) { return _mm512_cvtepi32_ps(a); }
  ZINC_INLINE static F32 mul(F32 a, F32 b) { return _mm512_mul_ps(a, b); }
  ZINC_INLINE static F32 add(F32 a, F32 b) { return _mm512_add_ps(a, b); }
  ZINC_INLINE static F32 fma(F32 a, F32 b, F32 c) { return _mm512_fmadd_ps(a, b, c); }
  ZINC_INLINE static float hsum(F32 a) {
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
  }

  // The four horizontal sums of a, b, c, d.
  ZINC_INLINE static __m128 hsum4(F32 a, F32 b, F32 c, F32 d) {
    const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));  // a02 b02 a13 b13
    const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
    const __m512 abcd = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, 0x44), _mm512_shuffle_ps(ab, cd, 0xEE));
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(abcd), _mm512_extractf32x8_ps(abcd, 1));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  }
  ZINC_INLINE static void store4(float* p, __m128 v, bool accumulate) {
    _mm_storeu_ps(p, accumulate ? _mm_add_ps(_mm_loadu_ps(p), v) : v);
  }

  ZINC_INLINE static F32 load_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)p)); }
  ZINC_INLINE static F32 load_bf16(const uint16_t* p) {
    const __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  }
  ZINC_INLINE static float fp16(uint16_t h) { return _cvtsh_ss(h); }
  ZINC_INLINE static float bf16(uint16_t h) {
    const uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }

  // Element order (4 x 64 bytes) -> canonical chunks: a 16 x 4 transpose of dwords.
  ZINC_INLINE static void permute4(const __m512i (&n)[4], U8 (&out)[4]) {
    const __m512i idx_a = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29);
    const __m512i idx_b = _mm512_add_epi32(idx_a, _mm512_set1_epi32(2));
    const __m512i p01 = _mm512_permutex2var_epi32(n[0], idx_a, n[1]);  // chunks 0, 1 of lanes 0-7
    const __m512i q01 = _mm512_permutex2var_epi32(n[0], idx_b, n[1]);  // chunks 2, 3 of lanes 0-7
    const __m512i p23 = _mm512_permutex2var_epi32(n[2], idx_a, n[3]);  // ... of lanes 8-15
    const __m512i q23 = _mm512_permutex2var_epi32(n[2], idx_b, n[3]);
    out[0] = _mm512_shuffle_i64x2(p01, p23, 0x44);
    out[1] = _mm512_shuffle_i64x2(p01, p23, 0xEE);
    out[2] = _mm512_shuffle_i64x2(q01, q23, 0x44);
    out[3] = _mm512_shuffle_i64x2(q01, q23, 0xEE);
  }
  ZINC_INLINE static void permute_natural(const uint8_t* nat, U8 (&out)[4]) {
    const __m512i n[4] = {_mm512_loadu_si512(nat), _mm512_loadu_si512(nat + 64), _mm512_loadu_si512(nat + 128),
                          _mm512_loadu_si512(nat + 192)};
    permute4(n, out);
  }

  // One full group of activations (same numbers as quantize_group_generic).
  ZINC_INLINE static void quantize_group(const float* x, ActGroup& out) {
    alignas(64) float dl[16];
    __m512i n[4];
    ZINC_UNROLL
    for (int c = 0; c < 4; ++c) {
      __m128i packed[4];
      ZINC_UNROLL
      for (int h = 0; h < 2; ++h) {
        const int k = 2 * c + h;
        const __m512 a = _mm512_loadu_ps(x + 32 * k), b = _mm512_loadu_ps(x + 32 * k + 16);
        const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b)));
        const float d = amax / 127.f, id = amax > 0.f ? 127.f / amax : 0.f;
        const __m512 vid = _mm512_set1_ps(id);
        packed[2 * h] = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(a, vid)));
        packed[2 * h + 1] = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(b, vid)));
        dl[2 * k] = dl[2 * k + 1] = d;
      }
      __m512i v = _mm512_castsi128_si512(packed[0]);
      v = _mm512_inserti32x4(v, packed[1], 1);
      v = _mm512_inserti32x4(v, packed[2], 2);
      n[c] = _mm512_inserti32x4(v, packed[3], 3);
    }
    U8 q[4];
    permute4(n, q);
    __m512i sums = _mm512_setzero_si512();
    const __m512i ones = _mm512_set1_epi8(1);
    ZINC_UNROLL
    for (int j = 0; j < 4; ++j) {
      _mm512_storeu_si512(out.q + 64 * j, q[j]);
      sums = _mm512_dpbusd_epi32(sums, ones, q[j]);
    }
    const __m512 d = _mm512_load_ps(dl);
    _mm512_storeu_ps(out.d, d);
    _mm512_storeu_ps(out.s, _mm512_mul_ps(d, _mm512_cvtepi32_ps(sums)));
  }

  // ---- Decoders straight into the canonical layout ----

  ZINC_INLINE static uint16_t rd16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  // Lanes 2k and 2k+1 get the fp16 at src + k * stride (k < 8).
  template <int kStride>
  ZINC_INLINE static F32 block_scales(const uint8_t* src) {
    const __m128i h =
        _mm_setr_epi16(short(rd16(src)), short(rd16(src + kStride)), short(rd16(src + 2 * kStride)),
                       short(rd16(src + 3 * kStride)), short(rd16(src + 4 * kStride)), short(rd16(src + 5 * kStride)),
                       short(rd16(src + 6 * kStride)), short(rd16(src + 7 * kStride)));
    return pairs(_mm256_cvtph_ps(h));
  }
  ZINC_INLINE static F32 pairs(__m256 v8) {
    const __m512i idx = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    return _mm512_permutexvar_ps(idx, _mm512_castps256_ps512(v8));
  }

  // 8 blocks of split nibbles (16 bytes at src + k * kStride): lane 2k + h, chunk j = the nibbles
  // h of bytes 4j..4j+3 of block k.
  template <int kStride>
  ZINC_INLINE static void split_nibbles8(const uint8_t* src, U8 (&w)[4]) {
    const auto ld = [&](int k) { return _mm_loadu_si128((const __m128i*)(src + k * kStride)); };
    __m512i z0 = _mm512_inserti32x4(_mm512_castsi128_si512(ld(0)), ld(1), 1);
    z0 = _mm512_inserti32x4(z0, ld(2), 2);
    z0 = _mm512_inserti32x4(z0, ld(3), 3);
    __m512i z1 = _mm512_inserti32x4(_mm512_castsi128_si512(ld(4)), ld(5), 1);
    z1 = _mm512_inserti32x4(z1, ld(6), 2);
    z1 = _mm512_inserti32x4(z1, ld(7), 3);
    split_nibbles(z0, z1, w);
  }
  // The same for 8 blocks of 16 bytes already in two registers.
  ZINC_INLINE static void split_nibbles(__m512i z0, __m512i z1, U8 (&w)[4]) {
    const __m512i idx0 = _mm512_setr_epi32(0, 0, 4, 4, 8, 8, 12, 12, 16, 16, 20, 20, 24, 24, 28, 28);
    const __m512i shift = _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4);
    const __m512i mask = _mm512_set1_epi8(0x0F);
    ZINC_UNROLL
    for (int j = 0; j < 4; ++j) {
      const __m512i v = _mm512_permutex2var_epi32(z0, _mm512_add_epi32(idx0, _mm512_set1_epi32(j)), z1);
      w[j] = _mm512_and_si512(_mm512_srlv_epi32(v, shift), mask);
    }
  }
  // Adds bit 4 to the bytes of Q5_0/Q5_1: lane 2k + h takes bits 16h + 4j .. +3 of block k's qh.
  template <int kStride>
  ZINC_INLINE static void add_fifth_bits(const uint8_t* qh, U8 (&w)[4]) {
    uint32_t h[8];
    ZINC_UNROLL
    for (int k = 0; k < 8; ++k) std::memcpy(&h[k], qh + k * kStride, 4);
    const __m256i h8 = _mm256_loadu_si256((const __m256i*)h);
    const __m512i pairs_idx = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    const __m512i halves = _mm512_setr_epi32(0, 16, 0, 16, 0, 16, 0, 16, 0, 16, 0, 16, 0, 16, 0, 16);
    const __m512i bits = _mm512_srlv_epi32(_mm512_permutexvar_epi32(pairs_idx, _mm512_castsi256_si512(h8)), halves);
    // 4 bits x0..x3 -> bit 4 of bytes 0..3: x * 0x02040810 puts x_b at bit 8b + 4 (no carries).
    const __m512i spread = _mm512_set1_epi32(0x02040810), bit4 = _mm512_set1_epi8(0x10);
    ZINC_UNROLL
    for (int j = 0; j < 4; ++j) {
      const __m512i x = _mm512_and_si512(_mm512_srli_epi32(bits, 4 * j), _mm512_set1_epi32(15));
      w[j] = _mm512_or_si512(w[j], _mm512_and_si512(_mm512_mullo_epi32(x, spread), bit4));
    }
  }
  // Per-lane pairs of 8 ints times a float.
  ZINC_INLINE static F32 scaled_pairs(__m256i v8, float scale) {
    return pairs(_mm256_mul_ps(_mm256_cvtepi32_ps(v8), _mm256_set1_ps(scale)));
  }
  // Value tables (codebook + offset) for vpshufb: IQ4_NL/IQ4_XS + 128, MXFP4 + 12.
  static constexpr uint8_t kIQ4Table[16] = {1, 24, 45, 63, 79, 93, 106, 118, 129, 141, 153, 166, 181, 197, 217, 241};
  static constexpr uint8_t kMXFP4Table[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};
  ZINC_INLINE static void lookup16(U8 (&w)[4], const uint8_t (&table)[16]) {
    const __m512i t = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i*)table));
    ZINC_UNROLL
    for (int j = 0; j < 4; ++j) w[j] = _mm512_shuffle_epi8(t, w[j]);
  }

  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q4_0>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    split_nibbles8<18>(src + 2, w);
    d = block_scales<18>(src);
    m = _mm512_mul_ps(d, _mm512_set1_ps(-8.f));
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q4_1>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    split_nibbles8<20>(src + 4, w);
    d = block_scales<20>(src);
    m = block_scales<20>(src + 2);
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q5_0>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    split_nibbles8<22>(src + 6, w);
    add_fifth_bits<22>(src + 2, w);
    d = block_scales<22>(src);
    m = _mm512_mul_ps(d, _mm512_set1_ps(-16.f));
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q5_1>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    split_nibbles8<24>(src + 8, w);
    add_fifth_bits<24>(src + 4, w);
    d = block_scales<24>(src);
    m = block_scales<24>(src + 2);
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::IQ4_NL>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    split_nibbles8<18>(src + 2, w);
    lookup16(w, kIQ4Table);
    d = block_scales<18>(src);
    m = _mm512_mul_ps(d, _mm512_set1_ps(-128.f));
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::MXFP4>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    split_nibbles8<17>(src + 1, w);
    lookup16(w, kMXFP4Table);
    // 2^(e - 128) (spec §2.2): exponent field e - 1, or a denormal for e < 2.
    const __m256i e =
        _mm256_cvtepu8_epi32(_mm_setr_epi8(char(src[0]), char(src[17]), char(src[34]), char(src[51]), char(src[68]),
                                           char(src[85]), char(src[102]), char(src[119]), 0, 0, 0, 0, 0, 0, 0, 0));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i denormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
    d = pairs(_mm256_castsi256_ps(_mm256_blendv_epi8(normal, denormal, small)));
    m = _mm512_mul_ps(d, _mm512_set1_ps(-12.f));
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q8_0>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    __m512i n[4];
    ZINC_UNROLL
    for (int c = 0; c < 4; ++c) {
      const __m256i lo = _mm256_loadu_si256((const __m256i*)(src + 68 * c + 2));
      const __m256i hi = _mm256_loadu_si256((const __m256i*)(src + 68 * c + 36));
      n[c] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    }
    permute4(n, w);
    const __m512i bias = _mm512_set1_epi8(char(0x80));
    ZINC_UNROLL
    for (int j = 0; j < 4; ++j) w[j] = _mm512_xor_si512(w[j], bias);
    d = block_scales<34>(src);
    m = _mm512_mul_ps(d, _mm512_set1_ps(-128.f));
  }
  // Q4_K/Q5_K nibbles (qs: 128 bytes): lane i takes dword 8(i/4) + 4(i%2) + j, low nibbles for
  // i%4 < 2, high ones after.
  ZINC_INLINE static void k_nibbles(const uint8_t* qs, U8 (&w)[4]) {
    const __m512i x0 = _mm512_loadu_si512(qs), x1 = _mm512_loadu_si512(qs + 64);
    const __m512i idx0 = _mm512_setr_epi32(0, 4, 0, 4, 8, 12, 8, 12, 16, 20, 16, 20, 24, 28, 24, 28);
    const __m512i shift = _mm512_setr_epi32(0, 0, 4, 4, 0, 0, 4, 4, 0, 0, 4, 4, 0, 0, 4, 4);
    const __m512i mask = _mm512_set1_epi8(0x0F);
    ZINC_UNROLL
    for (int j = 0; j < 4; ++j) {
      const __m512i v = _mm512_permutex2var_epi32(x0, _mm512_add_epi32(idx0, _mm512_set1_epi32(j)), x1);
      w[j] = _mm512_and_si512(_mm512_srlv_epi32(v, shift), mask);
    }
  }
  // Q4_K/Q5_K d, dmin and 6-bit scales/mins (get_scale_min_k4) at src.
  ZINC_INLINE static void k_scales(const uint8_t* src, F32& d, F32& m) {
    const __m128i q = _mm_loadu_si128((const __m128i*)(src + 4));  // 12 scale bytes (+4 ignored)
    const __m128i a = _mm_shuffle_epi8(q, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
    const __m128i b = _mm_shuffle_epi8(q, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
    const __m128i lo = _mm_and_si128(a, _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0));
    const __m128i hi =
        _mm_and_si128(_mm_srli_epi16(a, 4), _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15));
    const __m128i top = _mm_and_si128(_mm_srli_epi16(b, 2), _mm_set1_epi8(0x30));
    const __m128i sm = _mm_or_si128(_mm_or_si128(lo, hi), top);  // sc0..7, mn0..7
    // [d x 8, -dmin x 8] * [sc0..7, mn0..7], then each value to its two lanes.
    uint32_t d_dmin;
    std::memcpy(&d_dmin, src, 4);
    const __m512 both = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                                              _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128(int(d_dmin)))));
    const __m512 sign = _mm512_castsi512_ps(
        _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, int(0x80000000u), int(0x80000000u), int(0x80000000u),
                          int(0x80000000u), int(0x80000000u), int(0x80000000u), int(0x80000000u), int(0x80000000u)));
    const __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(sm)), _mm512_xor_ps(both, sign));
    d = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7), v);
    m = _mm512_permutexvar_ps(_mm512_setr_epi32(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15), v);
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q4_K>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    k_nibbles(src + 16, w);
    k_scales(src, d, m);
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q5_K>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    k_nibbles(src + 48, w);
    // Bit 4 of lane i (sub-block i/2) is bit i/2 of qh[16(i%2) + 4j + b]: dword 4(i%2) + j,
    // rotated from bit i/2 to bit 4.
    const __m512i qh = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i*)(src + 16)));
    const __m512i idx0 = _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4);
    const __m512i rot = _mm512_setr_epi32(4, 4, 3, 3, 2, 2, 1, 1, 0, 0, 31, 31, 30, 30, 29, 29);
    const __m512i bit4 = _mm512_set1_epi8(0x10);
    ZINC_UNROLL
    for (int j = 0; j < 4; ++j) {
      const __m512i h = _mm512_permutexvar_epi32(_mm512_add_epi32(idx0, _mm512_set1_epi32(j)), qh);
      w[j] = _mm512_or_si512(w[j], _mm512_and_si512(_mm512_rolv_epi32(h, rot), bit4));
    }
    k_scales(src, d, m);
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::IQ4_XS>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    split_nibbles(_mm512_loadu_si512(src + 8), _mm512_loadu_si512(src + 72), w);
    lookup16(w, kIQ4Table);
    // ls[ib] = nibble ib of scales_l | 2 bits ib of scales_h << 4, minus 32.
    uint32_t scales_l;
    std::memcpy(&scales_l, src + 4, 4);
    const __m256i lo = _mm256_and_si256(
        _mm256_srlv_epi32(_mm256_set1_epi32(int(scales_l)), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
        _mm256_set1_epi32(15));
    const __m256i hi = _mm256_and_si256(
        _mm256_srlv_epi32(_mm256_set1_epi32(rd16(src + 2)), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
        _mm256_set1_epi32(3));
    const __m256i ls = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
    d = scaled_pairs(ls, fp16(rd16(src)));
    m = _mm512_mul_ps(d, _mm512_set1_ps(-128.f));
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q2_K>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    // Lane i: dword 8(i/8) + 4(i%2) + j of qs, bits 2((i%8)/2).
    const __m512i qs = _mm512_loadu_si512(src + 16);
    const __m512i idx0 = _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 8, 12, 8, 12, 8, 12, 8, 12);
    const __m512i shift = _mm512_setr_epi32(0, 0, 2, 2, 4, 4, 6, 6, 0, 0, 2, 2, 4, 4, 6, 6);
    const __m512i mask = _mm512_set1_epi8(3);
    ZINC_UNROLL
    for (int j = 0; j < 4; ++j) {
      const __m512i v = _mm512_permutexvar_epi32(_mm512_add_epi32(idx0, _mm512_set1_epi32(j)), qs);
      w[j] = _mm512_and_si512(_mm512_srlv_epi32(v, shift), mask);
    }
    const __m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)src));
    d = _mm512_mul_ps(_mm512_set1_ps(fp16(rd16(src + 80))),
                      _mm512_cvtepi32_ps(_mm512_and_si512(sc, _mm512_set1_epi32(15))));
    m = _mm512_mul_ps(_mm512_set1_ps(-fp16(rd16(src + 82))), _mm512_cvtepi32_ps(_mm512_srli_epi32(sc, 4)));
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q3_K>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    // Low 2 bits as Q2_K (qs at 32); bit 2 = bit 4(i/8) + (i%8)/2 of hmask dword 4(i%2) + j.
    const __m512i qs = _mm512_loadu_si512(src + 32);
    const __m512i hm = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i*)src));
    const __m512i idx0 = _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 8, 12, 8, 12, 8, 12, 8, 12);
    const __m512i hidx0 = _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4);
    const __m512i shift = _mm512_setr_epi32(0, 0, 2, 2, 4, 4, 6, 6, 0, 0, 2, 2, 4, 4, 6, 6);
    const __m512i rot = _mm512_setr_epi32(2, 2, 1, 1, 0, 0, 31, 31, 30, 30, 29, 29, 28, 28, 27, 27);
    const __m512i mask = _mm512_set1_epi8(3), bit2 = _mm512_set1_epi8(4);
    ZINC_UNROLL
    for (int j = 0; j < 4; ++j) {
      const __m512i vj = _mm512_set1_epi32(j);
      const __m512i lo = _mm512_srlv_epi32(_mm512_permutexvar_epi32(_mm512_add_epi32(idx0, vj), qs), shift);
      const __m512i hb = _mm512_rolv_epi32(_mm512_permutexvar_epi32(_mm512_add_epi32(hidx0, vj), hm), rot);
      w[j] = _mm512_or_si512(_mm512_and_si512(lo, mask), _mm512_and_si512(hb, bit2));
    }
    // Signed 6-bit scales: low 4 bits from raw[s] (s < 8) or raw[s-8] >> 4, high 2 from raw[8 + s%4] >> 2(s/4).
    const __m128i raw = _mm_loadu_si128((const __m128i*)(src + 94));  // scale byte k at k + 2 (no over-read)
    const __m512i low =
        _mm512_cvtepu8_epi32(_mm_shuffle_epi8(raw, _mm_setr_epi8(2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5, 6, 7, 8, 9)));
    const __m512i low4 =
        _mm512_and_si512(_mm512_srlv_epi32(low, _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4)),
                         _mm512_set1_epi32(15));
    const __m512i high = _mm512_cvtepu8_epi32(
        _mm_shuffle_epi8(raw, _mm_setr_epi8(10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13)));
    const __m512i high2 =
        _mm512_and_si512(_mm512_srlv_epi32(high, _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6)),
                         _mm512_set1_epi32(3));
    const __m512i sc = _mm512_sub_epi32(_mm512_or_si512(low4, _mm512_slli_epi32(high2, 4)), _mm512_set1_epi32(32));
    d = _mm512_mul_ps(_mm512_set1_ps(fp16(rd16(src + 108))), _mm512_cvtepi32_ps(sc));
    m = _mm512_mul_ps(_mm512_set1_ps(-4.f), d);
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q6_K>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    // Lane i (n = i/8, g = (i%8)/2): low 4 bits from dword 16n + 8(g%2) + 4(i%2) + j of ql
    // (high nibbles for g >= 2), high 2 bits from dword 8n + 4(i%2) + j of qh, bits 2g, rotated
    // to bits 4-5 (a rotation loses no bits at the dword's ends; the mask drops what wraps).
    const __m512i l0 = _mm512_loadu_si512(src), l1 = _mm512_loadu_si512(src + 64);
    const __m512i qh = _mm512_loadu_si512(src + 128);
    const __m512i idx_l0 = _mm512_setr_epi32(0, 4, 8, 12, 0, 4, 8, 12, 16, 20, 24, 28, 16, 20, 24, 28);
    const __m512i shift_l = _mm512_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4, 0, 0, 0, 0, 4, 4, 4, 4);
    const __m512i idx_h0 = _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 8, 12, 8, 12, 8, 12, 8, 12);
    const __m512i rot_h = _mm512_setr_epi32(4, 4, 2, 2, 0, 0, 30, 30, 4, 4, 2, 2, 0, 0, 30, 30);
    const __m512i mask_l = _mm512_set1_epi8(0x0F), mask_h = _mm512_set1_epi8(0x30);
    ZINC_UNROLL
    for (int j = 0; j < 4; ++j) {
      const __m512i vj = _mm512_set1_epi32(j);
      const __m512i lo = _mm512_srlv_epi32(_mm512_permutex2var_epi32(l0, _mm512_add_epi32(idx_l0, vj), l1), shift_l);
      const __m512i hi = _mm512_rolv_epi32(_mm512_permutexvar_epi32(_mm512_add_epi32(idx_h0, vj), qh), rot_h);
      // (lo & 0x0F) | (hi & 0x30)
      w[j] = _mm512_or_si512(_mm512_and_si512(lo, mask_l), _mm512_and_si512(hi, mask_h));
    }
    const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)(src + 192)));
    d = _mm512_mul_ps(_mm512_set1_ps(fp16(rd16(src + 208))), _mm512_cvtepi32_ps(sc));
    m = _mm512_mul_ps(_mm512_set1_ps(-32.f), d);
  }
};

}  // namespace zinc::cpu::kernels::avx512
