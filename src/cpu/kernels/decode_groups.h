// Plain-C++ decoding of one group (kGroupElems elements) of every quantized weight type into
// element order: u[e] (unsigned) with w[e] = d[e / 16] * u[e] + m[e / 16] (see WeightGroup).
// Part of the per-ISA kernel source (kernels_impl.h): internal linkage, S supplies fp16().
// Formulas: model-spec §2.3. A group of a 32-element format is 8 consecutive blocks.
// The scalar kernels decode with this; the SIMD ones have their own decoders, tested against it.
#pragma once

#include <cstdint>
#include <cstring>

#include "cpu/kernels/kernel_table.h"

namespace zinc::cpu::kernels {
namespace {

struct Decoded {
  alignas(64) uint8_t u[kGroupElems];
  alignas(64) float d[kLanes];
  alignas(64) float m[kLanes];
};

inline uint16_t rd16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t rd32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// 2^(e - 128): the E8M0 scale of MXFP4 halved, because its value table is doubled (spec §2.2).
inline float e8m0_half(uint8_t e) {
  const uint32_t bits = e >= 2 ? uint32_t(e - 1) << 23 : 0x00200000u << e;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

constexpr int8_t kIQ4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
constexpr int8_t kMXFP4Vals[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// Offsets that make signed values unsigned; m removes them.
constexpr int kOffsetQ8 = 128, kOffsetIQ4 = 128, kOffsetMXFP4 = 12;

inline void set_block_scale(Decoded& o, int k, float d, float m) {
  o.d[2 * k] = o.d[2 * k + 1] = d;
  o.m[2 * k] = o.m[2 * k + 1] = m;
}

// Split-nibble 16 bytes (low nibbles: elements 0..15, high: 16..31) through a value map.
template <class Map>
inline void split_nibbles(const uint8_t* qs, uint8_t* u, Map map) {
  for (int l = 0; l < 16; ++l) {
    u[l] = map(qs[l] & 15);
    u[l + 16] = map(qs[l] >> 4);
  }
}

template <class S, TensorType T>
void decode_group(const uint8_t* src, Decoded& o) {
  if constexpr (T == TensorType::Q4_0 || T == TensorType::Q4_1 || T == TensorType::IQ4_NL) {
    constexpr int kBlock = T == TensorType::Q4_1 ? 20 : 18;
    for (int k = 0; k < 8; ++k) {
      const uint8_t* b = src + kBlock * k;
      const float d = S::fp16(rd16(b));
      if constexpr (T == TensorType::Q4_0) {
        split_nibbles(b + 2, o.u + 32 * k, [](int v) { return uint8_t(v); });
        set_block_scale(o, k, d, -8.f * d);
      } else if constexpr (T == TensorType::Q4_1) {
        split_nibbles(b + 4, o.u + 32 * k, [](int v) { return uint8_t(v); });
        set_block_scale(o, k, d, S::fp16(rd16(b + 2)));
      } else {
        split_nibbles(b + 2, o.u + 32 * k, [](int v) { return uint8_t(kIQ4Values[v] + kOffsetIQ4); });
        set_block_scale(o, k, d, -float(kOffsetIQ4) * d);
      }
    }
  } else if constexpr (T == TensorType::Q5_0 || T == TensorType::Q5_1) {
    constexpr bool kMin = T == TensorType::Q5_1;
    constexpr int kBlock = kMin ? 24 : 22, kQh = kMin ? 4 : 2;
    for (int k = 0; k < 8; ++k) {
      const uint8_t* b = src + kBlock * k;
      const float d = S::fp16(rd16(b));
      const uint32_t h = rd32(b + kQh);
      const uint8_t* qs = b + kQh + 4;
      uint8_t* u = o.u + 32 * k;
      for (int l = 0; l < 16; ++l) {
        u[l] = uint8_t((qs[l] & 15) | (((h >> l) & 1) << 4));
        u[l + 16] = uint8_t((qs[l] >> 4) | (((h >> (l + 16)) & 1) << 4));
      }
      set_block_scale(o, k, d, kMin ? S::fp16(rd16(b + 2)) : -16.f * d);
    }
  } else if constexpr (T == TensorType::Q8_0) {
    for (int k = 0; k < 8; ++k) {
      const uint8_t* b = src + 34 * k;
      const float d = S::fp16(rd16(b));
      for (int l = 0; l < 32; ++l) o.u[32 * k + l] = uint8_t(b[2 + l] ^ 0x80);  // int8 + 128
      set_block_scale(o, k, d, -float(kOffsetQ8) * d);
    }
  } else if constexpr (T == TensorType::MXFP4) {
    for (int k = 0; k < 8; ++k) {
      const uint8_t* b = src + 17 * k;
      const float d = e8m0_half(b[0]);
      split_nibbles(b + 1, o.u + 32 * k, [](int v) { return uint8_t(kMXFP4Vals[v] + kOffsetMXFP4); });
      set_block_scale(o, k, d, -float(kOffsetMXFP4) * d);
    }
  } else if constexpr (T == TensorType::Q2_K) {
    const uint8_t* scales = src;
    const uint8_t* qs = src + 16;
    const float d = S::fp16(rd16(src + 80)), dmin = S::fp16(rd16(src + 82));
    for (int n = 0; n < 2; ++n)
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 32; ++l) o.u[128 * n + 32 * j + l] = uint8_t((qs[32 * n + l] >> (2 * j)) & 3);
    for (int i = 0; i < 16; ++i) {
      o.d[i] = d * float(scales[i] & 15);
      o.m[i] = -dmin * float(scales[i] >> 4);
    }
  } else if constexpr (T == TensorType::Q3_K) {
    const uint8_t* hmask = src;
    const uint8_t* qs = src + 32;
    const uint8_t* raw = src + 96;
    const float d = S::fp16(rd16(src + 108));
    for (int n = 0; n < 2; ++n)
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 32; ++l) {
          const int q2 = (qs[32 * n + l] >> (2 * j)) & 3, hb = (hmask[l] >> (4 * n + j)) & 1;
          o.u[128 * n + 32 * j + l] = uint8_t(q2 + 4 * hb);  // q + 4
        }
    for (int s = 0; s < 16; ++s) {
      const int low4 = s < 8 ? raw[s] & 15 : raw[s - 8] >> 4;
      const int high2 = (raw[8 + s % 4] >> (2 * (s / 4))) & 3;
      o.d[s] = d * float((low4 | high2 << 4) - 32);
      o.m[s] = -4.f * o.d[s];
    }
  } else if constexpr (T == TensorType::Q4_K || T == TensorType::Q5_K) {
    constexpr bool k5 = T == TensorType::Q5_K;
    const float d = S::fp16(rd16(src)), dmin = S::fp16(rd16(src + 2));
    const uint8_t* q = src + 4;
    const uint8_t* qh = src + 16;
    const uint8_t* qs = src + (k5 ? 48 : 16);
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) {
        int lo = qs[32 * c + l] & 15, hi = qs[32 * c + l] >> 4;
        if constexpr (k5) {
          lo |= ((qh[l] >> (2 * c)) & 1) << 4;
          hi |= ((qh[l] >> (2 * c + 1)) & 1) << 4;
        }
        o.u[64 * c + l] = uint8_t(lo);
        o.u[64 * c + 32 + l] = uint8_t(hi);
      }
    for (int j = 0; j < 8; ++j) {
      int sc, mn;
      if (j < 4) {
        sc = q[j] & 63;
        mn = q[j + 4] & 63;
      } else {
        sc = (q[j + 4] & 15) | ((q[j - 4] >> 6) << 4);
        mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
      }
      o.d[2 * j] = o.d[2 * j + 1] = d * float(sc);
      o.m[2 * j] = o.m[2 * j + 1] = -dmin * float(mn);
    }
  } else if constexpr (T == TensorType::Q6_K) {
    const uint8_t* ql = src;
    const uint8_t* qh = src + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(src + 192);
    const float d = S::fp16(rd16(src + 208));
    for (int n = 0; n < 2; ++n)
      for (int l = 0; l < 32; ++l) {
        const int h = qh[32 * n + l];
        const uint8_t a = ql[64 * n + l], b = ql[64 * n + 32 + l];
        uint8_t* u = o.u + 128 * n;
        u[l] = uint8_t((a & 15) | ((h & 3) << 4));
        u[32 + l] = uint8_t((b & 15) | (((h >> 2) & 3) << 4));
        u[64 + l] = uint8_t((a >> 4) | (((h >> 4) & 3) << 4));
        u[96 + l] = uint8_t((b >> 4) | (((h >> 6) & 3) << 4));
      }
    for (int i = 0; i < 16; ++i) {
      o.d[i] = d * float(sc[i]);
      o.m[i] = -32.f * o.d[i];
    }
  } else if constexpr (T == TensorType::IQ4_XS) {
    const float d = S::fp16(rd16(src));
    const uint16_t scales_h = rd16(src + 2);
    const uint8_t* scales_l = src + 4;
    const uint8_t* qs = src + 8;
    for (int ib = 0; ib < 8; ++ib) {
      const int ls = ((scales_l[ib / 2] >> (4 * (ib % 2))) & 15) | (((scales_h >> (2 * ib)) & 3) << 4);
      const float dl = d * float(ls - 32);
      split_nibbles(qs + 16 * ib, o.u + 32 * ib, [](int v) { return uint8_t(kIQ4Values[v] + kOffsetIQ4); });
      set_block_scale(o, ib, dl, -float(kOffsetIQ4) * dl);
    }
  } else {
    static_assert(T == TensorType::Q4_0, "no decoder for this type");
  }
}

}  // namespace
}  // namespace zinc::cpu::kernels
