#include "vulkan/router_fold.h"

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

// dst[c][r] = src[r][c] for a rows x cols src.
void transpose(const std::vector<float>& src, int64_t rows, int64_t cols, std::vector<float>& dst, cpu::ThreadPool& pool) {
  pool.parallel_for(cols, 64, [&](int64_t begin, int64_t end) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = begin; c < end; ++c) dst[size_t(c * rows + r)] = src[size_t(r * cols + c)];
  });
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

  // M = R P, as the CPU backend's product M^T = P^T R^T (P^T's rows the "tokens").
  std::vector<float> pt(size_t(n_embd * in_cols)), mt(size_t(n_expert * in_cols)), m(mt.size());
  transpose(dequantize(projection, pool), n_embd, in_cols, pt, pool);
  cpu::matmul({TensorType::F32, r.data(), n_expert, n_embd, size_t(n_embd) * 4}, pt.data(), in_cols, mt.data(), pool);
  transpose(mt, in_cols, n_expert, m, pool);
  const size_t in_row = row_bytes(input_type, in_cols);
  f.input.resize(size_t(n_expert) * in_row);
  for (int64_t i = 0; i < n_expert; ++i)
    quantize_row(input_type, &m[size_t(i * in_cols)], &f.input[size_t(i) * in_row], in_cols);
  return f;
}

}  // namespace zinc::vulkan
