#include "core/quant.h"

#include <cstring>

#include "core/check.h"
#include "core/fp16.h"

namespace zinc {

bool can_dequantize(TensorType t) {
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16;
}

void dequantize_row(TensorType t, const void* src, float* dst, int64_t n) {
  switch (t) {
    case TensorType::F32:
      std::memcpy(dst, src, size_t(n) * 4);
      return;
    case TensorType::F16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(s[i]);
      return;
    }
    case TensorType::BF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    default:
      ZINC_CHECK(false && "dequantize_row: type not supported");
  }
}

bool can_quantize(TensorType t) { return can_dequantize(t); }

void quantize_row(TensorType t, const float* src, void* dst, int64_t n) {
  switch (t) {
    case TensorType::F32:
      std::memcpy(dst, src, size_t(n) * 4);
      return;
    case TensorType::F16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_fp16(src[i]);
      return;
    }
    case TensorType::BF16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      return;
    }
    default:
      ZINC_CHECK(false && "quantize_row: type not supported");
  }
}

}  // namespace zinc
