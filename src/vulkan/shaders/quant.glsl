// Reads one 32-element group of a repacked weight matrix (layout: src/vulkan/weights.h).
// The including shader defines TYPE_<T> (and TWO_WEIGHTS to read a second matrix at binding 1);
// binding 0 (and 1) belong to this file. Shaders using TABLE_CODES types call init_codebook()
// before reading groups.
#extension GL_EXT_control_flow_attributes : enable

#if defined(TYPE_F32)
#define CODE_VECS 8
#define FLOAT_WEIGHTS
#elif defined(TYPE_F16) || defined(TYPE_BF16)
#define CODE_VECS 4
#define FLOAT_WEIGHTS
#else
#define CODE_VECS 2
#endif

#if defined(TYPE_Q2_K) || defined(TYPE_Q3_K) || defined(TYPE_Q4_K) || defined(TYPE_Q5_K) || defined(TYPE_Q6_K) || \
    defined(TYPE_IQ4_XS)
#define BLOCK_GROUPS 8
#else
#define BLOCK_GROUPS 1
#endif

#if defined(TYPE_IQ4_NL) || defined(TYPE_IQ4_XS) || defined(TYPE_MXFP4)
#define TABLE_CODES
#endif
#if !defined(FLOAT_WEIGHTS) && !defined(TABLE_CODES) && !defined(TYPE_Q8_0)
#define HAS_OFFSET  // value = A * code + B
#endif

layout(std430, binding = 0) readonly buffer WA4 { uvec4 wa4[]; };
layout(std430, binding = 0) readonly buffer WA2 { uvec2 wa2[]; };
layout(std430, binding = 0) readonly buffer WA1 { uint wa1[]; };
#ifdef TWO_WEIGHTS
layout(std430, binding = 1) readonly buffer WB4 { uvec4 wb4[]; };
layout(std430, binding = 1) readonly buffer WB2 { uvec2 wb2[]; };
layout(std430, binding = 1) readonly buffer WB1 { uint wb1[]; };
uvec4 w_load4(uint which, uint i) { return which == 0u ? wa4[i] : wb4[i]; }
uvec2 w_load2(uint which, uint i) { return which == 0u ? wa2[i] : wb2[i]; }
uint w_load1(uint which, uint i) { return which == 0u ? wa1[i] : wb1[i]; }
#else
uvec4 w_load4(uint which, uint i) { return wa4[i]; }
uvec2 w_load2(uint which, uint i) { return wa2[i]; }
uint w_load1(uint which, uint i) { return wa1[i]; }
#endif

// Codes (or raw values) of a group and its affine parameters: elements 0..15 take
// A = ab.x, B = ab.z; elements 16..31 take A = ab.y, B = ab.w.
struct Group {
  uvec4 c[CODE_VECS];
  vec4 ab;
};

#ifdef TABLE_CODES
shared float s_codebook[16];
void init_codebook() {
  if (gl_LocalInvocationIndex < 16) {
#ifdef TYPE_MXFP4
    const float kValues[16] = float[16](0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
#else
    const float kValues[16] = float[16](-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
#endif
    s_codebook[gl_LocalInvocationIndex] = kValues[gl_LocalInvocationIndex];
  }
  barrier();
}
#else
void init_codebook() {}
#endif

uvec4 nib_lo(uvec4 w) { return w & 0x0F0F0F0Fu; }
uvec4 nib_hi(uvec4 w) { return (w >> 4) & 0x0F0F0F0Fu; }
uvec4 two_lo(uvec2 u) { return (uvec4(u.x, u.y, u.x, u.y) >> uvec4(0, 0, 2, 2)) & 0x03030303u; }
uvec4 two_hi(uvec2 u) { return (uvec4(u.x, u.y, u.x, u.y) >> uvec4(4, 4, 6, 6)) & 0x03030303u; }
uvec4 one_lo(uint h) { return (uvec4(h) >> uvec4(0, 1, 2, 3)) & 0x01010101u; }
uvec4 one_hi(uint h) { return (uvec4(h) >> uvec4(4, 5, 6, 7)) & 0x01010101u; }

float half_lo(uint w) { return unpackHalf2x16(w).x; }
uint byte_of(uvec4 v, uint i) { return (v[i >> 2] >> (8u * (i & 3u))) & 0xFFu; }

// The words behind one group, loaded and not yet decoded (so that a kernel can issue the loads
// of its next tile early and decode them later): codes, high bits, block scale words.
struct RawGroup {
  uvec4 c[CODE_VECS];
  uvec4 m;
  uvec2 h;
};

// Group `sub` (0..BLOCK_GROUPS-1) of block bi, group index gi (= row * groups_per_row + g);
// planes: q, h, m word offsets.
RawGroup load_raw(uint which, uvec4 planes, uint gi, uint bi, uint sub) {
  RawGroup r;
  r.m = uvec4(0u);
  r.h = uvec2(0u);
#if defined(TYPE_F32)
  [[unroll]] for (uint j = 0; j < 8; ++j) r.c[j] = w_load4(which, planes.x / 4 + 8 * gi + j);
#elif defined(TYPE_F16) || defined(TYPE_BF16)
  [[unroll]] for (uint j = 0; j < 4; ++j) r.c[j] = w_load4(which, planes.x / 4 + 4 * gi + j);
#elif defined(TYPE_Q8_0)
  r.c[0] = w_load4(which, planes.x / 4 + 2 * gi);
  r.c[1] = w_load4(which, planes.x / 4 + 2 * gi + 1);
#elif defined(TYPE_Q2_K) || defined(TYPE_Q3_K)
  r.c[0] = uvec4(w_load2(which, planes.x / 2 + gi), 0u, 0u);
  r.c[1] = uvec4(0u);
#else
  r.c[0] = w_load4(which, planes.x / 4 + gi);
  r.c[1] = uvec4(0u);
#endif

#if defined(TYPE_Q5_0) || defined(TYPE_Q5_1) || defined(TYPE_Q5_K) || defined(TYPE_Q3_K)
  r.h.x = w_load1(which, planes.y + gi);
#elif defined(TYPE_Q6_K)
  r.h = w_load2(which, planes.y / 2 + gi);
#endif

#if defined(TYPE_Q8_0) || defined(TYPE_Q4_0) || defined(TYPE_IQ4_NL) || defined(TYPE_Q5_0) || defined(TYPE_MXFP4)
  r.m.x = w_load1(which, planes.z + (bi >> 1));
#elif defined(TYPE_Q4_1) || defined(TYPE_Q5_1)
  r.m.x = w_load1(which, planes.z + bi);
#elif defined(TYPE_IQ4_XS)
  r.m.xy = uvec2(w_load1(which, planes.z + 2 * bi), w_load1(which, planes.z + 2 * bi + 1));
#elif defined(TYPE_Q2_K) || defined(TYPE_Q6_K)
  r.m.xy = uvec2(w_load1(which, planes.z + 5 * bi), w_load1(which, planes.z + 5 * bi + 1 + sub / 2));
#elif defined(TYPE_Q3_K) || defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
  r.m = w_load4(which, planes.z / 4 + bi);
#endif
  return r;
}

// Decodes what load_raw(.., bi, sub) read.
Group decode_group(RawGroup r, uint bi, uint sub) {
  Group gr;
  gr.ab = vec4(1.0, 1.0, 0.0, 0.0);
#if defined(TYPE_Q2_K) || defined(TYPE_Q3_K)
  gr.c[0] = two_lo(r.c[0].xy);
  gr.c[1] = two_hi(r.c[0].xy);
#elif defined(FLOAT_WEIGHTS) || defined(TYPE_Q8_0)
  gr.c = r.c;
#else
  gr.c[0] = nib_lo(r.c[0]);
  gr.c[1] = nib_hi(r.c[0]);
#endif

#if defined(TYPE_Q5_0) || defined(TYPE_Q5_1) || defined(TYPE_Q5_K)
  gr.c[0] |= one_lo(r.h.x) << 4;
  gr.c[1] |= one_hi(r.h.x) << 4;
#elif defined(TYPE_Q3_K)
  gr.c[0] |= one_lo(r.h.x) << 2;
  gr.c[1] |= one_hi(r.h.x) << 2;
#elif defined(TYPE_Q6_K)
  gr.c[0] |= two_lo(r.h) << 4;
  gr.c[1] |= two_hi(r.h) << 4;
#endif

#if defined(TYPE_Q8_0) || defined(TYPE_Q4_0) || defined(TYPE_IQ4_NL) || defined(TYPE_Q5_0)
  const float d = unpackHalf2x16(r.m.x >> (16u * (bi & 1u))).x;
#if defined(TYPE_Q4_0)
  gr.ab = vec4(d, d, -8.0 * d, -8.0 * d);
#elif defined(TYPE_Q5_0)
  gr.ab = vec4(d, d, -16.0 * d, -16.0 * d);
#else
  gr.ab = vec4(d, d, 0.0, 0.0);
#endif
#elif defined(TYPE_Q4_1) || defined(TYPE_Q5_1)
  const vec2 dm = unpackHalf2x16(r.m.x);
  gr.ab = vec4(dm.x, dm.x, dm.y, dm.y);
#elif defined(TYPE_MXFP4)
  const uint e = (r.m.x >> (16u * (bi & 1u))) & 0xFFu;
  const float d = e < 2u ? uintBitsToFloat(0x00200000u << e) : uintBitsToFloat((e - 1u) << 23);
  gr.ab = vec4(d, d, 0.0, 0.0);
#elif defined(TYPE_IQ4_XS)
  const uint m0 = r.m.x, m1 = r.m.y;
  const uint ls = ((m1 >> (4u * sub)) & 0xFu) | (((m0 >> (16u + 2u * sub)) & 3u) << 4);
  const float d = half_lo(m0) * float(int(ls) - 32);
  gr.ab = vec4(d, d, 0.0, 0.0);
#elif defined(TYPE_Q2_K)
  const uint sw = r.m.y >> (16u * (sub & 1u));
  const vec2 dm = unpackHalf2x16(r.m.x);
  const uvec2 sc = uvec2(sw & 0xFFu, (sw >> 8) & 0xFFu);
  gr.ab = vec4(dm.x * vec2(sc & 0xFu), -dm.y * vec2(sc >> 4));
#elif defined(TYPE_Q3_K)
  const uvec4 mt = r.m;
  const float d = half_lo(mt.w);
  vec2 s;
  [[unroll]] for (uint k = 0; k < 2; ++k) {
    const uint sb = 2 * sub + k;
    const uint low4 = sb < 8u ? byte_of(mt, sb) & 0xFu : byte_of(mt, sb - 8u) >> 4;
    const uint high2 = (byte_of(mt, 8u + (sb & 3u)) >> (2u * (sb >> 2))) & 3u;
    s[k] = d * float(int(low4 | (high2 << 4)) - 32);
  }
  gr.ab = vec4(s, -4.0 * s);
#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
  const uvec4 mt = r.m;
  const vec2 dm = unpackHalf2x16(mt.x);
  // 6-bit scale and min of sub-block `sub` (scale bytes 0..11 are words y, z, w). Branch-free
  // with constant component indices: neighbouring threads hold different sub-blocks.
  const uint sh = 8u * (sub & 3u);
  const uint b1 = (mt.y >> sh) & 0xFFu, b2 = (mt.z >> sh) & 0xFFu, b3 = (mt.w >> sh) & 0xFFu;
  const bool lo = sub < 4u;
  const uint sc = lo ? b1 & 63u : (b3 & 0xFu) | ((b1 >> 6) << 4);
  const uint mn = lo ? b2 & 63u : (b3 >> 4) | ((b2 >> 6) << 4);
  const float a = dm.x * float(sc), b = -dm.y * float(mn);
  gr.ab = vec4(a, a, b, b);
#elif defined(TYPE_Q6_K)
  const float d = half_lo(r.m.x);
  const uint sw = r.m.y;
  const int sh = int(16u * (sub & 1u));
  const vec2 s = d * vec2(bitfieldExtract(int(sw), sh, 8), bitfieldExtract(int(sw), sh + 8, 8));
  gr.ab = vec4(s, -32.0 * s);
#endif
  return gr;
}

Group load_group(uint which, uvec4 planes, uint gi, uint bi, uint sub) {
  return decode_group(load_raw(which, planes, gi, bi, sub), bi, sub);
}

// Elements 4j..4j+3 of the group: codes as floats for quantized types (before A and B),
// values for float types.
vec4 group_vec(Group gr, uint j) {
#if defined(TYPE_F32)
  return uintBitsToFloat(gr.c[j]);
#elif defined(TYPE_F16)
  const uvec4 v = gr.c[j >> 1];
  return (j & 1u) == 0u ? vec4(unpackHalf2x16(v.x), unpackHalf2x16(v.y)) : vec4(unpackHalf2x16(v.z), unpackHalf2x16(v.w));
#elif defined(TYPE_BF16)
  const uvec4 v = gr.c[j >> 1];
  const uvec2 p = (j & 1u) == 0u ? v.xy : v.zw;
  return uintBitsToFloat(uvec4(p.x << 16, p.x & 0xFFFF0000u, p.y << 16, p.y & 0xFFFF0000u));
#else
  const uint c = gr.c[j >> 2][j & 3u];
#ifdef TABLE_CODES
  return vec4(s_codebook[c & 0xFu], s_codebook[(c >> 8) & 0xFu], s_codebook[(c >> 16) & 0xFu], s_codebook[c >> 24]);
#else
  const int ci = int(c);
  return vec4(bitfieldExtract(ci, 0, 8), bitfieldExtract(ci, 8, 8), bitfieldExtract(ci, 16, 8), bitfieldExtract(ci, 24, 8));
#endif
#endif
}

// Dequantized elements 4j..4j+3.
vec4 group_values(Group gr, uint j) {
#ifdef FLOAT_WEIGHTS
  return group_vec(gr, j);
#else
  const bool lo = j < 4u;
  return group_vec(gr, j) * (lo ? gr.ab.x : gr.ab.y) + (lo ? gr.ab.z : gr.ab.w);
#endif
}
