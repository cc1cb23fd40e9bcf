// moe_route: softmax over the router logits, top-k experts, renormalised weights.
#include <cmath>

#include "core/check.h"
#include "cpu/ops/ops.h"

namespace zinc::cpu::ops {

namespace {
constexpr int64_t kMaxExperts = 1024;
}

void run(const graph::MoeRoute& op, const OpContext& ctx) {
  const graph::Buffer& b = ctx.buf(op.logits);
  const int64_t n_expert = b.cols;
  ZINC_CHECK(n_expert <= kMaxExperts);
  const float* logits = ctx.f32(op.logits);
  int32_t* ids = ctx.i32(op.ids);
  float* weights = ctx.f32(op.weights);
  parallel_for(ctx.pool, b.rows, 16, [&](int64_t begin, int64_t end) {
    float p[kMaxExperts];
    for (int64_t t = begin; t < end; ++t) {
      const float* l = logits + t * n_expert;
      float max = l[0];
      for (int64_t e = 1; e < n_expert; ++e) max = std::max(max, l[e]);
      double sum = 0;
      for (int64_t e = 0; e < n_expert; ++e) {
        p[e] = std::exp(l[e] - max);
        sum += p[e];
      }
      const float inv = float(1.0 / sum);
      for (int64_t e = 0; e < n_expert; ++e) p[e] *= inv;
      // Top-k by repeated selection (k is small); chosen entries are marked with -1.
      float chosen_sum = 0.f;
      for (int32_t j = 0; j < op.k; ++j) {
        int64_t best = -1;
        for (int64_t e = 0; e < n_expert; ++e)
          if (p[e] >= 0.f && (best < 0 || p[e] > p[best])) best = e;
        ids[t * op.k + j] = int32_t(best);
        weights[t * op.k + j] = p[best];
        chosen_sum += p[best];
        p[best] = -1.f;
      }
      if (op.normalize) {
        const float denom = std::max(chosen_sum, 6.103515625e-5f);
        for (int32_t j = 0; j < op.k; ++j) weights[t * op.k + j] /= denom;
      }
    }
  });
}

}  // namespace zinc::cpu::ops
