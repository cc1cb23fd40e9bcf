// The vector operations of kernels_impl.h for AVX2 + FMA + F16C: a chunk is two ymm registers
// (lanes 0-7, 8-15); 4-byte dot products are vpmaddubsw + vpmaddwd. Every weight type has a
// decoder: element order in registers, then one transpose (decode_groups.h is the reference).
// Only kernels_avx2.cc, compiled with the matching flags, includes this file.
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

  ZINC_INLINE static U8 load_u8(const uint8_t* p) {
    return {_mm256_loadu_si256((const __m256i*)p), _mm256_loadu_si256((const __m256i*)(p + 32))};
  }
  ZINC_INLINE static void store_u8(uint8_t* p, const U8& v) {
    _mm256_storeu_si256((__m256i*)p, v.lo);
    _mm256_storeu_si256((__m256i*)(p + 32), v.hi);
  }
  ZINC_INLINE static I32 zero_i32() { return {_mm256_setzero_si256(), _mm256_setzero_si256()}; }
  // u8 x s8 with w <= 128: a pair of products stays inside vpmaddubsw's int16 saturation.
  ZINC_INLINE static __m256i dot4(__m256i w, __m256i a) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1));
  }
  ZINC_INLINE static I32 dot_chunk(const I32& acc, const U8& w, const int8_t* a) {
    const __m256i a0 = _mm256_loadu_si256((const __m256i*)a), a1 = _mm256_loadu_si256((const __m256i*)(a + 32));
    return {_mm256_add_epi32(acc.lo, dot4(w.lo, a0)), _mm256_add_epi32(acc.hi, dot4(w.hi, a1))};
  }
  // Any u8: the top bit's products (128 * (a0 + a1) per pair) are summed separately.
  ZINC_INLINE static __m256i dot4_wide(__m256i w, __m256i a) {
    const __m256i top = _mm256_set1_epi8(char(0x80));
    return _mm256_add_epi32(dot4(_mm256_andnot_si256(top, w), a), dot4(_mm256_and_si256(top, w), a));
  }
  ZINC_INLINE static I32 dot_chunk_wide(const I32& acc, const U8& w, const int8_t* a) {
    const __m256i a0 = _mm256_loadu_si256((const __m256i*)a), a1 = _mm256_loadu_si256((const __m256i*)(a + 32));
    return {_mm256_add_epi32(acc.lo, dot4_wide(w.lo, a0)), _mm256_add_epi32(acc.hi, dot4_wide(w.hi, a1))};
  }

  ZINC_INLINE static F32 zero_f32() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  ZINC_INLINE static F32 splat(float s) { return {_mm256_set1_ps(s), _mm256_set1_ps(s)}; }
  // e^x for x <= 0 (attention's softmax), within 3e-7 relative of exp(x); x below -87 gives
  // about 1e-38 instead of a denormal.
  ZINC_INLINE static __m256 exp8(__m256 x) {
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.f / 720);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  }
  ZINC_INLINE static F32 exp_nonpositive(const F32& x) { return {exp8(x.lo), exp8(x.hi)}; }
  ZINC_INLINE static F32 load_f32(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  ZINC_INLINE static void store_f32(float* p, const F32& v) {
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
  }
  ZINC_INLINE static F32 cvt(const I32& a) { return {_mm256_cvtepi32_ps(a.lo), _mm256_cvtepi32_ps(a.hi)}; }
  ZINC_INLINE static F32 mul(const F32& a, const F32& b) {
    return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)};
  }
  ZINC_INLINE static F32 add(const F32& a, const F32& b) {
    return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)};
  }
  ZINC_INLINE static F32 fma(const F32& a, const F32& b, const F32& c) {
    return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
  }
  ZINC_INLINE static float hsum(const F32& a) {
    const __m256 h = _mm256_add_ps(a.lo, a.hi);
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
  }

  ZINC_INLINE static F32 load_f16(const uint16_t* p) {
    return {_mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p)),
            _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(p + 8)))};
  }
  ZINC_INLINE static __m256 bf16x8(const uint16_t* p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
  ZINC_INLINE static F32 load_bf16(const uint16_t* p) { return {bf16x8(p), bf16x8(p + 8)}; }
  ZINC_INLINE static float fp16(uint16_t h) { return _cvtsh_ss(h); }
  ZINC_INLINE static float bf16(uint16_t h) {
    const uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }

  // Element order -> canonical chunks. Per 4 consecutive lanes (4 ymm of element order, two
  // lanes each): interleave the two lanes of each ymm by dword, then transpose 4 x 4 qwords.
  ZINC_INLINE static void transpose_lanes(const __m256i (&y)[4], __m256i (&out)[4]) {
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
  // n[k] = elements 32k..32k+31 in order -> canonical chunks.
  ZINC_INLINE static void transpose8(const __m256i (&n)[8], U8 (&out)[4]) {
    __m256i lo[4], hi[4];
    transpose_lanes({n[0], n[1], n[2], n[3]}, lo);
    transpose_lanes({n[4], n[5], n[6], n[7]}, hi);
    ZINC_UNROLL
    for (int j = 0; j < 4; ++j) out[j] = {lo[j], hi[j]};
  }
  ZINC_INLINE static void permute_natural(const uint8_t* nat, U8 (&out)[4]) {
    __m256i n[8];
    ZINC_UNROLL
    for (int k = 0; k < 8; ++k) n[k] = _mm256_loadu_si256((const __m256i*)(nat + 32 * k));
    transpose8(n, out);
  }

  // ---- Decoders: element order in registers, then transpose8 ----

  ZINC_INLINE static uint16_t rd16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  // Lanes 2k and 2k+1 of the result get v8[k].
  ZINC_INLINE static F32 pairs(__m256 v8) {
    return {_mm256_permutevar8x32_ps(v8, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3)),
            _mm256_permutevar8x32_ps(v8, _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7))};
  }
  template <int kStride>
  ZINC_INLINE static F32 block_scales(const uint8_t* src) {
    const __m128i h =
        _mm_setr_epi16(short(rd16(src)), short(rd16(src + kStride)), short(rd16(src + 2 * kStride)),
                       short(rd16(src + 3 * kStride)), short(rd16(src + 4 * kStride)), short(rd16(src + 5 * kStride)),
                       short(rd16(src + 6 * kStride)), short(rd16(src + 7 * kStride)));
    return pairs(_mm256_cvtph_ps(h));
  }
  ZINC_INLINE static F32 scale_by(const F32& v, float s) { return mul(v, {_mm256_set1_ps(s), _mm256_set1_ps(s)}); }
  // 16 unsigned bytes -> one float per lane.
  ZINC_INLINE static F32 lanes_u8(__m128i b) {
    return {_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b)),
            _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(b, 8)))};
  }
  ZINC_INLINE static F32 lanes_i8(__m128i b) {
    return {_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)),
            _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(b, 8)))};
  }
  // 16 split-nibble bytes -> 32 values in element order.
  ZINC_INLINE static __m256i split_nibbles(__m128i x) {
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(x, 4), x), _mm256_set1_epi8(0x0F));
  }
  ZINC_INLINE static __m256i lookup(__m256i v, const uint8_t (&table)[16]) {
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)table)), v);
  }
  // Bit i of h -> 0x10 in byte i (32 bytes).
  ZINC_INLINE static __m256i bits_to_0x10(uint32_t h) {
    const __m256i rep = _mm256_shuffle_epi8(
        _mm256_set1_epi32(int(h)), _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2,
                                                    2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(rep, bit), bit), _mm256_set1_epi8(0x10));
  }
  static constexpr uint8_t kIQ4Table[16] = {1, 24, 45, 63, 79, 93, 106, 118, 129, 141, 153, 166, 181, 197, 217, 241};
  static constexpr uint8_t kMXFP4Table[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};

  // The 32-element formats: block k of the group at src + k * kStride, its 16 nibble bytes at kQs.
  template <int kStride, int kQs>
  ZINC_INLINE static void nibble_blocks(const uint8_t* src, __m256i (&n)[8]) {
    ZINC_UNROLL
    for (int k = 0; k < 8; ++k) n[k] = split_nibbles(_mm_loadu_si128((const __m128i*)(src + k * kStride + kQs)));
  }

  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q4_0>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    __m256i n[8];
    nibble_blocks<18, 2>(src, n);
    transpose8(n, w);
    d = block_scales<18>(src);
    m = scale_by(d, -8.f);
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q4_1>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    __m256i n[8];
    nibble_blocks<20, 4>(src, n);
    transpose8(n, w);
    d = block_scales<20>(src);
    m = block_scales<20>(src + 2);
  }
  template <int kStride, int kQh>
  ZINC_INLINE static void fifth_bits(const uint8_t* src, __m256i (&n)[8]) {
    ZINC_UNROLL
    for (int k = 0; k < 8; ++k) {
      uint32_t h;
      std::memcpy(&h, src + k * kStride + kQh, 4);
      n[k] = _mm256_or_si256(n[k], bits_to_0x10(h));
    }
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q5_0>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    __m256i n[8];
    nibble_blocks<22, 6>(src, n);
    fifth_bits<22, 2>(src, n);
    transpose8(n, w);
    d = block_scales<22>(src);
    m = scale_by(d, -16.f);
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q5_1>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    __m256i n[8];
    nibble_blocks<24, 8>(src, n);
    fifth_bits<24, 4>(src, n);
    transpose8(n, w);
    d = block_scales<24>(src);
    m = block_scales<24>(src + 2);
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::IQ4_NL>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    __m256i n[8];
    nibble_blocks<18, 2>(src, n);
    ZINC_UNROLL
    for (int k = 0; k < 8; ++k) n[k] = lookup(n[k], kIQ4Table);
    transpose8(n, w);
    d = block_scales<18>(src);
    m = scale_by(d, -128.f);
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::MXFP4>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    __m256i n[8];
    nibble_blocks<17, 1>(src, n);
    ZINC_UNROLL
    for (int k = 0; k < 8; ++k) n[k] = lookup(n[k], kMXFP4Table);
    transpose8(n, w);
    // 2^(e - 128) (spec §2.2): exponent field e - 1, or a denormal for e < 2.
    const __m256i e =
        _mm256_cvtepu8_epi32(_mm_setr_epi8(char(src[0]), char(src[17]), char(src[34]), char(src[51]), char(src[68]),
                                           char(src[85]), char(src[102]), char(src[119]), 0, 0, 0, 0, 0, 0, 0, 0));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i denormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
    d = pairs(_mm256_castsi256_ps(_mm256_blendv_epi8(normal, denormal, small)));
    m = scale_by(d, -12.f);
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q8_0>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    __m256i n[8];
    const __m256i bias = _mm256_set1_epi8(char(0x80));
    ZINC_UNROLL
    for (int k = 0; k < 8; ++k) n[k] = _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)(src + 34 * k + 2)), bias);
    transpose8(n, w);
    d = block_scales<34>(src);
    m = scale_by(d, -128.f);
  }
  ZINC_INLINE static void k_nibbles(const uint8_t* qs, __m256i (&n)[8]) {
    const __m256i mask = _mm256_set1_epi8(0x0F);
    ZINC_UNROLL
    for (int c = 0; c < 4; ++c) {
      const __m256i y = _mm256_loadu_si256((const __m256i*)(qs + 32 * c));
      n[2 * c] = _mm256_and_si256(y, mask);
      n[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(y, 4), mask);
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
    d = scale_by(lanes_u8(_mm_shuffle_epi8(sm, _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7))),
                 fp16(rd16(src)));
    m = scale_by(
        lanes_u8(_mm_shuffle_epi8(sm, _mm_setr_epi8(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15))),
        -fp16(rd16(src + 2)));
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q4_K>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    __m256i n[8];
    k_nibbles(src + 16, n);
    transpose8(n, w);
    k_scales(src, d, m);
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q5_K>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    __m256i n[8];
    k_nibbles(src + 48, n);
    const __m256i qh = _mm256_loadu_si256((const __m256i*)(src + 16));
    ZINC_UNROLL
    for (int sb = 0; sb < 8; ++sb) {  // bit sb of qh[l] is bit 4 of element 32 sb + l
      const __m256i bit = _mm256_set1_epi8(char(1 << sb));
      n[sb] = _mm256_or_si256(
          n[sb], _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, bit), bit), _mm256_set1_epi8(0x10)));
    }
    transpose8(n, w);
    k_scales(src, d, m);
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q6_K>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    __m256i n[8];
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x30);
    ZINC_UNROLL
    for (int h = 0; h < 2; ++h) {
      const __m256i a = _mm256_loadu_si256((const __m256i*)(src + 64 * h));
      const __m256i b = _mm256_loadu_si256((const __m256i*)(src + 64 * h + 32));
      const __m256i q = _mm256_loadu_si256((const __m256i*)(src + 128 + 32 * h));
      n[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(a, m4), _mm256_and_si256(_mm256_slli_epi16(q, 4), m2));
      n[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(b, m4), _mm256_and_si256(_mm256_slli_epi16(q, 2), m2));
      n[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), m4), _mm256_and_si256(q, m2));
      n[4 * h + 3] =
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), m4), _mm256_and_si256(_mm256_srli_epi16(q, 2), m2));
    }
    transpose8(n, w);
    d = scale_by(lanes_i8(_mm_loadu_si128((const __m128i*)(src + 192))), fp16(rd16(src + 208)));
    m = scale_by(d, -32.f);
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q2_K>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    __m256i n[8];
    ZINC_UNROLL
    for (int h = 0; h < 2; ++h) {
      const __m256i y = _mm256_loadu_si256((const __m256i*)(src + 16 + 32 * h));
      ZINC_UNROLL
      for (int j = 0; j < 4; ++j) n[4 * h + j] = _mm256_and_si256(_mm256_srli_epi16(y, 2 * j), _mm256_set1_epi8(3));
    }
    transpose8(n, w);
    const __m128i sc = _mm_loadu_si128((const __m128i*)src);
    d = scale_by(lanes_u8(_mm_and_si128(sc, _mm_set1_epi8(15))), fp16(rd16(src + 80)));
    m = scale_by(lanes_u8(_mm_and_si128(_mm_srli_epi16(sc, 4), _mm_set1_epi8(15))), -fp16(rd16(src + 82)));
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::Q3_K>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    __m256i n[8];
    const __m256i hm = _mm256_loadu_si256((const __m256i*)src);
    ZINC_UNROLL
    for (int h = 0; h < 2; ++h) {
      const __m256i y = _mm256_loadu_si256((const __m256i*)(src + 32 + 32 * h));
      ZINC_UNROLL
      for (int j = 0; j < 4; ++j) {
        const __m256i q2 = _mm256_and_si256(_mm256_srli_epi16(y, 2 * j), _mm256_set1_epi8(3));
        const __m256i bit = _mm256_set1_epi8(char(1 << (4 * h + j)));  // hmask bit: q + 4 = q2 + 4 hb
        const __m256i hb = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), bit), _mm256_set1_epi8(4));
        n[4 * h + j] = _mm256_or_si256(q2, hb);
      }
    }
    transpose8(n, w);
    // Signed 6-bit scales: low 4 bits from raw[s] (s < 8) or raw[s-8] >> 4, high 2 from raw[8 + s%4] >> 2(s/4).
    const __m128i raw = _mm_loadu_si128((const __m128i*)(src + 94));  // scale byte k at k + 2 (no over-read)
    const __m128i low = _mm_shuffle_epi8(raw, _mm_setr_epi8(2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5, 6, 7, 8, 9));
    const __m128i low4 = _mm_and_si128(_mm_blend_epi16(low, _mm_srli_epi16(low, 4), 0xF0), _mm_set1_epi8(15));
    const __m128i high =
        _mm_shuffle_epi8(raw, _mm_setr_epi8(10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13));
    const __m256i shifts = _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2);
    const __m256i hi_lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_cvtepu8_epi32(high), shifts), _mm256_set1_epi32(3));
    const __m256i hi_hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(high, 8)),
                                                             _mm256_add_epi32(shifts, _mm256_set1_epi32(4))),
                                           _mm256_set1_epi32(3));
    const __m256i k32 = _mm256_set1_epi32(32);
    const __m256i sc_lo =
        _mm256_sub_epi32(_mm256_or_si256(_mm256_cvtepu8_epi32(low4), _mm256_slli_epi32(hi_lo, 4)), k32);
    const __m256i sc_hi = _mm256_sub_epi32(
        _mm256_or_si256(_mm256_cvtepu8_epi32(_mm_srli_si128(low4, 8)), _mm256_slli_epi32(hi_hi, 4)), k32);
    d = scale_by({_mm256_cvtepi32_ps(sc_lo), _mm256_cvtepi32_ps(sc_hi)}, fp16(rd16(src + 108)));
    m = scale_by(d, -4.f);
  }
  ZINC_INLINE static void unpack_group(TypeTag<TensorType::IQ4_XS>, const uint8_t* src, U8 (&w)[4], F32& d, F32& m) {
    __m256i n[8];
    nibble_blocks<16, 8>(src, n);
    ZINC_UNROLL
    for (int k = 0; k < 8; ++k) n[k] = lookup(n[k], kIQ4Table);
    transpose8(n, w);
    uint32_t scales_l;
    std::memcpy(&scales_l, src + 4, 4);
    const __m256i lo = _mm256_and_si256(
        _mm256_srlv_epi32(_mm256_set1_epi32(int(scales_l)), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
        _mm256_set1_epi32(15));
    const __m256i hi = _mm256_and_si256(
        _mm256_srlv_epi32(_mm256_set1_epi32(rd16(src + 2)), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
        _mm256_set1_epi32(3));
    const __m256i ls = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
    d = pairs(_mm256_mul_ps(_mm256_cvtepi32_ps(ls), _mm256_set1_ps(fp16(rd16(src)))));
    m = scale_by(d, -128.f);
  }
};

}  // namespace zinc::cpu::kernels::avx2
