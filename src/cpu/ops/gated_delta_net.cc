// gated_delta_net: the per-token gated delta rule (model-spec 3.8, steps 4-7). Value heads are
// independent, so threads split heads and walk the tokens in order.
#include <cmath>

#include "core/check.h"
#include "cpu/ops/ops.h"

namespace zinc::cpu::ops {
namespace {

constexpr int kMaxDim = 1024;

// dst = x / max(|x|, eps) * extra
void l2_normalize(const float* x, int32_t n, float eps, float extra, float* dst) {
  double sum = 0;
  for (int32_t i = 0; i < n; ++i) sum += double(x[i]) * double(x[i]);
  const float scale = 1.f / std::max(std::sqrt(float(sum)), eps);
  for (int32_t i = 0; i < n; ++i) dst[i] = (x[i] * scale) * extra;
}

float softplus(float x) { return x > 20.f ? x : std::log1p(std::exp(x)); }

}  // namespace

void run(const graph::GatedDeltaNet& op, const OpContext& ctx) {
  ZINC_CHECK(op.d_k <= kMaxDim && op.d_v <= kMaxDim);
  const graph::Buffer& qb = ctx.buf(op.qkv);
  const int64_t T = qb.rows, cols = qb.cols;
  const int64_t key_dim = int64_t(op.n_k_heads) * op.d_k;
  const float* qkv = ctx.f32(op.qkv);
  const float* beta = ctx.f32(op.beta);
  const float* alpha = ctx.f32(op.alpha);
  float* out = ctx.f32(op.out);
  const float* a = op.a->f32();
  const float* dt = op.dt_bias->f32();
  const int32_t dk = op.d_k, dv = op.d_v, n_v = op.n_v_heads;
  const float q_scale = 1.f / std::sqrt(float(dk));
  const auto& batch = ctx.batch;
  parallel_for(ctx.pool, n_v, 1, [&](int64_t begin, int64_t end) {
    float q[kMaxDim], k[kMaxDim], e[kMaxDim];
    for (int64_t h = begin; h < end; ++h) {
      const int64_t kh = op.key_map == graph::KeyHeadMap::kTiled ? h % op.n_k_heads : h / (n_v / op.n_k_heads);
      for (int64_t t = 0; t < T; ++t) {
        const float* row = qkv + t * cols;
        l2_normalize(row + kh * dk, dk, op.eps, q_scale, q);
        l2_normalize(row + key_dim + kh * dk, dk, op.eps, 1.f, k);
        const float* v = row + 2 * key_dim + h * dv;
        const float b = sigmoid(beta[t * n_v + h]);
        const float decay = std::exp(a[h] * softplus(alpha[t * n_v + h] + dt[h]));
        float* S = ctx.cache.ssm_state(op.recurrent_layer, batch.seq_ids[size_t(t)]) + h * int64_t(dv) * dk;
        // S <- decay * S;  e = (v - S k) * beta;  S <- S + e k^T;  o = S q.
        for (int32_t i = 0; i < dv; ++i) {
          float* Si = S + int64_t(i) * dk;
          float sk = 0.f;
          for (int32_t j = 0; j < dk; ++j) {
            Si[j] *= decay;
            sk += Si[j] * k[j];
          }
          e[i] = (v[i] - sk) * b;
        }
        float* o = out + t * int64_t(n_v) * dv + h * dv;
        for (int32_t i = 0; i < dv; ++i) {
          float* Si = S + int64_t(i) * dk;
          float oi = 0.f;
          for (int32_t j = 0; j < dk; ++j) {
            Si[j] += k[j] * e[i];
            oi += Si[j] * q[j];
          }
          o[i] = oi;
        }
      }
    }
  });
}

}  // namespace zinc::cpu::ops
