// Scalar conversions between float32 and the 16-bit formats stored in GGUF files.
#pragma once

#include <cstdint>
#include <cstring>

namespace zinc {

inline float bits_to_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t f32_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// IEEE binary16 -> float32, exact for every input (denormals, inf, NaN).
inline float fp16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) return bits_to_f32(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return bits_to_f32(sign);
    // Denormal: value = mant * 2^-24.
    float v = float(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return bits_to_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

// float32 -> IEEE binary16 with round-to-nearest-even (what F16C's vcvtps2ph does).
inline uint16_t f32_to_fp16(float f) {
  const uint32_t x = f32_to_bits(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0);  // inf / NaN
  if (ax >= 0x477ff000u) return sign | 0x7c00;  // rounds to >= 65520: overflow to inf
  if (ax < 0x38800000u) {
    // Result is a half denormal (or zero): value / 2^-24, rounded to nearest even.
    float v = bits_to_f32(ax);
    float scaled = v * 16777216.0f;  // exact for these magnitudes
    uint32_t r = uint32_t(scaled);
    float frac = scaled - float(r);
    if (frac > 0.5f || (frac == 0.5f && (r & 1))) r++;
    return sign | uint16_t(r);
  }
  uint32_t mant = ax & 0x7fffff;
  uint32_t exp = (ax >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
  return sign | uint16_t(h);
}

inline float bf16_to_f32(uint16_t b) { return bits_to_f32(uint32_t(b) << 16); }

// float32 -> bfloat16, round-to-nearest-even; NaN stays a (quiet) NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 64);
  return uint16_t((u + (0x7fff + ((u >> 16) & 1))) >> 16);
}

}  // namespace zinc
