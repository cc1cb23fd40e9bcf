// Throughput of `zinc make-model`'s weight generation (model/presets_weights.h) per stored type,
// one thread: bytes/s of finished tensor data for a 2048 x 512 expert-sized matrix.
#include <benchmark/benchmark.h>

#include <vector>

#include "model/presets.h"
#include "model/presets_weights.h"

namespace {

void BM_RandomRows(benchmark::State& state) {
  const auto type = zinc::TensorType(state.range(0));
  const zinc::model::PresetConfig& c = *zinc::model::find_preset("qwen35-35b-a3b");
  const zinc::model::PresetTensor t{"blk.0.ffn_up_exps.weight", {2048, 512, 256}};
  const int64_t n_rows = 512;
  std::vector<uint8_t> out(zinc::row_bytes(type, t.ne[0]) * n_rows);
  for (auto _ : state) {
    zinc::model::random_rows(c, t, type, 1, 0, n_rows, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(out.size()));
  state.SetLabel(std::string(zinc::type_name(type)));
}

BENCHMARK(BM_RandomRows)
    ->Arg(int(zinc::TensorType::F32))
    ->Arg(int(zinc::TensorType::F16))
    ->Arg(int(zinc::TensorType::Q8_0))
    ->Arg(int(zinc::TensorType::Q4_0))
    ->Arg(int(zinc::TensorType::Q4_K))
    ->Arg(int(zinc::TensorType::Q6_K));

}  // namespace
