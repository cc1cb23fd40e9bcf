// Reference-quality quantization of the K-quants, the algorithms of ggml's
// quantize_row_q{2..6}_K_ref: per sub-block a scale (and min) chosen by a small search that
// minimizes a weighted squared (or absolute) error, then the sub-block scales quantized to
// 4/6/8 bits against one f16 super-block scale, then every element re-rounded against the
// scale it will actually be decoded with. Arithmetic is done in float in the reference order,
// so the output matches ggml's byte for byte.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "core/quant_blocks.h"
#include "core/quant_internal.h"

namespace zinc::quant {
namespace {

inline int clamp_int(int v, int lo, int hi) { return std::max(lo, std::min(hi, v)); }

// Symmetric codes L[i] = l + nmax, l in [-nmax, nmax), for scale s: x ~ s * l. Weights x^2;
// tries 19 inverse scales around nmax / max|x| and keeps the least-squares best.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
  float max, amax;
  signed_absmax(x, n, &amax, &max);
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  auto fit = [&](float iscale, float* sumlx, float* suml2, bool write) {
    *sumlx = *suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      if (write) L[i] = int8_t(l + nmax);
      const float w = x[i] * x[i];
      *sumlx += w * x[i] * float(l);
      *suml2 += w * float(l) * float(l);
    }
  };
  float sumlx, suml2;
  fit(float(-nmax) / max, &sumlx, &suml2, true);
  float scale = suml2 != 0.f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    const float iscale = -(float(nmax) + 0.1f * float(is)) / max;
    fit(iscale, &sumlx, &suml2, false);
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      fit(iscale, &sumlx, &suml2, true);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Q3_K sub-block: codes in [-nmax, nmax) (stored + nmax) with weights x^2, refined by moving
// single codes while that improves the least-squares fit (at most 5 passes).
float make_q3_quants(int n, int nmax, const float* x, int8_t* L) {
  float max, amax;
  signed_absmax(x, n, &amax, &max);
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  const float iscale = float(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = int8_t(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * float(l);
    suml2 += w * float(l) * float(l);
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * float(L[i]);
      if (slx > 0) {
        float sl2 = suml2 - w * float(L[i]) * float(L[i]);
        const int new_l = clamp_int(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
        if (new_l != L[i]) {
          slx += w * x[i] * float(new_l);
          sl2 += w * float(new_l) * float(new_l);
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = int8_t(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (!n_changed) break;
  }
  for (int i = 0; i < n; ++i) L[i] = int8_t(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Asymmetric codes L[i] in [0, nmax] with x ~ scale * L - the_min (the_min >= 0). Starts from
// the min/max fit, then tries nstep+1 inverse scales (rmin + rdelta*is + nmax) / (max - min),
// solving weighted least squares for scale and min at each; error is squared or absolute.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min,
                       float rmin, float rdelta, int nstep, bool use_mad) {
  uint8_t Laux[32];
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  auto error_of = [&](float d) { return use_mad ? std::fabs(d) : d * d; };
  float iscale = float(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = uint8_t(clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax));
    best_error += weights[i] * error_of(scale * float(L[i]) + min - x[i]);
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * float(is) + float(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax);
      Laux[i] = uint8_t(l);
      const float w = weights[i];
      sum_l += w * float(l);
      sum_l2 += w * float(l) * float(l);
      sum_xl += w * float(l) * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) cur_error += weights[i] * error_of(this_scale * float(Laux[i]) + this_min - x[i]);
      if (cur_error < best_error) {
        std::memcpy(L, Laux, size_t(n));
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// Packs 2-bit codes: byte l of each 32-byte group holds elements l, l+32, l+64, l+96 of its 128.
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < kQKK; j += 128)
    for (int l = 0; l < 32; ++l)
      qs[j / 4 + l] = uint8_t(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

// 6-bit scales and mins of Q4_K / Q5_K from float ones (the inverse of the spec's get_scale_min_k4).
void pack_scales_k4(const float* scales, const float* mins, float max_scale, float max_min, uint8_t* out,
                    uint16_t* d, uint16_t* dmin) {
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < kQKK / 32; ++j) {
    const uint8_t ls = std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      out[j] = ls;
      out[j + 4] = lm;
    } else {
      out[j + 4] = uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
      out[j - 4] |= uint8_t((ls >> 4) << 6);
      out[j] |= uint8_t((lm >> 4) << 6);
    }
  }
  *d = f32_to_fp16(max_scale / 63.f);
  *dmin = f32_to_fp16(max_min / 63.f);
}

// Q4_K / Q5_K share everything but the code range (nmax 15 / 31) and the search parameters.
void quantize_k4_superblock(const float* x, int nmax, float rmin, float rdelta, int nstep, uint8_t* L,
                            uint8_t* scales_out, uint16_t* d_out, uint16_t* dmin_out) {
  float mins[kQKK / 32], scales[kQKK / 32], weights[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kQKK / 32; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = make_qkx2_quants(32, nmax, xs, weights, L + 32 * j, &mins[j], rmin, rdelta, nstep, false);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  pack_scales_k4(scales, mins, max_scale, max_min, scales_out, d_out, dmin_out);
  for (int j = 0; j < kQKK / 32; ++j) {
    int sc, m;
    scale_min_k4(j, scales_out, &sc, &m);
    const float d = fp16_to_f32(*d_out) * float(sc);
    if (d == 0.f) continue;
    const float dm = fp16_to_f32(*dmin_out) * float(m);
    for (int ii = 0; ii < 32; ++ii) L[32 * j + ii] = uint8_t(clamp_int(nearest_int((x[32 * j + ii] + dm) / d), 0, nmax));
  }
}

}  // namespace

void quantize_q2_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ2_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    const float* x = src;
    uint8_t L[kQKK];
    float mins[16], scales[16], weights[16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], -0.5f, 0.1f, 15, true);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    if (max_scale > 0) {
      const float iscale = 15.f / max_scale;
      for (int j = 0; j < 16; ++j) b[i].scales[j] = uint8_t(nearest_int(iscale * scales[j]));
      b[i].d = f32_to_fp16(max_scale / 15.f);
    } else {
      std::memset(b[i].scales, 0, 16);
      b[i].d = f32_to_fp16(0.f);
    }
    if (max_min > 0) {
      const float iscale = 15.f / max_min;
      for (int j = 0; j < 16; ++j) b[i].scales[j] |= uint8_t(nearest_int(iscale * mins[j]) << 4);
      b[i].dmin = f32_to_fp16(max_min / 15.f);
    } else {
      b[i].dmin = f32_to_fp16(0.f);
    }
    for (int j = 0; j < 16; ++j) {
      const float d = fp16_to_f32(b[i].d) * float(b[i].scales[j] & 0xF);
      if (d == 0.f) continue;
      const float dm = fp16_to_f32(b[i].dmin) * float(b[i].scales[j] >> 4);
      for (int ii = 0; ii < 16; ++ii) L[16 * j + ii] = uint8_t(clamp_int(nearest_int((x[16 * j + ii] + dm) / d), 0, 3));
    }
    pack_2bit(L, b[i].qs);
  }
}

void quantize_q3_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ3_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    const float* x = src;
    int8_t L[kQKK];
    float scales[16];
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    std::memset(b[i].scales, 0, 12);
    if (max_scale != 0.f) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < 16; ++j) {
        const int l = clamp_int(int8_t(nearest_int(iscale * scales[j])), -32, 31) + 32;
        if (j < 8) b[i].scales[j] = uint8_t(l & 0xF);
        else b[i].scales[j - 8] |= uint8_t((l & 0xF) << 4);
        b[i].scales[j % 4 + 8] |= uint8_t((l >> 4) << (2 * (j / 4)));
      }
      b[i].d = f32_to_fp16(1 / iscale);
    } else {
      b[i].d = f32_to_fp16(0.f);
    }
    for (int j = 0; j < 16; ++j) {
      const int low4 = j < 8 ? b[i].scales[j] & 0xF : b[i].scales[j - 8] >> 4;
      const int sc = (low4 | (((b[i].scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
      const float d = fp16_to_f32(b[i].d) * float(sc);
      if (d == 0.f) continue;
      for (int ii = 0; ii < 16; ++ii) L[16 * j + ii] = int8_t(clamp_int(nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
    }
    // Bit (j / 32) of hmask[j % 32] is the high bit of code j.
    std::memset(b[i].hmask, 0, kQKK / 8);
    uint8_t low[kQKK];
    for (int j = 0; j < kQKK; ++j) {
      if (L[j] > 3) b[i].hmask[j % 32] |= uint8_t(1 << (j / 32));
      low[j] = uint8_t(L[j] & 3);
    }
    pack_2bit(low, b[i].qs);
  }
}

void quantize_q4_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    uint8_t L[kQKK];
    quantize_k4_superblock(src, 15, -1.f, 0.1f, 20, L, b[i].scales, &b[i].d, &b[i].dmin);
    for (int j = 0; j < kQKK; j += 64)
      for (int l = 0; l < 32; ++l) b[i].qs[j / 2 + l] = uint8_t(L[j + l] | (L[j + l + 32] << 4));
  }
}

void quantize_q5_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    uint8_t L[kQKK];
    quantize_k4_superblock(src, 31, -0.5f, 0.1f, 15, L, b[i].scales, &b[i].d, &b[i].dmin);
    std::memset(b[i].qh, 0, kQKK / 8);
    for (int c = 0; c < 4; ++c) {  // 64-element chunk c: low nibbles then high nibbles of qs[32c..]
      for (int j = 0; j < 32; ++j) {
        const int l1 = L[64 * c + j], l2 = L[64 * c + j + 32];
        b[i].qh[j] |= uint8_t(((l1 >> 4) << (2 * c)) | ((l2 >> 4) << (2 * c + 1)));
        b[i].qs[32 * c + j] = uint8_t((l1 & 0xF) | ((l2 & 0xF) << 4));
      }
    }
  }
}

void quantize_q6_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ6_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    const float* x = src;
    int8_t L[kQKK];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < 16; ++ib) {
      scales[ib] = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
      if (std::fabs(scales[ib]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[ib]);
        max_scale = scales[ib];
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&b[i], 0, sizeof(BlockQ6_K));
      continue;
    }
    const float iscale = -128.f / max_scale;
    b[i].d = f32_to_fp16(1 / iscale);
    for (int ib = 0; ib < 16; ++ib) b[i].scales[ib] = int8_t(std::min(127, nearest_int(iscale * scales[ib])));
    for (int j = 0; j < 16; ++j) {
      const float d = fp16_to_f32(b[i].d) * float(b[i].scales[j]);
      if (d == 0.f) continue;
      for (int ii = 0; ii < 16; ++ii) L[16 * j + ii] = int8_t(clamp_int(nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
    }
    for (int half = 0; half < 2; ++half) {
      const int8_t* Lh = L + 128 * half;
      uint8_t* ql = b[i].ql + 64 * half;
      uint8_t* qh = b[i].qh + 32 * half;
      for (int l = 0; l < 32; ++l) {
        ql[l] = uint8_t((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
        ql[l + 32] = uint8_t((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
        qh[l] = uint8_t((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) | ((Lh[l + 96] >> 4) << 6));
      }
    }
  }
}

}  // namespace zinc::quant
