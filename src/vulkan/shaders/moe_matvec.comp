#version 450
// Expert-indexed decode matvec over stacked experts (one repacked matrix of n_expert * rows
// rows, expert e's rows at e * rows), fused with dequantization; the expert ids come from a
// device buffer (moe_route's output).
//   kPair (gate/up): workgroup column y = slot s = t * k + j:
//     y[s][r] = silu(W0[e] x[t])[r] * (W1[e] x[t])[r], e = ids[s].
//   else (down):     workgroup column y = token t:
//     y[t][r] (+)= sum_j weight[t * k + j] * (W0[e_j] x[t * k + j])[r], e_j = ids[t * k + j].
// Threads: `lanes` threads per row walk its 32-element groups (of all k experts for the down
// projection; lanes < kGroupSize when these are few), kGroupSize / lanes row sets of kRows rows
// each per workgroup.
// With flags bit 1 (kPair only) every workgroup first routes its token itself, exactly as
// moe_route.comp (softmax over logits[t], the expert of rank j among the k most probable, ties:
// lower id), and workgroup 0 of slot t * k writes the token's ids and weights (renormalised with
// flags bit 2) for the down projection: no separate routing dispatch.
// With flags bit 3 (down only) the shared expert joins as a (k+1)-th term: W1 (one matrix of
// `rows` rows, same type and cols) times sx[t], weighted by sigmoid(gate_w . h[t]), or with bit 8
// by gates[t] (binding 10) as a gate/up dispatch with bit 8 left it: there workgroup 1 (0 if
// alone) of slot t * k writes gates[t] = sigmoid(shared_gate_w . x[t] n) (binding 9), so that no down workgroup
// waits for that sum before its weights are requested.
// With flags bit 4 (kPair with routing only) x arrives as h * norm weight, from a producer that
// also stored partial sums of squares of h (matvec_norm_out.glsl): h_cols of them a token at
// binding 7; each workgroup takes its token's n = 1 / sqrt(sum / cols + eps) while it routes
// (the partials' loads issued with the logits') and uses x * n; with bit 5 workgroup 1 (0 if
// alone) of slot t * k also writes x * n to binding 8 (row stride sx_stride); with bit 6 the routing logits are
// multiplied by n first (a router folded into the projection before it:
// src/vulkan/router_fold.h); with bit 7 (SUBGROUP) the ids arrive ranked already (by the
// logits' producer: matvec_topk.glsl) and the routing only computes the weights. With bit 9
// (SUBGROUP) each row set is one subgroup, its lanes summed by subgroupAdd alone.
// Defines as shaders/matvec.comp: TYPE_<T>, INT8, SUBGROUP.
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
// The flags this pipeline is given (MoeMatvec makes one a combination it records), so that
// every flag test is decided when the pipeline is compiled; all ones: p.flags at run time.
layout(constant_id = 4) const uint kFlagsUsed = 0xffffffffu;
#define FLAGS (kFlagsUsed == 0xffffffffu ? p.flags : kFlagsUsed)

#define TWO_WEIGHTS
#include "quant.glsl"
#include "reduce.glsl"
#ifdef INT8
#include "int8_dot.glsl"
#endif

layout(std430, binding = 2) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 2) readonly buffer X1 { float x1[]; };
layout(std430, binding = 3) buffer Y { float y[]; };
layout(std430, binding = 4) buffer Ids { int ids[]; };
layout(std430, binding = 5) buffer RW { float route_w[]; };
layout(std430, binding = 6) readonly buffer L { float logits[]; };
layout(std430, binding = 6) readonly buffer SX4 { vec4 sx4[]; };
layout(std430, binding = 6) readonly buffer SX1 { float sx1[]; };
layout(std430, binding = 7) readonly buffer H { float hx[]; };
layout(std430, binding = 8) readonly buffer GW { float gate_w[]; };
layout(std430, binding = 8) writeonly buffer XN { float xn_out[]; };
layout(std430, binding = 9) readonly buffer SGW { float shared_gate_w[]; };
layout(std430, binding = 10) buffer Gates { float gates[]; };

layout(push_constant) uniform Push {
  uint rows;      // rows of one expert
  uint cols;
  uint k;         // experts per token
  uint n_expert;
  uint x_stride;  // floats between rows of x (multiple of 4)
  uint y_stride;
  uint flags;     // bit 0: add to y instead of writing it; bit 1: route; bit 2: renormalise; bit 3: shared
                  // expert; bit 4: normalise x; bit 5: write it; bit 6: scale the logits
  uint lanes;     // threads per row (power of two dividing kGroupSize)
  uvec4 planes0;  // plane word offsets (q, h, m) of W0
  uvec4 planes1;  // of W1 (kPair)
  uint logit_stride;
  uint sx_stride, h_stride, h_cols;  // the shared expert's input, the gate's input and its width
  float eps;                         // of the normalisation (bit 4)
} p;

const uint kMats = kPair ? 2 : 1;
const uint kValues = kMats * kRows;
shared float partial[kValues * kGroupSize];

const uint kMaxExperts = 1024, kMaxK = 64;
const uint kUnroll = 8;  // global loads in flight per thread in the routing and the shared gate
shared float s_p[kMaxExperts];
shared float s_norm;  // the token's norm factor n (flags bit 4)
shared float s_w[kMaxK];
shared int s_id[kMaxK];

// This lane's share (lanes `lane`, + step, ...) of token t's partial sums of squares (bit 4).
float partial_squares(uint t, uint lane, uint step) {
  float ss = 0.0;
  for (uint i0 = lane; i0 < p.h_cols; i0 += kUnroll * step) {
    float v[kUnroll];
    [[unroll]] for (uint u = 0; u < kUnroll; ++u) v[u] = hx[t * p.h_cols + min(i0 + u * step, p.h_cols - 1)];
    [[unroll]] for (uint u = 0; u < kUnroll; ++u) ss += i0 + u * step < p.h_cols ? v[u] : 0.0;
  }
  return ss;
}

// The expert of rank j for token t (see the header), the logits multiplied by the norm factor
// with flags bit 6; `write`: store the token's ids and weights. With flags bit 4 it also leaves
// the token's norm factor in s_norm.
// With subgroups, subgroup 0 alone ranks (k rounds of a subgroup argmax over s_p, no barrier)
// while the others wait: every workgroup of the dispatch routes, so the ranking's instructions
// count k * n / subgroup size per workgroup, not n * n / threads as with ranks.
uint route(uint t, uint j, bool write) {
  const uint tid = gl_LocalInvocationID.x, n = p.n_expert, base = t * p.logit_stride;
  const bool normed = (FLAGS & 16u) != 0u, scaled = (FLAGS & 64u) != 0u, ranked = (FLAGS & 128u) != 0u;
#ifdef SUBGROUP
  if (gl_SubgroupID == 0) {
    const uint lane = gl_SubgroupInvocationID, step = gl_SubgroupSize;
    float scale = 1.0;
    if (normed) {
      const float sn = inversesqrt(subgroupAdd(partial_squares(t, lane, step)) / float(p.cols) + p.eps);
      if (subgroupElect()) s_norm = sn;
      if (scaled) scale = sn;
    }
    if (ranked) {  // the writer's weights: the chosen experts' probabilities
      if (write) {
        float m = -1.0 / 0.0;
        for (uint e = lane; e < n; e += step) m = max(m, scale * logits[base + e]);
        m = subgroupMax(m);
        float s = 0.0;
        for (uint e = lane; e < n; e += step) s += exp(scale * logits[base + e] - m);
        const float inv = 1.0 / subgroupAdd(s);
        for (uint r = lane; r < p.k; r += step) s_w[r] = exp(scale * logits[base + uint(ids[t * p.k + r])] - m) * inv;
      }
    } else {
      // The logits go through s_p (a lane's own entries), kUnroll per lane loaded at once.
      float m = -1.0 / 0.0;
      for (uint e0 = lane; e0 < n; e0 += kUnroll * step) {
        float lv[kUnroll];
        [[unroll]] for (uint u = 0; u < kUnroll; ++u) lv[u] = logits[base + min(e0 + u * step, n - 1)];
        [[unroll]] for (uint u = 0; u < kUnroll; ++u)
          if (e0 + u * step < n) {
            s_p[e0 + u * step] = scale * lv[u];
            m = max(m, scale * lv[u]);
          }
      }
      m = subgroupMax(m);
      float s = 0.0;
      for (uint e = lane; e < n; e += step) {
        s_p[e] = exp(s_p[e] - m);
        s += s_p[e];
      }
      const float inv = 1.0 / subgroupAdd(s);
      for (uint e = lane; e < n; e += step) s_p[e] *= inv;
      // A lane reads and retires only its own experts (e % step == lane): no barrier per round.
      for (uint r = 0; r < p.k; ++r) {
        float best = -1.0;
        uint bi = 0xFFFFFFFFu;
        for (uint e = lane; e < n; e += step) {
          const float v = s_p[e];
          if (v > best) {
            best = v;
            bi = e;
          }
        }
        const float mb = subgroupMax(best);
        const uint wi = subgroupMin(best == mb ? bi : 0xFFFFFFFFu);
        if (bi == wi) {
          s_id[r] = int(wi);
          s_w[r] = mb;
          s_p[wi] = -1.0;
        }
      }
    }
  }
  barrier();
  if (ranked) {
    if (write && tid < p.k) {
      float chosen = 0.0;
      for (uint i = 0; i < p.k; ++i) chosen += s_w[i];
      route_w[t * p.k + tid] = s_w[tid] / ((FLAGS & 4u) != 0u ? max(chosen, 6.103515625e-5) : 1.0);
    }
    return uint(ids[t * p.k + j]);
  }
#else
  float scale = 1.0;
  if (normed) {
    const float sn = inversesqrt(workgroup_sum(partial_squares(t, tid, kGroupSize)) / float(p.cols) + p.eps);
    if (tid == 0) s_norm = sn;
    if (scaled) scale = sn;
  }
  float m = -1.0 / 0.0;
  for (uint e = tid; e < n; e += kGroupSize) m = max(m, scale * logits[base + e]);
  uint unused = 0;
  workgroup_argmax(m, unused);
  float s = 0.0;
  for (uint e = tid; e < n; e += kGroupSize) s += exp(scale * logits[base + e] - m);
  const float inv = 1.0 / workgroup_sum(s);
  for (uint e = tid; e < n; e += kGroupSize) s_p[e] = exp(scale * logits[base + e] - m) * inv;
  barrier();
  for (uint e = tid; e < n; e += kGroupSize) {
    const float v = s_p[e];
    uint rank = 0;
    for (uint i = 0; i < n; ++i) {
      const float o = s_p[i];
      rank += (o > v || (o == v && i < e)) ? 1u : 0u;
    }
    if (rank < p.k) {
      s_id[rank] = int(e);
      s_w[rank] = v;
    }
  }
  barrier();
#endif
  if (write && tid < p.k) {
    float chosen = 0.0;
    for (uint i = 0; i < p.k; ++i) chosen += s_w[i];
    const float denom = (FLAGS & 4u) != 0u ? max(chosen, 6.103515625e-5) : 1.0;
    ids[t * p.k + tid] = s_id[tid];
    route_w[t * p.k + tid] = s_w[tid] / denom;
  }
  return uint(s_id[j]);
}

// x[xrow] (or with `from_shared` the shared expert's input sx[xrow]), group g.
void load_x(bool from_shared, uint xrow, uint g, out vec4 xv[8]) {
  const uint base = xrow * (from_shared ? p.sx_stride : p.x_stride) + 32 * g;
#ifdef FLOAT_WEIGHTS
  if (32 * g + 32 > p.cols) {
    [[unroll]] for (uint j = 0; j < 8; ++j)
      [[unroll]] for (uint i = 0; i < 4; ++i) {
        const uint c = base + 4 * j + i;
        xv[j][i] = 32 * g + 4 * j + i < p.cols ? (from_shared ? sx1[c] : x1[c]) : 0.0;
      }
    return;
  }
#endif
  [[unroll]] for (uint j = 0; j < 8; ++j) xv[j] = from_shared ? sx4[base / 4 + j] : x4[base / 4 + j];
}

// Row r's result at y[dst]: the sum (SwiGLU of sum and up, scaled by n, with kPair), added to y
// with flags bit 0.
void write_row(uint dst, float sum, float up, float n) {
  if (kPair) {
    sum *= n;
    up *= n;
    sum = sum / (1.0 + exp(-sum)) * up;
  }
  if ((FLAGS & 1u) != 0u) sum += y[dst];
  y[dst] = sum;
}

void main() {
  init_codebook();
  const uint tid = gl_LocalInvocationID.x;
#ifdef SUBGROUP
  const bool one_subgroup = (FLAGS & 512u) != 0u;  // a row set is one subgroup: bit 9
  const uint lane = one_subgroup ? gl_SubgroupInvocationID : tid % p.lanes;
  const uint set = one_subgroup ? gl_SubgroupID : tid / p.lanes;
#else
  const uint lane = tid % p.lanes, set = tid / p.lanes;
#endif
  const uint row0 = (gl_WorkGroupID.x * (kGroupSize / p.lanes) + set) * kRows;
  const uint item = gl_WorkGroupID.y;
  const uint groups = (p.cols + 31) / 32;
  const uint blocks = groups / BLOCK_GROUPS;
  const bool with_shared = !kPair && (FLAGS & 8u) != 0u;
  const uint n_sub = kPair ? 1 : p.k + (with_shared ? 1 : 0);
  float shared_gate = 0.0;
  if (with_shared && (FLAGS & 256u) != 0u) {
    shared_gate = gates[item];
  } else if (with_shared) {  // kUnroll elements of h and gate_w per thread loaded before any is used
    float d = 0.0;
    for (uint i0 = tid; i0 < p.h_cols; i0 += kUnroll * kGroupSize) {
      float hv[kUnroll], gv[kUnroll];
      [[unroll]] for (uint u = 0; u < kUnroll; ++u) {
        const uint i = min(i0 + u * kGroupSize, p.h_cols - 1);
        hv[u] = hx[item * p.h_stride + i];
        gv[u] = gate_w[i];
      }
      [[unroll]] for (uint u = 0; u < kUnroll; ++u) d += i0 + u * kGroupSize < p.h_cols ? hv[u] * gv[u] : 0.0;
    }
    shared_gate = 1.0 / (1.0 + exp(-workgroup_sum(d)));
  }

  const bool routed = kPair && (FLAGS & 2u) != 0u;
  const bool normed = routed && (FLAGS & 16u) != 0u;
  const uint routed_e = routed ? route(item / p.k, item % p.k, gl_WorkGroupID.x == 0 && item % p.k == 0) : 0;
  const float norm_s = normed ? s_norm : 1.0;  // set by route(), behind its barrier
  const bool write_xn = normed && (FLAGS & 32u) != 0u, write_gate = kPair && (FLAGS & 256u) != 0u;
  // By workgroup 1 (0 if alone), so that the routing weights' writer does not carry this too.
  if ((write_xn || write_gate) && gl_WorkGroupID.x == min(1u, gl_NumWorkGroups.x - 1u) && item % p.k == 0) {
    const uint t = item / p.k, xb = t * p.x_stride;
    float d = 0.0;
    for (uint i0 = tid; i0 < p.cols; i0 += kUnroll * kGroupSize) {  // kUnroll of x (and the gate) loaded at once
      float xv[kUnroll], gv[kUnroll];
      [[unroll]] for (uint u = 0; u < kUnroll; ++u) {
        const uint i = min(i0 + u * kGroupSize, p.cols - 1);
        xv[u] = x1[xb + i] * norm_s;
        gv[u] = write_gate ? shared_gate_w[i] : 0.0;
      }
      [[unroll]] for (uint u = 0; u < kUnroll; ++u) {
        const uint i = i0 + u * kGroupSize;
        if (i < p.cols) {
          if (write_xn) xn_out[t * p.sx_stride + i] = xv[u];
          d += xv[u] * gv[u];
        }
      }
    }
    if (write_gate) {
      d = workgroup_sum(d);
      if (tid == 0) gates[t] = 1.0 / (1.0 + exp(-d));
    }
  }

  float acc[kValues];
  [[unroll]] for (uint v = 0; v < kValues; ++v) acc[v] = 0.0;
  // The reduction runs over (expert j, group g) pairs, so the k experts of the down projection
  // share the lanes of a row.
  for (uint ri = lane; ri < n_sub * groups; ri += p.lanes) {
    const uint j = ri / groups, g = ri - j * groups;
    const bool shared_term = with_shared && j == p.k;  // the shared expert's term
    const uint slot = kPair ? item : item * p.k + min(j, p.k - 1);
    const uint e = routed ? routed_e : min(uint(ids[slot]), p.n_expert - 1);
    const uint xrow = kPair ? item / p.k : shared_term ? item : slot;
    const float scale = kPair ? 1.0 : shared_term ? shared_gate : route_w[slot];
    const uint erow = shared_term ? 0 : e * p.rows;
    {
      Group gr[kValues];
      [[unroll]] for (uint v = 0; v < kValues; ++v) {
        const uint which = shared_term ? 1 : v / kRows;
        const uint row = erow + min(row0 + v % kRows, p.rows - 1);
        gr[v] = load_group(which, which == 0 ? p.planes0 : p.planes1, row * groups + g,
                           row * blocks + g / BLOCK_GROUPS, g % BLOCK_GROUPS);
      }
      vec4 xv[8];
      load_x(shared_term, xrow, g, xv);
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
        [[unroll]] for (uint i = 0; i < 4; ++i) {
          s0 += sdot4(gr[v].c[0][i], qx.q[i]);
          s1 += sdot4(gr[v].c[1][i], qx.q[4 + i]);
        }
#ifdef CODE_CENTER
        s0 -= CODE_CENTER * qx.s0;
        s1 -= CODE_CENTER * qx.s1;
#endif
        float r = qx.d * (gr[v].ab.x * float(s0) + gr[v].ab.y * float(s1));
#elif defined(FLOAT_WEIGHTS)
        float r = 0.0;
        [[unroll]] for (uint i = 0; i < 8; ++i) r += dot(group_vec(gr[v], i), xv[i]);
#else
        float q0 = 0.0, q1 = 0.0;
        [[unroll]] for (uint i = 0; i < 4; ++i) {
          q0 += dot(group_vec(gr[v], i), xv[i]);
          q1 += dot(group_vec(gr[v], 4 + i), xv[4 + i]);
        }
        float r = gr[v].ab.x * q0 + gr[v].ab.y * q1;
#endif
#if defined(INT8) && defined(CODE_CENTER)
        r += (gr[v].ab.z + CODE_CENTER * gr[v].ab.x) * sx0 + (gr[v].ab.w + CODE_CENTER * gr[v].ab.y) * sx1;
#elif defined(HAS_OFFSET)
        r += gr[v].ab.z * sx0 + gr[v].ab.w * sx1;
#endif
        acc[v] += scale * r;
      }
    }
  }

#ifdef SUBGROUP
  if (one_subgroup) {  // the set's lanes r < kRows write rows r: no shared memory, no barrier
    float sum = 0.0, up = 0.0;
    [[unroll]] for (uint v = 0; v < kValues; ++v) {
      const float s = subgroupAdd(acc[v]);
      if (v % kRows == lane) {
        if (v < kRows) sum = s;
        else up = s;
      }
    }
    if (lane < kRows && row0 + lane < p.rows) write_row(item * p.y_stride + row0 + lane, sum, up, norm_s);
    return;
  }
#endif
  // Sums over the lanes of each row set.
  uint n_parts, part0, part_step;
#ifdef SUBGROUP
  if (p.lanes == kGroupSize) {
    [[unroll]] for (uint v = 0; v < kValues; ++v) {
      const float s = subgroupAdd(acc[v]);
      if (subgroupElect()) partial[v * kGroupSize + gl_SubgroupID] = s;
    }
    barrier();
    n_parts = gl_NumSubgroups;
    part0 = 0;
    part_step = 1;
  } else
#endif
  {
    [[unroll]] for (uint v = 0; v < kValues; ++v) partial[v * kGroupSize + tid] = acc[v];
    barrier();
    for (uint s = p.lanes / 2; s > 0; s >>= 1) {
      if (lane < s)
        [[unroll]] for (uint v = 0; v < kValues; ++v) partial[v * kGroupSize + tid] += partial[v * kGroupSize + tid + s];
      barrier();
    }
    n_parts = 1;
    part0 = set * p.lanes;
    part_step = 1;
  }
  if (lane < kRows && row0 + lane < p.rows) {
    float sum = 0.0, up = 0.0;
    for (uint i = 0; i < n_parts; ++i) sum += partial[lane * kGroupSize + part0 + i * part_step];
    if (kPair)
      for (uint i = 0; i < n_parts; ++i) up += partial[(kRows + lane) * kGroupSize + part0 + i * part_step];
    write_row(item * p.y_stride + row0 + lane, sum, up, norm_s);
  }
}
