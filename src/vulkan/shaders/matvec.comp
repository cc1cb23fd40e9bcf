#version 450
// Decode matrix-vector product y[t][r] = sum_k W[r][k] x[t][k] for a few tokens, fused
// with dequantization of W (repacked layout: src/vulkan/weights.h).
// Defines: TYPE_<T>; INT8: x is quantized per 32-group to int8 and multiplied with integer dot
// products; SUBGROUP: reductions use subgroup arithmetic (else shared memory only).
// Each workgroup computes kRows rows (two matrices of kRows rows each when kPair: the output is
// then silu(W0 x) * (W1 x)); every thread walks the groups g = tid, tid + kGroupSize, ... of all
// its rows, so consecutive threads read consecutive 16-byte code records. x is read through the
// cache rather than staged: all workgroups of a multiprocessor then share one cached copy.
// With flags bit 1 the input is RMS-normalised on the fly: x is taken as x * norm_w and every
// result is scaled by 1 / sqrt(mean(x^2) + eps), which the workgroup sums as it reads x.
// Flags bit 2: the conv epilogue of matvec_conv.glsl (not with kPair). The gated normalisation
// (bit 3) is matvec_staged.comp's only. Bit 4 with bit 1: workgroup 0 also writes the normalised
// x to xn (same stride as x).
#extension GL_EXT_control_flow_attributes : enable
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint kGroupSize = 128;
layout(constant_id = 1) const uint kRows = 2;
layout(constant_id = 2) const bool kPair = false;
layout(constant_id = 3) const uint kMinSubgroupSize = 1;

#define TWO_WEIGHTS
#include "quant.glsl"
#ifdef INT8
#include "int8_dot.glsl"
#endif

layout(std430, binding = 2) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 2) readonly buffer X1 { float x1[]; };
layout(std430, binding = 3) buffer Y { float y[]; };
layout(std430, binding = 4) readonly buffer R { float residual[]; };
layout(std430, binding = 5) readonly buffer N4 { vec4 norm_w4[]; };
layout(std430, binding = 5) readonly buffer N1 { float norm_w1[]; };
layout(std430, binding = 10) writeonly buffer XN { float xn[]; };

layout(push_constant) uniform Push {
  uint rows;      // rows of this chunk
  uint cols;
  uint n_tokens;
  uint x_stride;  // floats from one token's x to the next (multiple of 4)
  uint y_stride;  // floats from one token's y (and residual) to the next
  uint y_offset;  // index of this chunk's first row within a token's y
  uint flags;     // bit 0: add residual[t * y_stride + y_offset + r]; bit 1: normalise x
  float eps;      // of the normalisation
  uvec4 planes0;  // plane word offsets (q, h, m) of W0's chunk
  uvec4 planes1;  // of W1's chunk (kPair)
  uint rows_per_group, k_slices;                             // matvec_staged.comp only
  uint conv_taps, conv_channels, slot_floats, state_offset;  // the conv epilogue
  uint gate_stride, norm_group;                              // matvec_staged.comp only
} p;

#include "matvec_conv.glsl"

const uint kMats = kPair ? 2 : 1;
const uint kValues = kMats * kRows;
const uint kSlots = kGroupSize / kMinSubgroupSize;  // partial sums per value
const uint kSums = kValues + 1;                     // the results, then sum(x^2)
shared float partial[kSums * kSlots];

// x[t][32 g .. 32 g + 32), zero past cols.
void load_x(uint t, uint g, out vec4 xv[8]) {
  const uint base = t * p.x_stride + 32 * g;
#ifdef FLOAT_WEIGHTS
  if (32 * g + 32 > p.cols) {  // only float rows end in a partial group
    [[unroll]] for (uint j = 0; j < 8; ++j)
      [[unroll]] for (uint i = 0; i < 4; ++i) xv[j][i] = 32 * g + 4 * j + i < p.cols ? x1[base + 4 * j + i] : 0.0;
    return;
  }
#endif
  [[unroll]] for (uint j = 0; j < 8; ++j) xv[j] = x4[base / 4 + j];
}

// xv *= norm_w[32 g .. 32 g + 32), adding sum(xv^2) before the product to ss.
void apply_norm(uint g, inout vec4 xv[8], inout float ss) {
  [[unroll]] for (uint j = 0; j < 8; ++j) ss += dot(xv[j], xv[j]);
#ifdef FLOAT_WEIGHTS
  if (32 * g + 32 > p.cols) {
    [[unroll]] for (uint j = 0; j < 8; ++j)
      [[unroll]] for (uint i = 0; i < 4; ++i) xv[j][i] *= 32 * g + 4 * j + i < p.cols ? norm_w1[32 * g + 4 * j + i] : 0.0;
    return;
  }
#endif
  [[unroll]] for (uint j = 0; j < 8; ++j) xv[j] *= norm_w4[8 * g + j];
}

void main() {
  init_codebook();
  const uint tid = gl_LocalInvocationID.x;
  const uint row0 = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * kRows;
  const uint groups = (p.cols + 31) / 32;
  const uint blocks = groups / BLOCK_GROUPS;
  const bool norm = (p.flags & 2u) != 0u;

  // Tokens one after another: after the first, this workgroup's rows come from the cache.
  for (uint t = 0; t < p.n_tokens; ++t) {
    float acc[kSums];
    [[unroll]] for (uint v = 0; v < kSums; ++v) acc[v] = 0.0;
    for (uint g = tid; g < groups; g += kGroupSize) {
      Group gr[kValues];
      [[unroll]] for (uint v = 0; v < kValues; ++v) {
        const uint which = v / kRows;
        const uint row = min(row0 + v % kRows, p.rows - 1);
        gr[v] = load_group(which, which == 0 ? p.planes0 : p.planes1, row * groups + g,
                           row * blocks + g / BLOCK_GROUPS, g % BLOCK_GROUPS);
      }
      vec4 xv[8];
      load_x(t, g, xv);
      if (norm) apply_norm(g, xv, acc[kValues]);
#ifdef HAS_OFFSET
      const vec4 s4 = xv[0] + xv[1] + xv[2] + xv[3], s4h = xv[4] + xv[5] + xv[6] + xv[7];
      const float sx0 = s4.x + s4.y + s4.z + s4.w, sx1 = s4h.x + s4h.y + s4h.z + s4h.w;
#endif
#ifdef INT8
      const QuantX qx = quantize_x(xv);
#endif
      [[unroll]] for (uint v = 0; v < kValues; ++v) {
#ifdef INT8
        int s0 = 0, s1 = 0;
        [[unroll]] for (uint j = 0; j < 4; ++j) {
          s0 += sdot4(gr[v].c[0][j], qx.q[j]);
          s1 += sdot4(gr[v].c[1][j], qx.q[4 + j]);
        }
#ifdef CODE_CENTER
        s0 -= CODE_CENTER * qx.s0;
        s1 -= CODE_CENTER * qx.s1;
#endif
        float r = qx.d * (gr[v].ab.x * float(s0) + gr[v].ab.y * float(s1));
#elif defined(FLOAT_WEIGHTS)
        float r = 0.0;
        [[unroll]] for (uint j = 0; j < 8; ++j) r += dot(group_vec(gr[v], j), xv[j]);
#else
        float q0 = 0.0, q1 = 0.0;
        [[unroll]] for (uint j = 0; j < 4; ++j) {
          q0 += dot(group_vec(gr[v], j), xv[j]);
          q1 += dot(group_vec(gr[v], 4 + j), xv[4 + j]);
        }
        float r = gr[v].ab.x * q0 + gr[v].ab.y * q1;
#endif
#if defined(INT8) && defined(CODE_CENTER)
        r += (gr[v].ab.z + CODE_CENTER * gr[v].ab.x) * sx0 + (gr[v].ab.w + CODE_CENTER * gr[v].ab.y) * sx1;
#elif defined(HAS_OFFSET)
        r += gr[v].ab.z * sx0 + gr[v].ab.w * sx1;
#endif
        acc[v] += r;
      }
    }

    // Workgroup sums of every value, then one thread per row writes.
#ifdef SUBGROUP
    [[unroll]] for (uint v = 0; v < kSums; ++v) {
      const float s = subgroupAdd(acc[v]);
      if (subgroupElect()) partial[v * kSlots + gl_SubgroupID] = s;
    }
    barrier();
    const uint n_parts = gl_NumSubgroups;
#else
    [[unroll]] for (uint v = 0; v < kSums; ++v) partial[v * kSlots + tid] = acc[v];
    barrier();
    for (uint s = kGroupSize / 2; s > 0; s >>= 1) {
      if (tid < s)
        [[unroll]] for (uint v = 0; v < kSums; ++v) partial[v * kSlots + tid] += partial[v * kSlots + tid + s];
      barrier();
    }
    const uint n_parts = 1;
#endif
    float scale = 1.0;
    if (norm) {
      float ss = 0.0;
      for (uint i = 0; i < n_parts; ++i) ss += partial[kValues * kSlots + i];
      scale = inversesqrt(ss / float(p.cols) + p.eps);
    }
    if (tid < kRows && row0 + tid < p.rows) {
      float sum = 0.0, up = 0.0;
      for (uint i = 0; i < n_parts; ++i) sum += partial[tid * kSlots + i];
      sum *= scale;
      if (kPair) {
        for (uint i = 0; i < n_parts; ++i) up += partial[(kRows + tid) * kSlots + i];
        sum = sum / (1.0 + exp(-sum)) * (up * scale);
      }
      const uint dst = t * p.y_stride + p.y_offset + row0 + tid;
      if ((p.flags & 1u) != 0u) sum += residual[dst];
      if ((p.flags & kConvFlag) != 0u) sum = conv_epilogue(conv_slot(t), p.y_offset + row0 + tid, sum);
      y[dst] = sum;
    }
    if (norm && (p.flags & 16u) != 0u && row0 == 0) {
      for (uint i = tid; i < p.cols; i += kGroupSize) xn[t * p.x_stride + i] = x1[t * p.x_stride + i] * norm_w1[i] * scale;
    }
    barrier();  // partial[] is reused by the next token
  }
}
