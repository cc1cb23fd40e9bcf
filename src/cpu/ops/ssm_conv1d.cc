// ssm_conv1d: causal depthwise convolution + SiLU with per-sequence state. Channels are
// independent, so threads split channels and walk the tokens in order.
#include "cpu/ops/ops.h"

namespace zinc::cpu::ops {

void run(const graph::SsmConv1d& op, const OpContext& ctx) {
  const graph::Buffer& b = ctx.buf(op.in);
  const int64_t C = b.cols, T = b.rows, K = op.kernel->cols();
  const float* in = ctx.f32(op.in);
  float* out = ctx.f32(op.out);
  const float* kernel = op.kernel->f32();
  const auto& batch = ctx.batch;
  parallel_for(ctx.pool, C, 64, [&](int64_t begin, int64_t end) {
    for (int64_t t = 0; t < T; ++t) {
      // State rows: K-1 previous inputs, oldest first, each of C channels.
      float* state = ctx.cache.conv_state(op.recurrent_layer, batch.seq_ids[size_t(t)]);
      for (int64_t c = begin; c < end; ++c) {
        const float* w = kernel + c * K;
        const float x = in[t * C + c];
        float sum = 0.f;
        for (int64_t i = 0; i < K - 1; ++i) sum += state[i * C + c] * w[i];
        sum += x * w[K - 1];
        for (int64_t i = 0; i + 1 < K - 1; ++i) state[i * C + c] = state[(i + 1) * C + c];
        if (K > 1) state[(K - 2) * C + c] = x;
        out[t * C + c] = silu(sum);
      }
    }
  });
}

}  // namespace zinc::cpu::ops
