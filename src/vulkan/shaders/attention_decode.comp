#version 450
// Attention for decode steps (a few tokens) over the f16 paged KV pool; the same bindings, push
// block, splits and outputs as attention.comp, laid out for memory throughput: in each tile of
// 128 keys a thread loads its key's row as 16-byte words (four in flight at a time) and scores
// it against the workgroup's query heads; then the V rows of the tile are read whole by dv/4
// threads each (8-byte words), eight keys per key lane at a time, and the key lanes are summed
// at the end.
// Needs subgroup arithmetic, dk % 8 == 0, dv % 4 == 0 and 128 % (dv / 4) == 0.
// Split over the keys (flags bit 1), each workgroup writes its partial record; with flags bit 2
// the last workgroup of a (token, head group) to finish (counted in `counters`, which it leaves
// at zero) merges the records into the output (binding 6) itself, so no combine pass is needed. With bit 2,
// splits past the keys return at once, and when only split 0 has keys it writes the output.
// Outputs are written as 16-byte words: out_stride % 4 == 0.
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#ifdef PHASE_CLOCK
#extension GL_ARB_shader_clock : require
#extension GL_EXT_shader_realtime_clock : require
#define PHASE_CLOCK_BINDING 8
#endif
// With PHASE_CLOCK (phase_clock.glsl, binding 8), phases of token 0: 0 entry, 1 q staged, 2 the
// first tile's scores reduced, 3 the first tile done, 4 all tiles done, 5 output or partial
// record written; for the merging workgroup: 6 its records released (memory barrier), 7 counted
// (atomic), 8 the others' records acquired (memory barrier), 9 splits merged.
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint kMinSubgroupSize = 1;
const uint kThreads = 128;
#ifndef MAX_G
#define MAX_G 8
#endif
const uint kMaxG = MAX_G;  // query heads per workgroup
const uint kMaxDim = 256;
// V rows per key lane loaded at once. On the H200 eight against two: Llama-3-8B decode 299.9 ->
// 301.9 tok/s at depth 0, 276.4 -> 284.9 at 512, 261.9 -> 269.7 at 4096 (registers unchanged).
const uint kVRows = 8;

layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer Step { int step[]; };
layout(std430, binding = 2) readonly buffer KC { uvec4 kc4[]; };
layout(std430, binding = 3) readonly buffer VC { uvec2 vc2[]; };
layout(std430, binding = 4) coherent buffer Out4 { vec4 out4_[]; };  // split records: (m, l, -, -), acc
layout(std430, binding = 5) readonly buffer Gate { float gate[]; };
layout(std430, binding = 6) writeonly buffer Final { vec4 final4_[]; };  // out_stride % 4 == 0
layout(std430, binding = 7) coherent buffer Counters { uint counters[]; };

layout(push_constant) uniform Push {
  uint q_stride, q_head_stride, q_offset, n_q_heads;
  uint dk, dv, n_kv_heads, group;
  uint g_stride, g_head_stride, g_offset, flags;
  uint out_stride;
  float scale;
  uint n_splits, min_chunk;
  uint pos_offset, seq_offset, pages_offset, max_pages;
} p;

#include "phase_clock.glsl"

shared vec4 sq4[kMaxG * kMaxDim / 4];  // the query heads, times the scale
shared float sp[kMaxG * kThreads];     // probabilities of the tile's keys
shared uint srow[kThreads];            // pool rows of the tile's keys
shared float sred[kMaxG * (kThreads / kMinSubgroupSize)];
shared vec4 sacc[kThreads * kMaxG];    // per key lane, head and 4 output dims
shared bool s_last;
const uint kMaxSplits = 64;
shared float s_m[kMaxG * kMaxSplits], s_l[kMaxG * kMaxSplits];

vec4 sigmoid(vec4 x) { return 1.0 / (1.0 + exp(-x)); }

// The gate of head h's dims 4 * d4 ... 4 * d4 + 3 of token t.
vec4 gate_at(uint t, uint h, uint d4) {
  const uint gb = t * p.g_stride + p.g_offset + h * p.g_head_stride + 4 * d4;
  return vec4(gate[gb], gate[gb + 1], gate[gb + 2], gate[gb + 3]);
}

// Records a thread of the merge reads at once. On the H200 (tg128 at depth 4096, 33 splits),
// eight 16-byte words against four records read as floats before: Llama-3-8B 294.6 -> 298.7
// tok/s, Qwen3-30B-A3B 233.3 -> 237.4, Qwen3.5-35B-A3B 291.0 -> 293.6; sixteen: 292.9, 233.0,
// 291.0 (103 registers against 83).
const uint kMergeLoads = 8;

// Merges the partial records of splits < n_live for the workgroup's heads into the output. A
// record is dv / 4 + 1 vec4s: (m, l, unused, unused), then the output's partial sums.
void merge_splits(uint t, uint h0, uint ng, uint n_live) {
  const uint tid = gl_LocalInvocationID.x, dv4 = p.dv / 4, rec4 = dv4 + 1;
  for (uint i = tid; i < ng * n_live; i += kThreads) {
    const uint g = i / n_live, s = i % n_live;
    const vec2 ml = out4_[((t * p.n_q_heads + h0 + g) * p.n_splits + s) * rec4].xy;
    s_m[g * kMaxSplits + s] = ml.x;
    s_l[g * kMaxSplits + s] = ml.y;
  }
  barrier();
  const bool gated = (p.flags & 1u) != 0u;
  for (uint i = tid; i < ng * dv4; i += kThreads) {
    const uint g = i / dv4, d4 = i % dv4;
    float mx = -1.0 / 0.0;
    for (uint s = 0; s < n_live; ++s) mx = max(mx, s_m[g * kMaxSplits + s]);
    float total = 0.0;
    vec4 a = vec4(0.0);
    const uint rec0 = (t * p.n_q_heads + h0 + g) * p.n_splits * rec4 + 1 + d4;
    for (uint s0 = 0; s0 < n_live; s0 += kMergeLoads) {
      vec4 v[kMergeLoads];
      [[unroll]] for (uint u = 0; u < kMergeLoads; ++u)
        v[u] = s0 + u < n_live ? out4_[rec0 + (s0 + u) * rec4] : vec4(0.0);
      [[unroll]] for (uint u = 0; u < kMergeLoads; ++u) {
        if (s0 + u < n_live) {
          const float w = exp(s_m[g * kMaxSplits + s0 + u] - mx);
          total += s_l[g * kMaxSplits + s0 + u] * w;
          a += w * v[u];
        }
      }
    }
    const uint h = h0 + g;
    vec4 r = a / total;
    if (gated) r *= sigmoid(gate_at(t, h, d4));
    final4_[(t * p.out_stride + h * p.dv) / 4 + d4] = r;
  }
}

// Per head g: the workgroup's max (is_max) or sum of red_[g]; every thread gets the results in
// red_. (A module-scope array rather than an array parameter, which NVIDIA's compiler may place
// in local memory; the loop over subgroups outside the one over heads, for the same reason.)
float red_[kMaxG];
void reduce_heads(bool is_max) {
  const uint nsg = gl_NumSubgroups;
  [[unroll]] for (uint g = 0; g < kMaxG; ++g) {
    const float r = is_max ? subgroupMax(red_[g]) : subgroupAdd(red_[g]);
    if (subgroupElect()) sred[g * nsg + gl_SubgroupID] = r;
  }
  barrier();
  [[unroll]] for (uint g = 0; g < kMaxG; ++g) red_[g] = sred[g * nsg];
  for (uint i = 1; i < nsg; ++i)
    [[unroll]] for (uint g = 0; g < kMaxG; ++g)
      red_[g] = is_max ? max(red_[g], sred[g * nsg + i]) : red_[g] + sred[g * nsg + i];
  barrier();
}

void main() {
  phase_mark(0);
  const uint n_qsub = (p.group + kMaxG - 1) / kMaxG;
  const uint kvh = gl_WorkGroupID.x / n_qsub, qsub = gl_WorkGroupID.x % n_qsub;
  const uint t = gl_WorkGroupID.y, split = gl_WorkGroupID.z;
  const uint h0 = kvh * p.group + qsub * kMaxG;
  const uint ng = min(kMaxG, p.group - qsub * kMaxG);
  const uint tid = gl_LocalInvocationID.x;
  const int pos = step[p.pos_offset + t], seq = step[p.seq_offset + t];
  const uint n_keys = uint(pos) + 1;
  uint chunk = max(p.min_chunk, (n_keys + p.n_splits - 1) / p.n_splits);
  if (chunk > kThreads) chunk = (chunk + kThreads - 1) / kThreads * kThreads;
  const uint begin = split * chunk, end = min(n_keys, begin + chunk);
  const uint n_live = (n_keys + chunk - 1) / chunk;
  const bool merge = (p.flags & 6u) == 6u;
  if (merge && split >= n_live) return;
  const bool partial = (p.flags & 2u) != 0u && !(merge && n_live == 1);

  const uint dk4 = p.dk / 4;
  for (uint i = tid; i < kMaxG * dk4; i += kThreads) {  // heads past ng: zeros, computed and not written
    const uint g = i / dk4, d = 4 * (i % dk4);
    const uint src = t * p.q_stride + p.q_offset + (h0 + g) * p.q_head_stride + d;
    sq4[g * (kMaxDim / 4) + d / 4] = g < ng ? p.scale * vec4(q[src], q[src + 1], q[src + 2], q[src + 3]) : vec4(0.0);
  }
  barrier();
  if (t == 0) phase_mark(1);

  // Pool rows in 16-byte K words and 8-byte V words.
  const uint k_row4 = p.n_kv_heads * p.dk / 8, k_head4 = kvh * p.dk / 8;
  const uint v_row2 = p.n_kv_heads * p.dv / 4, v_head2 = kvh * p.dv / 4;
  const uint dv4 = p.dv / 4, key_lanes = kThreads / dv4, kl = tid / dv4, d4 = tid % dv4;

  float m[kMaxG], l[kMaxG];
  vec4 acc[kMaxG];
  [[unroll]] for (uint g = 0; g < kMaxG; ++g) {
    m[g] = -1.0 / 0.0;
    l[g] = 0.0;
    acc[g] = vec4(0.0);
  }
  for (uint base = begin; base < end; base += kThreads) {
    const uint key = base + tid;
    float s[kMaxG];
    [[unroll]] for (uint g = 0; g < kMaxG; ++g) s[g] = -1.0 / 0.0;
    if (key < end) {
      const uint row = uint(step[p.pages_offset + uint(seq) * p.max_pages + key / 16]) * 16 + key % 16;
      srow[tid] = row;
      const uint k0 = row * k_row4 + k_head4;
      [[unroll]] for (uint g = 0; g < kMaxG; ++g) s[g] = 0.0;
      // 4 words (32 dims) at a time, all loaded before use. (Unrolled over 16 words, the kernel
      // took longer in the decode step of the H200 at every depth: Llama-3-8B 3.49 -> 3.32 ms a
      // token at depth 0, 3.93 -> 3.82 at 4096.)
      for (uint w0 = 0; w0 < p.dk / 8; w0 += 4) {
        uvec4 kw[4];
        [[unroll]] for (uint w = 0; w < 4; ++w)
          if (w0 + w < p.dk / 8) kw[w] = kc4[k0 + w0 + w];
        [[unroll]] for (uint g = 0; g < kMaxG; ++g) {
                float a = 0.0;
          [[unroll]] for (uint w = 0; w < 4; ++w)
            if (w0 + w < p.dk / 8) {
              const vec4 lo = vec4(unpackHalf2x16(kw[w].x), unpackHalf2x16(kw[w].y));
              const vec4 hi = vec4(unpackHalf2x16(kw[w].z), unpackHalf2x16(kw[w].w));
              const uint qi = g * (kMaxDim / 4) + 2 * (w0 + w);
              a += dot(sq4[qi], lo) + dot(sq4[qi + 1], hi);
            }
          s[g] += a;
        }
      }
    }
    [[unroll]] for (uint g = 0; g < kMaxG; ++g) red_[g] = s[g];
    reduce_heads(true);
    if (t == 0 && base == begin) phase_mark(2);
    [[unroll]] for (uint g = 0; g < kMaxG; ++g) {
        const float mn = max(m[g], red_[g]);
      const float c = exp(m[g] - mn);  // 0 on the first tile
      l[g] *= c;
      acc[g] *= c;
      m[g] = mn;
      const float pr = key < end ? exp(s[g] - mn) : 0.0;
      l[g] += pr;
      sp[g * kThreads + tid] = pr;
    }
    barrier();
    const uint nk = min(kThreads, end - base);
    // kVRows V rows per step, all loads in flight before they are used.
    uint j = kl;
    for (; j + (kVRows - 1) * key_lanes < nk; j += kVRows * key_lanes) {
      uvec2 vw[kVRows];
      [[unroll]] for (uint u = 0; u < kVRows; ++u) vw[u] = vc2[srow[j + u * key_lanes] * v_row2 + v_head2 + d4];
      [[unroll]] for (uint u = 0; u < kVRows; ++u) {
        const vec4 vv = vec4(unpackHalf2x16(vw[u].x), unpackHalf2x16(vw[u].y));
        [[unroll]] for (uint g = 0; g < kMaxG; ++g) {
                acc[g] += sp[g * kThreads + j + u * key_lanes] * vv;
        }
      }
    }
    for (; j < nk; j += key_lanes) {
      const uvec2 vw = vc2[srow[j] * v_row2 + v_head2 + d4];
      const vec4 vv = vec4(unpackHalf2x16(vw.x), unpackHalf2x16(vw.y));
      [[unroll]] for (uint g = 0; g < kMaxG; ++g) {
            acc[g] += sp[g * kThreads + j] * vv;
      }
    }
    barrier();
    if (t == 0 && base == begin) phase_mark(3);
  }
  if (t == 0) phase_mark(4);

  // Sum the key lanes' outputs and the threads' probability sums.
  [[unroll]] for (uint g = 0; g < kMaxG; ++g) {
    sacc[(kl * kMaxG + g) * dv4 + d4] = acc[g];
  }
  [[unroll]] for (uint g = 0; g < kMaxG; ++g) red_[g] = l[g];
  reduce_heads(false);  // its barriers also order the sacc writes
  [[unroll]] for (uint g = 0; g < kMaxG; ++g) l[g] = red_[g];
  if (kl == 0) {
    [[unroll]] for (uint g = 0; g < kMaxG; ++g) acc[g] = sacc[g * dv4 + d4];
    for (uint i = 1; i < key_lanes; ++i)
      [[unroll]] for (uint g = 0; g < kMaxG; ++g) acc[g] += sacc[(i * kMaxG + g) * dv4 + d4];
    [[unroll]] for (uint g = 0; g < kMaxG; ++g) {
      const vec4 a = acc[g];
      const uint h = h0 + g;
      if (g >= ng) {
      } else if (partial) {
        const uint rec4 = ((t * p.n_q_heads + h) * p.n_splits + split) * (dv4 + 1);
        if (tid == 0) out4_[rec4] = vec4(begin < end ? m[g] : -1.0 / 0.0, begin < end ? l[g] : 0.0, 0.0, 0.0);
        out4_[rec4 + 1 + d4] = a;
      } else {
        vec4 r = a * (1.0 / l[g]);
        if ((p.flags & 1u) != 0u) r *= sigmoid(gate_at(t, h, d4));
        const uint o4 = (t * p.out_stride + h * p.dv) / 4 + d4;
        if (merge) final4_[o4] = r;
        else out4_[o4] = r;
      }
    }
  }
  if (t == 0) phase_mark(5);
  if (!partial || !merge) return;
  // The partial records are written: count this workgroup; the last live one merges.
  memoryBarrierBuffer();
  barrier();
  if (t == 0) phase_mark(6);
  const uint counter = t * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (tid == 0) s_last = atomicAdd(counters[counter], 1u) == n_live - 1u;
  barrier();
  if (!s_last) return;
  if (t == 0) phase_mark(7);
  memoryBarrierBuffer();
  if (t == 0) phase_mark(8);
  merge_splits(t, h0, ng, n_live);
  if (tid == 0) counters[counter] = 0u;
  if (t == 0) phase_mark(9);
}
