// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0: 32-element blocks, one f16 scale (and min). Byte qs[j] holds
// element j in its low nibble and element j + 16 in its high nibble (model-spec §2.3).
// Quantizers follow the reference rounding of ggml's quantize_row_*_ref exactly.
#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "core/quant_blocks.h"
#include "core/quant_internal.h"

namespace zinc::quant {
namespace {

// kHighBits[b] has byte i (little-endian) = 16 * bit i of b: the fifth bits of eight Q5 elements, in place.
constexpr auto kHighBits = [] {
  std::array<uint64_t, 256> t{};
  for (int b = 0; b < 256; ++b)
    for (int i = 0; i < 8; ++i) t[size_t(b)] |= uint64_t((b >> i) & 1) << (8 * i + 4);
  return t;
}();

// The fifth bit (as 0 or 16) of each of the 32 elements of a Q5_0 / Q5_1 block.
void unpack_high_bits(const uint8_t qh[4], uint8_t out[kQK]) {
  for (int k = 0; k < 4; ++k) std::memcpy(out + 8 * k, &kHighBits[qh[k]], 8);
}

void min_max(const float* x, int n, float* min, float* max) {
  *min = FLT_MAX;
  *max = -FLT_MAX;
  for (int j = 0; j < n; ++j) {
    if (x[j] < *min) *min = x[j];
    if (x[j] > *max) *max = x[j];
  }
}

}  // namespace

void dequantize_q4_0(const void* src, float* __restrict dst, int64_t n) {
  const auto* __restrict b = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = float((b[i].qs[j] & 0xF) - 8) * d;
      dst[j + kQK / 2] = float((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_q4_1(const void* src, float* __restrict dst, int64_t n) {
  const auto* __restrict b = static_cast<const BlockQ4_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = fp16_to_f32(b[i].d), m = fp16_to_f32(b[i].m);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = float(b[i].qs[j] & 0xF) * d + m;
      dst[j + kQK / 2] = float(b[i].qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_q5_0(const void* src, float* __restrict dst, int64_t n) {
  const auto* __restrict b = static_cast<const BlockQ5_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = fp16_to_f32(b[i].d);
    uint8_t hb[kQK];
    unpack_high_bits(b[i].qh, hb);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (b[i].qs[j] & 0xF) | hb[j];
      const int hi = (b[i].qs[j] >> 4) | hb[j + kQK / 2];
      dst[j] = float(lo - 16) * d;
      dst[j + kQK / 2] = float(hi - 16) * d;
    }
  }
}

void dequantize_q5_1(const void* src, float* __restrict dst, int64_t n) {
  const auto* __restrict b = static_cast<const BlockQ5_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = fp16_to_f32(b[i].d), m = fp16_to_f32(b[i].m);
    uint8_t hb[kQK];
    unpack_high_bits(b[i].qh, hb);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (b[i].qs[j] & 0xF) | hb[j];
      const int hi = (b[i].qs[j] >> 4) | hb[j + kQK / 2];
      dst[j] = float(lo) * d + m;
      dst[j + kQK / 2] = float(hi) * d + m;
    }
  }
}

void dequantize_q8_0(const void* src, float* __restrict dst, int64_t n) {
  const auto* __restrict b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < kQK; ++j) dst[j] = float(b[i].qs[j]) * d;
  }
}

// Symmetric: d = max / -8 so that the largest-magnitude element maps to code 0 exactly.
void quantize_q4_0(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float amax, max;
    signed_absmax(src, kQK, &amax, &max);
    const float d = max / -8;
    const float id = d != 0.f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_fp16(d);
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = std::min(15, int(int8_t(src[j] * id + 8.5f)));
      const int q1 = std::min(15, int(int8_t(src[j + kQK / 2] * id + 8.5f)));
      b[i].qs[j] = uint8_t(q0 | (q1 << 4));
    }
  }
}

void quantize_q4_1(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float min, max;
    min_max(src, kQK, &min, &max);
    const float d = (max - min) / 15;
    const float id = d != 0.f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_fp16(d);
    b[i].m = f32_to_fp16(min);
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = std::min(15, int(int8_t((src[j] - min) * id + 0.5f)));
      const int q1 = std::min(15, int(int8_t((src[j + kQK / 2] - min) * id + 0.5f)));
      b[i].qs[j] = uint8_t(q0 | (q1 << 4));
    }
  }
}

void quantize_q5_0(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float amax, max;
    signed_absmax(src, kQK, &amax, &max);
    const float d = max / -16;
    const float id = d != 0.f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_fp16(d);
    uint32_t h = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = std::min(31, int(int8_t(src[j] * id + 16.5f)));
      const int q1 = std::min(31, int(int8_t(src[j + kQK / 2] * id + 16.5f)));
      b[i].qs[j] = uint8_t((q0 & 0xF) | ((q1 & 0xF) << 4));
      h |= uint32_t(q0 >> 4 & 1) << j;
      h |= uint32_t(q1 >> 4 & 1) << (j + kQK / 2);
    }
    std::memcpy(b[i].qh, &h, 4);
  }
}

void quantize_q5_1(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float min, max;
    min_max(src, kQK, &min, &max);
    const float d = (max - min) / 31;
    const float id = d != 0.f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_fp16(d);
    b[i].m = f32_to_fp16(min);
    uint32_t h = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = uint8_t((src[j] - min) * id + 0.5f);
      const int q1 = uint8_t((src[j + kQK / 2] - min) * id + 0.5f);
      b[i].qs[j] = uint8_t((q0 & 0xF) | ((q1 & 0xF) << 4));
      h |= uint32_t(q0 >> 4 & 1) << j;
      h |= uint32_t(q1 >> 4 & 1) << (j + kQK / 2);
    }
    std::memcpy(b[i].qh, &h, 4);
  }
}

void quantize_q8_0(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float amax = 0.f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(src[j]));
    const float d = amax / 127;
    const float id = d != 0.f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_fp16(d);
    for (int j = 0; j < kQK; ++j) b[i].qs[j] = int8_t(std::round(src[j] * id));
  }
}

}  // namespace zinc::quant
