// dequantize_row against a literal, element-by-element reading of the formulas in model-spec
// §2.3, on blocks of random bytes (random codes, scales and mins; scale fields set to finite
// f16 values). The spec formulas are evaluated in the same float order as ggml, so results must
// agree bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "core/quant.h"
#include "core/quant_blocks.h"

namespace zinc {
namespace {

int lo(uint8_t b) { return b & 0xF; }
int hi(uint8_t b) { return b >> 4; }
float h(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return fp16_to_f32(v);
}
// Legacy split-nibble layout: element j of a 32-block is lo(qs[j]) for j < 16, else hi(qs[j - 16]).
int nibble(const uint8_t* qs, int j) { return j < 16 ? lo(qs[j]) : hi(qs[j - 16]); }

// Element i of the block at b, straight from the spec.
float spec_element(TensorType t, const uint8_t* b, int i) {
  switch (t) {
    case TensorType::Q4_0: return float(nibble(b + 2, i) - 8) * h(b);
    case TensorType::Q4_1: return float(nibble(b + 4, i)) * h(b) + h(b + 2);
    case TensorType::Q5_0: {
      uint32_t qh;
      std::memcpy(&qh, b + 2, 4);
      return float((nibble(b + 6, i) | int((qh >> i) & 1) << 4) - 16) * h(b);
    }
    case TensorType::Q5_1: {
      uint32_t qh;
      std::memcpy(&qh, b + 4, 4);
      return float(nibble(b + 8, i) | int((qh >> i) & 1) << 4) * h(b) + h(b + 2);
    }
    case TensorType::Q8_0: return float(int8_t(b[2 + i])) * h(b);
    case TensorType::IQ4_NL: return h(b) * float(kIQ4NLValues[nibble(b + 2, i)]);
    case TensorType::MXFP4: {
      const float scale = std::ldexp(1.0f, int(b[0]) - 128);  // 2^(e-128), denormal for e < 2
      return float(kMXFP4Values[nibble(b + 1, i)]) * scale;
    }
    case TensorType::IQ4_XS: {
      const int ib = i / 32;
      const uint8_t* scales_l = b + 4;
      uint16_t scales_h;
      std::memcpy(&scales_h, b + 2, 2);
      const int ls = ((scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((scales_h >> (2 * ib)) & 3) << 4);
      return h(b) * float(ls - 32) * float(kIQ4NLValues[nibble(b + 8 + 16 * ib, i % 32)]);
    }
    case TensorType::Q2_K: {
      const uint8_t* scales = b;
      const uint8_t* qs = b + 16;
      const int n = i / 128, r = i % 128, j = r / 32, l = r % 32, s = i / 16;
      const int q = (qs[32 * n + l] >> (2 * j)) & 3;
      return h(b + 80) * float(scales[s] & 0xF) * float(q) - h(b + 82) * float(scales[s] >> 4);
    }
    case TensorType::Q3_K: {
      const uint8_t* hmask = b;
      const uint8_t* qs = b + 32;
      const uint8_t* raw = b + 96;
      const int n = i / 128, r = i % 128, j = r / 32, l = r % 32, s = i / 16;
      const int low4 = s < 8 ? raw[s] & 0xF : raw[s - 8] >> 4;
      const int high2 = (raw[8 + s % 4] >> (2 * (s / 4))) & 3;
      const int sc = (low4 | high2 << 4) - 32;
      const int q2 = (qs[32 * n + l] >> (2 * j)) & 3;
      const int hb = (hmask[l] >> (4 * n + j)) & 1;
      return h(b + 108) * float(sc) * float(q2 - (hb ? 0 : 4));
    }
    case TensorType::Q4_K:
    case TensorType::Q5_K: {
      const uint8_t* q = b + 4;  // scales[12]
      const int c = i / 64, r = i % 64;
      const int sb = r < 32 ? 2 * c : 2 * c + 1;
      int sc, mn;
      if (sb < 4) {
        sc = q[sb] & 63;
        mn = q[sb + 4] & 63;
      } else {
        sc = (q[sb + 4] & 0xF) | ((q[sb - 4] >> 6) << 4);
        mn = (q[sb + 4] >> 4) | ((q[sb] >> 6) << 4);
      }
      const uint8_t* qs = t == TensorType::Q4_K ? b + 16 : b + 48;
      int v = r < 32 ? lo(qs[32 * c + r]) : hi(qs[32 * c + r - 32]);
      if (t == TensorType::Q5_K) v += 16 * ((b[16 + r % 32] >> sb) & 1);
      return h(b) * float(sc) * float(v) - h(b + 2) * float(mn);
    }
    case TensorType::Q6_K: {
      const uint8_t* ql = b;
      const uint8_t* qh = b + 128;
      const auto* scales = reinterpret_cast<const int8_t*>(b + 192);
      const int n = i / 128, r = i % 128, g = r / 32, l = r % 32, s = i / 16;
      const uint8_t byte = ql[64 * n + (g & 1) * 32 + l];
      const int low = g < 2 ? lo(byte) : hi(byte);
      const int high = (qh[32 * n + l] >> (2 * g)) & 3;
      return h(b + 208) * float(scales[s]) * float((low | high << 4) - 32);
    }
    default: ADD_FAILURE() << "no spec formula for " << type_name(t); return 0;
  }
}

// Byte offsets of the f16 scale fields in a block (randomized to finite values).
std::vector<int> f16_fields(TensorType t) {
  switch (t) {
    case TensorType::Q4_1: case TensorType::Q5_1: case TensorType::Q4_K: case TensorType::Q5_K: return {0, 2};
    case TensorType::Q2_K: return {80, 82};
    case TensorType::Q3_K: return {108};
    case TensorType::Q6_K: return {208};
    case TensorType::MXFP4: return {};
    default: return {0};
  }
}

class QuantReference : public ::testing::TestWithParam<TensorType> {};

TEST_P(QuantReference, RandomBlocksMatchSpecFormulas) {
  const TensorType t = GetParam();
  const auto& info = type_info(t);
  const int n_blocks = 64;
  std::mt19937 rng(uint32_t(t) + 11);
  std::uniform_int_distribution<int> byte(0, 255);
  std::normal_distribution<float> scale(0.f, 0.05f);
  std::vector<uint8_t> data(size_t(n_blocks) * info.block_bytes);
  for (auto& v : data) v = uint8_t(byte(rng));
  for (int bl = 0; bl < n_blocks; ++bl) {
    for (int off : f16_fields(t)) {
      const uint16_t d = f32_to_fp16(scale(rng));
      std::memcpy(&data[size_t(bl) * info.block_bytes + size_t(off)], &d, 2);
    }
  }
  const int64_t n = int64_t(n_blocks) * info.block_elems;
  std::vector<float> got(static_cast<size_t>(n));
  dequantize_row(t, data.data(), got.data(), n);
  int mismatches = 0;
  for (int bl = 0; bl < n_blocks; ++bl) {
    const uint8_t* b = &data[size_t(bl) * info.block_bytes];
    for (uint32_t i = 0; i < info.block_elems; ++i) {
      const float want = spec_element(t, b, int(i));
      const float g = got[size_t(bl) * info.block_elems + i];
      if (f32_to_bits(g) != f32_to_bits(want) && mismatches++ < 5)
        ADD_FAILURE() << type_name(t) << " block " << bl << " element " << i << ": got " << g << " want " << want;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

INSTANTIATE_TEST_SUITE_P(QuantizedTypes, QuantReference,
                         ::testing::Values(TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1,
                                           TensorType::Q8_0, TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K,
                                           TensorType::Q5_K, TensorType::Q6_K, TensorType::IQ4_NL,
                                           TensorType::IQ4_XS, TensorType::MXFP4),
                         [](const ::testing::TestParamInfo<TensorType>& info) {
                           return std::string(type_name(info.param));
                         });

}  // namespace
}  // namespace zinc
