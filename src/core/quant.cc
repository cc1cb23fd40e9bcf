// Dispatch from a tensor type to its row kernels (quant_legacy.cc, quant_k.cc, quant_k_ref.cc,
// quant_nl.cc).
#include "core/quant.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "core/fp16.h"
#include "core/quant_internal.h"

namespace zinc {
namespace {

using DequantizeFn = void (*)(const void*, float*, int64_t);
using QuantizeFn = void (*)(const float*, void*, int64_t);

void dequantize_f32(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, size_t(n) * 4); }

// fp16 -> f32 in fixed-size chunks (so the loop vectorizes): an integer-only pass that rebiases
// the exponent (inf/NaN keep an all-ones exponent), then a scalar fix-up of the rare half
// denormals. Same bits as fp16_to_f32 for every input, NaN payloads included.
void dequantize_f16(const void* src, float* __restrict dst, int64_t n) {
  constexpr int64_t kChunk = 64;
  const auto* __restrict s = static_cast<const uint16_t*>(src);
  int64_t base = 0;
  for (; base + kChunk <= n; base += kChunk) {
    uint32_t bits[kChunk];
    uint32_t any_denormal = 0;
    for (int64_t i = 0; i < kChunk; ++i) {
      const uint32_t h = s[base + i];
      const uint32_t magnitude = (h & 0x7fffu) << 13;
      const uint32_t exp = magnitude & 0x0f800000u;
      const uint32_t special = 0u - uint32_t(exp == 0x0f800000u);
      const uint32_t zero_exp = 0u - uint32_t(exp == 0);
      const uint32_t normal = magnitude + (112u << 23) + (special & (112u << 23));
      bits[i] = (normal & ~zero_exp) | (h & 0x8000u) << 16;  // zero exponent: signed zero for now
      any_denormal |= zero_exp & magnitude;
    }
    std::memcpy(dst + base, bits, sizeof bits);
    if (any_denormal) {
      for (int64_t i = 0; i < kChunk; ++i)
        if ((s[base + i] & 0x7c00u) == 0) dst[base + i] = fp16_to_f32(s[base + i]);
    }
  }
  for (; base < n; ++base) dst[base] = fp16_to_f32(s[base]);
}

void dequantize_bf16(const void* src, float* __restrict dst, int64_t n) {
  constexpr int64_t kChunk = 64;
  const auto* __restrict s = static_cast<const uint16_t*>(src);
  int64_t base = 0;
  for (; base + kChunk <= n; base += kChunk) {
    uint32_t bits[kChunk];
    for (int64_t i = 0; i < kChunk; ++i) bits[i] = uint32_t(s[base + i]) << 16;
    std::memcpy(dst + base, bits, sizeof bits);
  }
  for (; base < n; ++base) dst[base] = bf16_to_f32(s[base]);
}

void quantize_f32(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, size_t(n) * 4); }
void quantize_f16(const float* src, void* dst, int64_t n) {
  auto* d = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = f32_to_fp16(src[i]);
}
void quantize_bf16(const float* src, void* dst, int64_t n) {
  auto* d = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
}

struct Kernels {
  DequantizeFn dequantize = nullptr;
  QuantizeFn quantize = nullptr;
};

Kernels kernels_for(TensorType t) {
  using namespace quant;
  switch (t) {
    case TensorType::F32: return {dequantize_f32, quantize_f32};
    case TensorType::F16: return {dequantize_f16, quantize_f16};
    case TensorType::BF16: return {dequantize_bf16, quantize_bf16};
    case TensorType::Q4_0: return {dequantize_q4_0, quantize_q4_0};
    case TensorType::Q4_1: return {dequantize_q4_1, quantize_q4_1};
    case TensorType::Q5_0: return {dequantize_q5_0, quantize_q5_0};
    case TensorType::Q5_1: return {dequantize_q5_1, quantize_q5_1};
    case TensorType::Q8_0: return {dequantize_q8_0, quantize_q8_0};
    case TensorType::Q2_K: return {dequantize_q2_k, quantize_q2_k};
    case TensorType::Q3_K: return {dequantize_q3_k, quantize_q3_k};
    case TensorType::Q4_K: return {dequantize_q4_k, quantize_q4_k};
    case TensorType::Q5_K: return {dequantize_q5_k, quantize_q5_k};
    case TensorType::Q6_K: return {dequantize_q6_k, quantize_q6_k};
    case TensorType::IQ4_NL: return {dequantize_iq4_nl, quantize_iq4_nl};
    case TensorType::IQ4_XS: return {dequantize_iq4_xs, quantize_iq4_xs};
    case TensorType::MXFP4: return {dequantize_mxfp4, quantize_mxfp4};
    default: return {};
  }
}

Status unsupported(TensorType t, const char* what) {
  const auto info = tensor_type_info(uint32_t(t));
  if (!info) return error("tensor type id %u is not a known ggml type", unsigned(t));
  return error("tensor type %.*s (id %u) cannot be %s by zinc", int(info->name.size()), info->name.data(),
               unsigned(t), what);
}

}  // namespace

bool can_dequantize(TensorType t) {
  const auto info = tensor_type_info(uint32_t(t));
  return info && info->can_dequantize && kernels_for(t).dequantize != nullptr;
}

Status check_dequantize(TensorType t) { return can_dequantize(t) ? ok_status() : unsupported(t, "dequantized"); }

void dequantize_row(TensorType t, const void* src, float* dst, int64_t n) {
  const DequantizeFn fn = kernels_for(t).dequantize;
  ZINC_CHECK(fn != nullptr && "dequantize_row: type not supported (ask can_dequantize first)");
  ZINC_DCHECK(n % type_info(t).block_elems == 0);
  if (reinterpret_cast<uintptr_t>(src) % 4 != 0) {  // a file may align tensors to 1 byte
    thread_local std::vector<uint32_t> aligned;
    const size_t bytes = row_bytes(t, n);
    aligned.resize((bytes + 3) / 4);
    std::memcpy(aligned.data(), src, bytes);
    src = aligned.data();
  }
  fn(src, dst, n);
}

bool can_quantize(TensorType t) { return kernels_for(t).quantize != nullptr; }

Status check_quantize(TensorType t) { return can_quantize(t) ? ok_status() : unsupported(t, "quantized"); }

void quantize_row(TensorType t, const float* src, void* dst, int64_t n) {
  const QuantizeFn fn = kernels_for(t).quantize;
  ZINC_CHECK(fn != nullptr && "quantize_row: type not supported (ask can_quantize first)");
  ZINC_DCHECK(n % type_info(t).block_elems == 0);
  fn(src, dst, n);
}

}  // namespace zinc
