#include "model/presets_weights.h"

#include <cmath>
#include <cstring>
#include <numbers>
#include <vector>

#include "core/check.h"
#include "core/fp16.h"
#include "core/quant_blocks.h"

namespace zinc::model {
namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// splitmix64: small, fast and good enough for weights.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float uniform() { return float(next() >> 40) * (1.0f / 16777216.0f); }  // [0, 1)
  float uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }
  int uniform_int(int lo, int hi) { return lo + int(next() % uint64_t(hi - lo + 1)); }  // [lo, hi]
  // Approximately N(0, 1): the sum of four uniforms (Irwin-Hall), rescaled. Bounded at ±3.46,
  // and about 20x cheaper than Box-Muller, which matters for multi-GB float models.
  float normal() {
    const uint64_t v = next();
    const uint32_t sum = uint32_t(v & 0xFFFF) + uint32_t((v >> 16) & 0xFFFF) + uint32_t((v >> 32) & 0xFFFF) +
                         uint32_t(v >> 48);
    return ((float(sum) + 2.0f) * (1.0f / 65536.0f) - 2.0f) * 1.7320508f;
  }
  void bytes(uint8_t* p, size_t n) {
    while (n >= 8) {
      const uint64_t v = next();
      std::memcpy(p, &v, 8);
      p += 8, n -= 8;
    }
    if (n) {
      const uint64_t v = next();
      std::memcpy(p, &v, n);
    }
  }

 private:
  uint64_t s_;
};

uint64_t row_seed(uint64_t seed, const std::string& name, int64_t row) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the name
  for (char c : name) h = (h ^ uint8_t(c)) * 1099511628211ull;
  Rng r(seed ^ (h * 0x2545F4914F6CDD1Dull) ^ (uint64_t(row) * 0x9E3779B97F4A7C15ull));
  r.next();
  return r.next();
}

float spread(const PresetTensor& t, WeightInit init) {
  return init == WeightInit::kEmbedding ? 1.0f : 1.0f / std::sqrt(float(t.ne[0]));
}

void float_row(const PresetConfig& c, const PresetTensor& t, WeightInit init, Rng& rng, float* x) {
  const int64_t n = t.ne[0];
  const float sigma = spread(t, init);
  for (int64_t i = 0; i < n; ++i) {
    switch (init) {
      case WeightInit::kMatrix: case WeightInit::kEmbedding: x[i] = sigma * rng.normal(); break;
      case WeightInit::kNorm: x[i] = 1.0f + 0.1f * rng.normal(); break;
      case WeightInit::kBias: x[i] = 0.5f * rng.normal(); break;
      case WeightInit::kSsmA: x[i] = -rng.uniform(1.0f, 8.0f); break;
      case WeightInit::kDtBias: x[i] = rng.uniform(-2.5f, 1.5f); break;
      case WeightInit::kRopeFreqs: {
        // Llama 3 scaling, as convert_hf_to_gguf bakes it: low/high frequency factors 1 and 4.
        const double freq = 1.0 / std::pow(double(c.rope_freq_base), 2.0 * double(i) / double(c.n_rot));
        const double wavelen = 2.0 * std::numbers::pi / freq, orig = c.rope_scaling_orig_ctx, factor = c.rope_scaling_factor;
        const double low_wavelen = orig / 1.0, high_wavelen = orig / 4.0;
        double f = 1.0;
        if (wavelen > low_wavelen) {
          f = factor;
        } else if (wavelen >= high_wavelen) {
          const double smooth = (orig / wavelen - 1.0) / (4.0 - 1.0);
          f = 1.0 / ((1.0 - smooth) / factor + smooth);
        }
        x[i] = float(f);
        break;
      }
    }
  }
}

uint16_t half(float x) { return f32_to_fp16(x); }

// One random block of `type` whose dequantized values have mean ~0 and standard deviation
// ~sigma. The constants are the RMS of the quant levels times the RMS of the random sub-block
// scales, so that d = sigma / constant (each block's d jittered by ±25%).
void random_block(TensorType type, float sigma, Rng& rng, uint8_t* out) {
  const float d = sigma * rng.uniform(0.75f, 1.25f);
  // The Q4_0/Q5_0 levels (q - 8, q - 16) average -0.5: a random sign of d (real files have both,
  // as d = max / -8 follows the sign of the largest value) keeps the weights centred.
  const float sign = rng.next() & 1 ? 1.0f : -1.0f;
  switch (type) {
    case TensorType::Q4_0: {
      BlockQ4_0 b;
      b.d = half(sign * d / 4.61f);
      rng.bytes(b.qs, sizeof b.qs);
      std::memcpy(out, &b, sizeof b);
      return;
    }
    case TensorType::Q4_1: {
      BlockQ4_1 b;
      const float s = d / 4.61f;
      b.d = half(s), b.m = half(-7.5f * fp16_to_f32(b.d));
      rng.bytes(b.qs, sizeof b.qs);
      std::memcpy(out, &b, sizeof b);
      return;
    }
    case TensorType::Q5_0: {
      BlockQ5_0 b;
      b.d = half(sign * d / 9.23f);
      rng.bytes(b.qh, sizeof b.qh);
      rng.bytes(b.qs, sizeof b.qs);
      std::memcpy(out, &b, sizeof b);
      return;
    }
    case TensorType::Q5_1: {
      BlockQ5_1 b;
      b.d = half(d / 9.23f), b.m = half(-15.5f * fp16_to_f32(b.d));
      rng.bytes(b.qh, sizeof b.qh);
      rng.bytes(b.qs, sizeof b.qs);
      std::memcpy(out, &b, sizeof b);
      return;
    }
    case TensorType::Q8_0: {
      BlockQ8_0 b;
      b.d = half(d / 73.6f);
      rng.bytes(reinterpret_cast<uint8_t*>(b.qs), sizeof b.qs);
      for (auto& q : b.qs) q = q == -128 ? int8_t(-127) : q;
      std::memcpy(out, &b, sizeof b);
      return;
    }
    case TensorType::Q2_K: {  // x = d*sc*q - dmin*mn with mn = sc, dmin = 1.5 d: d*sc*(q - 1.5)
      BlockQ2_K b;
      for (auto& s : b.scales) {
        const int sc = rng.uniform_int(8, 15);
        s = uint8_t(sc | (sc << 4));
      }
      rng.bytes(b.qs, sizeof b.qs);
      b.d = half(d / 13.11f), b.dmin = half(1.5f * fp16_to_f32(b.d));
      std::memcpy(out, &b, sizeof b);
      return;
    }
    case TensorType::Q3_K: {  // x = d*sc*q, sc = ±16..31 (6-bit signed), q in -4..3
      BlockQ3_K b;
      rng.bytes(b.hmask, sizeof b.hmask);
      rng.bytes(b.qs, sizeof b.qs);
      std::memset(b.scales, 0, sizeof b.scales);
      for (int s = 0; s < 16; ++s) {
        const int sc = rng.uniform_int(16, 31) * (rng.next() & 1 ? 1 : -1);
        const int u = sc + 32;  // stored 6-bit value
        if (s < 8) b.scales[s] |= uint8_t(u & 0xF);
        else b.scales[s - 8] |= uint8_t((u & 0xF) << 4);
        b.scales[8 + s % 4] |= uint8_t((u >> 4) << (2 * (s / 4)));
      }
      b.d = half(d / 56.2f);
      std::memcpy(out, &b, sizeof b);
      return;
    }
    case TensorType::Q4_K: case TensorType::Q5_K: {  // mn = sc (32..63), dmin = mid-level * d
      uint8_t sc[8];
      for (auto& s : sc) s = uint8_t(rng.uniform_int(32, 63));
      uint8_t scales[12];
      for (int j = 0; j < 4; ++j) {
        scales[j] = uint8_t(sc[j] | ((sc[j + 4] >> 4) << 6));      // scale j, top bits of scale j+4
        scales[j + 4] = uint8_t(sc[j] | ((sc[j + 4] >> 4) << 6));  // min j (= scale j), top bits of min j+4
        scales[j + 8] = uint8_t((sc[j + 4] & 0xF) | ((sc[j + 4] & 0xF) << 4));
      }
      if (type == TensorType::Q4_K) {
        BlockQ4_K b;
        b.d = half(d / 220.0f), b.dmin = half(7.5f * fp16_to_f32(b.d));
        std::memcpy(b.scales, scales, 12);
        rng.bytes(b.qs, sizeof b.qs);
        std::memcpy(out, &b, sizeof b);
      } else {
        BlockQ5_K b;
        b.d = half(d / 440.7f), b.dmin = half(15.5f * fp16_to_f32(b.d));
        std::memcpy(b.scales, scales, 12);
        rng.bytes(b.qh, sizeof b.qh);
        rng.bytes(b.qs, sizeof b.qs);
        std::memcpy(out, &b, sizeof b);
      }
      return;
    }
    case TensorType::Q6_K: {  // x = d*sc*q, sc = ±64..127, q in -32..31
      BlockQ6_K b;
      rng.bytes(b.ql, sizeof b.ql);
      rng.bytes(b.qh, sizeof b.qh);
      for (auto& s : b.scales) s = int8_t(rng.uniform_int(64, 127) * (rng.next() & 1 ? 1 : -1));
      b.d = half(d / 1800.6f);
      std::memcpy(out, &b, sizeof b);
      return;
    }
    default:
      ZINC_CHECK(false && "random_block: unsupported type");
  }
}

}  // namespace

WeightInit weight_init(const PresetTensor& t) {
  const std::string& n = t.name;
  if (n == "token_embd.weight") return WeightInit::kEmbedding;
  if (n == "rope_freqs.weight") return WeightInit::kRopeFreqs;
  if (ends_with(n, "norm.weight")) return WeightInit::kNorm;
  if (ends_with(n, ".ssm_a")) return WeightInit::kSsmA;
  if (ends_with(n, "ssm_dt.bias")) return WeightInit::kDtBias;
  if (ends_with(n, ".bias")) return WeightInit::kBias;
  return WeightInit::kMatrix;
}

bool can_make_random(TensorType type) {
  switch (type) {
    case TensorType::F32: case TensorType::F16: case TensorType::BF16: case TensorType::Q4_0: case TensorType::Q4_1:
    case TensorType::Q5_0: case TensorType::Q5_1: case TensorType::Q8_0: case TensorType::Q2_K: case TensorType::Q3_K:
    case TensorType::Q4_K: case TensorType::Q5_K: case TensorType::Q6_K:
      return true;
    default:
      return false;
  }
}

void random_rows(const PresetConfig& c, const PresetTensor& t, TensorType type, uint64_t seed, int64_t row_begin,
                 int64_t row_end, uint8_t* out) {
  ZINC_CHECK(can_make_random(type));
  const WeightInit init = weight_init(t);
  const int64_t n = t.ne[0];
  const auto& info = type_info(type);
  const size_t row_size = row_bytes(type, n);
  std::vector<float> x;
  for (int64_t r = row_begin; r < row_end; ++r) {
    Rng rng(row_seed(seed, t.name, r));
    uint8_t* dst = out + size_t(r - row_begin) * row_size;
    if (info.block_elems > 1) {
      ZINC_CHECK(init == WeightInit::kMatrix || init == WeightInit::kEmbedding);
      const float sigma = spread(t, init);
      for (int64_t b = 0; b < n / info.block_elems; ++b) random_block(type, sigma, rng, dst + size_t(b) * info.block_bytes);
      continue;
    }
    x.resize(size_t(n));
    float_row(c, t, init, rng, x.data());
    if (type == TensorType::F32) {
      std::memcpy(dst, x.data(), size_t(n) * 4);
    } else {
      uint16_t* h = reinterpret_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t v = type == TensorType::F16 ? f32_to_fp16(x[size_t(i)]) : f32_to_bf16(x[size_t(i)]);
        std::memcpy(h + i, &v, 2);
      }
    }
  }
}

}  // namespace zinc::model
