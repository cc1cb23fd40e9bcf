// Random weights for preset models: finite, plausible magnitudes, deterministic for a seed and
// independent of how rows are split over threads. Quantized types are written as random blocks
// directly (random quants, fp16 scales sized for the target spread), not by quantizing floats.
#pragma once

#include <cstdint>
#include <string>

#include "core/tensor_type.h"
#include "model/presets.h"

namespace zinc::model {

// N(mean, sd) below is approximately normal: a rescaled sum of four uniforms.
enum class WeightInit {
  kMatrix,     // N(0, 1/sqrt(ne[0])): projections, experts, routers, conv kernels, 1-D gate rows
  kEmbedding,  // N(0, 1): token_embd
  kNorm,       // 1 + N(0, 0.1)
  kBias,       // N(0, 0.5)
  kSsmA,       // -U(1, 8): already -exp(A_log)
  kDtBias,     // U(-2.5, 1.5)
  kRopeFreqs,  // Llama 3 rope scaling factors (not random)
};

WeightInit weight_init(const PresetTensor& t);

// Types random_rows can write: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K.
bool can_make_random(TensorType type);

// Writes rows [row_begin, row_end) of tensor `t` of preset `c` stored as `type` into `out`
// (row_bytes(type, ne[0]) per row, starting with row_begin). Quantized types only for kMatrix
// and kEmbedding tensors. Thread-safe.
void random_rows(const PresetConfig& c, const PresetTensor& t, TensorType type, uint64_t seed, int64_t row_begin,
                 int64_t row_end, uint8_t* out);

}  // namespace zinc::model
