// The floor under a decode matvec: how long one dispatch takes to stream as many bytes as the
// 8B's weight matrices hold (shaders/read_probe.comp), timed with a barrier after each dispatch
// as between the dependent ops of a step, each dispatch reading a region the one before did not
// (together past the last-level cache). Cases: read/<bytes>/t<threads>/g<workgroups>/l<loads in
// flight a thread>/<stride: the grid strides over the region; chunk: a slice a workgroup>.
// Compare with vulkan_ops_bench's matvec cases of the same bytes.
#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <tuple>

#include "vulkan_gpu_timer.h"
#include "vulkan/pipeline.h"

namespace zinc::vulkan {
namespace {

constexpr uint64_t kPoolBytes = 512ull << 20;

struct Context : BenchDevice {
  std::unique_ptr<Buffer> pool, out;
};

Context* context() {
  static Context* c = open_context<Context>([](Context& c) {
    c.pool = c.make_buffer(kPoolBytes);
    c.out = c.make_buffer(1 << 20);
    return c.upload_random(*c.pool, 5).ok();
  });
  return c;
}

struct Push {
  uint32_t base, words, magic;
};

const Pipeline* probe(uint32_t threads, uint32_t loads, bool chunked) {
  static std::map<std::tuple<uint32_t, uint32_t, bool>, std::unique_ptr<Pipeline>> made;
  auto& slot = made[{threads, loads, chunked}];
  if (!slot) {
    auto p = Pipeline::create(*context()->device,
                              {"read_probe", 2, sizeof(Push), {threads, loads, chunked ? 1u : 0u}});
    if (!p.ok()) return nullptr;
    slot = std::move(*p);
  }
  return slot.get();
}

void BM_Read(benchmark::State& state, uint64_t bytes, uint32_t threads, uint32_t groups, uint32_t loads,
             bool chunked) {
  Context& c = *context();
  if (!c.device) return state.SkipWithError("no Vulkan device");
  const Pipeline* p = probe(threads, loads, chunked);
  if (!p) return state.SkipWithError("pipeline");
  const uint32_t words = uint32_t(bytes / 16), regions = uint32_t(kPoolBytes / bytes);
  const BufferRange bufs[2] = {{c.pool.get()}, {c.out.get()}};
  time_gpu(state, *c.commands, c.timestamps.get(), 64, double(bytes), 0, [&](Commands& cmd, int i) {
    const Push push{uint32_t(i % regions) * words, words, 0x9e3779b9u};
    cmd.dispatch(*p, bufs, &push, sizeof(push), groups);
    return ok_status();
  });
}

int register_all() {
  // Q4_K bytes of the 8B's k/v, q/o, down and gate/up products.
  const std::pair<const char*, uint64_t> kSizes[] = {
      {"2.4MB", 2359296}, {"9.4MB", 9437184}, {"33MB", 33030144}, {"66MB", 66060288}};
  for (const auto& [name, bytes] : kSizes)
    for (uint32_t threads : {256u, 512u})
      for (uint32_t groups : {132u, 264u, 528u, 1056u})
        for (uint32_t loads : {1u, 2u, 4u, 8u})
          for (bool chunked : {false, true})
            gpu_timed(benchmark::RegisterBenchmark(
                ("read/" + std::string(name) + "/t" + std::to_string(threads) + "/g" + std::to_string(groups) + "/l" +
                 std::to_string(loads) + (chunked ? "/chunk" : "/stride"))
                    .c_str(),
                BM_Read, bytes, threads, groups, loads, chunked));
  return 0;
}
const int kRegistered = register_all();

}  // namespace
}  // namespace zinc::vulkan
