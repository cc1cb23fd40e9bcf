// Repacking of stored weight rows into the device layout described in weights.h.
#include <cstring>

#include "core/quant_blocks.h"
#include "vulkan/weights.h"

namespace zinc::vulkan {
namespace {

// codes[0..32) -> 16 bytes: byte i = codes[i] | codes[i + 16] << 4.
void pack4(const uint8_t* codes, uint8_t* out) {
  for (int i = 0; i < 16; ++i) out[i] = uint8_t((codes[i] & 0xF) | (codes[i + 16] & 0xF) << 4);
}
// codes[0..32) (2 bits each) -> 8 bytes: element i + 8s in bits 2s of byte i.
void pack2(const uint8_t* codes, uint8_t* out) {
  for (int i = 0; i < 8; ++i)
    out[i] = uint8_t((codes[i] & 3) | (codes[i + 8] & 3) << 2 | (codes[i + 16] & 3) << 4 | (codes[i + 24] & 3) << 6);
}
// bits[0..32) -> 4 bytes: element 4s + i in bit s of byte i.
void pack1(const uint8_t* bits, uint8_t* out) {
  for (int i = 0; i < 4; ++i) {
    uint8_t b = 0;
    for (int s = 0; s < 8; ++s) b = uint8_t(b | (bits[4 * s + i] & 1) << s);
    out[i] = b;
  }
}
void put16(uint8_t* out, uint16_t v) { std::memcpy(out, &v, 2); }

// Element i of a Q5_0/Q5_1 qh word.
void unpack_qh32(const uint8_t qh[4], uint8_t* bits) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  for (int i = 0; i < 32; ++i) bits[i] = uint8_t((h >> i) & 1);
}

void repack_q2_k(const BlockQ2_K& b, uint8_t* q, uint8_t* m) {
  uint8_t codes[256];
  for (int half = 0; half < 2; ++half)
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 32; ++i) codes[128 * half + 32 * j + i] = uint8_t((b.qs[32 * half + i] >> (2 * j)) & 3);
  for (int g = 0; g < 8; ++g) pack2(codes + 32 * g, q + 8 * g);
  put16(m, b.d);
  put16(m + 2, b.dmin);
  std::memcpy(m + 4, b.scales, 16);
}

void repack_q3_k(const BlockQ3_K& b, uint8_t* q, uint8_t* h, uint8_t* m) {
  uint8_t codes[256], bits[256];
  for (int half = 0; half < 2; ++half)
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 32; ++i) {
        codes[128 * half + 32 * j + i] = uint8_t((b.qs[32 * half + i] >> (2 * j)) & 3);
        bits[128 * half + 32 * j + i] = (b.hmask[i] >> (4 * half + j)) & 1;
      }
  for (int g = 0; g < 8; ++g) {
    pack2(codes + 32 * g, q + 8 * g);
    pack1(bits + 32 * g, h + 4 * g);
  }
  std::memcpy(m, b.scales, 12);
  put16(m + 12, b.d);
  put16(m + 14, 0);
}

// 32 bytes of ggml K-quant nibbles (sub-block 2c in the low nibbles, 2c + 1 in the high ones)
// -> two 16-byte groups of the device layout.
void split_nibbles(const uint8_t* src, uint8_t* lo_group, uint8_t* hi_group) {
  constexpr uint64_t kLow = 0x0F0F0F0F0F0F0F0Full;
  for (int h = 0; h < 2; ++h) {
    uint64_t a, c;
    std::memcpy(&a, src + 8 * h, 8);
    std::memcpy(&c, src + 16 + 8 * h, 8);
    const uint64_t lo = (a & kLow) | (c & kLow) << 4, hi = (a >> 4 & kLow) | (c & ~kLow);
    std::memcpy(lo_group + 8 * h, &lo, 8);
    std::memcpy(hi_group + 8 * h, &hi, 8);
  }
}

void repack_q4_k(const BlockQ4_K& b, uint8_t* q, uint8_t* m) {
  for (int c = 0; c < 4; ++c) split_nibbles(b.qs + 32 * c, q + 32 * c, q + 32 * c + 16);
  std::memcpy(m, &b, 16);  // d, dmin, scales[12]
}

void repack_q5_k(const BlockQ5_K& b, uint8_t* q, uint8_t* h, uint8_t* m) {
  for (int c = 0; c < 4; ++c) split_nibbles(b.qs + 32 * c, q + 32 * c, q + 32 * c + 16);
  for (int j = 0; j < 8; ++j) {
    uint8_t bits[32];
    for (int l = 0; l < 32; ++l) bits[l] = (b.qh[l] >> j) & 1;
    pack1(bits, h + 4 * j);
  }
  std::memcpy(m, &b, 16);
}

void repack_q6_k(const BlockQ6_K& b, uint8_t* q, uint8_t* h, uint8_t* m) {
  uint8_t lo[256], hi[256];
  for (int half = 0; half < 2; ++half)
    for (int g = 0; g < 4; ++g)
      for (int l = 0; l < 32; ++l) {
        const int e = 128 * half + 32 * g + l;
        lo[e] = uint8_t((b.ql[64 * half + 32 * (g & 1) + l] >> (4 * (g >> 1))) & 0xF);
        hi[e] = uint8_t((b.qh[32 * half + l] >> (2 * g)) & 3);
      }
  for (int g = 0; g < 8; ++g) {
    pack4(lo + 32 * g, q + 16 * g);
    pack2(hi + 32 * g, h + 8 * g);
  }
  put16(m, b.d);
  put16(m + 2, 0);
  std::memcpy(m + 4, b.scales, 16);
}

}  // namespace

Result<WeightFormat> weight_format(TensorType t) {
  switch (t) {
    case TensorType::F32: return WeightFormat{t, 32, 128, 0, 0};
    case TensorType::F16: return WeightFormat{t, 32, 64, 0, 0};
    case TensorType::BF16: return WeightFormat{t, 32, 64, 0, 0};
    case TensorType::Q4_0: return WeightFormat{t, 32, 16, 0, 2};
    case TensorType::Q4_1: return WeightFormat{t, 32, 16, 0, 4};
    case TensorType::Q5_0: return WeightFormat{t, 32, 16, 4, 2};
    case TensorType::Q5_1: return WeightFormat{t, 32, 16, 4, 4};
    case TensorType::Q8_0: return WeightFormat{t, 32, 32, 0, 2};
    case TensorType::IQ4_NL: return WeightFormat{t, 32, 16, 0, 2};
    case TensorType::MXFP4: return WeightFormat{t, 32, 16, 0, 2};
    case TensorType::Q2_K: return WeightFormat{t, 256, 8, 0, 20};
    case TensorType::Q3_K: return WeightFormat{t, 256, 8, 4, 16};
    case TensorType::Q4_K: return WeightFormat{t, 256, 16, 0, 16};
    case TensorType::Q5_K: return WeightFormat{t, 256, 16, 4, 16};
    case TensorType::Q6_K: return WeightFormat{t, 256, 16, 8, 20};
    case TensorType::IQ4_XS: return WeightFormat{t, 256, 16, 0, 8};
    default: break;
  }
  return error("tensor type %s has no Vulkan kernels", std::string(type_name(t)).c_str());
}

void repack_row(const WeightFormat& f, const uint8_t* src, int64_t cols, uint8_t* q, uint8_t* h, uint8_t* m) {
  const int64_t groups = (cols + 31) / 32;
  const int64_t blocks = cols / f.block_elems;
  switch (f.type) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16: {
      const size_t n = size_t(cols) * (f.type == TensorType::F32 ? 4 : 2);
      std::memcpy(q, src, n);
      std::memset(q + n, 0, size_t(groups) * f.q_bytes - n);
      return;
    }
    case TensorType::Q4_0:
    case TensorType::IQ4_NL:
      for (int64_t i = 0; i < blocks; ++i) {
        const auto* b = reinterpret_cast<const BlockQ4_0*>(src) + i;
        std::memcpy(q + 16 * i, b->qs, 16);
        put16(m + 2 * i, b->d);
      }
      return;
    case TensorType::MXFP4:
      for (int64_t i = 0; i < blocks; ++i) {
        const auto* b = reinterpret_cast<const BlockMXFP4*>(src) + i;
        std::memcpy(q + 16 * i, b->qs, 16);
        put16(m + 2 * i, b->e);
      }
      return;
    case TensorType::Q4_1:
      for (int64_t i = 0; i < blocks; ++i) {
        const auto* b = reinterpret_cast<const BlockQ4_1*>(src) + i;
        std::memcpy(q + 16 * i, b->qs, 16);
        put16(m + 4 * i, b->d);
        put16(m + 4 * i + 2, b->m);
      }
      return;
    case TensorType::Q5_0:
      for (int64_t i = 0; i < blocks; ++i) {
        const auto* b = reinterpret_cast<const BlockQ5_0*>(src) + i;
        std::memcpy(q + 16 * i, b->qs, 16);
        uint8_t bits[32];
        unpack_qh32(b->qh, bits);
        pack1(bits, h + 4 * i);
        put16(m + 2 * i, b->d);
      }
      return;
    case TensorType::Q5_1:
      for (int64_t i = 0; i < blocks; ++i) {
        const auto* b = reinterpret_cast<const BlockQ5_1*>(src) + i;
        std::memcpy(q + 16 * i, b->qs, 16);
        uint8_t bits[32];
        unpack_qh32(b->qh, bits);
        pack1(bits, h + 4 * i);
        put16(m + 4 * i, b->d);
        put16(m + 4 * i + 2, b->m);
      }
      return;
    case TensorType::Q8_0:
      for (int64_t i = 0; i < blocks; ++i) {
        const auto* b = reinterpret_cast<const BlockQ8_0*>(src) + i;
        std::memcpy(q + 32 * i, b->qs, 32);
        put16(m + 2 * i, b->d);
      }
      return;
    case TensorType::IQ4_XS:
      for (int64_t i = 0; i < blocks; ++i) {
        const auto* b = reinterpret_cast<const BlockIQ4_XS*>(src) + i;
        std::memcpy(q + 128 * i, b->qs, 128);  // sub-block ib is qs[16 ib ..], already nibble-paired
        std::memcpy(m + 8 * i, b, 8);          // d, scales_h, scales_l[4]
      }
      return;
    case TensorType::Q2_K:
      for (int64_t i = 0; i < blocks; ++i)
        repack_q2_k(reinterpret_cast<const BlockQ2_K*>(src)[i], q + 64 * i, m + 20 * i);
      return;
    case TensorType::Q3_K:
      for (int64_t i = 0; i < blocks; ++i)
        repack_q3_k(reinterpret_cast<const BlockQ3_K*>(src)[i], q + 64 * i, h + 32 * i, m + 16 * i);
      return;
    case TensorType::Q4_K:
      for (int64_t i = 0; i < blocks; ++i) repack_q4_k(reinterpret_cast<const BlockQ4_K*>(src)[i], q + 128 * i, m + 16 * i);
      return;
    case TensorType::Q5_K:
      for (int64_t i = 0; i < blocks; ++i)
        repack_q5_k(reinterpret_cast<const BlockQ5_K*>(src)[i], q + 128 * i, h + 32 * i, m + 16 * i);
      return;
    case TensorType::Q6_K:
      for (int64_t i = 0; i < blocks; ++i)
        repack_q6_k(reinterpret_cast<const BlockQ6_K*>(src)[i], q + 128 * i, h + 64 * i, m + 20 * i);
      return;
    default: break;
  }
}

}  // namespace zinc::vulkan
