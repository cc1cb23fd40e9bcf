// Row (de)quantization throughput per type, single thread. Bytes counted are the float32 side
// (4 bytes per element) so types compare directly: "bytes_per_second" = float data produced by
// dequantize_row or consumed by quantize_row. Input: gaussian rows of 4096 elements.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "core/quant.h"

namespace zinc {
namespace {

constexpr int64_t kRowElems = 4096;
constexpr int64_t kRows = 64;  // 1 MiB of float32 per iteration

const TensorType kTypes[] = {TensorType::F16,  TensorType::BF16, TensorType::Q4_0,   TensorType::Q4_1,
                             TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0,   TensorType::Q2_K,
                             TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K,   TensorType::Q6_K,
                             TensorType::IQ4_NL, TensorType::IQ4_XS, TensorType::MXFP4};

std::vector<float> gaussian_rows() {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(size_t(kRowElems * kRows));
  for (auto& v : x) v = nd(rng);
  return x;
}

void BM_Dequantize(benchmark::State& state, TensorType t) {
  const std::vector<float> x = gaussian_rows();
  const size_t rb = row_bytes(t, kRowElems);
  std::vector<uint8_t> q(rb * kRows);
  for (int64_t r = 0; r < kRows; ++r) quantize_row(t, x.data() + r * kRowElems, q.data() + r * rb, kRowElems);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    for (int64_t r = 0; r < kRows; ++r) dequantize_row(t, q.data() + r * rb, y.data() + r * kRowElems, kRowElems);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * kRows * kRowElems * 4);
}

void BM_Quantize(benchmark::State& state, TensorType t) {
  const std::vector<float> x = gaussian_rows();
  const size_t rb = row_bytes(t, kRowElems);
  std::vector<uint8_t> q(rb * kRows);
  for (auto _ : state) {
    for (int64_t r = 0; r < kRows; ++r) quantize_row(t, x.data() + r * kRowElems, q.data() + r * rb, kRowElems);
    benchmark::DoNotOptimize(q.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * kRows * kRowElems * 4);
}

const bool kRegistered = [] {
  for (TensorType t : kTypes) {
    const std::string name(type_name(t));
    benchmark::RegisterBenchmark(("Dequantize/" + name).c_str(), BM_Dequantize, t);
    benchmark::RegisterBenchmark(("Quantize/" + name).c_str(), BM_Quantize, t);
  }
  return true;
}();

}  // namespace
}  // namespace zinc
