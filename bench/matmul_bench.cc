// cpu::matmul on the matrix shapes of a Llama-3.2-1B-shaped model (hidden 2048, FFN 8192,
// 16 layers, 32 q / 8 kv heads, vocab 128256), 2 threads.
//
//   BM_Shape/<type>/<rows>x<cols>/<n_tokens>: one matrix; enough copies are cycled through that
//     the weights come from DRAM, as in a real model. Counters: weight GB/s, tokens/s.
//   BM_Decode1B/<mix>, BM_Prefill1B/<mix>: every matmul of one decoded token (112 layer matrices +
//     the output matrix), or of a 128-token prompt (output matrix for the last token only, as
//     llama-bench's pp does); q/k/v and gate/up each go as one matmul_many (one quantized input,
//     one dispatch).
//   BM_EstimateDecode1B: whole-model decode tok/s from the BM_Shape timings at n_tokens 1.
//   BM_PoolDispatch: one ThreadPool::run of an empty job (decode makes ~115 calls per token).
//   BM_ReadBandwidth: 2 threads summing 256 MiB: what DRAM gives right now (on a VM it varies with
//     the neighbours), the ceiling of decode's weight GB/s.
// Mixes: Q4_K_M (Q4_K; Q6_K for attn_v and ffn_down in 8 of 16 layers and for the output) and Q8_0.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "core/tensor_type.h"
#include "cpu/matmul.h"

namespace zinc::cpu {
namespace {

constexpr int kThreads = 2;
constexpr int64_t kHidden = 2048, kFfn = 8192, kKv = 512, kVocab = 128256, kLayers = 16;
constexpr size_t kStreamBytes = size_t(192) << 20;  // copies per shape: at least this many bytes

ThreadPool& pool() {
  static ThreadPool p(kThreads);
  return p;
}

// Random blocks with sane fp16 scales (speed does not depend on the values).
std::vector<uint8_t> random_matrix(TensorType t, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  const auto& info = type_info(t);
  std::vector<uint8_t> w(row_bytes(t, cols) * size_t(rows));
  for (size_t i = 0; i + 4 <= w.size(); i += 4) {
    const uint32_t v = rng();
    std::memcpy(&w[i], &v, 4);
  }
  const uint16_t d = f32_to_fp16(0.001f);
  const size_t d_offset = t == TensorType::Q6_K ? 208 : 0;
  for (size_t b = 0; b < w.size() / info.block_bytes; ++b) std::memcpy(&w[b * info.block_bytes + d_offset], &d, 2);
  return w;
}

std::vector<float> random_input(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = nd(rng);
  return x;
}

// Q4_K_M's rule (llama.cpp use_more_bits): layers < n/8, >= 7n/8, and every third in between.
bool more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// Seconds per call of each (type, rows, cols) at n_tokens 1, filled by BM_Shape.
std::map<std::tuple<TensorType, int64_t, int64_t>, double>& decode_seconds() {
  static std::map<std::tuple<TensorType, int64_t, int64_t>, double> m;
  return m;
}

void BM_Shape(benchmark::State& state, TensorType t, int64_t rows, int64_t cols, int64_t n_tok) {
  const size_t bytes = row_bytes(t, cols) * size_t(rows);
  const size_t copies = std::max<size_t>(1, (kStreamBytes + bytes - 1) / bytes);
  std::vector<std::vector<uint8_t>> w;
  for (size_t c = 0; c < copies; ++c) w.push_back(random_matrix(t, rows, cols, uint32_t(c + 1)));
  const auto x = random_input(n_tok * cols, 7);
  std::vector<float> y(size_t(n_tok * rows));
  size_t c = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    matmul({t, w[c].data(), rows, cols, row_bytes(t, cols)}, x.data(), n_tok, y.data(), pool());
    benchmark::DoNotOptimize(y.data());
    c = (c + 1) % copies;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.counters["weight_GB/s"] =
      benchmark::Counter(double(bytes) * double(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["tokens/s"] =
      benchmark::Counter(double(n_tok) * double(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["GMAC/s"] = benchmark::Counter(
      double(rows) * double(cols) * double(n_tok) * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
  if (n_tok == 1 && state.iterations() > 0) decode_seconds()[{t, rows, cols}] = seconds / double(state.iterations());
}

// One decoded token of the 1B Q4_K_M = the sum of its matrices' BM_Shape times at n_tokens 1.
void BM_EstimateDecode1B(benchmark::State& state) {
  const auto& s = decode_seconds();
  auto get = [&](TensorType t, int64_t rows, int64_t cols) {
    const auto it = s.find({t, rows, cols});
    return it == s.end() ? -1.0 : it->second;
  };
  double total = 0;
  bool complete = true;
  auto add = [&](TensorType t, int64_t rows, int64_t cols, double times) {
    const double v = get(t, rows, cols);
    complete = complete && v >= 0;
    total += times * v;
  };
  int n_more = 0;
  for (int i = 0; i < kLayers; ++i) n_more += more_bits(i, kLayers) ? 1 : 0;
  add(TensorType::Q4_K, kHidden, kHidden, 2.0 * kLayers);                   // q, o
  add(TensorType::Q4_K, kKv, kHidden, double(kLayers + kLayers - n_more));  // k; v in Q4_K layers
  add(TensorType::Q6_K, kKv, kHidden, double(n_more));                      // v in Q6_K layers
  add(TensorType::Q4_K, kFfn, kHidden, 2.0 * kLayers);                      // gate, up
  add(TensorType::Q4_K, kHidden, kFfn, double(kLayers - n_more));           // down
  add(TensorType::Q6_K, kHidden, kFfn, double(n_more));
  add(TensorType::Q6_K, kVocab, kHidden, 1.0);  // output
  for (auto _ : state) benchmark::DoNotOptimize(total);
  if (!complete) {
    state.SkipWithError("run the BM_Shape benchmarks at n_tokens 1 first (same process)");
    return;
  }
  state.counters["matmul_ms/token"] = total * 1e3;
  state.counters["tokens/s"] = 1.0 / total;
}

void BM_ReadBandwidth(benchmark::State& state) {
  const size_t n_words = (size_t(256) << 20) / 8;
  static const std::vector<uint64_t> data(n_words, 1);
  std::atomic<uint64_t> sink{0};
  for (auto _ : state) {
    pool().parallel_items(16, [&](int64_t i) {
      const uint64_t* p = data.data() + size_t(i) * (n_words / 16);
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (size_t k = 0; k < n_words / 16; k += 4) {
        s0 += p[k];
        s1 += p[k + 1];
        s2 += p[k + 2];
        s3 += p[k + 3];
      }
      sink.fetch_add(s0 + s1 + s2 + s3, std::memory_order_relaxed);
    });
  }
  benchmark::DoNotOptimize(sink.load());
  state.counters["GB/s"] =
      benchmark::Counter(double(n_words * 8) * double(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_PoolDispatch(benchmark::State& state) {
  std::atomic<int> sink{0};
  for (auto _ : state) pool().run([&](int t, int) { sink.fetch_add(t, std::memory_order_relaxed); });
  benchmark::DoNotOptimize(sink.load());
}

// The matrices of the 1B model in a given mix.
struct Model {
  struct Layer {
    std::vector<uint8_t> q, k, v, o, gate, up, down;
    TensorType v_type, down_type;
  };
  TensorType base;
  std::vector<Layer> layers;
  std::vector<uint8_t> output;
  TensorType output_type;
};

Model make_model(bool q4_k_m) {
  Model m;
  m.base = q4_k_m ? TensorType::Q4_K : TensorType::Q8_0;
  m.output_type = q4_k_m ? TensorType::Q6_K : TensorType::Q8_0;
  uint32_t seed = 1;
  for (int i = 0; i < kLayers; ++i) {
    Model::Layer l;
    const TensorType hi = q4_k_m && more_bits(i, kLayers) ? TensorType::Q6_K : m.base;
    l.v_type = l.down_type = hi;
    l.q = random_matrix(m.base, kHidden, kHidden, seed++);
    l.k = random_matrix(m.base, kKv, kHidden, seed++);
    l.v = random_matrix(hi, kKv, kHidden, seed++);
    l.o = random_matrix(m.base, kHidden, kHidden, seed++);
    l.gate = random_matrix(m.base, kFfn, kHidden, seed++);
    l.up = random_matrix(m.base, kFfn, kHidden, seed++);
    l.down = random_matrix(hi, kHidden, kFfn, seed++);
    m.layers.push_back(std::move(l));
  }
  m.output = random_matrix(m.output_type, kVocab, kHidden, seed++);
  return m;
}

const Model& model(bool q4_k_m) {
  static std::unique_ptr<Model> models[2];
  auto& m = models[q4_k_m ? 1 : 0];
  if (!m) m = std::make_unique<Model>(make_model(q4_k_m));
  return *m;
}

WeightView view(TensorType t, const std::vector<uint8_t>& w, int64_t rows, int64_t cols) {
  return {t, w.data(), rows, cols, row_bytes(t, cols)};
}

// All matmuls of n_tok tokens through the model (outputs of one feed nothing: speed only).
void run_model(const Model& m, int64_t n_tok, const float* x_hidden, const float* x_ffn, float* y) {
  MatmulInput in;
  for (const Model::Layer& l : m.layers) {
    in.reset(x_hidden, n_tok, kHidden);
    const MatmulOutput qkv[3] = {{view(m.base, l.q, kHidden, kHidden), y},
                                 {view(m.base, l.k, kKv, kHidden), y + n_tok * kHidden},
                                 {view(l.v_type, l.v, kKv, kHidden), y + n_tok * (kHidden + kKv)}};
    matmul_many(qkv, 3, in, pool());
    matmul(view(m.base, l.o, kHidden, kHidden), x_hidden, n_tok, y, pool());
    in.reset(x_hidden, n_tok, kHidden);
    const MatmulOutput gate_up[2] = {{view(m.base, l.gate, kFfn, kHidden), y},
                                     {view(m.base, l.up, kFfn, kHidden), y + n_tok * kFfn}};
    matmul_many(gate_up, 2, in, pool());
    matmul(view(l.down_type, l.down, kHidden, kFfn), x_ffn, n_tok, y, pool());
  }
  matmul(view(m.output_type, m.output, kVocab, kHidden), x_hidden + (n_tok - 1) * kHidden, 1, y, pool());
}

void BM_Model(benchmark::State& state, bool q4_k_m, int64_t n_tok) {
  const Model& m = model(q4_k_m);
  const auto x_hidden = random_input(n_tok * kHidden, 1), x_ffn = random_input(n_tok * kFfn, 2);
  std::vector<float> y(size_t(n_tok * std::max(2 * kFfn, kVocab)));
  for (auto _ : state) {
    run_model(m, n_tok, x_hidden.data(), x_ffn.data(), y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["tokens/s"] =
      benchmark::Counter(double(n_tok) * double(state.iterations()), benchmark::Counter::kIsRate);
}

}  // namespace
}  // namespace zinc::cpu

namespace {

using zinc::TensorType;

struct ShapeSpec {
  int64_t rows, cols;
};
const ShapeSpec kShapes[] = {{2048, 2048}, {512, 2048}, {8192, 2048}, {2048, 8192}, {128256, 2048}};

int register_all() {
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0})
    for (const ShapeSpec& s : kShapes)
      for (int64_t n_tok : {1, 128}) {
        const std::string name = "BM_Shape/" + std::string(zinc::type_name(t)) + "/" + std::to_string(s.rows) + "x" +
                                 std::to_string(s.cols) + "/" + std::to_string(n_tok);
        benchmark::RegisterBenchmark(name.c_str(), zinc::cpu::BM_Shape, t, s.rows, s.cols, n_tok)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
  benchmark::RegisterBenchmark("BM_PoolDispatch", zinc::cpu::BM_PoolDispatch)->UseRealTime();
  benchmark::RegisterBenchmark("BM_ReadBandwidth", zinc::cpu::BM_ReadBandwidth)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_EstimateDecode1B/Q4_K_M", zinc::cpu::BM_EstimateDecode1B)->Iterations(1);
  for (bool q4km : {true, false}) {
    const std::string mix = q4km ? "Q4_K_M" : "Q8_0";
    benchmark::RegisterBenchmark(("BM_Decode1B/" + mix).c_str(), zinc::cpu::BM_Model, q4km, int64_t(1))
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("BM_Prefill1B/" + mix + "/128").c_str(), zinc::cpu::BM_Model, q4km, int64_t(128))
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  return 0;
}
const int kRegistered = register_all();

}  // namespace
