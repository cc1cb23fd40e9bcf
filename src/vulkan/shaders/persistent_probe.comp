#version 450
// Measurement only (bench/vulkan_persistent_bench.cc): what a decode step would gain if its
// dependent products met at a grid barrier inside one dispatch instead of a pipeline barrier
// between dispatches. A chain of matrix-vector phases shaped as Llama-3-8B decode layers
// (q/k/v 6144x4096, o 4096x4096, gate/up 28672x4096, down 4096x14336; 4-bit codes, half a
// byte a weight, each layer its own weights), every phase reading the previous one's output.
// kMode 0: one dispatch per phase (first_phase, n_phases = 1), pipeline barriers between.
// kMode 1: all phases in one dispatch of workgroups that must all be resident; between phases
// each counts itself in `arrived` and waits until every workgroup has (a grid barrier).
// kMode 2: one dispatch per phase with no barrier between: each workgroup waits until every
// workgroup of the earlier phases has counted itself (dispatches launch in order on NVIDIA).
// With INT8, x is quantized to int8 and the products are integer dot products, as in the
// staged matvec; otherwise x is f16 and each code is converted and multiplied as a float.
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(local_size_x_id = 2) in;  // 256, 512 or 1024
layout(constant_id = 0) const uint kMode = 0;  // 0: dispatches and barriers, 1: persistent, 2: handoff
// kPrefetch 1 (persistent only): before the grid barrier, each workgroup reads its first rows of
// the next phase (into the L2 cache; the words are folded into one register kept across the
// barrier). 2 (persistent only): after counting itself at the grid barrier, each workgroup loads
// the first weight words of its next phase into shared memory (kSharedWords at most) while it
// waits, and reads those words from there in the phase. 3 (one dispatch per phase): each
// workgroup issues the loads of its first weight words before it stages x, and stores them into
// shared memory after.
layout(constant_id = 1) const uint kPrefetch = 0;
#ifdef INT8
const uint kSharedWords = 1536u;  // 24 KB of weights beside 18 KB of x (NVIDIA allows 48 KB)
#else
const uint kSharedWords = 1024u;  // 16 KB beside 28 KB of x
#endif
shared uvec4 s_w[kSharedWords];

layout(std430, binding = 0) readonly buffer W { uvec4 w[]; };
layout(std430, binding = 1) coherent buffer Act { float act[]; };
layout(std430, binding = 1) coherent buffer Act4 { vec4 act4[]; };
layout(std430, binding = 2) coherent buffer Sync { uint arrived; uint failed; uint sink; };

layout(push_constant) uniform Push {
  uint first_phase;
  uint n_phases;
  uint epoch;        // persistent: recordings run so far with this Sync buffer
  uint wait_target;  // handoff: workgroups of earlier phases that must have arrived
} p;

const uint kLayerWords = (6144u + 4096u + 28672u) * 128u + 4096u * 448u;  // uvec4 a layer

struct Shape {
  uint rows, cols, x_off, y_off, w_off;
};

Shape shape(uint phase) {
  const uint layer = phase / 4u, k = phase % 4u;
  const uint base = layer * kLayerWords;
  if (k == 0u) return Shape(6144u, 4096u, 0u, 4096u, base);
  if (k == 1u) return Shape(4096u, 4096u, 4096u, 16384u, base + 6144u * 128u);
  if (k == 2u) return Shape(28672u, 4096u, 16384u, 32768u, base + 10240u * 128u);
  return Shape(4096u, 14336u, 32768u, 0u, base + 38912u * 128u);
}

#ifdef INT8
// x quantized per 32-group to int8 as the staged matvec does (int8_dot.glsl); a weight word k
// of a group holds columns 8k..8k+3 in its low nibbles and 8k+4..8k+7 in its high ones.
#include "int8_dot.glsl"
shared uvec4 s_xq[2u * 448u];
shared vec2 s_xd[448u];  // scale, code sum

void stage_x(Shape s) {
  for (uint g = gl_LocalInvocationIndex; g < s.cols / 32u; g += gl_WorkGroupSize.x) {
    vec4 xv[8];
    [[unroll]] for (uint j = 0u; j < 8u; ++j) xv[j] = act4[(s.x_off + 32u * g) / 4u + j];
    const QuantX q = quantize_x(xv);
    s_xq[2u * g] = uvec4(q.q[0], q.q[1], q.q[2], q.q[3]);
    s_xq[2u * g + 1u] = uvec4(q.q[4], q.q[5], q.q[6], q.q[7]);
    s_xd[g] = vec2(q.d, float(q.s0 + q.s1));
  }
}

float dot32(uvec4 u, uint g) {
  const uvec4 xa = s_xq[2u * g], xb = s_xq[2u * g + 1u];
  int d = 0;
  for (uint k = 0u; k < 2u; ++k) {
    d += sdot4(u[k] & 0x0F0F0F0Fu, xa[2u * k]) + sdot4((u[k] >> 4u) & 0x0F0F0F0Fu, xa[2u * k + 1u]);
    d += sdot4(u[k + 2u] & 0x0F0F0F0Fu, xb[2u * k]) + sdot4((u[k + 2u] >> 4u) & 0x0F0F0F0Fu, xb[2u * k + 1u]);
  }
  const vec2 xd = s_xd[g];
  return xd.x * (float(d) - 7.5 * xd.y);
}
#else
shared uint xs[7168];  // x as f16 pairs, up to 14336 columns

void stage_x(Shape s) {
  for (uint i = gl_LocalInvocationIndex; i < s.cols / 2u; i += gl_WorkGroupSize.x)
    xs[i] = packHalf2x16(vec2(act[s.x_off + 2u * i], act[s.x_off + 2u * i + 1u]));
}

float dot32(uvec4 u, uint idx) {
  float s = 0.0;
  for (uint k = 0u; k < 4u; ++k)
    for (uint m = 0u; m < 4u; ++m) {
      const vec2 xv = unpackHalf2x16(xs[idx * 16u + k * 4u + m]);
      s += (float((u[k] >> (8u * m)) & 15u) - 7.5) * xv.x + (float((u[k] >> (8u * m + 4u)) & 15u) - 7.5) * xv.y;
    }
  return s;
}
#endif

// Word j of the weight words workgroup `group` reads in `phase`, its blocks one after another.
uint block_words(Shape s) { return 2u * gl_NumSubgroups * (s.cols / 32u); }
uint local_word(Shape s, uint group, uint n_groups, uint j) {
  const uint bw = block_words(s), k = j / bw;
  return s.w_off + (group + k * n_groups) * bw + j % bw;
}
// How many of those words fit in s_w (0 where the workgroup has no block).
uint prefetch_words(Shape s, uint group, uint n_groups) {
  const uint blocks = s.rows / (2u * gl_NumSubgroups);
  if (group >= blocks) return 0u;
  const uint mine = (blocks - group + n_groups - 1u) / n_groups;
  return min(kSharedWords / gl_WorkGroupSize.x * gl_WorkGroupSize.x, mine * block_words(s));
}
// Weight word `global`, the workgroup's word `local`: from s_w where it was prefetched.
uvec4 weight(uint global, uint local, uint pf) { return local < pf ? s_w[local] : w[global]; }

// Loads the workgroup's first prefetch_words() words of `phase` into s_w.
uint prefetch_shared(uint phase, uint group, uint n_groups) {
  const Shape s = shape(phase);
  const uint pf = prefetch_words(s, group, n_groups);
  for (uint j = gl_LocalInvocationIndex; j < pf; j += gl_WorkGroupSize.x) s_w[j] = w[local_word(s, group, n_groups, j)];
  return pf;
}

void run_phase(uint phase, uint group, uint n_groups, uint pf) {
  const Shape s = shape(phase);
  if (kPrefetch == 3u) {  // the words requested before x is staged, stored after
    pf = prefetch_words(s, group, n_groups);
    const uint per = kSharedWords / gl_WorkGroupSize.x;
    uvec4 held[kSharedWords / 256u];
    [[unroll]] for (uint u = 0u; u < kSharedWords / 256u; ++u) {
      const uint j = gl_LocalInvocationIndex + u * gl_WorkGroupSize.x;
      if (u < per && j < pf) held[u] = w[local_word(s, group, n_groups, j)];
    }
    stage_x(s);
    [[unroll]] for (uint u = 0u; u < kSharedWords / 256u; ++u) {
      const uint j = gl_LocalInvocationIndex + u * gl_WorkGroupSize.x;
      if (u < per && j < pf) s_w[j] = held[u];
    }
  } else {
    stage_x(s);
  }
  barrier();
  const uint nv = s.cols / 32u, lane = gl_SubgroupInvocationID, sg = gl_SubgroupSize;
  const uint bw = block_words(s);
  const float scale = 0.2157 * inversesqrt(float(s.cols));  // keeps x's scale: codes' rms is 4.64
  uint k = 0u;
  for (uint block = group; block < s.rows / (2u * gl_NumSubgroups); block += n_groups, ++k) {
    const uint r0 = block * 2u * gl_NumSubgroups + gl_SubgroupID * 2u;
    const uint b0 = s.w_off + r0 * nv, b1 = b0 + nv;
    const uint l0 = k * bw + gl_SubgroupID * 2u * nv, l1 = l0 + nv;  // the workgroup's word indices
    float a0 = 0.0, a1 = 0.0;
    for (uint i = lane; i < nv; i += 2u * sg) {
      const bool two = i + sg < nv;
      const uvec4 u0 = weight(b0 + i, l0 + i, pf), v0 = weight(b1 + i, l1 + i, pf);
      const uvec4 u1 = two ? weight(b0 + i + sg, l0 + i + sg, pf) : uvec4(0x88888888u) /* zeros after -7.5: unused */;
      const uvec4 v1 = two ? weight(b1 + i + sg, l1 + i + sg, pf) : uvec4(0x88888888u) /* zeros after -7.5: unused */;
      a0 += dot32(u0, i) + (two ? dot32(u1, i + sg) : 0.0);
      a1 += dot32(v0, i) + (two ? dot32(v1, i + sg) : 0.0);
    }
    a0 = subgroupAdd(a0);
    a1 = subgroupAdd(a1);
    if (lane == 0u) {
      act[s.y_off + r0] = a0 * scale;
      act[s.y_off + r0 + 1u] = a1 * scale;
    }
  }
}

// The first block's rows of `phase` for this workgroup, folded into one word.
uint touch(uint phase, uint group) {
  const Shape s = shape(phase);
  const uint nv = s.cols / 32u, r0 = (group * gl_NumSubgroups + gl_SubgroupID) * 2u;
  if (r0 >= s.rows) return 0u;
  uint t = 0u;
  for (uint i = gl_SubgroupInvocationID; i < 2u * nv; i += gl_SubgroupSize) {
    const uvec4 u = w[s.w_off + r0 * nv + i];
    t ^= u.x ^ u.y ^ u.z ^ u.w;
  }
  return t;
}

// Invocation 0 waits until `arrived` reaches target. It gives up after 2^20 polls, or at once
// where another has given up, and sets `failed`: a case that fails ends soon, with wrong values.
void wait_for(uint target) {
  if (gl_LocalInvocationIndex == 0u) {
    uint n = 0u;
    while (atomicAdd(arrived, 0u) < target) {
      if ((++n & 1023u) == 0u && (n >= (1u << 20) || atomicAdd(failed, 0u) != 0u)) {
        atomicOr(failed, 1u);
        break;
      }
    }
  }
  memoryBarrierBuffer();
  barrier();
}

// This workgroup's writes made visible, then counted.
void arrive() {
  memoryBarrierBuffer();
  barrier();
  if (gl_LocalInvocationIndex == 0u) atomicAdd(arrived, 1u);
}

void main() {
  const uint group = gl_WorkGroupID.x, n_groups = gl_NumWorkGroups.x;
  if (kMode == 0u) {
    run_phase(p.first_phase, group, n_groups, 0u);
  } else if (kMode == 2u) {
    wait_for(p.wait_target);
    run_phase(p.first_phase, group, n_groups, 0u);
    arrive();
  } else {
    uint pf = 0u;
    for (uint k = 0u; k < p.n_phases; ++k) {
      const uint phase = p.first_phase + k;
      run_phase(phase, group, n_groups, pf);
      if (k + 1u == p.n_phases) break;
      const uint t = kPrefetch == 1u ? touch(phase + 1u, group) : 0u;
      arrive();  // its barrier: every invocation is past its reads of s_w
      pf = kPrefetch == 2u ? prefetch_shared(phase + 1u, group, n_groups) : 0u;
      wait_for((p.epoch * (p.n_phases - 1u) + k + 1u) * n_groups);
      if (t == 0x9e3779b9u) sink = t;
    }
  }
}
