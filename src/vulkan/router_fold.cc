#include "vulkan/router_fold.h"

#include <algorithm>
#include <cstring>

#include "core/quant.h"
#include "cpu/matmul.h"

namespace zinc::vulkan {
namespace {

// The float rows of a matrix weight.
std::vector<float> dequantize(const graph::Weight& w, cpu::ThreadPool& pool) {
  std::vector<float> out(size_t(w.rows() * w.cols()));
  const auto* src = static_cast<const uint8_t*>(w.data);
  pool.parallel_for(w.rows(), 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      dequantize_row(w.type, src + size_t(r) * w.row_bytes, &out[size_t(r * w.cols())], w.cols());
  });
  return out;
}

// The columns of a matrix weight as float rows (its transpose), dequantized 16 rows at a time
// so that each column's 16 values are written as one cache line.
std::vector<float> dequantize_transposed(const graph::Weight& w, cpu::ThreadPool& pool) {
  constexpr int64_t kRows = 16;
  const int64_t rows = w.rows(), cols = w.cols();
  std::vector<float> out(size_t(rows * cols));
  const auto* src = static_cast<const uint8_t*>(w.data);
  pool.parallel_for((rows + kRows - 1) / kRows, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> block(size_t(kRows * cols));
    for (int64_t b = begin; b < end; ++b) {
      const int64_t r0 = b * kRows, n = std::min(kRows, rows - r0);
      for (int64_t i = 0; i < n; ++i)
        dequantize_row(w.type, src + size_t(r0 + i) * w.row_bytes, &block[size_t(i * cols)], cols);
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t i = 0; i < n; ++i) out[size_t(c * rows + r0 + i)] = block[size_t(i * cols + c)];
    }
  });
  return out;
}

}  // namespace

Result<RouterFold> fold_router(const graph::Weight& router, const graph::Weight& norm, const graph::Weight& projection,
                               TensorType input_type) {
  const int64_t n_expert = router.rows(), n_embd = router.cols(), in_cols = projection.cols();
  if (router.ne[2] != 1 || projection.ne[2] != 1 || norm.n_elements() != n_embd || projection.rows() != n_embd ||
      n_expert <= 0 || in_cols <= 0 || in_cols % 32 != 0)
    return error("router %s (%lld x %lld), norm %s (%lld) and projection %s (%lld x %lld) do not fold",
                 router.name.c_str(), (long long)n_expert, (long long)n_embd, norm.name.c_str(),
                 (long long)norm.n_elements(), projection.name.c_str(), (long long)projection.rows(),
                 (long long)in_cols);
  ZINC_RETURN_IF_ERROR(check_dequantize(router.type));
  ZINC_RETURN_IF_ERROR(check_dequantize(projection.type));
  if (norm.type != TensorType::F32) return error("norm %s is not float32", norm.name.c_str());
  if (input_type != TensorType::F32 && input_type != TensorType::Q8_0)
    return error("a folded router's input matrix as %s", std::string(type_name(input_type)).c_str());

  RouterFold f{input_type, n_expert, n_embd, in_cols, {}, {}};
  cpu::ThreadPool pool(0);
  std::vector<float> r = dequantize(router, pool);  // becomes R = W_r diag(w)
  const float* w = norm.f32();
  for (int64_t i = 0; i < n_expert; ++i)
    for (int64_t c = 0; c < n_embd; ++c) r[size_t(i * n_embd + c)] *= w[c];
  f.stream.resize(size_t(n_expert * n_embd) * 4);
  std::memcpy(f.stream.data(), r.data(), f.stream.size());

  // M = R P as the CPU backend's product with P^T as the weight rows and R's rows as the tokens
  // (the large matrix streamed once, in as many work items as it has row chunks).
  const std::vector<float> pt = dequantize_transposed(projection, pool);
  std::vector<float> m(size_t(n_expert * in_cols));
  cpu::matmul({TensorType::F32, pt.data(), in_cols, n_embd, size_t(n_embd) * 4}, r.data(), n_expert, m.data(), pool);
  const size_t in_row = row_bytes(input_type, in_cols);
  f.input.resize(size_t(n_expert) * in_row);
  for (int64_t i = 0; i < n_expert; ++i)
    quantize_row(input_type, &m[size_t(i * in_cols)], &f.input[size_t(i) * in_row], in_cols);
  return f;
}

}  // namespace zinc::vulkan
