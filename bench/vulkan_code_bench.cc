// What code costs a decode dispatch (shaders/code_probe.comp: straight-line FMA rounds run once
// by every invocation, about 150 bytes of code a round), timed with a barrier after each
// dispatch as between the dependent ops of a step:
// - single: one pipeline back to back (its code as warm as the GPU keeps it between dispatches);
// - twin: two pipelines of identical code in turn (what a pipeline switch costs when the code
//   is the same);
// - then_small / then_big: each dispatch followed by another pipeline's tiny or large dispatch
//   (r0 / r1024); compare with single plus that pipeline alone (single/r0, single/r1024).
// - bindings: the empty probe (r0) with n storage-buffer bindings in its layout, bound through
//   a descriptor set written at each dispatch (as the decode step binds its ops: the staged
//   matvec has 16) or one made beforehand, with 8 or 128 bytes of push constants: what binding
//   costs a dispatch (the H200: nothing, with push descriptors too);
// - siblings: k empty dispatches with no barrier between them, then the barrier.
// Reported per dispatch of the probed pipeline (per pair for then_*). ZINC_PIPELINE_STATS=1
// prints each pipeline's code size where the driver reports it.
#include <benchmark/benchmark.h>

#include <bit>
#include <map>
#include <string>
#include <vector>

#include "vulkan_gpu_timer.h"
#include "vulkan/pipeline.h"

namespace zinc::vulkan {
namespace {

constexpr uint32_t kThreads = 128, kMaxGroups = 1056;
constexpr uint32_t kMaxPushWords = 32;  // 128 bytes, the least maxPushConstantsSize

struct Context : BenchDevice {
  std::unique_ptr<Buffer> data;
};

Context* context() {
  static Context* c = open_context<Context>([](Context& c) {
    c.data = c.make_buffer(uint64_t(kMaxGroups) * kThreads * 2 * 16);
    return c.upload_random(*c.data, 3).ok();
  });
  return c;
}

struct Push {
  uint32_t n;
  float c;
};

const Pipeline* probe(uint32_t rounds, uint32_t tag) {
  static std::map<std::pair<uint32_t, uint32_t>, std::unique_ptr<Pipeline>> made;
  auto& slot = made[{rounds, tag}];
  if (!slot) {
    auto p = Pipeline::create(*context()->device, {"code_probe", 1, sizeof(Push), {rounds, tag}});
    if (!p.ok()) return nullptr;
    slot = std::move(*p);
  }
  return slot.get();
}

enum class Case { kSingle, kTwin, kThenSmall, kThenBig };

void BM_Code(benchmark::State& state, Case kind, uint32_t rounds, uint32_t groups) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  const Pipeline* a = probe(rounds, 0);
  const Pipeline* twin = probe(rounds, 1);
  const Pipeline* other = kind == Case::kThenBig ? probe(1024, 3) : probe(0, 2);
  if (!a || !twin || !other) return state.SkipWithError("pipeline");
  const BufferRange bufs[1] = {{c.data.get()}};
  const Push push{groups * kThreads, 1e-3f};
  time_gpu(state, *c.commands, c.timestamps.get(), 64, 0, 0, [&](Commands& cmd, int i) {
    const Pipeline* first = kind == Case::kTwin && (i & 1) ? twin : a;
    cmd.dispatch(*first, bufs, &push, sizeof(push), groups);
    if (kind == Case::kThenSmall || kind == Case::kThenBig) {
      cmd.compute_barrier();
      cmd.dispatch(*other, bufs, &push, sizeof(push), groups);
    }
    return ok_status();
  });
}

void BM_Bindings(benchmark::State& state, uint32_t n, bool use_set, uint32_t groups, uint32_t push_bytes) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  auto pipeline = Pipeline::create(*c.device, {"code_probe", n, push_bytes, {0, 100 + n}});
  if (!pipeline.ok()) return state.SkipWithError(pipeline.status().message().c_str());
  const std::vector<BufferRange> bufs(n, BufferRange{c.data.get()});
  std::unique_ptr<DescriptorPool> pool;
  VkDescriptorSet set = VK_NULL_HANDLE;
  if (use_set) {
    auto made = DescriptorPool::create(*c.device, 1, n);
    if (!made.ok()) return state.SkipWithError(made.status().message().c_str());
    pool = std::move(*made);
    auto s = pool->allocate(**pipeline, bufs);
    if (!s.ok()) return state.SkipWithError(s.status().message().c_str());
    set = *s;
  }
  uint32_t push[kMaxPushWords] = {groups * kThreads, std::bit_cast<uint32_t>(1e-3f)};  // Push, then zeros
  time_gpu(state, *c.commands, c.timestamps.get(), 64, 0, 0, [&](Commands& cmd, int) {
    if (use_set)
      cmd.dispatch(**pipeline, set, push, push_bytes, groups);
    else
      cmd.dispatch(**pipeline, bufs, push, push_bytes, groups);
    return ok_status();
  });
}

// k dispatches of the empty probe with no barrier between them (siblings of one stage, as the
// q/k/v or the delta-net projections are), then the barrier: what each sibling adds a stage.
void BM_Siblings(benchmark::State& state, uint32_t k, uint32_t groups) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  const Pipeline* a = probe(0, 0);
  if (!a) return state.SkipWithError("pipeline");
  const BufferRange bufs[1] = {{c.data.get()}};
  const Push push{groups * kThreads, 1e-3f};
  time_gpu(state, *c.commands, c.timestamps.get(), 64, 0, 0, [&](Commands& cmd, int) {
    for (uint32_t i = 0; i < k; ++i) cmd.dispatch(*a, bufs, &push, sizeof(push), groups);
    return ok_status();
  });
}

int register_all() {
  for (uint32_t groups : {4u, 132u})
    for (uint32_t k : {1u, 2u, 4u, 8u})
      gpu_timed(benchmark::RegisterBenchmark(
          ("code/siblings/k" + std::to_string(k) + "/g" + std::to_string(groups)).c_str(), BM_Siblings, k, groups));
  for (uint32_t groups : {132u, kMaxGroups})
    for (uint32_t n : {1u, 8u, 16u})
      for (bool use_set : {false, true})
        for (uint32_t push_bytes : {uint32_t(sizeof(Push)), 4 * kMaxPushWords})
          gpu_timed(benchmark::RegisterBenchmark(("code/bindings/" + std::string(use_set ? "pool" : "dispatch") +
                                                  std::to_string(n) + "/g" + std::to_string(groups) + "/pc" +
                                                  std::to_string(push_bytes))
                                                     .c_str(),
                                                 BM_Bindings, n, use_set, groups, push_bytes));
  const std::pair<Case, const char*> kCases[] = {
      {Case::kSingle, "single"}, {Case::kTwin, "twin"}, {Case::kThenSmall, "then_small"}, {Case::kThenBig, "then_big"}};
  for (uint32_t groups : {16u, 132u, kMaxGroups})
    for (const auto& [kind, name] : kCases)
      for (uint32_t rounds : {0u, 64u, 256u, 1024u})
        gpu_timed(benchmark::RegisterBenchmark(
            ("code/" + std::string(name) + "/r" + std::to_string(rounds) + "/g" + std::to_string(groups)).c_str(),
            BM_Code, kind, rounds, groups));
  return 0;
}
const int kRegistered = register_all();

}  // namespace
}  // namespace zinc::vulkan
