#version 450
// Gated delta rule, token by token (src/cpu/ops/gated_delta_net.cc, model-spec 3.8): per value
// head h with state S (d_v x d_k, row = value dim) in slot seq_ids[t]:
//   q, k = l2norm(q), l2norm(k) (q also / sqrt(d_k)); b = sigmoid(beta); decay = exp(a softplus(alpha + dt))
//   S <- decay S;  e = (v - S k) b;  S <- S + e k^T;  out = S q.
// Rows of S are independent given q and k, so a workgroup takes kRowsPerGroup rows of one head,
// 32 lanes per row each holding the columns lane + 32 m in registers.
#extension GL_EXT_control_flow_attributes : enable
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(local_size_x = 128) in;
const uint kGroupSize = 128;
const uint kLanes = 32;
const uint kRowsPerGroup = kGroupSize / kLanes;
const uint kMaxPerLane = 8;  // d_k <= 256
const uint kMaxDk = kLanes * kMaxPerLane;

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
  uint grouped;  // key head of value head h: 1: h / (n_v / n_k), 0: h % n_k
  float eps;
  uint n_tokens;
  uint qkv_stride;
  uint gate_stride;  // beta and alpha
  uint out_stride;
  uint slot_stride;
  uint state_offset;  // floats from a slot's start to this layer's S
} p;

shared float s_q[kMaxDk], s_k[kMaxDk];
shared float s_red[kGroupSize];
shared float s_norm[2];

// Sum over the kLanes lanes of each row (contiguous invocations); every lane gets its row's sum.
float row_sum(float v) {
  const uint tid = gl_LocalInvocationID.x;
#ifdef SUBGROUP
  if (gl_SubgroupSize == kLanes) return subgroupAdd(v);
#endif
  s_red[tid] = v;
  barrier();
  for (uint s = kLanes / 2; s > 0; s >>= 1) {
    if (tid % kLanes < s) s_red[tid] += s_red[tid + s];
    barrier();
  }
  const float r = s_red[tid - tid % kLanes];
  barrier();
  return r;
}

float softplus(float x) { return x > 20.0 ? x : log(1.0 + exp(x)); }

void main() {
  const uint tid = gl_LocalInvocationID.x, lane = tid % kLanes;
  const uint blocks = (p.d_v + kRowsPerGroup - 1) / kRowsPerGroup;
  const uint h = gl_WorkGroupID.x / blocks;
  const uint row = (gl_WorkGroupID.x % blocks) * kRowsPerGroup + tid / kLanes;
  const bool live = row < p.d_v;
  const uint kh = p.grouped != 0u ? h / (p.n_v_heads / p.n_k_heads) : h % p.n_k_heads;
  const uint key_dim = p.n_k_heads * p.d_k;
  const float q_scale = 1.0 / sqrt(float(p.d_k));

  for (uint t = 0; t < p.n_tokens; ++t) {
    const uint src = t * p.qkv_stride;
    // Every load of the token is issued before any is used: the slot, the gates, the row's v, the
    // q (threads 0-31) or k (32-63) elements a thread normalises, then the state row.
    const uint slot = uint(seq_ids[t]);
    const float beta_t = beta[t * p.gate_stride + h], alpha_t = alpha[t * p.gate_stride + h];
    const float a_h = a[h], dt_h = dt_bias[h];
    const float v_t = qkv[src + 2 * key_dim + h * p.d_v + (live ? row : 0)];
    const bool norms = tid < 2 * kLanes, is_q = tid < kLanes;
    const uint off = src + (is_q ? 0u : key_dim) + kh * p.d_k;
    float x[kMaxPerLane];
    [[unroll]] for (uint m = 0; m < kMaxPerLane; ++m) {
      const uint j = lane + kLanes * m;
      x[m] = norms && j < p.d_k ? qkv[off + j] : 0.0;
    }
    const uint base = slot * p.slot_stride + p.state_offset + (h * p.d_v + (live ? row : 0)) * p.d_k;
    float S[kMaxPerLane];
    [[unroll]] for (uint m = 0; m < kMaxPerLane; ++m) {
      const uint j = lane + kLanes * m;
      S[m] = live && j < p.d_k ? state[base + j] : 0.0;
    }
    // L2 norms of q and k: one row's lanes each.
    float ss = 0.0;
    [[unroll]] for (uint m = 0; m < kMaxPerLane; ++m) ss += x[m] * x[m];
    s_red[tid] = ss;
    barrier();
    if (tid < 2) {
      float sum = 0.0;
      for (uint i = 0; i < kLanes; ++i) sum += s_red[tid * kLanes + i];
      s_norm[tid] = 1.0 / max(sqrt(sum), p.eps);
    }
    barrier();
    if (norms) {
      const float n = s_norm[is_q ? 0 : 1];
      [[unroll]] for (uint m = 0; m < kMaxPerLane; ++m) {
        const uint j = lane + kLanes * m;
        if (j < p.d_k) {
          if (is_q)
            s_q[j] = (x[m] * n) * q_scale;
          else
            s_k[j] = x[m] * n;
        }
      }
    }
    barrier();

    const float b = 1.0 / (1.0 + exp(-beta_t));
    const float decay = exp(a_h * softplus(alpha_t + dt_h));
    float sk = 0.0;
    [[unroll]] for (uint m = 0; m < kMaxPerLane; ++m) {
      const uint j = lane + kLanes * m;
      S[m] *= decay;
      sk += j < p.d_k ? S[m] * s_k[j] : 0.0;
    }
    sk = row_sum(sk);
    const float e = live ? (v_t - sk) * b : 0.0;
    float o = 0.0;
    [[unroll]] for (uint m = 0; m < kMaxPerLane; ++m) {
      const uint j = lane + kLanes * m;
      if (j < p.d_k) {
        S[m] += s_k[j] * e;
        o += S[m] * s_q[j];
        if (live) state[base + j] = S[m];
      }
    }
    o = row_sum(o);
    if (live && lane == 0) y[t * p.out_stride + h * p.d_v + row] = o;
    barrier();  // s_q, s_k, s_red are rewritten for the next token
  }
}
