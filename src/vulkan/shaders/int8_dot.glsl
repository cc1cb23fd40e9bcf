// Integer dot products for the int8 matvecs (matvec.comp and moe_matvec.comp with INT8,
// matvec_staged.comp): sdot4, the code centre of the weight type TYPE_<T>, and the quantization
// of 32 values of x to int8.
#extension GL_EXT_spirv_intrinsics : require
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4_packed(uint a, uint b, spirv_literal int packed_format);
int sdot4(uint a, uint b) { return sdot4_packed(a, b, 0); }

// Unsigned codes are centred (code - C) before the integer dot product, with the offset term
// adjusted (A * code + B = A * (code - C) + (B + C * A)): the rounding error of x then meets
// weights of half the magnitude. Defined only for types with unsigned codes.
#if defined(TYPE_Q4_0) || defined(TYPE_Q4_1) || defined(TYPE_Q4_K)
#define CODE_CENTER 8
#elif defined(TYPE_Q5_0) || defined(TYPE_Q5_1) || defined(TYPE_Q5_K)
#define CODE_CENTER 16
#elif defined(TYPE_Q2_K)
#define CODE_CENTER 2
#elif defined(TYPE_Q3_K)
#define CODE_CENTER 4
#elif defined(TYPE_Q6_K)
#define CODE_CENTER 32
#endif

// 32 values of x as int8 codes (4 per word), their scale (amax / 127) and the code sums of the
// two halves (elements 0..15, 16..31).
struct QuantX {
  uint q[8];
  float d;
  int s0, s1;
};

QuantX quantize_x(vec4 xv[8]) {
  QuantX r;
  vec4 m4 = max(abs(xv[0]), abs(xv[1]));
  [[unroll]] for (uint j = 2; j < 8; ++j) m4 = max(m4, abs(xv[j]));
  const float amax = max(max(m4.x, m4.y), max(m4.z, m4.w));
  const float inv = amax > 0.0 ? 1.0 / amax : 0.0;
  r.d = amax / 127.0;
  [[unroll]] for (uint j = 0; j < 8; ++j) r.q[j] = packSnorm4x8(xv[j] * inv);
  r.s0 = 0;
  r.s1 = 0;
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    r.s0 += sdot4(0x01010101u, r.q[j]);
    r.s1 += sdot4(0x01010101u, r.q[4 + j]);
  }
  return r;
}
