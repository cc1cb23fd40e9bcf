// Row conversion between float32 and the stored tensor types (block layouts: model-spec §2).
// A "row" is n elements, n a multiple of the type's block size; blocks never straddle rows.
#pragma once

#include <cstdint>

#include "core/tensor_type.h"

namespace zinc {

// True when dequantize_row handles `t` (same as type_info(t).can_dequantize).
bool can_dequantize(TensorType t);
// dst[0..n) = the exact float32 values of the n elements at src.
void dequantize_row(TensorType t, const void* src, float* dst, int64_t n);

// True when quantize_row can produce `t`.
bool can_quantize(TensorType t);
// Writes row_bytes(t, n) bytes at dst that approximate src[0..n) (reference-quality rounding).
void quantize_row(TensorType t, const float* src, void* dst, int64_t n);

}  // namespace zinc
