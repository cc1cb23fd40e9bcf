#version 450
// Decode matvec on integer dot products with x staged once per workgroup: x (optionally
// RMS-normalised on the fly, as in matvec.comp) is quantized per 32-group to int8 into shared
// memory; then each subgroup takes two values at a time (two rows, or with kPair one row of both
// matrices), its lanes striding over the groups so that neighbouring lanes read neighbouring
// code records, and reduces with subgroupAdd; optionally (k_slices) several subgroups share a
// step, each over a slice of the groups. Push block and bindings as matvec.comp, plus the rows per
// workgroup and the slices. Needs cols a multiple of 32 and cols / 32 <= kMaxGroups.
// Flags bit 3: x is gated-RMS-normalised while staged (graph::GatedRmsNorm): per group of
// norm_group columns (a multiple of 32), x * norm_w[c % norm_group] * silu(gate[t][c]) is
// quantized, and each 32-group's scale and sums are then multiplied by the group's
// 1 / sqrt(mean(x^2) + eps). Bit 2: the conv epilogue of matvec_conv.glsl (not with kPair).
// Bits 5-9: the RoPE / KV store epilogues of matvec_rope_kv.glsl (not with kPair). Variants
// (kept out of the others' code, which the H200's decode is sensitive to): NORM_OUT, flags bit
// 10, the next norm's inputs (matvec_norm_out.glsl; plain rows only, not with kPair); TOPK, bit
// 11, each token's largest rows ranked (matvec_topk.glsl).
// With PREQUANT_X, x arrives quantized (Matvec::prequantize_x's records at binding 2: per token
// and group, the codes, then (scale, float sums of the halves, sum of x^2 before the norm
// weight), then the code sums): staging copies the records into shared memory as they are, and
// the norm scale (flags bit 1) comes from their sums of x^2. Not with the gated norm, the conv
// or RoPE / KV epilogues, or k_slices.
// With PHASE_CLOCK, token 0's phases are timed (phase_clock.glsl, binding 15): 0 entry, 1 x
// staged, 2 + i subgroup 0's row pass i done (i < 8), 10 all rows done.
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#ifdef PHASE_CLOCK
#extension GL_ARB_shader_clock : require
#extension GL_EXT_shader_realtime_clock : require
#define PHASE_CLOCK_BINDING 15
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint kGroupSize = 128;
layout(constant_id = 1) const uint kMaxGroups = 512;
layout(constant_id = 2) const bool kPair = false;
layout(constant_id = 3) const uint kMinSubgroupSize = 1;
layout(constant_id = 4) const uint kSteps = 2;  // groups per lane and row loaded before any is used (1..4)
const uint kMaxSteps = 4;

#define TWO_WEIGHTS
#include "quant.glsl"
#include "int8_dot.glsl"

layout(std430, binding = 2) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 2) readonly buffer XQ { uvec4 xq[]; };  // PREQUANT_X
layout(std430, binding = 3) coherent buffer Y { float y[]; };  // coherent: the head epilogue reads rows back
layout(std430, binding = 4) readonly buffer R { float residual[]; };
layout(std430, binding = 5) readonly buffer N4 { vec4 norm_w4[]; };
layout(std430, binding = 6) readonly buffer G4 { vec4 gate4[]; };

layout(push_constant) uniform Push {
  uint rows, cols, n_tokens, x_stride, y_stride, y_offset, flags;
  float eps;
  uvec4 planes0, planes1;
  uint rows_per_group;
  uint k_slices;  // subgroups sharing one row step, each over a slice of the groups
  uint conv_taps, conv_channels, slot_floats, state_offset;  // the conv epilogue
  uint gate_stride, norm_group;                              // the gated normalisation
  uint head_dim, n_pairs, table_offset, row_words;            // the RoPE / KV store epilogue
  uint pos_offset, seq_offset, pages_offset, max_pages;
} p;

#include "matvec_conv.glsl"
#include "matvec_rope_kv.glsl"
#ifdef NORM_OUT
#include "matvec_norm_out.glsl"
#endif
#ifdef TOPK
#include "matvec_topk.glsl"
#endif
#include "phase_clock.glsl"

shared uvec4 s_xq[kMaxGroups * 2];  // int8 codes of x, 32 per group
shared vec4 s_xf[kMaxGroups];       // scale, float sums of the halves, (w) below
shared ivec2 s_xs[kMaxGroups];      // code sums of the halves
// s_xf[g].w: with the gated normalisation, sum(x^2) of group g until the groups are scaled.
shared float s_ss[kGroupSize / kMinSubgroupSize];
shared vec2 s_part[kGroupSize / kMinSubgroupSize];
#include "int8_x.glsl"

// Quantizes group g of token t into shared memory; adds sum(x^2) to ss when normalising.
void stage_group(uint t, uint g, bool norm, bool gated, inout float ss) {
  vec4 xv[8];
  const uint base = (t * p.x_stride + 32 * g) / 4;
  [[unroll]] for (uint j = 0; j < 8; ++j) xv[j] = x4[base + j];
  float gss = 0.0;
  if (norm) {
    [[unroll]] for (uint j = 0; j < 8; ++j) {
      ss += dot(xv[j], xv[j]);
      xv[j] *= norm_w4[8 * g + j];
    }
  } else if (gated) {
    const uint gbase = (t * p.gate_stride + 32 * g) / 4, wbase = (32 * g) % p.norm_group / 4;
    [[unroll]] for (uint j = 0; j < 8; ++j) {
      gss += dot(xv[j], xv[j]);
      const vec4 z = gate4[gbase + j];
      xv[j] *= norm_w4[wbase + j] * (z / (1.0 + exp(-z)));
    }
  }
  const vec4 s4 = xv[0] + xv[1] + xv[2] + xv[3], s4h = xv[4] + xv[5] + xv[6] + xv[7];
  const QuantX qx = quantize_x(xv);
  s_xq[2 * g] = uvec4(qx.q[0], qx.q[1], qx.q[2], qx.q[3]);
  s_xq[2 * g + 1] = uvec4(qx.q[4], qx.q[5], qx.q[6], qx.q[7]);
  s_xf[g] = vec4(qx.d, s4.x + s4.y + s4.z + s4.w, s4h.x + s4h.y + s4h.z + s4h.w, gss);
  s_xs[g] = ivec2(qx.s0, qx.s1);
}

// Quantizes x of token t into shared memory as stage_group does (not gated), eight invocations
// of a subgroup to a 32-group, each loading and quantizing four values: on the H100 the
// per-invocation loop over whole groups (fully unrolled, about 4.5 KB of code run once a
// dispatch) cost more as instructions fetched than as work. Needs subgroups of 8 or more.
void stage_cooperative(uint t, bool norm, inout float ss) {
  const uint v0 = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID, j = v0 & 7u;
  const uint groups = p.cols / 32;
  for (uint v = v0; v < groups * 8; v += kGroupSize) {
    const uint g = v >> 3;
    vec4 xv = x4[(t * p.x_stride + 32 * g) / 4 + j];
    if (norm) {
      ss += dot(xv, xv);
      xv *= norm_w4[8 * g + j];
    }
    stage_x_quad(g, j, xv);
  }
}

// As stage_cooperative, with stage_group's gated normalisation: x * norm_w[c % norm_group] *
// silu(gate[t][c]) quantized, and the group's sum of x^2 left in s_xf[g].w.
void stage_cooperative_gated(uint t) {
  const uint v0 = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID, j = v0 & 7u;
  const uint groups = p.cols / 32;
  for (uint v = v0; v < groups * 8; v += kGroupSize) {
    const uint g = v >> 3;
    vec4 xv = x4[(t * p.x_stride + 32 * g) / 4 + j];
    const vec4 z = gate4[(t * p.gate_stride + 32 * g) / 4 + j];
    float gss = dot(xv, xv);
    xv *= norm_w4[(32 * g) % p.norm_group / 4 + j] * (z / (1.0 + exp(-z)));
    gss += subgroupShuffleXor(gss, 1u);
    gss += subgroupShuffleXor(gss, 2u);
    gss += subgroupShuffleXor(gss, 4u);
    stage_x_quad(g, j, xv);
    if (j == 0u) s_xf[g].w = gss;
  }
}

// One group of one row against the staged x.
float group_dot(Group gr, uint g) { return x_dot(gr, s_xq[2 * g], s_xq[2 * g + 1], s_xf[g], s_xs[g]); }

// Group g of token t's prequantized x (PREQUANT_X).
struct XRecord {
  uvec4 a, b;
  vec4 f;
  ivec2 s;
};
XRecord x_record(uint t, uint g) {
  const uint i = (t * (p.x_stride / 32) + g) * 4;
  return XRecord(xq[i], xq[i + 1], uintBitsToFloat(xq[i + 2]), ivec2(xq[i + 3].xy));
}

void main() {
  phase_mark(0);
  init_codebook();
  const uint tid = gl_LocalInvocationID.x, lane = gl_SubgroupInvocationID;
  const uint row0 = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * p.rows_per_group;
  const uint groups = p.cols / 32, blocks = groups / BLOCK_GROUPS;
  const bool norm = (p.flags & 2u) != 0u, add = (p.flags & 1u) != 0u;
  const bool gated = (p.flags & 8u) != 0u, conv = (p.flags & kConvFlag) != 0u;
  const uint n_iters = kPair ? p.rows_per_group : (p.rows_per_group + 1) / 2;
  const uint n_slices = clamp(p.k_slices, 1u, gl_NumSubgroups);
  const uint iter_stride = gl_NumSubgroups / n_slices;
  const uint n_passes = (n_iters + iter_stride - 1) / iter_stride;

  const bool rope_kv = (p.flags & (kRopeFlag | kStoreFlag)) != 0u, head = (p.flags & kHeadFlag) != 0u;
  for (uint t = 0; t < p.n_tokens; ++t) {
    const uint kv_row = (p.flags & kStoreFlag) != 0u ? pool_row(t) : 0u;  // in flight during the staging
    const uint slot = conv ? conv_slot(t) : 0u;                              // the same
    float ss = 0.0;
#ifdef PREQUANT_X
    for (uint g = tid; g < groups; g += kGroupSize) {  // the records, copied as they are
      const XRecord r = x_record(t, g);
      s_xq[2 * g] = r.a;
      s_xq[2 * g + 1] = r.b;
      s_xf[g] = vec4(r.f.xyz, 0.0);
      s_xs[g] = r.s;
      ss += r.f.w;
    }
#else
    if (gl_SubgroupSize < 8u) {
      for (uint g = tid; g < groups; g += kGroupSize) stage_group(t, g, norm, gated, ss);
    } else if (gated) {
      stage_cooperative_gated(t);
    } else {
      stage_cooperative(t, norm, ss);
    }
#endif
    if (norm) {
      const float s = subgroupAdd(ss);
      if (subgroupElect()) s_ss[gl_SubgroupID] = s;
    }
    barrier();
    if (t == 0) phase_mark(1);
    if (gated) {  // one invocation per norm group scales its 32-groups
      const uint per = p.norm_group / 32;
      for (uint ng = tid; ng * per < groups; ng += kGroupSize) {
        float gs = 0.0;
        for (uint i = 0; i < per; ++i) gs += s_xf[ng * per + i].w;
        const float sc = inversesqrt(gs / float(p.norm_group) + p.eps);
        for (uint i = 0; i < per; ++i) s_xf[ng * per + i] = vec4(s_xf[ng * per + i].xyz * sc, 0.0);
      }
      barrier();
    }
    float scale = 1.0;
    if (norm) {
      float total = 0.0;
      for (uint i = 0; i < gl_NumSubgroups; ++i) total += s_ss[i];
      scale = inversesqrt(total / float(p.cols) + p.eps);
    }

    // Subgroup sid takes K slice sid % n_slices of row step sid / n_slices (+ iter_stride per
    // pass); with several slices the partial sums meet in shared memory.
#ifdef NORM_OUT
    float out_ss = 0.0;  // squares of the rows this invocation wrote
#endif
    for (uint pass = 0; pass < n_passes; ++pass) {
      const uint it = pass * iter_stride + gl_SubgroupID / n_slices, slice = gl_SubgroupID % n_slices;
      const bool busy = gl_SubgroupID < iter_stride * n_slices && it < n_iters;
      const uint ra = kPair ? row0 + it : row0 + 2 * it, rb = kPair ? ra : ra + 1;
      const bool va = busy && ra < p.rows && ra - row0 < p.rows_per_group;
      const bool vb = busy && rb < p.rows && rb - row0 < p.rows_per_group;
      const uint la = min(ra, p.rows - 1), lb = min(rb, p.rows - 1);
      const uint wb = kPair ? 1 : 0;
      const uvec4 pb = kPair ? p.planes1 : p.planes0;
      float acc0 = 0.0, acc1 = 0.0;
      if (busy) {
        const uint stride = gl_SubgroupSize * n_slices;
        uint g = lane + gl_SubgroupSize * slice;
        // kSteps groups per step: 2 * kSteps code records in flight per lane.
        for (; g + (kSteps - 1) * stride < groups; g += kSteps * stride) {
          Group a[kMaxSteps], b[kMaxSteps];
          [[unroll]] for (uint s = 0; s < kMaxSteps; ++s) {
            if (s < kSteps) {
              const uint gs = g + s * stride;
              a[s] = load_group(0, p.planes0, la * groups + gs, la * blocks + gs / BLOCK_GROUPS, gs % BLOCK_GROUPS);
              b[s] = load_group(wb, pb, lb * groups + gs, lb * blocks + gs / BLOCK_GROUPS, gs % BLOCK_GROUPS);
            }
          }
          [[unroll]] for (uint s = 0; s < kMaxSteps; ++s) {
            if (s < kSteps) {
              acc0 += group_dot(a[s], g + s * stride);
              acc1 += group_dot(b[s], g + s * stride);
            }
          }
        }
        for (; g < groups; g += stride) {
          const Group a0 = load_group(0, p.planes0, la * groups + g, la * blocks + g / BLOCK_GROUPS, g % BLOCK_GROUPS);
          const Group b0 = load_group(wb, pb, lb * groups + g, lb * blocks + g / BLOCK_GROUPS, g % BLOCK_GROUPS);
          acc0 += group_dot(a0, g);
          acc1 += group_dot(b0, g);
        }
        acc0 = subgroupAdd(acc0);
        acc1 = subgroupAdd(acc1);
      }
      if (n_slices > 1) {
        if (busy && subgroupElect()) s_part[gl_SubgroupID] = vec2(acc0, acc1);
        barrier();
        if (busy && slice == 0) {
          for (uint i = 1; i < n_slices; ++i) {
            const vec2 o = s_part[gl_SubgroupID + i];
            acc0 += o.x;
            acc1 += o.y;
          }
        }
        barrier();
      }
      acc0 *= scale;
      acc1 *= scale;
      if (conv && busy && slice == 0) {  // lane 0 owns row a's channel, lane 1 (if any) row b's
        const uint base = t * p.y_stride + p.y_offset;
        if (lane == 0u && va) y[base + ra] = conv_epilogue(slot, p.y_offset + ra, acc0);
        if (lane == min(1u, gl_SubgroupSize - 1u) && vb) y[base + rb] = conv_epilogue(slot, p.y_offset + rb, acc1);
      } else if (busy && slice == 0 && subgroupElect()) {
        const uint base = t * p.y_stride + p.y_offset;
        if (kPair) {
          if (va) {
            float v = acc0 / (1.0 + exp(-acc0)) * acc1;
            if (add) v += residual[base + ra];
            y[base + ra] = v;
          }
        } else if (head) {  // raw rows, finished by finish_heads()
          if (va) y[base + ra] = acc0;
          if (vb) y[base + rb] = acc1;
        } else if (rope_kv) {  // rows ra, rb are one pair (ra even, rows even)
          if (va) {
            rope_kv_epilogue(t, p.y_offset + ra, kv_row, acc0, acc1);
            y[base + ra] = acc0;
            y[base + rb] = acc1;
          }
        } else {
#ifdef NORM_OUT
          const float v0 = acc0 + (add && va ? residual[base + ra] : 0.0);
          const float v1 = acc1 + (add && vb ? residual[base + rb] : 0.0);
          if (va) y[base + ra] = v0;
          if (vb) y[base + rb] = v1;
          if ((p.flags & kNormOutFlag) != 0u && va) out_ss += norm_out_row(base + ra, p.y_offset + ra, v0);
          if ((p.flags & kNormOutFlag) != 0u && vb) out_ss += norm_out_row(base + rb, p.y_offset + rb, v1);
#else
          if (va) y[base + ra] = acc0 + (add ? residual[base + ra] : 0.0);
          if (vb) y[base + rb] = acc1 + (add ? residual[base + rb] : 0.0);
#endif
        }
      }
      if (t == 0 && pass < 8) phase_mark(2 + pass);
    }
    if (head) finish_heads(t, row0, kv_row, kGroupSize);
#ifdef NORM_OUT
    if ((p.flags & kNormOutFlag) != 0u) norm_out_partial(t, row0, out_ss);
#endif
#ifdef TOPK
    if ((p.flags & kTopkFlag) != 0u) topk_epilogue(t);
#endif
    barrier();  // the staged x (and s_head) are replaced by the next token's
    if (t == 0) phase_mark(10);
  }
}
