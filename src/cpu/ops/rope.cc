// rope: rotary position embedding (NORM / NEOX / IMROPE, partial rotary, linear and YaRN scaling),
// with theta computed as ggml computes it: theta_i = p * theta_scale^i by repeated multiplication.
#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "cpu/ops/ops.h"

namespace zinc::cpu::ops {
namespace {

constexpr int kMaxPairs = 512;

float yarn_ramp(float low, float high, int pair) {
  const float y = (float(pair) - low) / std::max(0.001f, high - low);
  return 1.f - std::min(1.f, std::max(0.f, y));
}

// IMROPE: which of the (t, h, w, e) positions pair i uses; text tokens have t = h = w = p, e = 0.
bool imrope_uses_e(const std::array<int32_t, 4>& s, int pair) {
  const int total = s[0] + s[1] + s[2] + s[3];
  if (total <= 0) return false;
  const int sector = pair % total;
  if (sector % 3 == 1 && sector < 3 * s[1]) return false;  // h
  if (sector % 3 == 2 && sector < 3 * s[2]) return false;  // w
  if (sector % 3 == 0 && sector < 3 * s[0]) return false;  // t
  return true;
}

}  // namespace

void rope_cache(const graph::RopeParams& r, int32_t p, float* cos_out, float* sin_out) {
  const int n_pairs = r.n_rot / 2;
  const float theta_scale = std::pow(r.freq_base, -2.f / float(r.n_rot));
  const float* ff = r.freq_factors ? r.freq_factors->f32() : nullptr;
  float theta = float(p);
  for (int i = 0; i < n_pairs; ++i) {
    float theta_extrap = theta;
    if (r.mode == graph::RopeMode::kImrope && imrope_uses_e(r.sections, i)) theta_extrap = 0.f;
    if (ff) theta_extrap /= ff[i];
    const float theta_interp = r.freq_scale * theta_extrap;
    float th = theta_interp, mscale = r.attn_factor;
    if (r.ext_factor != 0.f) {
      const float mix = yarn_ramp(r.corr_dims[0], r.corr_dims[1], i) * r.ext_factor;
      th = theta_interp * (1.f - mix) + theta_extrap * mix;
      mscale *= 1.f + 0.1f * std::log(1.f / r.freq_scale);
    }
    cos_out[i] = std::cos(th) * mscale;
    sin_out[i] = std::sin(th) * mscale;
    theta *= theta_scale;
  }
}

void run(const graph::Rope& op, const OpContext& ctx) {
  const graph::RopeParams& r = op.params;
  ZINC_CHECK(r.n_rot / 2 <= kMaxPairs);
  const graph::Buffer& b = ctx.buf(op.buf);
  float* data = ctx.f32(op.buf);
  const auto positions = ctx.batch.positions;
  const auto h = op.heads;
  const int n_pairs = r.n_rot / 2;
  const bool adjacent = r.mode == graph::RopeMode::kNorm;
  parallel_for(ctx.pool, b.rows, 1, [&](int64_t begin, int64_t end) {
    float cs[kMaxPairs], sn[kMaxPairs];
    for (int64_t t = begin; t < end; ++t) {
      rope_cache(r, positions[size_t(t)], cs, sn);
      for (int32_t head = 0; head < h.n_heads; ++head) {
        float* x = data + t * b.cols + h.offset + int64_t(head) * h.head_stride;
        for (int i = 0; i < n_pairs; ++i) {
          float* a = adjacent ? x + 2 * i : x + i;
          float* c = adjacent ? x + 2 * i + 1 : x + i + n_pairs;
          const float x0 = *a, x1 = *c;
          *a = x0 * cs[i] - x1 * sn[i];
          *c = x0 * sn[i] + x1 * cs[i];
        }
      }
    }
  });
}

}  // namespace zinc::cpu::ops
