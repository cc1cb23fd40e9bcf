// Row conversion between float32 and the stored tensor types (block layouts: model-spec §2).
// A "row" is n elements, n a multiple of the type's block size; blocks never straddle rows.
// dequantize_row takes data at any address (a GGUF file may align its tensors to 1 byte); the
// compute kernels need 4-byte alignment, which model::Model provides by copying such tensors.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "core/tensor_type.h"

namespace zinc {

// True when dequantize_row handles `t` (same as type_info(t).can_dequantize); false for ids
// that are not known types.
bool can_dequantize(TensorType t);
// OK, or an error naming the type: "tensor type IQ2_XXS (id 16) cannot be dequantized by zinc".
Status check_dequantize(TensorType t);
// dst[0..n) = the exact float32 values of the n elements at src (bit-identical to ggml).
// t must satisfy can_dequantize.
void dequantize_row(TensorType t, const void* src, float* dst, int64_t n);

// True when quantize_row can produce `t`: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// Q2_K..Q6_K, IQ4_NL, IQ4_XS, MXFP4.
bool can_quantize(TensorType t);
Status check_quantize(TensorType t);  // as check_dequantize, for quantize_row
// Writes row_bytes(t, n) bytes at dst that approximate src[0..n) with the algorithms of ggml's
// reference quantizers (quantize_row_*_ref; no importance weights). src must be finite.
void quantize_row(TensorType t, const float* src, void* dst, int64_t n);

}  // namespace zinc
