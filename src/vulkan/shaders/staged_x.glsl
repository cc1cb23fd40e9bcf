// x staged in shared memory as int8 per 32-group for the staged matvecs (matvec_staged.comp,
// moe_matvec_staged.comp): the including shader defines TYPE_<T>, the spec constant kMaxGroups
// and includes quant.glsl first; it loads (and transforms) a group's 32 values and calls
// stage_values(), then group_dot() multiplies a weight group with a staged group.
#extension GL_EXT_spirv_intrinsics : require
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4_packed(uint a, uint b, spirv_literal int packed_format);
int sdot4(uint a, uint b) { return sdot4_packed(a, b, 0); }

// Unsigned codes are centred (code - C) before the integer dot product and the offset term
// adjusted (A * code + B = A * (code - C) + (B + C * A)), so that the rounding error of x meets
// weights of half the magnitude.
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
#else
#define CODE_CENTER 0
#endif

shared uvec4 s_xq[kMaxGroups * 2];  // int8 codes of x, 32 per group
shared vec4 s_xf[kMaxGroups];       // scale, float sums of the halves, 0
shared ivec2 s_xs[kMaxGroups];      // code sums of the halves

// Quantizes 32 values of x into staged group g.
void stage_values(vec4 xv[8], uint g) {
  const vec4 s4 = xv[0] + xv[1] + xv[2] + xv[3], s4h = xv[4] + xv[5] + xv[6] + xv[7];
  vec4 m4 = max(abs(xv[0]), abs(xv[1]));
  [[unroll]] for (uint j = 2; j < 8; ++j) m4 = max(m4, abs(xv[j]));
  const float amax = max(max(m4.x, m4.y), max(m4.z, m4.w));
  const float inv = amax > 0.0 ? 1.0 / amax : 0.0;
  uint xq[8];
  [[unroll]] for (uint j = 0; j < 8; ++j) xq[j] = packSnorm4x8(xv[j] * inv);
  int xs0 = 0, xs1 = 0;
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    xs0 += sdot4(0x01010101u, xq[j]);
    xs1 += sdot4(0x01010101u, xq[4 + j]);
  }
  s_xq[2 * g] = uvec4(xq[0], xq[1], xq[2], xq[3]);
  s_xq[2 * g + 1] = uvec4(xq[4], xq[5], xq[6], xq[7]);
  s_xf[g] = vec4(amax / 127.0, s4.x + s4.y + s4.z + s4.w, s4h.x + s4h.y + s4h.z + s4h.w, 0.0);
  s_xs[g] = ivec2(xs0, xs1);
}

// One group of one row against staged group g.
float group_dot(Group gr, uint g) {
  const uvec4 xa = s_xq[2 * g], xb = s_xq[2 * g + 1];
  const vec4 xf = s_xf[g];
  int s0 = 0, s1 = 0;
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    s0 += sdot4(gr.c[0][j], xa[j]);
    s1 += sdot4(gr.c[1][j], xb[j]);
  }
#if CODE_CENTER != 0
  const ivec2 xs = s_xs[g];
  s0 -= CODE_CENTER * xs.x;
  s1 -= CODE_CENTER * xs.y;
#endif
  float r = xf.x * (gr.ab.x * float(s0) + gr.ab.y * float(s1));
#ifdef HAS_OFFSET
  r += (gr.ab.z + CODE_CENTER * gr.ab.x) * xf.y + (gr.ab.w + CODE_CENTER * gr.ab.y) * xf.z;
#endif
  return r;
}
