// kv_write + attention of one layer of a Llama-3.2-1B-shaped model (32 query heads, 8 KV heads,
// head size 64, f16 K/V), 2 threads.
//
//   BM_Attention/<n_tokens>/<depth>: a batch of n_tokens new tokens after `depth` tokens already in
//     the cache (pp128: 128/0; decode at depth d: 1/d). Counter: tokens/s for this one layer
//     (a 1B model runs 16 of them per token).
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <vector>

#include "cpu/executor.h"
#include "graph/graph.h"
#include "kv/cache.h"

namespace zinc::cpu {
namespace {

constexpr int32_t kHeads = 32, kKvHeads = 8, kHeadDim = 64;

void BM_Attention(benchmark::State& state) {
  const int64_t n_tokens = state.range(0), depth = state.range(1);
  static ThreadPool pool(2);
  graph::StateLayout st;
  st.kv_layers = {{kKvHeads, kHeadDim, kHeadDim}};
  auto cache = kv::Cache::create(st, {kv::pages_for(depth + n_tokens), 1, kv::KvType::kF16});
  if (!cache.ok()) return state.SkipWithError(cache.status().message().c_str());
  const kv::SeqId seq = (*cache)->add_sequence().value();
  if (!(*cache)->reserve(seq, depth + n_tokens).ok()) return state.SkipWithError("reserve failed");

  graph::GraphBuilder g({n_tokens, n_tokens}, st);
  auto q = g.input("q", kHeads * kHeadDim), k = g.input("k", kKvHeads * kHeadDim), v = g.input("v", kKvHeads * kHeadDim);
  auto out = g.buffer("out", kHeads * kHeadDim);
  g.add("kv", graph::KvWrite{k, v, graph::HeadLayout::packed(kKvHeads, kHeadDim),
                             graph::HeadLayout::packed(kKvHeads, kHeadDim), 0});
  graph::Attention att;
  att.q = q;
  att.q_heads = graph::HeadLayout::packed(kHeads, kHeadDim);
  att.out = out;
  att.kv_layer = 0;
  att.scale = 0.125f;
  g.add("att", att);
  Executor ex(g.finish(out), pool);
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (graph::BufferId id : {q, k, v})
    for (float& x : ex.mutable_buffer(id)) x = nd(rng);

  const size_t n = static_cast<size_t>(n_tokens);
  std::vector<int32_t> tokens(n, 0), positions(n), seq_ids(n, seq), rows(n);
  for (int64_t i = 0; i < n_tokens; ++i) {
    positions[size_t(i)] = int32_t(depth + i);
    rows[size_t(i)] = int32_t(i);
  }
  const graph::Batch batch{tokens, positions, seq_ids, rows};
  for (auto _ : state) ex.run(batch, **cache);  // rewrites the same positions: same work each time
  state.counters["tok/s"] = benchmark::Counter(double(n_tokens), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Attention)
    ->Args({128, 0})
    ->Args({512, 0})
    ->Args({1, 128})
    ->Args({1, 4096})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace zinc::cpu
