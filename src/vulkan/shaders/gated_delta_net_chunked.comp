#version 450
// Gated delta rule in chunks of up to kChunk tokens of one sequence (the chunked parallel form
// of Gated DeltaNet / flash-linear-attention's chunk_gated_delta_rule), same results as the
// token recurrence of gated_delta_net.comp up to float rounding. Within a chunk, with
// lg_c = sum_{i<=c} log decay_i, G_ci = exp(lg_c - lg_i) and S the state at the chunk start:
//   e = (I + diag(b) A)^-1 diag(b) (V - diag(exp lg) K S^T),  A_ci = G_ci k_c.k_i (i < c)
//   o_c = exp(lg_c) S q_c + sum_{i<=c} G_ci (q_c.k_i) e_i
//   S  <- exp(lg_n) S + sum_i G_ni e_i k_i^T
// A workgroup owns kRowsV value rows of one head's state. It keeps them in shared memory while
// it walks the batch in runs of one sequence (loaded at a run's start, written at its end), and
// loads the next chunk's q, k, v and gates into registers while it works on the current one.
// Per chunk, four barriers: gates and norms; the products k.k, q.k, k.S, q.S (thread (c, r) also
// takes (c, i) for i = r, r + kRowsV..; vec4 loads); the forward substitution (one thread per
// value row, all in registers); outputs and the state update.
// ROWS_V (8 or 16, default 16) value rows per workgroup; kChunk threads per row.
#extension GL_EXT_control_flow_attributes : enable
#ifndef ROWS_V
#define ROWS_V 16
#endif
layout(local_size_x = 16 * ROWS_V) in;
const uint kChunk = 16;
const uint kRowsV = ROWS_V;
const uint kThreads = kChunk * kRowsV;
const uint kMaxDk = 128;
const uint kVecs = kMaxDk / 4;     // vec4 per row
const uint kRow = kVecs + 1;       // shared row stride in vec4: rows read together fall in different banks
const uint kParts = kThreads / (2 * kChunk);  // threads per q or k row when loading
const uint kVecsPerPart = kVecs / kParts;

layout(std430, binding = 0) readonly buffer Qkv { float qkv[]; };
layout(std430, binding = 1) readonly buffer Beta { float beta[]; };
layout(std430, binding = 2) readonly buffer Alpha { float alpha[]; };
layout(std430, binding = 3) readonly buffer A { float a[]; };
layout(std430, binding = 4) readonly buffer Dt { float dt_bias[]; };
layout(std430, binding = 5) readonly buffer Seq { int seq_ids[]; };
layout(std430, binding = 6) buffer State { float state[]; };
layout(std430, binding = 7) writeonly buffer Out { float y[]; };

layout(push_constant) uniform Push {
  uint n_k_heads, d_k, n_v_heads, d_v;
  uint grouped;
  float eps;
  uint n_tokens;
  uint qkv_stride;
  uint gate_stride;
  uint out_stride;
  uint slot_stride;
  uint state_offset;
} p;

shared vec4 sQ[kChunk * kRow], sK[kChunk * kRow];  // normalised (q also / sqrt(d_k)), zero past the run
shared vec4 sS[kRowsV * kRow];                     // the state rows [r][j]
shared float sA[kChunk * kChunk];                  // [c][i]: b_c G_ci k_c.k_i, i < c
shared float sM[kChunk * kChunk];                  // [c][i]: G_ci q_c.k_i, i <= c
shared float sP[kThreads];                         // [c][r]: v - exp(lg_c) k_c.S_r; also the norm partial sums
shared float sE[kChunk * kRowsV];                  // [c][r]
shared int sSeq[kChunk];
shared float sB[kChunk], sLr[kChunk], sLg[kChunk], sGam[kChunk], sTail[kChunk];
shared float sGn;

float softplus(float x) { return x > 20.0 ? x : log(1.0 + exp(x)); }

uint tid;
uint h, r0, nr, kh, key_dim, dk;

// Registers holding the next chunk's inputs: q or k row (tid / kParts) % kChunk, vec4s
// tid % kParts + kParts m; v of (c, r) = (tid / kRowsV, tid % kRowsV); gates and seq of token tid.
vec4 pf[kVecsPerPart];
float pv, pbeta, palpha;
int pseq;

void prefetch(uint t0) {
  const uint row = tid / kParts, part = tid % kParts;
  const uint t = t0 + row % kChunk;
  const bool ok = t < p.n_tokens;
  const uint src = t * p.qkv_stride + (row >= kChunk ? key_dim : 0u) + kh * dk;
  [[unroll]] for (uint m = 0; m < kVecsPerPart; ++m) {
    const uint j = 4 * (part + kParts * m);
    [[unroll]] for (uint e = 0; e < 4; ++e) pf[m][e] = ok && j + e < dk ? qkv[src + j + e] : 0.0;
  }
  const uint tv = t0 + tid / kRowsV, r = tid % kRowsV;
  pv = tv < p.n_tokens && r < nr ? qkv[tv * p.qkv_stride + 2 * key_dim + h * p.d_v + r0 + r] : 0.0;
  if (tid < kChunk) {
    const bool g = t0 + tid < p.n_tokens;
    pseq = g ? seq_ids[t0 + tid] : -1;
    pbeta = g ? beta[(t0 + tid) * p.gate_stride + h] : 0.0;
    palpha = g ? alpha[(t0 + tid) * p.gate_stride + h] : 0.0;
  }
}

// The state elements this thread loads and stores: row tid / 16, vec4s tid % 16 and + 16
// (kChunk == 16 threads per row).
void load_state(int seq) {
  const uint r = tid / 16, base = uint(seq) * p.slot_stride + p.state_offset + (h * p.d_v + r0 + r) * dk;
  [[unroll]] for (uint m = 0; m < 2; ++m) {
    const uint v = tid % 16 + 16 * m;
    vec4 s = vec4(0.0);
    [[unroll]] for (uint e = 0; e < 4; ++e)
      if (r < nr && 4 * v + e < dk) s[e] = state[base + 4 * v + e];
    sS[r * kRow + v] = s;
  }
}

void store_state(int seq) {
  const uint r = tid / 16, base = uint(seq) * p.slot_stride + p.state_offset + (h * p.d_v + r0 + r) * dk;
  [[unroll]] for (uint m = 0; m < 2; ++m) {
    const uint v = tid % 16 + 16 * m;
    const vec4 s = sS[r * kRow + v];
    [[unroll]] for (uint e = 0; e < 4; ++e)
      if (r < nr && 4 * v + e < dk) state[base + 4 * v + e] = s[e];
  }
}

void main() {
  tid = gl_LocalInvocationID.x;
  const uint blocks = (p.d_v + kRowsV - 1) / kRowsV;
  h = gl_WorkGroupID.x / blocks;
  r0 = (gl_WorkGroupID.x % blocks) * kRowsV;
  nr = min(kRowsV, p.d_v - r0);
  kh = p.grouped != 0u ? h / (p.n_v_heads / p.n_k_heads) : h % p.n_k_heads;
  key_dim = p.n_k_heads * p.d_k;
  dk = p.d_k;
  const float q_scale = 1.0 / sqrt(float(dk));
  const float ah = a[h], dth = dt_bias[h];
  const uint c = tid / kRowsV, r = tid % kRowsV;  // this thread's (c, i) and (c, r)

  int cur = -1;  // the sequence whose state sS holds
  prefetch(0);
  for (uint t0 = 0; t0 < p.n_tokens;) {
    // Gates, sequence ids and the squares of the prefetched q/k row.
    if (tid < kChunk) {
      sSeq[tid] = pseq;
      sB[tid] = 1.0 / (1.0 + exp(-pbeta));
      sLr[tid] = ah * softplus(palpha + dth);
    }
    float ss = 0.0;
    [[unroll]] for (uint m = 0; m < kVecsPerPart; ++m) ss += dot(pf[m], pf[m]);
    sP[tid] = ss;
    barrier();

    // The run (up to kChunk tokens of t0's sequence), normalised q/k, gates, the state rows.
    const int seq = sSeq[0];
    uint n = kChunk;
    [[unroll]] for (uint i = kChunk - 1; i > 0; --i)
      if (sSeq[i] != seq) n = i;
    {
      const uint row = tid / kParts, part = tid % kParts, cq = row % kChunk;
      float total = 0.0;
      [[unroll]] for (uint i = 0; i < kParts; ++i) total += sP[row * kParts + i];
      const float inv = cq < n ? 1.0 / max(sqrt(total), p.eps) : 0.0;
      [[unroll]] for (uint m = 0; m < kVecsPerPart; ++m) {
        if (row < kChunk) sQ[cq * kRow + part + kParts * m] = (pf[m] * inv) * q_scale;  // rounded as the CPU does
        else sK[cq * kRow + part + kParts * m] = pf[m] * inv;
      }
    }
    const float v_cr = c < n ? pv : 0.0;
    if (tid < kChunk) {
      float lg = 0.0, last = 0.0;
      [[unroll]] for (uint i = 0; i < kChunk; ++i) {
        const float lr = i < n ? sLr[i] : 0.0;
        last += lr;
        if (i <= tid) lg = last;
      }
      sLg[tid] = lg;
      sGam[tid] = exp(lg);
      sTail[tid] = tid < n ? exp(last - lg) : 0.0;
      if (tid == 0) sGn = exp(last);
    }
    if (seq != cur) {
      if (cur >= 0) store_state(cur);
      load_state(seq);
      cur = seq;
    }
    prefetch(t0 + n);
    barrier();

    // k_c.k_i and q_c.k_i for (c, i), i = r + kRowsV m; k_c.S_r and q_c.S_r for (c, r).
    float qs;
    {
      const uint kPairs = kChunk / kRowsV;
      float kk[kPairs], qk[kPairs], ks = 0.0;
      [[unroll]] for (uint m = 0; m < kPairs; ++m) kk[m] = qk[m] = 0.0;
      qs = 0.0;
      for (uint v = 0; v < kVecs; ++v) {  // rows are zero past d_k, so a constant trip count
        const vec4 kc = sK[c * kRow + v], qc = sQ[c * kRow + v], sr = sS[r * kRow + v];
        [[unroll]] for (uint m = 0; m < kPairs; ++m) {
          const vec4 ki = sK[(r + kRowsV * m) * kRow + v];
          kk[m] += dot(kc, ki);
          qk[m] += dot(qc, ki);
        }
        ks += dot(kc, sr);
        qs += dot(qc, sr);
      }
      [[unroll]] for (uint m = 0; m < kPairs; ++m) {
        const uint i = r + kRowsV * m;
        const bool lower = i <= c && c < n;
        const float g = lower ? exp(sLg[c] - sLg[i]) : 0.0;
        sA[c * kChunk + i] = lower && i < c ? sB[c] * g * kk[m] : 0.0;
        sM[c * kChunk + i] = lower ? g * qk[m] : 0.0;
      }
      sP[tid] = v_cr - sGam[c] * ks;
    }
    barrier();

    // E = (I + A)^-1 diag(b) P by forward substitution: thread r owns column r.
    if (tid < kRowsV) {
      float acc[kChunk];
      [[unroll]] for (uint i = 0; i < kChunk; ++i) acc[i] = sB[i] * sP[i * kRowsV + tid];
      [[unroll]] for (uint m = 0; m < kChunk; ++m) {
        sE[m * kRowsV + tid] = acc[m];
        [[unroll]] for (uint i = m + 1; i < kChunk; ++i) acc[i] -= sA[i * kChunk + m] * acc[m];
      }
    }
    barrier();

    // o_c = exp(lg_c) S q_c + sum_{i<=c} G_ci (q_c.k_i) e_i for (c, r).
    {
      float o = sGam[c] * qs;
      [[unroll]] for (uint i = 0; i < kChunk; ++i) o += sM[c * kChunk + i] * sE[i * kRowsV + r];
      if (c < n && r < nr) y[(t0 + c) * p.out_stride + h * p.d_v + r0 + r] = o;
    }
    // S <- exp(lg_n) S + sum_c G_nc e_c k_c^T on this thread's elements (those of load_state).
    {
      const uint sr = tid / 16;
      const float gn = sGn;
      vec4 s0 = gn * sS[sr * kRow + tid % 16], s1 = gn * sS[sr * kRow + tid % 16 + 16];
      [[unroll]] for (uint i = 0; i < kChunk; ++i) {
        const float te = sTail[i] * sE[i * kRowsV + sr];
        s0 += te * sK[i * kRow + tid % 16];
        s1 += te * sK[i * kRow + tid % 16 + 16];
      }
      sS[sr * kRow + tid % 16] = s0;
      sS[sr * kRow + tid % 16 + 16] = s1;
    }
    t0 += n;
    // The next chunk's first writes (sSeq, sB, sLr, sP) are read no later than this chunk's
    // substitution, which every thread has passed.
  }
  if (cur >= 0) store_state(cur);
}
