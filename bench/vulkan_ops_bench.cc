// Decode matvec and prefill GEMM on the default Vulkan device, timed with GPU timestamps:
// Llama-3-8B shapes, Q4_K and Q6_K. Each measurement cycles through enough copies of the
// weights to exceed the GPU's last-level cache, as a real decode step does (every matrix
// read once per token). Counters: GB/s of weights read, TFLOP/s (2 * rows * cols * tokens).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>

#include "vulkan/ops/elementwise.h"
#include "vulkan/ops/gemm.h"
#include "vulkan/ops/matvec.h"
#include "vulkan/timestamps.h"
#include "vulkan_gpu_timer.h"

namespace zinc::vulkan {
namespace {

struct Context : BenchDevice {
  std::unique_ptr<Buffer> x, y;  // activations: up to 512 tokens x 14336 floats
};

Context* context() {
  static Context* c = open_context<Context>([](Context& r) {
    r.x = r.make_buffer(512ull * 14336 * 4);
    r.y = r.make_buffer(512ull * 128256 * 4);
    return true;
  });
  return c;
}

// Copies of one random rows x cols matrix, together larger than the last-level cache.
struct Weights {
  std::vector<std::unique_ptr<WeightBuffer>> copies;
  uint64_t bytes = 0;  // of one copy as stored in GGUF
};

const Weights& weights(TensorType type, int64_t rows, int64_t cols) {
  static std::map<std::tuple<int, int64_t, int64_t>, Weights> cache;
  Weights& w = cache[{int(type), rows, cols}];
  if (!w.copies.empty()) return w;
  const std::vector<uint8_t> data = repeated_random_rows(type, rows, cols);
  w.bytes = data.size();
  // Well past a 50 MiB L2, within a small GPU's memory.
  const uint64_t target = std::min<uint64_t>(512ull << 20, context()->device->caps().device_local_bytes / 32);
  const size_t n = size_t(std::max<uint64_t>(1, std::min<uint64_t>(32, (target + w.bytes - 1) / w.bytes)));
  Context& c = *context();
  for (size_t i = 0; i < n; ++i) {
    auto b = WeightBuffer::upload(*c.device, *c.uploader, type, rows, cols, data);
    if (!b.ok()) {
      std::fprintf(stderr, "upload: %s\n", b.status().message().c_str());
      break;
    }
    w.copies.push_back(std::move(*b));
  }
  return w;
}


struct Shaping {
  uint32_t group_size = 0, rows_per_group = 0, k_slices = 0, steps = 0;
  bool prequantized_x = false;  // x as Matvec::prequantize_x's records of random values
};

void BM_Matvec(benchmark::State& state, TensorType type, int64_t rows, int64_t cols, bool int8, bool swiglu,
               Shaping shaping) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  ops::MatvecOptions opt;
  opt.int8 = int8;
  opt.swiglu = swiglu;
  opt.group_size = shaping.group_size;
  opt.rows = shaping.rows_per_group;
  opt.k_slices = shaping.k_slices;
  opt.steps = shaping.steps;
  opt.prequantized_x = shaping.prequantized_x;
  auto mv = ops::Matvec::create(*c.device, type, opt);
  if (!mv.ok()) return state.SkipWithError(mv.status().message().c_str());
  if (opt.prequantized_x) {
    std::vector<float> xf(static_cast<size_t>(cols));
    std::mt19937 rng(5);
    std::normal_distribution<float> nd;
    for (float& v : xf) v = nd(rng);
    const auto records = ops::Matvec::prequantize_x(xf.data(), 1, uint32_t(cols), uint32_t(cols), nullptr);
    const Status up =
        c.uploader->upload(*c.x, 0, {reinterpret_cast<const uint8_t*>(records.data()), records.size() * 4});
    if (!up.ok()) return state.SkipWithError(up.message().c_str());
  }
  if (int8 && !(*mv)->uses_int8()) return state.SkipWithError("no int8 path here");
  const Weights& w = weights(type, rows, cols);
  const uint32_t n = uint32_t(w.copies.size());
  const ops::Activations x{{c.x.get()}, uint32_t(cols)}, y{{c.y.get()}, uint32_t(rows)};
  const uint64_t bytes = w.bytes * (swiglu ? 2 : 1);
  const double flop = 2.0 * double(rows) * double(cols) * (swiglu ? 2 : 1);
  time_gpu(state, *c.commands, c.timestamps.get(), 50, double(bytes), flop, [&](Commands& cmd, int i) {
    if (swiglu) return (*mv)->record_swiglu(cmd, *w.copies[i % n], *w.copies[(i + 1) % n], x, y, 1);
    return (*mv)->record(cmd, *w.copies[i % n], x, y, 1);
  });
}

// The floor of one dependent step: a tiny elementwise op with a barrier after each.
void BM_DispatchFloor(benchmark::State& state, uint32_t n) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  auto op = ops::Elementwise::create(*c.device, ops::ElementwiseOp::kAdd);
  if (!op.ok()) return state.SkipWithError(op.status().message().c_str());
  const BufferRange a{c.x.get(), 0, uint64_t(n) * 4}, b{c.y.get(), 0, uint64_t(n) * 4};
  time_gpu(state, *c.commands, c.timestamps.get(), 200, 8.0 * n, 0,
           [&](Commands& cmd, int) { return (*op)->record(cmd, a, b, b, n); });
}

void BM_Gemm(benchmark::State& state, TensorType type, int64_t rows, int64_t cols, uint32_t n_tokens, bool coopmat,
             int tile) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  ops::GemmOptions opt;
  opt.coopmat = coopmat;
  opt.tile = tile;
  auto g = ops::Gemm::create(*c.device, type, opt);
  if (!g.ok()) return state.SkipWithError(g.status().message().c_str());
  if (coopmat && !(*g)->uses_coopmat()) return state.SkipWithError("no cooperative matrices here");
  const Weights& w = weights(type, rows, cols);
  const uint32_t n = uint32_t(w.copies.size());
  const ops::Activations x{{c.x.get()}, uint32_t(cols)}, y{{c.y.get()}, uint32_t(rows)};
  time_gpu(state, *c.commands, c.timestamps.get(), 5, double(w.bytes), 2.0 * double(rows) * double(cols) * n_tokens,
           [&](Commands& cmd, int i) { return (*g)->record(cmd, *w.copies[i % n], x, y, n_tokens); });
}

struct Shape {
  const char* name;
  int64_t rows, cols;
};
constexpr Shape kShapes[] = {{"q_o_4096x4096", 4096, 4096},
                             {"k_v_1024x4096", 1024, 4096},
                             {"gate_up_14336x4096", 14336, 4096},
                             {"down_4096x14336", 4096, 14336},
                             {"output_128256x4096", 128256, 4096}};

int register_all() {
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K}) {
    const std::string tn(type_name(t));
    for (const Shape& s : kShapes)
      for (bool int8 : {true, false})
        gpu_timed(benchmark::RegisterBenchmark(("matvec/" + tn + "/" + s.name + (int8 ? "/int8" : "/float")).c_str(),
                                               BM_Matvec, t, s.rows, s.cols, int8, false, Shaping{}));
    gpu_timed(benchmark::RegisterBenchmark(("matvec_swiglu/" + tn + "/gate_up_14336x4096").c_str(), BM_Matvec, t, 14336,
                                           4096, true, true, Shaping{}));
    // The staged kernel reading x prequantized (no staging) against the plain one above.
    Shaping px;
    px.prequantized_x = true;
    for (const Shape& s : kShapes)
      gpu_timed(benchmark::RegisterBenchmark(("matvec_px/" + tn + "/" + s.name).c_str(), BM_Matvec, t, s.rows, s.cols,
                                             true, false, px));
    gpu_timed(benchmark::RegisterBenchmark(("matvec_swiglu_px/" + tn + "/gate_up_14336x4096").c_str(), BM_Matvec, t,
                                           14336, 4096, true, true, px));
  }
  for (uint32_t n : {2048u, 65536u})
    gpu_timed(benchmark::RegisterBenchmark(("floor/add_" + std::to_string(n)).c_str(), BM_DispatchFloor, n));
  // Workgroup shapes of the staged decode matvec: threads, rows per workgroup (in passes of two
  // rows per subgroup step, or one row of both matrices for the SwiGLU pair), subgroups per step
  // (k_slices) and groups loaded ahead (steps).
  constexpr Shape kSweep[] = {kShapes[0], kShapes[1], kShapes[2], kShapes[3], {"qkv_8192x2048", 8192, 2048},
                              {"out_2048x4096", 2048, 4096}, {"shexp_512x2048", 512, 2048}};
  for (bool swiglu : {false, true})
    for (const Shape& s : kSweep) {
      if (swiglu && s.rows != 14336) continue;
      for (uint32_t gs : {128u, 256u, 512u, 1024u})
        for (uint32_t passes : {1u, 2u, 4u, 8u})
          for (uint32_t slices : {1u, 2u, 4u})
            for (uint32_t steps : {1u, 2u, 4u}) {
              const uint32_t rows = gs / 32 / slices * (swiglu ? 1 : 2) * passes;  // 32-lane subgroups
              if (rows == 0 || (slices > 1 && steps == 4)) continue;
              gpu_timed(benchmark::RegisterBenchmark(
                  ("matvec_shape/Q4_K/" + std::string(swiglu ? "swiglu_" : "") + s.name + "/t" + std::to_string(gs) +
                   "_r" + std::to_string(rows) + "_k" + std::to_string(slices) + "_s" + std::to_string(steps))
                      .c_str(),
                  BM_Matvec, TensorType::Q4_K, s.rows, s.cols, true, swiglu, Shaping{gs, rows, slices, steps}));
            }
    }
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K})
    for (uint32_t n : {512u, 64u})
      for (const Shape& s : kShapes)
        for (bool coopmat : {true, false}) {
          if (!coopmat && n != 512) continue;
          gpu_timed(benchmark::RegisterBenchmark(("gemm" + std::to_string(n) + "/" + std::string(type_name(t)) + "/" +
                                                  s.name + (coopmat ? "/coopmat" : "/scalar"))
                                                     .c_str(),
                                                 BM_Gemm, t, s.rows, s.cols, n, coopmat, -1));
        }
  // Every cooperative-matrix tile (ops::Gemm::coopmat_tiles) on the layer shapes.
  for (uint32_t n : {512u, 64u})
    for (size_t s = 0; s < 4; ++s)
      for (size_t i = 0; i < ops::Gemm::coopmat_tiles().size(); ++i) {
        const ops::GemmTile& tile = ops::Gemm::coopmat_tiles()[i];
        gpu_timed(benchmark::RegisterBenchmark(
            ("gemm_tile/Q4_K/" + std::string(kShapes[s].name) + "/" + std::to_string(n) + "/" +
             std::to_string(tile.rows) + "x" + std::to_string(tile.tokens) + "_sg" + std::to_string(tile.sg_rows))
                .c_str(),
            BM_Gemm, TensorType::Q4_K, kShapes[s].rows, kShapes[s].cols, n, true, int(i)));
      }
  return 0;
}
const int kRegistered = register_all();

}  // namespace
}  // namespace zinc::vulkan
