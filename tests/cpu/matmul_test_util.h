// Helpers for the matmul tests: random weights of every kernel type, and an element-by-element
// reference dequantization written from model-spec §2.3 (independent of src/cpu/kernels).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "core/quant.h"
#include "core/tensor_type.h"

namespace zinc::cpu::test_util {

inline const TensorType kQuantTypes[] = {TensorType::Q4_0,  TensorType::Q4_1,   TensorType::Q5_0,  TensorType::Q5_1,
                                         TensorType::Q8_0,  TensorType::IQ4_NL, TensorType::MXFP4, TensorType::Q2_K,
                                         TensorType::Q3_K,  TensorType::Q4_K,   TensorType::Q5_K,  TensorType::Q6_K,
                                         TensorType::IQ4_XS};
inline const TensorType kFloatTypes[] = {TensorType::F32, TensorType::F16, TensorType::BF16};

inline uint16_t get16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline void put16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// Value of element i of one block of type t (model-spec §2.3, formula by formula).
inline float ref_element(TensorType t, const uint8_t* b, int i) {
  static const int kIQ4[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  static const int kMX[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  auto nib = [](const uint8_t* qs, int i) { return i < 16 ? qs[i] & 15 : qs[i - 16] >> 4; };
  auto f16 = [&](int off) { return fp16_to_f32(get16(b + off)); };
  switch (t) {
    case TensorType::Q4_0: return float(nib(b + 2, i) - 8) * f16(0);
    case TensorType::Q4_1: return float(nib(b + 4, i)) * f16(0) + f16(2);
    case TensorType::Q5_0:
    case TensorType::Q5_1: {
      const bool m = t == TensorType::Q5_1;
      uint32_t h;
      std::memcpy(&h, b + (m ? 4 : 2), 4);
      const int q = nib(b + (m ? 8 : 6), i) | int((h >> i) & 1) << 4;
      return m ? float(q) * f16(0) + f16(2) : float(q - 16) * f16(0);
    }
    case TensorType::Q8_0: return float(int8_t(b[2 + i])) * f16(0);
    case TensorType::IQ4_NL: return f16(0) * float(kIQ4[nib(b + 2, i)]);
    case TensorType::MXFP4: return float(kMX[nib(b + 1, i)]) * std::ldexp(1.f, int(b[0]) - 128);
    case TensorType::Q2_K: {
      const int n = i / 128, r = i % 128, j = r / 32, l = r % 32, s = i / 16;
      const int q = (b[16 + 32 * n + l] >> (2 * j)) & 3;
      return f16(80) * float(b[s] & 15) * float(q) - f16(82) * float(b[s] >> 4);
    }
    case TensorType::Q3_K: {
      const int n = i / 128, r = i % 128, j = r / 32, l = r % 32, s = i / 16;
      const uint8_t* raw = b + 96;
      const int low4 = s < 8 ? raw[s] & 15 : raw[s - 8] >> 4, high2 = (raw[8 + s % 4] >> (2 * (s / 4))) & 3;
      const int sc = (low4 | high2 << 4) - 32;
      const int q2 = (b[32 + 32 * n + l] >> (2 * j)) & 3, hb = (b[l] >> (4 * n + j)) & 1;
      return f16(108) * float(sc) * float(q2 - (hb ? 0 : 4));
    }
    case TensorType::Q4_K:
    case TensorType::Q5_K: {
      const bool k5 = t == TensorType::Q5_K;
      const int c = i / 64, r = i % 64, sb = i / 32;
      const uint8_t* qs = b + (k5 ? 48 : 16);
      int q = r < 32 ? qs[32 * c + r] & 15 : qs[32 * c + r - 32] >> 4;
      if (k5) q += 16 * ((b[16 + r % 32] >> sb) & 1);
      const uint8_t* sq = b + 4;
      int sc, mn;
      if (sb < 4) {
        sc = sq[sb] & 63;
        mn = sq[sb + 4] & 63;
      } else {
        sc = (sq[sb + 4] & 15) | ((sq[sb - 4] >> 6) << 4);
        mn = (sq[sb + 4] >> 4) | ((sq[sb] >> 6) << 4);
      }
      return f16(0) * float(sc) * float(q) - f16(2) * float(mn);
    }
    case TensorType::Q6_K: {
      const int n = i / 128, r = i % 128, g = r / 32, l = r % 32, s = i / 16;
      const uint8_t* ql = b;
      const int low = g == 0   ? ql[64 * n + l] & 15
                      : g == 1 ? ql[64 * n + 32 + l] & 15
                      : g == 2 ? ql[64 * n + l] >> 4
                               : ql[64 * n + 32 + l] >> 4;
      const int high = (b[128 + 32 * n + l] >> (2 * g)) & 3;
      return f16(208) * float(int8_t(b[192 + s])) * float((low | high << 4) - 32);
    }
    case TensorType::IQ4_XS: {
      const int ib = i / 32, l = i % 32;
      const int ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 15) | (((get16(b + 2) >> (2 * ib)) & 3) << 4);
      return f16(0) * float(ls - 32) * float(kIQ4[nib(b + 8 + 16 * ib, l)]);
    }
    default: return NAN;
  }
}

// Row r of any kernel type as floats, through ref_element (or the float formats).
inline std::vector<float> ref_dequantize_row(TensorType t, const uint8_t* row, int64_t cols) {
  std::vector<float> out(static_cast<size_t>(cols));
  const auto& info = type_info(t);
  for (int64_t k = 0; k < cols; ++k) {
    if (t == TensorType::F32) {
      std::memcpy(&out[k], row + 4 * k, 4);
    } else if (t == TensorType::F16) {
      out[k] = fp16_to_f32(get16(row + 2 * k));
    } else if (t == TensorType::BF16) {
      out[k] = bf16_to_f32(get16(row + 2 * k));
    } else {
      out[k] = ref_element(t, row + (k / info.block_elems) * info.block_bytes, int(k % info.block_elems));
    }
  }
  return out;
}

// A random normal fp16 of magnitude in [lo, hi), random sign.
inline uint16_t random_scale(std::mt19937& rng, float lo, float hi, bool allow_negative = true) {
  std::uniform_real_distribution<float> u(lo, hi);
  float v = u(rng);
  if (allow_negative && (rng() & 1)) v = -v;
  return f32_to_fp16(v);
}

// Random weights: quantize_row of random floats where core supports it (unless raw_bytes), else
// random bytes with the scale fields replaced by finite fp16 values of a realistic size (every
// other bit pattern is a valid block: extreme quants, all scale bits).
inline std::vector<uint8_t> random_weights(TensorType t, int64_t rows, int64_t cols, std::mt19937& rng,
                                           bool raw_bytes = false) {
  const size_t rb = row_bytes(t, cols);
  std::vector<uint8_t> w(rb * size_t(rows));
  if (can_quantize(t) && !raw_bytes) {
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<float> src(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (auto& v : src) v = nd(rng);
      quantize_row(t, src.data(), w.data() + rb * size_t(r), cols);
    }
    return w;
  }
  for (auto& b : w) b = uint8_t(rng());
  const auto& info = type_info(t);
  const size_t n_blocks = w.size() / info.block_bytes;
  for (size_t i = 0; i < n_blocks; ++i) {
    uint8_t* b = w.data() + i * info.block_bytes;
    switch (t) {
      case TensorType::Q4_1:
      case TensorType::Q5_1:
        put16(b, random_scale(rng, 0.002f, 0.02f));
        put16(b + 2, random_scale(rng, 0.f, 0.1f));
        break;
      case TensorType::MXFP4: b[0] = uint8_t(118 + rng() % 12); break;
      case TensorType::Q2_K:
        put16(b + 80, random_scale(rng, 0.002f, 0.02f));
        put16(b + 82, random_scale(rng, 0.f, 0.01f));
        break;
      case TensorType::Q3_K: put16(b + 108, random_scale(rng, 0.001f, 0.01f)); break;
      case TensorType::Q4_K:
      case TensorType::Q5_K:
        put16(b, random_scale(rng, 0.0005f, 0.005f));
        put16(b + 2, random_scale(rng, 0.f, 0.005f));
        break;
      case TensorType::Q6_K: put16(b + 208, random_scale(rng, 0.0001f, 0.001f)); break;
      default: put16(b, random_scale(rng, 0.001f, 0.01f)); break;  // d first: Q4_0 Q5_0 Q8_0 IQ4_NL IQ4_XS
    }
  }
  return w;
}

inline std::vector<float> random_floats(size_t n, std::mt19937& rng, float sigma = 1.f) {
  std::normal_distribution<float> nd(0.f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

}  // namespace zinc::cpu::test_util
