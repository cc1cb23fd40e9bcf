// Dequantization of the K-quants (256-element super-blocks; layouts in model-spec §2.3).
// Every product is evaluated in the reference order (scale first, then times the quant, then
// minus the min), so results match ggml bit for bit.
#include "core/fp16.h"
#include "core/quant_blocks.h"
#include "core/quant_internal.h"

namespace zinc::quant {

void dequantize_q2_k(const void* src, float* __restrict dst, int64_t n) {
  const auto* __restrict b = static_cast<const BlockQ2_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q = b[i].qs + 32 * half;
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {  // two sub-blocks of 16 share a shift
          const uint8_t sc = b[i].scales[8 * half + shift + part];
          const float dl = d * float(sc & 0xF), ml = dmin * float(sc >> 4);
          const uint8_t* qp = q + 16 * part;
          for (int l = 0; l < 16; ++l) dst[l] = dl * float((qp[l] >> shift) & 3) - ml;
          dst += 16;
        }
      }
    }
  }
}

void dequantize_q3_k(const void* src, float* __restrict dst, int64_t n) {
  const auto* __restrict b = static_cast<const BlockQ3_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_f32(b[i].d);
    const uint8_t* raw = b[i].scales;
    int sc[16];
    for (int s = 0; s < 16; ++s) {
      const int low4 = s < 8 ? raw[s] & 0xF : raw[s - 8] >> 4;
      const int high2 = (raw[8 + s % 4] >> (2 * (s / 4))) & 3;
      sc[s] = (low4 | high2 << 4) - 32;
    }
    int s = 0;
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q = b[i].qs + 32 * half;
      for (int j = 0; j < 4; ++j) {
        const int shift = 2 * j;
        const uint8_t hbit = uint8_t(1 << (4 * half + j));
        for (int part = 0; part < 2; ++part, ++s) {
          const float dl = d * float(sc[s]);
          const uint8_t* qp = q + 16 * part;
          const uint8_t* hm = b[i].hmask + 16 * part;
          for (int l = 0; l < 16; ++l)
            dst[l] = dl * float(((qp[l] >> shift) & 3) - ((hm[l] & hbit) ? 0 : 4));
          dst += 16;
        }
      }
    }
  }
}

void dequantize_q4_k(const void* src, float* __restrict dst, int64_t n) {
  const auto* __restrict b = static_cast<const BlockQ4_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    for (int c = 0; c < 4; ++c, q += 32, dst += 64) {
      int sc, mn;
      scale_min_k4(2 * c, b[i].scales, &sc, &mn);
      const float d1 = d * float(sc), m1 = dmin * float(mn);
      scale_min_k4(2 * c + 1, b[i].scales, &sc, &mn);
      const float d2 = d * float(sc), m2 = dmin * float(mn);
      for (int l = 0; l < 32; ++l) dst[l] = d1 * float(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) dst[l + 32] = d2 * float(q[l] >> 4) - m2;
    }
  }
}

void dequantize_q5_k(const void* src, float* __restrict dst, int64_t n) {
  const auto* __restrict b = static_cast<const BlockQ5_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
    const uint8_t* ql = b[i].qs;
    const uint8_t* qh = b[i].qh;
    for (int c = 0; c < 4; ++c, ql += 32, dst += 64) {
      int sc, mn;
      scale_min_k4(2 * c, b[i].scales, &sc, &mn);
      const float d1 = d * float(sc), m1 = dmin * float(mn);
      scale_min_k4(2 * c + 1, b[i].scales, &sc, &mn);
      const float d2 = d * float(sc), m2 = dmin * float(mn);
      const int s1 = 2 * c, s2 = 2 * c + 1;
      for (int l = 0; l < 32; ++l) dst[l] = d1 * float((ql[l] & 0xF) | ((qh[l] >> s1) & 1) << 4) - m1;
      for (int l = 0; l < 32; ++l) dst[l + 32] = d2 * float((ql[l] >> 4) | ((qh[l] >> s2) & 1) << 4) - m2;
    }
  }
}

void dequantize_q6_k(const void* src, float* __restrict dst, int64_t n) {
  const auto* __restrict b = static_cast<const BlockQ6_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_f32(b[i].d);
    for (int half = 0; half < 2; ++half, dst += 128) {
      const uint8_t* ql = b[i].ql + 64 * half;
      const uint8_t* qh = b[i].qh + 32 * half;
      const int8_t* sc = b[i].scales + 8 * half;
      for (int g = 0; g < 4; ++g) {  // 32-element groups: low/high nibble of ql[0..31] or ql[32..63]
        const uint8_t* qlg = ql + 32 * (g & 1);
        const int nib_shift = 4 * (g >> 1);
        for (int part = 0; part < 2; ++part) {
          const float dl = d * float(sc[2 * g + part]);
          for (int l = 16 * part; l < 16 * part + 16; ++l) {
            const int q = (((qlg[l] >> nib_shift) & 0xF) | (((qh[l] >> (2 * g)) & 3) << 4)) - 32;
            dst[32 * g + l] = dl * float(q);
          }
        }
      }
    }
  }
}

}  // namespace zinc::quant
