#version 450
// One decode token's attention over at most kMaxKeys keys of the paged f16 KV pool, fused with
// the output projection that follows it and its residual add (ops::AttentionO):
//   y[r] += sum_h (W_o[r, cols of KV head h's query heads] . attn_h)
// Workgroup (g, b) computes the attention of query-head group g (kMaxG query heads of one KV
// head; q_groups groups, a KV head's heads in one or more) over all keys (scores kept in shared
// memory, no online softmax), quantizes the result to int8 per 32 columns as the staged matvec
// does, and multiplies it with its columns of W_o for rows [b * R, (b + 1) * R): partial sums
// per group, written to `part`. The last of the row block's workgroups to finish (counted in
// `counters`, left zero) adds the partials in group order to y, so the result does not depend on
// which workgroup finishes last. Every workgroup of a group repeats its attention: cheap for
// short contexts only, hence kMaxKeys.
// Needs subgroups of at least 8 invocations, dk == dv == kDim a power of two in 32..256,
// kMaxG <= 8 query heads a workgroup with kMaxG * kDim <= 2048, W_o in one chunk; types as the
// staged matvec (int8 products). Every loop over heads or row steps is unrolled with no runtime
// loop inside it: on NVIDIA an array indexed in a loop that is not unrolled goes to local
// memory, which cost this kernel 7 % of a Llama-3-8B decode step (H100).
// With ROUTER, a MoE router folded into W_o (src/vulkan/router_fold.h) comes along: row blocks
// n_blocks.. of m_per rows multiply M (Q8_0, m_rows x cols) by the attention in the same way; each
// such block's last workgroup writes its rows of logits = stream_logits + M a, and the last of
// those, with topk > 0, the indices of the topk largest (largest first, ties to the lower index).
// Each W_o row block's last workgroup also writes the next norm's inputs (as
// matvec_norm_out.glsl): y * norm_w, and its rows' sum of y^2 at norm_partials[block] (block 0
// zeroes the words n_blocks..n_partials-1).
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint kMinSubgroupSize = 8;
layout(constant_id = 1) const uint kMaxG = 8;   // the query heads of a KV head
layout(constant_id = 2) const uint kDim = 128;  // the head dim (dk == dv)
layout(constant_id = 3) const uint kRankParts = 1;  // ROUTER: lanes a ranked value (ops::AttentionO::rank_parts)
const uint kThreads = 256, kMaxKeys = 256, kMaxCols = 2048;
const uint kVRows = 8;   // V rows a thread loads at once
const uint kOSteps = 4;  // W_o row steps a lane loads at once

#include "quant.glsl"
#include "int8_dot.glsl"

layout(std430, binding = 2) readonly buffer Q { float q[]; };
layout(std430, binding = 3) readonly buffer Step { int step[]; };
layout(std430, binding = 4) readonly buffer KC { uvec4 kc4[]; };
layout(std430, binding = 5) readonly buffer VC { uvec2 vc2[]; };
layout(std430, binding = 6) readonly buffer Gate { float gate[]; };
layout(std430, binding = 7) coherent buffer Y { float y[]; };
layout(std430, binding = 8) coherent buffer Part { float part[]; };
layout(std430, binding = 9) coherent buffer Counters { uint counters[]; };

layout(push_constant) uniform Push {
  uint q_head_stride, q_offset, n_kv_heads, flags;  // flags bit 0: sigmoid output gate
  uint g_head_stride, g_offset;
  uint rows, cols, rows_per_group, y_offset;      // W_o: rows x cols; y[y_offset + r]
  float scale;
  uint pos_offset, seq_offset, pages_offset;
  uint max_pages, q_word, h_word, m_word;  // the step data; W_o's planes
  uint counter_word;                        // the row blocks' counters from here
  uint m_rows, m_q_word, m_m_word, topk;    // ROUTER: M's rows and planes, experts ranked
  uint n_partials, m_per;                   // ROUTER: norm partial words to write, M's rows a block
  uint q_groups;                            // workgroups of kMaxG query heads a row block
} p;

#ifdef ROUTER
layout(std430, binding = 10) readonly buffer MQ4 { uvec4 mq4[]; };
layout(std430, binding = 10) readonly buffer MQ1 { uint mq1[]; };
layout(std430, binding = 11) readonly buffer StreamLogits { float stream_logits[]; };
layout(std430, binding = 12) coherent buffer Logits { float logits[]; };  // read back for the ranking
layout(std430, binding = 13) writeonly buffer Ids { int ids[]; };
layout(std430, binding = 14) readonly buffer NormW { float norm_w[]; };
layout(std430, binding = 15) writeonly buffer Weighted { float weighted[]; };
layout(std430, binding = 16) writeonly buffer NormPartials { float norm_partials[]; };
#endif

shared vec4 sq4[kMaxG * kDim / 4];  // the query heads times the scale; then the attention's output
shared float sp[kMaxG * kMaxKeys];  // scores, then probabilities
shared uint srow[kMaxKeys];         // pool rows of the keys
shared float s_max[kMaxG * (kThreads / kMinSubgroupSize)], s_sum[kMaxG * (kThreads / kMinSubgroupSize)];
shared vec4 sacc[kMaxG * (kThreads / kMinSubgroupSize)];  // key-lane blocks of V sums past a subgroup
shared uvec4 s_xq[2 * kMaxCols / 32];
shared vec4 s_xf[kMaxCols / 32];
shared ivec2 s_xs[kMaxCols / 32];
shared bool s_last;
#include "int8_x.glsl"
#ifdef ROUTER
void store_rank(uint i, uint id) { ids[i] = int(id); }
#define RANK_VALUES sp
#define RANK_PARTS kRankParts
#define RANK_MAX_ROWS kMaxKeys  // ops::AttentionO::kMaxRouterRows
#include "topk_rank.glsl"
#endif

vec4 sigmoid(vec4 x) { return 1.0 / (1.0 + exp(-x)); }

// v plus the q_groups partials part[base + h * stride] in group order, kPartLoads loads in flight
// (the last workgroup's tail, read from L2).
const uint kPartLoads = 16;
float add_parts(float v, uint base, uint stride) {
  for (uint h0 = 0; h0 < p.q_groups; h0 += kPartLoads) {
    float pv[kPartLoads];
    [[unroll]] for (uint u = 0; u < kPartLoads; ++u) pv[u] = part[base + min(h0 + u, p.q_groups - 1) * stride];
    [[unroll]] for (uint u = 0; u < kPartLoads; ++u)
      if (h0 + u < p.q_groups) v += pv[u];
  }
  return v;
}

// Per head g, the workgroup's max or sum of red_[g] (every invocation gets them back in red_).
float red_[kMaxG];
void reduce_heads(bool is_max) {
  [[unroll]] for (uint g = 0; g < kMaxG; ++g) {
    const float r = is_max ? subgroupMax(red_[g]) : subgroupAdd(red_[g]);
    if (subgroupElect()) {
      if (is_max) s_max[g * gl_NumSubgroups + gl_SubgroupID] = r;
      else s_sum[g * gl_NumSubgroups + gl_SubgroupID] = r;
    }
  }
  barrier();
  [[unroll]] for (uint g = 0; g < kMaxG; ++g) red_[g] = is_max ? s_max[g * gl_NumSubgroups] : s_sum[g * gl_NumSubgroups];
  for (uint i = 1; i < gl_NumSubgroups; ++i)  // the runtime loop outside: red_ stays in registers
    [[unroll]] for (uint g = 0; g < kMaxG; ++g)
      red_[g] = is_max ? max(red_[g], s_max[g * gl_NumSubgroups + i]) : red_[g] + s_sum[g * gl_NumSubgroups + i];
}

#ifdef ROUTER
shared float s_red[kThreads / kMinSubgroupSize];
shared bool s_last_router;

// A router block: M's rows [m0, m_end) over query-head group qg's ng column groups (LG lanes a
// row, as W_o's below).
void router_rows(uint qg, uint ng, uint LG, uint m0, uint m_end) {
  const uint S = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
  const uint rs = S / LG, row_step = gl_NumSubgroups * rs, groups = p.cols / 32, gbase = qg * ng;
  for (uint base = m0 + gl_SubgroupID * rs; base < m_end; base += kOSteps * row_step) {
    const uint r0 = base + lane / LG;
    float acc_r[kOSteps];
    [[unroll]] for (uint u = 0; u < kOSteps; ++u) acc_r[u] = 0.0;
    for (uint j = lane % LG; j < ng; j += LG) {
      uvec4 ca[kOSteps], cb[kOSteps];
      uint sw[kOSteps];
      [[unroll]] for (uint u = 0; u < kOSteps; ++u) {  // Q8_0 as quant.glsl reads it
        const uint gi = min(r0 + u * row_step, m_end - 1) * groups + gbase + j;
        ca[u] = mq4[p.m_q_word / 4 + 2 * gi];
        cb[u] = mq4[p.m_q_word / 4 + 2 * gi + 1];
        sw[u] = mq1[p.m_m_word + (gi >> 1)] >> (16u * (gi & 1u));
      }
      const uvec4 xa = s_xq[2 * j], xb = s_xq[2 * j + 1];
      const float xd = s_xf[j].x;
      [[unroll]] for (uint u = 0; u < kOSteps; ++u) {
        int s = 0;
        [[unroll]] for (uint i = 0; i < 4; ++i) s += sdot4(ca[u][i], xa[i]) + sdot4(cb[u][i], xb[i]);
        acc_r[u] += unpackHalf2x16(sw[u]).x * xd * float(s);
      }
    }
    for (uint off = 1; off < LG; off <<= 1)
      [[unroll]] for (uint u = 0; u < kOSteps; ++u) acc_r[u] += subgroupShuffleXor(acc_r[u], off);
    [[unroll]] for (uint u = 0; u < kOSteps; ++u) {
      const uint r = r0 + u * row_step;
      if (lane % LG == 0u && r < m_end) part[p.q_groups * p.rows + qg * p.m_rows + r] = acc_r[u];
    }
  }
}

// A router block's last workgroup: its logits (R s + M a, query-head groups in order); the last
// router block to finish (counted at router_word, left zero) ranks them all. A lone router block
// ranks the logits it holds in shared memory, with no second count and no read back.
void finish_router(uint m0, uint m_end, uint router_word, uint m_blocks) {
  const uint tid = gl_LocalInvocationID.x;
  for (uint e = m0 + tid; e < m_end; e += kThreads) {
    const float v = add_parts(stream_logits[e], p.q_groups * p.rows + e, p.m_rows);
    logits[e] = v;
    sp[e] = rank_value(v);  // sp is free by now
  }
  if (p.topk == 0u) return;
  if (m_blocks == 1u) {
    barrier();
    rank_top(p.m_rows, p.topk, 0u);
    return;
  }
  memoryBarrierBuffer();
  barrier();
  if (tid == 0) s_last_router = atomicAdd(counters[router_word], 1u) == m_blocks - 1u;
  barrier();
  if (!s_last_router) return;
  memoryBarrierBuffer();
  for (uint e = tid; e < p.m_rows; e += kThreads) sp[e] = rank_value(logits[e]);
  barrier();
  rank_top(p.m_rows, p.topk, 0u);
  if (tid == 0) counters[router_word] = 0u;
}

// A W_o row block's share of the next norm's inputs: its rows' sum of squares (ss, this
// invocation's part) at norm_partials[block].
void finish_norm_partial(uint block, uint n_blocks, float ss) {
  const float s = subgroupAdd(ss);
  if (subgroupElect()) s_red[gl_SubgroupID] = s;
  barrier();
  if (gl_LocalInvocationID.x == 0) {
    float total = 0.0;
    for (uint i = 0; i < gl_NumSubgroups; ++i) total += s_red[i];
    norm_partials[block] = total;
  }
  if (block == 0u)
    for (uint i = n_blocks + gl_LocalInvocationID.x; i < p.n_partials; i += kThreads) norm_partials[i] = 0.0;
}
#endif

void main() {
  const uint tid = gl_LocalInvocationID.x, S = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
  const uint lt = gl_SubgroupID * S + lane;  // invocation index with each subgroup's lanes contiguous
  const uint qg = gl_WorkGroupID.x % p.q_groups, block = gl_WorkGroupID.x / p.q_groups;
  const uint kvh = qg / (p.q_groups / p.n_kv_heads);
  const uint n_blocks = (p.rows + p.rows_per_group - 1) / p.rows_per_group;
#ifdef ROUTER
  const bool router = block >= n_blocks;
  const uint m_blocks = (p.m_rows + p.m_per - 1) / p.m_per;
  const uint m0 = (block - n_blocks) * p.m_per, m_end = min(m0 + p.m_per, p.m_rows);
#else
  const bool router = false;
#endif
  const uint D = kDim, G = kMaxG, h0 = qg * G;
  const int pos = step[p.pos_offset], seq = step[p.seq_offset];
  const uint n_keys = min(uint(pos) + 1, kMaxKeys);

  // The keys' pool rows and the query heads.
  for (uint k = tid; k < n_keys; k += kThreads)
    srow[k] = uint(step[p.pages_offset + uint(seq) * p.max_pages + k / 16]) * 16 + k % 16;
  for (uint i = tid; i < G * D / 4; i += kThreads) {
    const uint g = i / (D / 4), d = 4 * (i % (D / 4));
    const uint src = p.q_offset + (h0 + g) * p.q_head_stride + d;
    sq4[i] = p.scale * vec4(q[src], q[src + 1], q[src + 2], q[src + 3]);
  }
  barrier();

  // Scores: two invocations a key, each over half its dims (16-byte words of 8 halves).
  const uint k_row4 = p.n_kv_heads * D / 8, k_head4 = kvh * D / 8, half_words = D / 16;
  float m_loc[kMaxG];
  [[unroll]] for (uint g = 0; g < kMaxG; ++g) m_loc[g] = -1.0 / 0.0;
  for (uint k0 = 0; k0 < n_keys; k0 += kThreads / 2) {
    const uint k = k0 + lt / 2, hw = (lt & 1u) * half_words;
    float s[kMaxG];
    [[unroll]] for (uint g = 0; g < kMaxG; ++g) s[g] = 0.0;
    if (k < n_keys) {
      const uint base = srow[k] * k_row4 + k_head4 + hw;
      for (uint w0 = 0; w0 < half_words; w0 += 8) {
        uvec4 kw[8];
        [[unroll]] for (uint w = 0; w < 8; ++w)
          if (w0 + w < half_words) kw[w] = kc4[base + w0 + w];
        [[unroll]] for (uint w = 0; w < 8; ++w) {
          if (w0 + w >= half_words) break;
          const vec4 lo = vec4(unpackHalf2x16(kw[w].x), unpackHalf2x16(kw[w].y));
          const vec4 hi = vec4(unpackHalf2x16(kw[w].z), unpackHalf2x16(kw[w].w));
          const uint d4q = 2 * (hw + w0 + w);
          [[unroll]] for (uint g = 0; g < kMaxG; ++g) {
            const uint qi = g * (D / 4) + d4q;
            s[g] += dot(sq4[qi], lo) + dot(sq4[qi + 1], hi);
          }
        }
      }
    }
    [[unroll]] for (uint g = 0; g < kMaxG; ++g) {
      s[g] += subgroupShuffleXor(s[g], 1u);
      if (k < n_keys) {
        m_loc[g] = max(m_loc[g], s[g]);
        if ((lt & 1u) == 0u) sp[g * kMaxKeys + k] = s[g];
      }
    }
  }
  [[unroll]] for (uint g = 0; g < kMaxG; ++g) red_[g] = m_loc[g];
  reduce_heads(true);  // its barrier also publishes sp
  float m[kMaxG];
  [[unroll]] for (uint g = 0; g < kMaxG; ++g) m[g] = red_[g];

  // Probabilities, unnormalised, and their sums.
  [[unroll]] for (uint g = 0; g < kMaxG; ++g) red_[g] = 0.0;
  for (uint k = tid; k < n_keys; k += kThreads) {
    [[unroll]] for (uint g = 0; g < kMaxG; ++g) {
      const float pr = exp(sp[g * kMaxKeys + k] - m[g]);
      sp[g * kMaxKeys + k] = pr;
      red_[g] += pr;
    }
  }
  reduce_heads(false);  // its barrier also publishes the probabilities
  float l[kMaxG];
  [[unroll]] for (uint g = 0; g < kMaxG; ++g) l[g] = red_[g];

  // V: invocation lt = d4 * KL + kl sums keys kl, kl + KL, ... of dims 4 * d4 .. 4 * d4 + 3.
  const uint dv4 = D / 4, KL = kThreads / dv4, kl = lt % KL, d4 = lt / KL;
  const uint v_row2 = p.n_kv_heads * D / 4, v_head2 = kvh * D / 4;
  vec4 acc[kMaxG];
  [[unroll]] for (uint g = 0; g < kMaxG; ++g) acc[g] = vec4(0.0);
  for (uint k0 = kl; k0 < n_keys; k0 += kVRows * KL) {
    uvec2 vw[kVRows];
    [[unroll]] for (uint u = 0; u < kVRows; ++u) {
      const uint k = k0 + u * KL;
      vw[u] = uvec2(0u);
      if (k < n_keys) vw[u] = vc2[srow[k] * v_row2 + v_head2 + d4];
    }
    [[unroll]] for (uint u = 0; u < kVRows; ++u) {
      const uint k = min(k0 + u * KL, kMaxKeys - 1);
      const bool live = k0 + u * KL < n_keys;  // sp past n_keys holds stale values
      const vec4 vv = vec4(unpackHalf2x16(vw[u].x), unpackHalf2x16(vw[u].y));
      [[unroll]] for (uint g = 0; g < kMaxG; ++g) acc[g] += (live ? sp[g * kMaxKeys + k] : 0.0) * vv;
    }
  }
  // The key lanes summed: within a subgroup by shuffles, across subgroups through sacc.
  const uint span = min(KL, S), blocks = KL / span;
  for (uint off = 1; off < span; off <<= 1)
    [[unroll]] for (uint g = 0; g < kMaxG; ++g) acc[g] += subgroupShuffleXor(acc[g], off);
  if (blocks > 1 && kl % span == 0) {
    [[unroll]] for (uint g = 0; g < kMaxG; ++g) {
      sacc[(g * blocks + kl / span) * dv4 + d4] = acc[g];
    }
  }
  barrier();  // sacc written; sq4 (the queries) read by everyone
  if (kl == 0) {
    for (uint b = 1; b < blocks; ++b)
      [[unroll]] for (uint g = 0; g < kMaxG; ++g) acc[g] += sacc[(g * blocks + b) * dv4 + d4];
    [[unroll]] for (uint g = 0; g < kMaxG; ++g) {
      vec4 a = acc[g] / l[g];
      if ((p.flags & 1u) != 0u) {
        const uint gb = p.g_offset + (h0 + g) * p.g_head_stride + 4 * d4;
        a *= sigmoid(vec4(gate[gb], gate[gb + 1], gate[gb + 2], gate[gb + 3]));
      }
      sq4[g * (D / 4) + d4] = a;
    }
  }
  barrier();

  // The attention's output (G * D columns, contiguous in sq4) quantized per 32-group, eight
  // invocations a group.
  const uint ng = G * D / 32;
  for (uint v = lt; v < ng * 8; v += kThreads) {
    const uint g = v >> 3, j = v & 7u;
    stage_x_quad(g, j, sq4[8 * g + j]);
  }
  barrier();

  // This workgroup's rows of W_o over its query-head group's columns: LG lanes a row (a power of
  // two), S / LG rows of a subgroup at once, kOSteps such row steps loaded before any is used.
  uint LG = 1;
  while (LG * 2 <= min(ng, S)) LG *= 2;
  const uint rs = S / LG, row_step = gl_NumSubgroups * rs;
  const uint row0 = block * p.rows_per_group, row_end = min(row0 + p.rows_per_group, p.rows);
  const uint groups = p.cols / 32, blocks_per_row = groups / BLOCK_GROUPS, gbase = qg * ng;
  const uvec4 planes = uvec4(p.q_word, p.h_word, p.m_word, 0u);
#ifdef ROUTER
  if (router) router_rows(qg, ng, LG, m0, m_end);
#endif
  for (uint base = row0 + gl_SubgroupID * rs; !router && base < row_end; base += kOSteps * row_step) {
    const uint r0 = base + lane / LG;
    float acc_r[kOSteps];
    [[unroll]] for (uint u = 0; u < kOSteps; ++u) acc_r[u] = 0.0;
    for (uint j = lane % LG; j < ng; j += LG) {
      const uint gcol = gbase + j;
      Group gr[kOSteps];
      [[unroll]] for (uint u = 0; u < kOSteps; ++u) {
        const uint r = min(r0 + u * row_step, row_end - 1);
        gr[u] = load_group(0, planes, r * groups + gcol, r * blocks_per_row + gcol / BLOCK_GROUPS, gcol % BLOCK_GROUPS);
      }
      const uvec4 xa = s_xq[2 * j], xb = s_xq[2 * j + 1];
      const vec4 xf = s_xf[j];
      const ivec2 xs = s_xs[j];
      [[unroll]] for (uint u = 0; u < kOSteps; ++u) acc_r[u] += x_dot(gr[u], xa, xb, xf, xs);
    }
    for (uint off = 1; off < LG; off <<= 1)
      [[unroll]] for (uint u = 0; u < kOSteps; ++u) acc_r[u] += subgroupShuffleXor(acc_r[u], off);
    [[unroll]] for (uint u = 0; u < kOSteps; ++u) {
      const uint r = r0 + u * row_step;
      if (lane % LG == 0u && r < row_end) part[qg * p.rows + r] = acc_r[u];
    }
  }

  // Counted; the row block's last workgroup adds the groups' partials into y in order.
  memoryBarrierBuffer();
  barrier();
  if (tid == 0) s_last = atomicAdd(counters[p.counter_word + block], 1u) == p.q_groups - 1u;
  barrier();
  if (!s_last) return;
  memoryBarrierBuffer();
#ifdef ROUTER
  if (router) {
    if (tid == 0) counters[p.counter_word + block] = 0u;
    finish_router(m0, m_end, p.counter_word + n_blocks + m_blocks, m_blocks);
    return;
  }
  float ss = 0.0;
#endif
  for (uint r = row0 + tid; r < row_end; r += kThreads) {
    const float v = add_parts(y[p.y_offset + r], r, p.rows);
    y[p.y_offset + r] = v;
#ifdef ROUTER
    weighted[p.y_offset + r] = v * norm_w[r];
    ss += v * v;
#endif
  }
#ifdef ROUTER
  finish_norm_partial(block, n_blocks, ss);
#endif
  if (tid == 0) counters[p.counter_word + block] = 0u;
}
