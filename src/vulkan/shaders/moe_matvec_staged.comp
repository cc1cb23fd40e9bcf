#version 450
// Expert-indexed decode matvec (same bindings and outputs as moe_matvec.comp) on integer dot
// products with x staged once per workgroup (staged_x.glsl): with kPair (gate/up, workgroup
// column y = slot s) the token's row of x, else (down projection, column y = token t) the k slot
// rows of the token. Each subgroup takes two values per step (one row of gate and up, or two
// rows of the down projection), its lanes striding over the (expert, group) terms, and reduces
// with subgroupAdd. Needs cols a multiple of 32 and (kPair ? 1 : k) * cols / 32 <= kMaxGroups.
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint kGroupSize = 128;
layout(constant_id = 1) const uint kMaxGroups = 512;
layout(constant_id = 2) const bool kPair = false;

#define TWO_WEIGHTS
#include "quant.glsl"
#include "staged_x.glsl"

layout(std430, binding = 2) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 3) buffer Y { float y[]; };
layout(std430, binding = 4) readonly buffer Ids { int ids[]; };
layout(std430, binding = 5) readonly buffer RW { float route_w[]; };

layout(push_constant) uniform Push {
  uint rows;      // rows of one expert
  uint cols;
  uint k;         // experts per token
  uint n_expert;
  uint x_stride;  // floats between rows of x (multiple of 4)
  uint y_stride;
  uint flags;     // bit 0: add to y instead of writing it
  uint rows_per_group;
  uvec4 planes0;  // plane word offsets (q, h, m) of W0
  uvec4 planes1;  // of W1 (kPair)
} p;

const uint kMaxK = 64;
shared uint s_row0[kMaxK];    // first stacked row of each term's expert
shared float s_weight[kMaxK];  // its routing weight (1 for gate/up)

void main() {
  init_codebook();
  const uint tid = gl_LocalInvocationID.x, lane = gl_SubgroupInvocationID;
  const uint item = gl_WorkGroupID.y;
  const uint row0 = gl_WorkGroupID.x * p.rows_per_group;
  const uint groups = p.cols / 32, blocks = groups / BLOCK_GROUPS;
  const uint n_sub = kPair ? 1 : p.k;
  const uint terms = n_sub * groups;

  const uint n_iters = kPair ? p.rows_per_group : (p.rows_per_group + 1) / 2;
  const uint wb = kPair ? 1 : 0;
  const uvec4 pb = kPair ? p.planes1 : p.planes0;
  // This lane's first term of the subgroup's first step, loaded before x is staged so that the
  // weight fetch overlaps the staging.
  Group pf_a, pf_b;
  bool pf = false;
  {
    const uint it = gl_SubgroupID, i = lane;
    if (it < n_iters && i < terms) {
      const uint j = i / groups, g = i - j * groups;
      const uint er = min(uint(ids[kPair ? item : item * p.k + j]), p.n_expert - 1) * p.rows;
      const uint ra = kPair ? row0 + it : row0 + 2 * it, rb = kPair ? ra : ra + 1;
      const uint r0 = er + min(ra, p.rows - 1), r1 = er + min(rb, p.rows - 1);
      pf_a = load_group(0, p.planes0, r0 * groups + g, r0 * blocks + g / BLOCK_GROUPS, g % BLOCK_GROUPS);
      pf_b = load_group(wb, pb, r1 * groups + g, r1 * blocks + g / BLOCK_GROUPS, g % BLOCK_GROUPS);
      pf = true;
    }
  }

  for (uint i = tid; i < terms; i += kGroupSize) {
    const uint j = i / groups, g = i - j * groups;
    const uint xrow = kPair ? item / p.k : item * p.k + j;
    const uint base = (xrow * p.x_stride + 32 * g) / 4;
    vec4 xv[8];
    [[unroll]] for (uint u = 0; u < 8; ++u) xv[u] = x4[base + u];
    stage_values(xv, i);
  }
  if (tid < n_sub) {
    const uint slot = kPair ? item : item * p.k + tid;
    s_row0[tid] = min(uint(ids[slot]), p.n_expert - 1) * p.rows;
    s_weight[tid] = kPair ? 1.0 : route_w[slot];
  }
  barrier();

  for (uint it = gl_SubgroupID; it < n_iters; it += gl_NumSubgroups) {
    const uint ra = kPair ? row0 + it : row0 + 2 * it, rb = kPair ? ra : ra + 1;
    const bool va = ra < p.rows && ra - row0 < p.rows_per_group;
    const bool vb = rb < p.rows && rb - row0 < p.rows_per_group;
    const uint la = min(ra, p.rows - 1), lb = min(rb, p.rows - 1);
    float acc0 = 0.0, acc1 = 0.0;
    bool use_pf = pf && it == gl_SubgroupID;  // the loop starts at the prefetched term
    for (uint i = lane; i < terms; i += gl_SubgroupSize) {
      const uint j = i / groups, g = i - j * groups;
      const uint er = s_row0[j];
      const uint r0 = er + la, r1 = er + lb;
      const Group a =
          use_pf ? pf_a : load_group(0, p.planes0, r0 * groups + g, r0 * blocks + g / BLOCK_GROUPS, g % BLOCK_GROUPS);
      const Group b =
          use_pf ? pf_b : load_group(wb, pb, r1 * groups + g, r1 * blocks + g / BLOCK_GROUPS, g % BLOCK_GROUPS);
      use_pf = false;
      const float w = s_weight[j];
      acc0 += w * group_dot(a, i);
      acc1 += w * group_dot(b, i);
    }
    acc0 = subgroupAdd(acc0);
    acc1 = subgroupAdd(acc1);
    if (subgroupElect()) {
      const uint base = item * p.y_stride;
      const bool add = (p.flags & 1u) != 0u;
      if (kPair) {
        if (va) y[base + ra] = acc0 / (1.0 + exp(-acc0)) * acc1;
      } else {
        if (va) y[base + ra] = acc0 + (add ? y[base + ra] : 0.0);
        if (vb) y[base + rb] = acc1 + (add ? y[base + rb] : 0.0);
      }
    }
  }
}
