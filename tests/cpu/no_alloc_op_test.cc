// A decode step allocates nothing in the executor and the ops (buffers and scratch are planned
// once). Counted with a replaced global operator new; matmul (cpu/matmul.*) is left out here
// because its kernels belong to their own tests.
#include <atomic>
#include <cstdlib>
#include <new>

#include "alloc_counter.h"
#include "cpu/ops/ops.h"
#include "op_test_util.h"

// The counter and the replaced operator new serve every test of this binary (alloc_counter.h).
namespace zinc::test {
std::atomic<bool> g_count_allocations{false};
std::atomic<int> g_allocations{0};
}  // namespace zinc::test
using zinc::test::g_allocations;
using zinc::test::g_count_allocations;

// GCC flags free() in a replaced operator delete as mismatched (it is not: new uses malloc).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t n) {
  if (g_count_allocations) g_allocations++;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  if (g_count_allocations) g_allocations++;
  return std::malloc(n ? n : 1);
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace zinc::cpu {
namespace {

TEST(NoAllocation, DecodeStepOfNonMatmulOps) {
  graph::StateLayout st;
  st.kv_layers = {{2, 8, 8}};
  st.recurrent_layers = {{3 * 64, 4 * 8 * 8}};
  const auto w16 = test::random_vector(16, 1), w8 = test::random_vector(8, 2), kern = test::random_vector(64 * 4, 3);
  const auto a = test::random_vector(4, 4), dt = test::random_vector(4, 5);
  const graph::Weight n16 = test::weight(w16, 16), n8 = test::weight(w8, 8), wk = test::weight(kern, 4, 64),
                      wa = test::weight(a, 4), wdt = test::weight(dt, 4);
  graph::GraphBuilder g({1, 1}, st);
  auto x = g.input("x", 16), q = g.input("q", 32), k = g.input("k", 16), v = g.input("v", 16);
  auto m = g.input("m", 64), beta = g.input("beta", 4), alpha = g.input("alpha", 4), logits = g.input("logits", 6);
  auto h = g.buffer("h", 16), att = g.buffer("att", 32), conv = g.buffer("conv", 64), core = g.buffer("core", 32);
  auto ids = g.buffer("ids", 2, 1, graph::DType::kI32), rw = g.buffer("rw", 2);
  g.add("norm", graph::RmsNorm{x, {}, h, &n16, 1e-6f});
  g.add("qn", graph::QkNorm{q, graph::HeadLayout::packed(4, 8), &n8, 1e-6f});
  graph::RopeParams rp;
  rp.mode = graph::RopeMode::kNeox;
  rp.n_rot = 8;
  g.add("rope", graph::Rope{q, graph::HeadLayout::packed(4, 8), rp});
  g.add("kv", graph::KvWrite{k, v, graph::HeadLayout::packed(2, 8), graph::HeadLayout::packed(2, 8), 0});
  graph::Attention at;
  at.q = q;
  at.q_heads = graph::HeadLayout::packed(4, 8);
  at.out = att;
  at.scale = 0.3f;
  g.add("att", at);
  g.add("conv", graph::SsmConv1d{m, conv, &wk, 0});
  graph::GatedDeltaNet dn;
  dn.qkv = conv;
  dn.beta = beta;
  dn.alpha = alpha;
  dn.out = core;
  dn.a = &wa;
  dn.dt_bias = &wdt;
  dn.n_k_heads = 2;
  dn.d_k = 8;
  dn.n_v_heads = 4;
  dn.d_v = 8;
  g.add("gdn", dn);
  g.add("route", graph::MoeRoute{logits, ids, rw, 2, true});
  g.add("add", graph::Add{att, core, att});
  ThreadPool pool(1);
  Executor ex(g.finish(att), pool);
  for (auto id : {x, q, k, v, m, beta, alpha, logits}) test::fill(ex, id, test::random_vector(ex.buffer(id).size(), 9));
  auto cache = kv::Cache::create(st, {4, 1, kv::KvType::kF16});
  const kv::SeqId s = (*cache)->add_sequence().value();
  ASSERT_TRUE((*cache)->reserve(s, 40).ok());
  test::TestBatch b;
  b.add(s, 0);
  ex.run(b.view(), **cache);  // warm-up (first use of the fp16 table)
  for (int32_t pos = 1; pos < 40; ++pos) {
    b.positions[0] = pos;
    g_allocations = 0;
    g_count_allocations = true;
    ex.run(b.view(), **cache);
    g_count_allocations = false;
    EXPECT_EQ(g_allocations.load(), 0) << "position " << pos;
  }
}

}  // namespace
}  // namespace zinc::cpu
