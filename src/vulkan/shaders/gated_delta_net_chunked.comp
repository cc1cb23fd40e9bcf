#version 450
// Gated delta rule in chunks of up to kChunk tokens of one sequence (the chunked parallel form
// of Gated DeltaNet / flash-linear-attention's chunk_gated_delta_rule), same results as the
// token recurrence of gated_delta_net.comp up to float rounding. Within a chunk, with
// lg_c = sum_{i<=c} log decay_i, G_ci = exp(lg_c - lg_i) and S the state at the chunk start:
//   e = (I + diag(b) A)^-1 diag(b) (V - diag(exp lg) K S^T),  A_ci = G_ci k_c.k_i (i < c)
//   o_c = exp(lg_c) S q_c + sum_{i<=c} G_ci (q_c.k_i) e_i
//   S  <- exp(lg_n) S + sum_i G_ni e_i k_i^T
// A workgroup owns kRowsV value rows of one head's state (kept in shared memory while it walks
// the batch's tokens in runs of one sequence).
layout(local_size_x = 256) in;
const uint kThreads = 256;
const uint kChunk = 16;
const uint kRowsV = 16;
const uint kMaxDk = 128;
const uint kRow = kMaxDk + 1;  // shared row stride: rows read in parallel fall in different banks

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

shared float sK[kChunk * kRow], sQ[kChunk * kRow];
shared float sS[kRowsV * kRow];  // [row][j]
shared float sM[kChunk * kChunk];  // G_ci (q_c . k_i), i <= c
shared float sA[kChunk * kChunk];  // A, beta-scaled
shared float sP[kChunk * kRowsV], sE[kChunk * kRowsV];
shared float sLg[kChunk], sB[kChunk], sNorm[2 * kChunk];
shared float sGam[kChunk], sTail[kChunk];  // exp(lg_c), exp(lg_{n-1} - lg_c)
shared uint sRun;

float softplus(float x) { return x > 20.0 ? x : log(1.0 + exp(x)); }

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint blocks = (p.d_v + kRowsV - 1) / kRowsV;
  const uint h = gl_WorkGroupID.x / blocks;
  const uint r0 = (gl_WorkGroupID.x % blocks) * kRowsV;
  const uint nr = min(kRowsV, p.d_v - r0);
  const uint kh = p.grouped != 0u ? h / (p.n_v_heads / p.n_k_heads) : h % p.n_k_heads;
  const uint key_dim = p.n_k_heads * p.d_k, dk = p.d_k;
  const float q_scale = 1.0 / sqrt(float(dk));
  const float ah = a[h], dth = dt_bias[h];

  for (uint t0 = 0; t0 < p.n_tokens;) {
    // The run: up to kChunk tokens of t0's sequence.
    if (tid == 0) {
      uint n = 1;
      while (n < kChunk && t0 + n < p.n_tokens && seq_ids[t0 + n] == seq_ids[t0]) ++n;
      sRun = n;
    }
    barrier();
    const uint n = sRun;
    const uint sbase = uint(seq_ids[t0]) * p.slot_stride + p.state_offset + (h * p.d_v + r0) * dk;

    // Load q, k (raw), the state rows, gates.
    for (uint i = tid; i < kChunk * dk; i += kThreads) {
      const uint c = i / dk, j = i % dk;
      const uint src = (t0 + c) * p.qkv_stride + kh * dk + j;
      sQ[c * kRow + j] = c < n ? qkv[src] : 0.0;
      sK[c * kRow + j] = c < n ? qkv[src + key_dim] : 0.0;
    }
    for (uint i = tid; i < kRowsV * dk; i += kThreads) sS[i / dk * kRow + i % dk] = i / dk < nr ? state[sbase + i] : 0.0;
    if (tid < kChunk) {
      const uint c = tid;
      sB[c] = c < n ? 1.0 / (1.0 + exp(-beta[(t0 + c) * p.gate_stride + h])) : 0.0;
      sLg[c] = c < n ? ah * softplus(alpha[(t0 + c) * p.gate_stride + h] + dth) : 0.0;
    }
    barrier();
    if (tid < 2 * kChunk) {
      const uint c = tid % kChunk;
      float ss = 0.0;
      if (tid < kChunk)
        for (uint j = 0; j < dk; ++j) ss += sQ[c * kRow + j] * sQ[c * kRow + j];
      else
        for (uint j = 0; j < dk; ++j) ss += sK[c * kRow + j] * sK[c * kRow + j];
      sNorm[tid] = 1.0 / max(sqrt(ss), p.eps);
    }
    if (tid == 0)
      for (uint c = 1; c < kChunk; ++c) sLg[c] += sLg[c - 1];  // decay of token c: exp(lg_c - lg_{c-1})
    barrier();
    if (tid < kChunk) {
      sGam[tid] = exp(sLg[tid]);
      sTail[tid] = tid < n ? exp(sLg[n - 1] - sLg[tid]) : 0.0;
    }
    for (uint i = tid; i < kChunk * dk; i += kThreads) {
      const uint c = i / dk, j = i % dk;
      sQ[c * kRow + j] = (sQ[c * kRow + j] * sNorm[c]) * q_scale;
      sK[c * kRow + j] *= sNorm[kChunk + c];
    }
    barrier();

    // A (beta-scaled, strictly lower) and masked G (q_c . k_i) for i <= c: one (c, i) per thread.
    {
      const uint c = tid / kChunk, i = tid % kChunk;
      float kk = 0.0, qk = 0.0;
      if (i <= c && c < n)
        for (uint j = 0; j < dk; ++j) {
          kk += sK[c * kRow + j] * sK[i * kRow + j];
          qk += sQ[c * kRow + j] * sK[i * kRow + j];
        }
      const float gci = i <= c && c < n ? exp(sLg[c] - sLg[i]) : 0.0;
      sA[tid] = i < c ? sB[c] * gci * kk : 0.0;
      sM[tid] = gci * qk;
    }
    // P = V - exp(lg) K S^T: one (c, r) per thread.
    {
      const uint c = tid / kRowsV, r = tid % kRowsV;
      float ks = 0.0;
      for (uint j = 0; j < dk; ++j) ks += sK[c * kRow + j] * sS[r * kRow + j];
      const float v = c < n && r < nr ? qkv[(t0 + c) * p.qkv_stride + 2 * key_dim + h * p.d_v + r0 + r] : 0.0;
      sP[tid] = v - sGam[c] * ks;
    }
    barrier();
    // E = (I + A)^-1 diag(b) P by forward substitution, row by row; thread (c, r) for row c.
    {
      const uint c = tid / kRowsV, r = tid % kRowsV;
      for (uint row = 0; row < kChunk; ++row) {
        if (c == row) {
          float e = sB[c] * sP[tid];
          for (uint m = 0; m < row; ++m) e -= sA[c * kChunk + m] * sE[m * kRowsV + r];
          sE[tid] = e;
        }
        barrier();
      }
    }
    // Output: o_c = exp(lg_c) S q_c + sum_{i<=c} G_ci (q_c.k_i) e_i.
    {
      const uint c = tid / kRowsV, r = tid % kRowsV;
      float qs = 0.0;
      for (uint j = 0; j < dk; ++j) qs += sQ[c * kRow + j] * sS[r * kRow + j];
      float o = sGam[c] * qs;
      for (uint i = 0; i <= c; ++i) o += sM[c * kChunk + i] * sE[i * kRowsV + r];
      if (c < n && r < nr) y[(t0 + c) * p.out_stride + h * p.d_v + r0 + r] = o;
    }
    barrier();
    // S <- exp(lg_n) S + sum_i G_ni e_i k_i^T, back to the slot.
    const float gn = sGam[n - 1];
    for (uint i = tid; i < nr * dk; i += kThreads) {
      const uint r = i / dk, j = i % dk;
      float s = gn * sS[r * kRow + j];
      for (uint c = 0; c < n; ++c) s += sTail[c] * sE[c * kRowsV + r] * sK[c * kRow + j];
      state[sbase + i] = s;
    }
    t0 += n;
    barrier();
  }
}
