// Codebook ("non-linear") 4-bit formats: IQ4_NL (32-element blocks), IQ4_XS (256-element
// super-blocks of eight IQ4_NL-like blocks with 6-bit scales) and MXFP4 (E2M1 values with an
// E8M0 power-of-two scale). Nibble layout as Q4_0. Quantizers follow ggml's reference ones.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "core/quant_blocks.h"
#include "core/quant_internal.h"

namespace zinc::quant {
namespace {

// 2^(e - 128): the E8M0 scale halved, because kMXFP4Values holds doubled E2M1 values.
inline float e8m0_half(uint8_t e) {
  if (e < 2) return bits_to_f32(0x00200000u << e);  // denormals 2^-128, 2^-127
  return bits_to_f32(uint32_t(e - 1) << 23);
}

// Index of the codebook entry nearest to x (ties: the lower one). `values` ascending, 16 entries.
inline int nearest_index(const int8_t* values, float x) {
  if (x <= values[0]) return 0;
  if (x >= values[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < values[mid]) hi = mid; else lo = mid;
  }
  return x - values[hi - 1] < values[hi] - x ? hi - 1 : hi;
}

// Chooses a scale per 32-element sub-block (weights x^2) by trying 2*ntry+1 candidate inverse
// scales; for super-blocks of several sub-blocks the scales are then quantized to 6 bits
// around one f16 super-scale. ntry <= 0 keeps the first estimate (IQ4_NL reference).
// Writes d, qs and (for super-blocks) scales_h / scales_l.
void quantize_nl_superblock(int n_elems, const float* x, uint16_t* d_out, uint8_t* qs,
                            uint16_t* scales_h, uint8_t* scales_l, int ntry) {
  constexpr int kSub = 32;
  const int n_sub = n_elems / kSub;
  const int8_t* values = kIQ4NLValues;
  uint8_t L[kQKK] = {};
  float scales[kQKK / kSub];
  std::memset(qs, 0, size_t(n_elems / 2));
  *d_out = f32_to_fp16(0.f);

  float max_scale = 0, amax_scale = 0;
  for (int ib = 0; ib < n_sub; ++ib) {
    const float* xb = x + ib * kSub;
    uint8_t* Lb = L + ib * kSub;
    float weight[kSub];
    for (int j = 0; j < kSub; ++j) weight[j] = xb[j] * xb[j];
    float amax, max;
    signed_absmax(xb, kSub, &amax, &max);
    if (amax < kGroupMaxEps) {
      scales[ib] = 0;
      continue;
    }
    float d = ntry > 0 ? -max / values[0] : max / values[0];
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < kSub; ++j) {
      const int l = nearest_index(values, id * xb[j]);
      Lb[j] = uint8_t(l);
      const float q = values[l];
      sumqx += weight[j] * q * xb[j];
      sumq2 += weight[j] * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int itry = -ntry; itry <= ntry; ++itry) {
      id = (float(itry) + values[0]) / max;
      sumqx = sumq2 = 0;
      for (int j = 0; j < kSub; ++j) {
        const float q = values[nearest_index(values, id * xb[j])];
        sumqx += weight[j] * q * xb[j];
        sumq2 += weight[j] * q * q;
      }
      if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
        d = sumqx / sumq2;
        best = d * sumqx;
      }
    }
    scales[ib] = d;
    if (std::fabs(d) > amax_scale) {
      amax_scale = std::fabs(d);
      max_scale = d;
    }
  }

  if (n_sub > 1) {
    *scales_h = 0;
    const float d = -max_scale / 32;
    *d_out = f32_to_fp16(d);
    const float id = d != 0.f ? 1 / d : 0.f;
    for (int ib = 0; ib < n_sub; ++ib) {
      int l = nearest_int(id * scales[ib]);
      l = std::max(-32, std::min(31, l));
      const float dl = d * float(l);
      const float idl = dl != 0.f ? 1 / dl : 0.f;
      for (int j = 0; j < kSub; ++j) L[ib * kSub + j] = uint8_t(nearest_index(values, idl * x[ib * kSub + j]));
      l += 32;
      if (ib % 2 == 0) scales_l[ib / 2] = uint8_t(l & 0xF);
      else scales_l[ib / 2] |= uint8_t((l & 0xF) << 4);
      *scales_h |= uint16_t((l >> 4) << (2 * ib));
    }
  } else {
    *d_out = f32_to_fp16(scales[0]);
    if (ntry > 0) {
      const float id = scales[0] != 0.f ? 1 / scales[0] : 0.f;
      for (int j = 0; j < n_elems; ++j) L[j] = uint8_t(nearest_index(values, id * x[j]));
    }
  }
  for (int i = 0; i < n_sub; ++i)
    for (int j = 0; j < 16; ++j) qs[16 * i + j] = uint8_t(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

}  // namespace

void dequantize_iq4_nl(const void* src, float* __restrict dst, int64_t n) {
  const auto* __restrict b = static_cast<const BlockIQ4_NL*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = d * float(kIQ4NLValues[b[i].qs[j] & 0xF]);
      dst[j + kQK / 2] = d * float(kIQ4NLValues[b[i].qs[j] >> 4]);
    }
  }
}

void dequantize_iq4_xs(const void* src, float* __restrict dst, int64_t n) {
  const auto* __restrict b = static_cast<const BlockIQ4_XS*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_f32(b[i].d);
    for (int ib = 0; ib < kQKK / 32; ++ib, dst += 32) {
      const int ls = ((b[i].scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((b[i].scales_h >> (2 * ib)) & 3) << 4);
      const float dl = d * float(ls - 32);
      const uint8_t* qs = b[i].qs + 16 * ib;
      for (int j = 0; j < 16; ++j) {
        dst[j] = dl * float(kIQ4NLValues[qs[j] & 0xF]);
        dst[j + 16] = dl * float(kIQ4NLValues[qs[j] >> 4]);
      }
    }
  }
}

void dequantize_mxfp4(const void* src, float* __restrict dst, int64_t n) {
  const auto* __restrict b = static_cast<const BlockMXFP4*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = e8m0_half(b[i].e);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = float(kMXFP4Values[b[i].qs[j] & 0xF]) * d;
      dst[j + kQK / 2] = float(kMXFP4Values[b[i].qs[j] >> 4]) * d;
    }
  }
}

void quantize_iq4_nl(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockIQ4_NL*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i)
    quantize_nl_superblock(kQK, src + i * kQK, &b[i].d, b[i].qs, nullptr, nullptr, -1);
}

void quantize_iq4_xs(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockIQ4_XS*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i)
    quantize_nl_superblock(kQKK, src + i * kQKK, &b[i].d, b[i].qs, &b[i].scales_h, b[i].scales_l, 7);
}

// Scale exponent from the block's absolute max (floor(log2(amax)) - 2, so amax lands in the top
// binade of the doubled table), then each element to its nearest table value.
void quantize_mxfp4(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockMXFP4*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float amax = 0.f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(src[j]));
    const uint8_t e = amax > 0.0f ? uint8_t(std::floor(std::log2(amax)) - 2 + 127) : 0;
    const float d = e8m0_half(e);
    b[i].e = e;
    for (int j = 0; j < kQK / 2; ++j) {
      uint8_t q[2];
      for (int h = 0; h < 2; ++h) {
        const float v = src[j + h * kQK / 2];
        int best = 0;
        float best_err = std::fabs(float(kMXFP4Values[0]) * d - v);
        for (int k = 1; k < 16; ++k) {
          const float err = std::fabs(float(kMXFP4Values[k]) * d - v);
          if (err < best_err) {
            best = k;
            best_err = err;
          }
        }
        q[h] = uint8_t(best);
      }
      b[i].qs[j] = uint8_t(q[0] | (q[1] << 4));
    }
  }
}

}  // namespace zinc::quant
