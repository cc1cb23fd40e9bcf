#version 450
// Gated delta rule, token by token (src/cpu/ops/gated_delta_net.cc, model-spec 3.8): per value
// head h with state S (d_v x d_k, row = value dim) in slot seq_ids[t]:
//   q, k = l2norm(q), l2norm(k) (q also / sqrt(d_k)); b = sigmoid(beta); decay = exp(a softplus(alpha + dt))
//   S <- decay S;  e = (v - S k) b;  S <- S + e k^T;  out = S q.
// Rows of S are independent given q and k, so a workgroup takes kRowsPerGroup rows of one head,
// 32 lanes per row each holding the columns lane + 32 m (m < kPerLane) of S, q and k in
// registers. Each row's lanes load and normalise q and k themselves, so that where a subgroup is
// a row every sum is a subgroup add and the kernel has no barrier.
#extension GL_EXT_control_flow_attributes : enable
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint kPerLane = 8;  // ceil(d_k / 32), at most 8
const uint kGroupSize = 128;
const uint kLanes = 32;
const uint kRowsPerGroup = kGroupSize / kLanes;

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

shared float s_red[kGroupSize];

// Sum over the kLanes lanes of each row (contiguous invocations); every lane gets its row's sum.
// Called in uniform control flow.
float row_sum(float v) {
  const uint tid = gl_LocalInvocationID.x;
#ifdef SUBGROUP
  if (gl_SubgroupSize == kLanes) return subgroupAdd(v);
  if (gl_SubgroupSize < kLanes) {  // a row is kLanes / gl_SubgroupSize whole subgroups
    v = subgroupAdd(v);
    if (subgroupElect()) s_red[gl_SubgroupID] = v;
    barrier();
    const uint per_row = kLanes / gl_SubgroupSize, first = (tid / kLanes) * per_row;
    float r = 0.0;
    for (uint i = 0; i < per_row; ++i) r += s_red[first + i];
    barrier();
    return r;
  }
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
  const float a_h = a[h], dt_h = dt_bias[h];

  for (uint t = 0; t < p.n_tokens; ++t) {
    // Every load of the token is issued before any is used: the slot, the gates, the row's v, q
    // and k, then the state row.
    const uint src = t * p.qkv_stride, qo = src + kh * p.d_k, ko = qo + key_dim;
    const uint slot = uint(seq_ids[t]);
    const float beta_t = beta[t * p.gate_stride + h], alpha_t = alpha[t * p.gate_stride + h];
    const float v_t = qkv[src + 2 * key_dim + h * p.d_v + (live ? row : 0)];
    float q[kPerLane], k[kPerLane], S[kPerLane];
    [[unroll]] for (uint m = 0; m < kPerLane; ++m) {
      const uint j = lane + kLanes * m;
      q[m] = j < p.d_k ? qkv[qo + j] : 0.0;
      k[m] = j < p.d_k ? qkv[ko + j] : 0.0;
    }
    const uint base = slot * p.slot_stride + p.state_offset + (h * p.d_v + (live ? row : 0)) * p.d_k;
    [[unroll]] for (uint m = 0; m < kPerLane; ++m) {
      const uint j = lane + kLanes * m;
      S[m] = live && j < p.d_k ? state[base + j] : 0.0;
    }
    float qq = 0.0, kk = 0.0;
    [[unroll]] for (uint m = 0; m < kPerLane; ++m) {
      qq += q[m] * q[m];
      kk += k[m] * k[m];
    }
    const float nq = 1.0 / max(sqrt(row_sum(qq)), p.eps), nk = 1.0 / max(sqrt(row_sum(kk)), p.eps);
    const float b = 1.0 / (1.0 + exp(-beta_t));
    const float decay = exp(a_h * softplus(alpha_t + dt_h));
    float sk = 0.0;
    [[unroll]] for (uint m = 0; m < kPerLane; ++m) {
      q[m] = (q[m] * nq) * q_scale;
      k[m] *= nk;
      S[m] *= decay;
      sk += S[m] * k[m];
    }
    sk = row_sum(sk);
    const float e = live ? (v_t - sk) * b : 0.0;
    float o = 0.0;
    [[unroll]] for (uint m = 0; m < kPerLane; ++m) {
      const uint j = lane + kLanes * m;
      S[m] += k[m] * e;
      o += S[m] * q[m];
      if (live && j < p.d_k) state[base + j] = S[m];
    }
    o = row_sum(o);
    if (live && lane == 0) y[t * p.out_stride + h * p.d_v + row] = o;
  }
}
