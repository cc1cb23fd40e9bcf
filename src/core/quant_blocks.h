// Block layouts of the quantized formats, exactly as stored (model-spec §2.3). All fields are
// little-endian; `uint16_t d` fields are IEEE binary16 (see fp16.h).
#pragma once

#include <cstdint>

namespace zinc {

constexpr int kQK = 32;    // elements per block of the 32-element formats
constexpr int kQKK = 256;  // elements per K-quant super-block

struct BlockQ4_0 { uint16_t d; uint8_t qs[kQK / 2]; };
struct BlockQ4_1 { uint16_t d, m; uint8_t qs[kQK / 2]; };
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[kQK / 2]; };
struct BlockQ5_1 { uint16_t d, m; uint8_t qh[4]; uint8_t qs[kQK / 2]; };
struct BlockQ8_0 { uint16_t d; int8_t qs[kQK]; };
struct BlockQ8_1 { uint16_t d, s; int8_t qs[kQK]; };  // activations only; s = d * sum(qs)
struct BlockIQ4_NL { uint16_t d; uint8_t qs[kQK / 2]; };
struct BlockMXFP4 { uint8_t e; uint8_t qs[kQK / 2]; };

struct BlockQ2_K { uint8_t scales[kQKK / 16]; uint8_t qs[kQKK / 4]; uint16_t d, dmin; };
struct BlockQ3_K { uint8_t hmask[kQKK / 8]; uint8_t qs[kQKK / 4]; uint8_t scales[12]; uint16_t d; };
struct BlockQ4_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[kQKK / 2]; };
struct BlockQ5_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[kQKK / 8]; uint8_t qs[kQKK / 2]; };
struct BlockQ6_K { uint8_t ql[kQKK / 2]; uint8_t qh[kQKK / 4]; int8_t scales[kQKK / 16]; uint16_t d; };
struct BlockIQ4_XS { uint16_t d; uint16_t scales_h; uint8_t scales_l[kQKK / 64]; uint8_t qs[kQKK / 2]; };
struct BlockQ8_K { float d; int8_t qs[kQKK]; int16_t bsums[kQKK / 16]; };  // activations only

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockIQ4_NL) == 18 && sizeof(BlockMXFP4) == 17);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockQ8_K) == 292);

// The IQ4_NL / IQ4_XS codebook and the doubled E2M1 values of MXFP4 (format definitions).
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};
inline constexpr int8_t kMXFP4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

}  // namespace zinc
