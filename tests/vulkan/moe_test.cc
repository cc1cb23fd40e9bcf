// moe_route and moe_matvec (gate/up SwiGLU pair, down projection with routing weights) against
// the CPU ops moe_route and moe_matmul on random data: stacked experts of several weight types,
// several tokens, odd expert counts and row counts.
#include <cstring>

#include "cpu_ref.h"
#include "vk_test_util.h"
#include "vulkan/ops/moe_gemm.h"
#include "vulkan/ops/moe_matvec.h"
#include "vulkan/ops/moe_route.h"

namespace zinc::vulkan::test {
namespace {

struct MoeShape {
  TensorType type;
  int64_t embd, ff, n_expert, k, n_tokens;
};

struct CpuMoe {
  std::vector<int32_t> ids;
  std::vector<float> weights, act, out;
};

// x [T, embd], logits [T, n_expert] -> route, gate/up, down on the CPU.
CpuMoe cpu_moe(const MoeShape& s, const Matrix& gate, const Matrix& up, const Matrix& down,
               const std::vector<float>& x, const std::vector<float>& logits) {
  const graph::Weight wg = graph_weight(s.type, gate.bytes.data(), s.embd, s.ff, s.n_expert),
                      wu = graph_weight(s.type, up.bytes.data(), s.embd, s.ff, s.n_expert),
                      wd = graph_weight(s.type, down.bytes.data(), s.ff, s.embd, s.n_expert);
  const int64_t T = s.n_tokens;
  graph::GraphBuilder g({T, T}, {});
  auto bx = g.input("x", s.embd), bl = g.input("logits", s.n_expert);
  auto ids = g.buffer("ids", s.k, T, graph::DType::kI32);
  auto weights = g.buffer("weights", s.k, T);
  auto act = g.buffer("act", s.ff, T * s.k);
  auto out = g.buffer("out", s.embd);
  g.add("route", graph::MoeRoute{bl, ids, weights, int32_t(s.k), true});
  g.add("gate_up", graph::MoeMatmul{bx, ids, {}, act, &wg, &wu});
  g.add("down", graph::MoeMatmul{act, ids, weights, out, &wd, nullptr});
  cpu::ThreadPool pool(2);
  cpu::Executor ex(g.finish(out), pool);
  fill(ex, bx, x);
  fill(ex, bl, logits);
  CpuBatch b;
  for (int64_t t = 0; t < T; ++t) b.add(0, int32_t(t));
  auto cache = kv::Cache::create({}, {0, 1, kv::KvType::kF16});
  ex.run(b.view(), **cache);
  CpuMoe r;
  r.ids.resize(size_t(T * s.k));
  std::memcpy(r.ids.data(), ex.buffer(ids).data(), r.ids.size() * 4);
  r.weights = copy_out(ex, weights);
  r.act = copy_out(ex, act);
  r.out = copy_out(ex, out);
  return r;
}

// Double-precision references from the dequantized weights: act from x, out from a given act
// (the device's, so each stage is checked on its own).
std::vector<float> ref_act(const MoeShape& s, const Matrix& gate, const Matrix& up, const std::vector<float>& x,
                           const std::vector<int32_t>& ids) {
  std::vector<float> act(size_t(s.n_tokens * s.k * s.ff));
  for (int64_t slot = 0; slot < s.n_tokens * s.k; ++slot) {
    const int64_t e = ids[size_t(slot)], t = slot / s.k;
    for (int64_t r = 0; r < s.ff; ++r) {
      double g = 0, u = 0;
      for (int64_t c = 0; c < s.embd; ++c) {
        g += double(gate.values[size_t((e * s.ff + r) * s.embd + c)]) * x[size_t(t * s.embd + c)];
        u += double(up.values[size_t((e * s.ff + r) * s.embd + c)]) * x[size_t(t * s.embd + c)];
      }
      act[size_t(slot * s.ff + r)] = float(g / (1 + std::exp(-g)) * u);
    }
  }
  return act;
}

std::vector<float> ref_out(const MoeShape& s, const Matrix& down, const std::vector<float>& act,
                           const std::vector<int32_t>& ids, const std::vector<float>& weights) {
  std::vector<float> out(size_t(s.n_tokens * s.embd));
  for (int64_t t = 0; t < s.n_tokens; ++t)
    for (int64_t r = 0; r < s.embd; ++r) {
      double o = 0;
      for (int64_t j = 0; j < s.k; ++j) {
        const int64_t slot = t * s.k + j, e = ids[size_t(slot)];
        double d = 0;
        for (int64_t c = 0; c < s.ff; ++c)
          d += double(down.values[size_t((e * s.embd + r) * s.ff + c)]) * act[size_t(slot * s.ff + c)];
        o += weights[size_t(slot)] * d;
      }
      out[size_t(t * s.embd + r)] = float(o);
    }
  return out;
}

// Quantization noise (the CPU quantizes activations for quantized weights, int8 paths do too)
// stays well under this share of the largest output; a wrong expert or row is of its order.
constexpr float kCpuRel = 0.05f;

void check_moe(const MoeShape& s, bool int8) {
  SCOPED_TRACE(testing::Message() << type_name(s.type) << " embd " << s.embd << " ff " << s.ff << " experts "
                                  << s.n_expert << " k " << s.k << " tokens " << s.n_tokens << (int8 ? " int8" : ""));
  const uint32_t T = uint32_t(s.n_tokens), k = uint32_t(s.k), E = uint32_t(s.n_expert);
  const Matrix gate = random_matrix(s.type, s.n_expert * s.ff, s.embd, 11);
  const Matrix up = random_matrix(s.type, s.n_expert * s.ff, s.embd, 12);
  const Matrix down = random_matrix(s.type, s.n_expert * s.embd, s.ff, 13);
  const auto x = random_floats(size_t(T * s.embd), 14), logits = random_floats(size_t(T * E), 15, 2.0f);
  const CpuMoe want = cpu_moe(s, gate, up, down, x, logits);

  auto route = ops::MoeRoute::create(dev());
  ops::MoeMatvecOptions o;
  o.int8 = int8;
  o.swiglu = true;
  auto pair = ops::MoeMatvec::create(dev(), s.type, o);
  o.swiglu = false;
  auto dn = ops::MoeMatvec::create(dev(), s.type, o);
  ASSERT_TRUE(route.ok() && pair.ok() && dn.ok());
  auto wg = upload(gate), wu = upload(up), wd = upload(down);
  auto bx = host_buffer(x), bl = host_buffer(logits);
  auto bids = host_buffer({}, T * k), bw = host_buffer({}, T * k);
  auto bact = host_buffer({}, size_t(T * k * s.ff)), bout = host_buffer({}, size_t(T * s.embd));
  const uint32_t embd = uint32_t(s.embd), ff = uint32_t(s.ff);
  run([&](Commands& c) {
    ASSERT_TRUE((*route)->record(c, {{bl.get()}, E}, {bids.get()}, {bw.get()}, T, E, k, true).ok());
    c.barrier();
    Status st = (*pair)->record_swiglu(c, *wg, *wu, E, {{bx.get()}, embd}, {bids.get()}, {{bact.get()}, ff}, T, k);
    ASSERT_TRUE(st.ok()) << st.message();
    c.barrier();
    st = (*dn)->record_down(c, *wd, E, {{bact.get()}, ff}, {bids.get()}, {bw.get()}, {{bout.get()}, embd}, T, k);
    ASSERT_TRUE(st.ok()) << st.message();
  });
  std::vector<int32_t> ids(T * k);
  std::memcpy(ids.data(), bids->mapped(), ids.size() * 4);
  ASSERT_EQ(ids, want.ids);
  expect_near_all(read_floats(*bw, T * k), want.weights, 1e-6f, "weights");
  const auto act = read_floats(*bact, want.act.size()), out = read_floats(*bout, want.out.size());
  expect_near_all(act, want.act, kCpuRel * max_abs(want.act), "act vs cpu");
  expect_near_all(out, want.out, kCpuRel * max_abs(want.out), "out vs cpu");
  // int8: x rounded to 8 bits per 32 (the float paths show the indexing exact).
  const float rel = int8 && (*pair)->uses_int8() ? 5e-2f : 1e-4f;
  const auto act_ref = ref_act(s, gate, up, x, want.ids);
  expect_near_all(act, act_ref, rel * max_abs(act_ref), "act");
  const auto out_ref = ref_out(s, down, act, want.ids, want.weights);
  expect_near_all(out, out_ref, rel * max_abs(out_ref), "out");

  // Accumulating into y adds to what is there.
  run([&](Commands& c) {
    ASSERT_TRUE(
        (*dn)->record_down(c, *wd, E, {{bact.get()}, ff}, {bids.get()}, {bw.get()}, {{bout.get()}, embd}, T, k, true)
            .ok());
  });
  std::vector<float> twice = out;
  for (float& v : twice) v *= 2;
  expect_near_all(read_floats(*bout, want.out.size()), twice, 1e-5f * max_abs(twice), "accumulated out");

  // Routing inside the gate/up dispatch: the same ids, weights and products.
  auto rids = host_buffer(std::vector<float>(T * k, -1.f)), rw = host_buffer({}, T * k);
  auto ract = host_buffer({}, size_t(T * k * s.ff));
  run([&](Commands& c) {
    const ops::MoeRouting routing{{{bl.get()}, E}, {rw.get()}, true};
    Status st = (*pair)->record_swiglu(c, *wg, *wu, E, {{bx.get()}, embd}, {rids.get()}, {{ract.get()}, ff}, T, k,
                                       &routing);
    ASSERT_TRUE(st.ok()) << st.message();
  });
  std::memcpy(ids.data(), rids->mapped(), ids.size() * 4);
  EXPECT_EQ(ids, want.ids);
  expect_near_all(read_floats(*rw, T * k), want.weights, 1e-6f, "routed weights");
  expect_near_all(read_floats(*ract, want.act.size()), act, 0.f, "routed act");

  // x normalised by the gate/up itself from h * w and partial sums of squares of h (as a
  // NormOut epilogue leaves them), the normalised x written out, the logits scaled by each
  // token's norm factor n (a folded router): logits divided by n route as before.
  const float eps = 1e-5f;
  const uint32_t P = 5;  // partial sums a token, over uneven slices of h
  const auto stream = random_floats(x.size(), 21, 3.0f), nw = random_floats(embd, 22);
  std::vector<float> weighted(x.size()), xn(x.size()), z(logits.size()), partials(T * P, 0.f);
  for (uint32_t t = 0; t < T; ++t) {
    double ss = 0;
    for (uint32_t c = 0; c < embd; ++c) {
      const float h = stream[t * embd + c];
      ss += double(h) * h;
      partials[t * P + (c * c) % P] += h * h;
      weighted[t * embd + c] = h * nw[c];
    }
    const double n = 1 / std::sqrt(ss / embd + eps);
    for (uint32_t c = 0; c < embd; ++c) xn[t * embd + c] = float(weighted[t * embd + c] * n);
    for (uint32_t e = 0; e < E; ++e) z[t * E + e] = float(logits[t * E + e] / n);
  }
  auto bwx = host_buffer(weighted), bp = host_buffer(partials), bz = host_buffer(z);
  auto nids = host_buffer(std::vector<float>(T * k, -1.f)), nrw = host_buffer({}, T * k);
  auto nact = host_buffer({}, size_t(T * k * s.ff)), bxn = host_buffer({}, x.size());
  // The shared expert's gate of the normalised x computed on the way (ops::MoeSharedGate).
  const auto sgw = random_floats(embd, 23, 0.05f);
  auto bsgw = host_buffer(sgw), bgates = host_buffer({}, T);
  run([&](Commands& c) {
    const ops::MoeRouting routing{{{bz.get()}, E}, {nrw.get()}, true};
    const ops::Activations normed{{bxn.get()}, embd};
    const ops::MoeInputNorm norm{{bp.get()}, P, eps, &normed};
    const ops::MoeSharedGate gate{{bsgw.get()}, {bgates.get()}};
    Status st = (*pair)->record_swiglu(c, *wg, *wu, E, {{bwx.get()}, embd}, {nids.get()}, {{nact.get()}, ff}, T, k,
                                       &routing, &norm, &gate);
    ASSERT_TRUE(st.ok()) << st.message();
  });
  std::vector<float> gates_ref(T);
  for (uint32_t t = 0; t < T; ++t) {
    double d = 0;
    for (uint32_t c = 0; c < embd; ++c) d += double(xn[t * embd + c]) * sgw[c];
    gates_ref[t] = float(1 / (1 + std::exp(-d)));
  }
  expect_near_all(read_floats(*bgates, T), gates_ref, 1e-5f, "shared gate of the normalised x");
  std::memcpy(ids.data(), nids->mapped(), ids.size() * 4);
  EXPECT_EQ(ids, want.ids);
  expect_near_all(read_floats(*nrw, T * k), want.weights, 1e-5f, "weights, scaled logits");
  expect_near_all(read_floats(*bxn, xn.size()), xn, 1e-5f * max_abs(xn), "normalised x");
  const auto nact_ref = ref_act(s, gate, up, xn, want.ids);
  expect_near_all(read_floats(*nact, want.act.size()), nact_ref, rel * max_abs(nact_ref), "act of normalised x");

  // The same with the ids ranked already (ops::TopK): only the weights are computed, the ids
  // are left as they are.
  if ((*pair)->takes_ranked_ids()) {
    std::vector<float> given(T * k);
    std::memcpy(given.data(), want.ids.data(), given.size() * 4);
    auto kids = host_buffer(given), krw = host_buffer({}, T * k), kact = host_buffer({}, size_t(T * k * s.ff));
    run([&](Commands& c) {
      ops::MoeRouting routing{{{bz.get()}, E}, {krw.get()}, true};
      routing.ranked = true;
      const ops::MoeInputNorm norm{{bp.get()}, P, eps, nullptr};
      Status st = (*pair)->record_swiglu(c, *wg, *wu, E, {{bwx.get()}, embd}, {kids.get()}, {{kact.get()}, ff}, T, k,
                                         &routing, &norm);
      ASSERT_TRUE(st.ok()) << st.message();
    });
    std::memcpy(ids.data(), kids->mapped(), ids.size() * 4);
    EXPECT_EQ(ids, want.ids);
    expect_near_all(read_floats(*krw, T * k), read_floats(*nrw, T * k), 0.f, "weights of ranked ids");
    expect_near_all(read_floats(*kact, want.act.size()), read_floats(*nact, want.act.size()), 0.f, "act of ranked ids");
  }

  // Fewer lanes per row (more row sets per workgroup, each lane over several groups): the same
  // products to float rounding.
  o.max_lanes = 2;
  o.swiglu = true;
  auto pair2 = ops::MoeMatvec::create(dev(), s.type, o);
  o.swiglu = false;
  auto dn2 = ops::MoeMatvec::create(dev(), s.type, o);
  ASSERT_TRUE(pair2.ok() && dn2.ok());
  auto act2 = host_buffer({}, size_t(T * k * s.ff)), out2 = host_buffer({}, size_t(T * s.embd));
  run([&](Commands& c) {
    Status st = (*pair2)->record_swiglu(c, *wg, *wu, E, {{bx.get()}, embd}, {bids.get()}, {{act2.get()}, ff}, T, k);
    ASSERT_TRUE(st.ok()) << st.message();
    st = (*dn2)->record_down(c, *wd, E, {{bact.get()}, ff}, {bids.get()}, {bw.get()}, {{out2.get()}, embd}, T, k);
    ASSERT_TRUE(st.ok()) << st.message();
  });
  expect_near_all(read_floats(*act2, want.act.size()), act, 1e-5f * max_abs(act), "act with 2 lanes a row");
  expect_near_all(read_floats(*out2, want.out.size()), out, 1e-5f * max_abs(out), "out with 2 lanes a row");

  // The shared expert as one more term of the down projection, gated by sigmoid(gw . h).
  const Matrix ws = random_matrix(s.type, s.embd, s.ff, 17);
  const auto sx = random_floats(size_t(T * s.ff), 18);
  auto wsb = upload(ws);
  auto bsx = host_buffer(sx);
  std::vector<double> shared_out(size_t(T * s.embd));  // ws sx, before the gate
  for (uint32_t t = 0; t < T; ++t)
    for (int64_t r = 0; r < s.embd; ++r) {
      double a = 0;
      for (int64_t c = 0; c < s.ff; ++c) a += double(ws.values[size_t(r * s.ff + c)]) * sx[size_t(t * s.ff + c)];
      shared_out[size_t(t * s.embd + r)] = a;
    }
  // Gate widths of two and of three rounds of the gate's loads (1024 a round), the last partial.
  for (const uint32_t G : {1100u, 2500u}) {
    const auto hv = random_floats(size_t(T * G), 19), gw = random_floats(G, 20, 0.05f);  // a gate away from 0 and 1
    auto bh = host_buffer(hv), bgw = host_buffer(gw);
    run([&](Commands& c) {
      const ops::MoeSharedExpert shared{wsb.get(), {{bsx.get()}, ff}, {{bh.get()}, G}, {bgw.get()}, G};
      Status st = (*dn)->record_down(c, *wd, E, {{bact.get()}, ff}, {bids.get()}, {bw.get()}, {{bout.get()}, embd}, T,
                                     k, false, &shared);
      ASSERT_TRUE(st.ok()) << st.message();
    });
    std::vector<float> with_shared = out_ref;
    for (uint32_t t = 0; t < T; ++t) {
      double d = 0;
      for (uint32_t i = 0; i < G; ++i) d += double(hv[t * G + i]) * gw[i];
      const double gate_v = 1 / (1 + std::exp(-d));
      for (int64_t r = 0; r < s.embd; ++r)
        with_shared[size_t(t * s.embd + r)] += float(gate_v * shared_out[size_t(t * s.embd + r)]);
    }
    expect_near_all(read_floats(*bout, want.out.size()), with_shared, rel * max_abs(with_shared), "out with shared expert");
  }
  // The gate computed by the gate/up dispatch of x (not normalised) and read by the down projection.
  const auto gw = random_floats(embd, 24, 0.05f);
  auto bgw = host_buffer(gw), bg = host_buffer({}, T), gact = host_buffer({}, size_t(T * k * s.ff));
  run([&](Commands& c) {
    const ops::MoeSharedGate gate{{bgw.get()}, {bg.get()}};
    Status st = (*pair)->record_swiglu(c, *wg, *wu, E, {{bx.get()}, embd}, {bids.get()}, {{gact.get()}, ff}, T, k,
                                       nullptr, nullptr, &gate);
    ASSERT_TRUE(st.ok()) << st.message();
    c.barrier();
    const BufferRange values{bg.get()};
    const ops::MoeSharedExpert shared{wsb.get(), {{bsx.get()}, ff}, {{bx.get()}, embd}, {bgw.get()}, embd, &values};
    st = (*dn)->record_down(c, *wd, E, {{bact.get()}, ff}, {bids.get()}, {bw.get()}, {{bout.get()}, embd}, T, k,
                            false, &shared);
    ASSERT_TRUE(st.ok()) << st.message();
  });
  expect_near_all(read_floats(*gact, want.act.size()), act, 0.f, "act beside the shared gate");
  std::vector<float> gate_x(T), with_gate = out_ref;
  for (uint32_t t = 0; t < T; ++t) {
    double d = 0;
    for (uint32_t c = 0; c < embd; ++c) d += double(x[t * embd + c]) * gw[c];
    gate_x[t] = float(1 / (1 + std::exp(-d)));
    for (int64_t r = 0; r < s.embd; ++r)
      with_gate[size_t(t * s.embd + r)] += float(gate_x[t] * shared_out[size_t(t * s.embd + r)]);
  }
  expect_near_all(read_floats(*bg, T), gate_x, 1e-5f, "shared gate of x");
  expect_near_all(read_floats(*bout, want.out.size()), with_gate, rel * max_abs(with_gate), "out with the gate given");
}

// The prefill path: device grouping, expert GEMMs, combine; ids from the device router.
void check_moe_gemm(const MoeShape& s, uint32_t slot_tile, bool coopmat = true) {
  SCOPED_TRACE(testing::Message() << "gemm tile " << slot_tile << " " << type_name(s.type) << " embd " << s.embd << " ff " << s.ff
                                  << " experts " << s.n_expert << " k " << s.k << " tokens " << s.n_tokens);
  const uint32_t T = uint32_t(s.n_tokens), k = uint32_t(s.k), E = uint32_t(s.n_expert);
  const Matrix gate = random_matrix(s.type, s.n_expert * s.ff, s.embd, 21);
  const Matrix up = random_matrix(s.type, s.n_expert * s.ff, s.embd, 22);
  const Matrix down = random_matrix(s.type, s.n_expert * s.embd, s.ff, 23);
  const auto x = random_floats(size_t(T * s.embd), 24), logits = random_floats(size_t(T * E), 25, 2.0f);
  const CpuMoe want = cpu_moe(s, gate, up, down, x, logits);

  auto route = ops::MoeRoute::create(dev());
  auto pair = ops::MoeGemm::create(dev(), s.type, true, slot_tile, coopmat);
  auto dn = ops::MoeGemm::create(dev(), s.type, false, slot_tile, coopmat);
  ASSERT_TRUE(route.ok() && pair.ok() && dn.ok());
  auto wg = upload(gate), wu = upload(up), wd = upload(down);
  auto bx = host_buffer(x), bl = host_buffer(logits);
  auto bids = host_buffer({}, T * k), bw = host_buffer({}, T * k);
  const uint32_t embd = uint32_t(s.embd), ff = uint32_t(s.ff);
  auto bact = host_buffer({}, size_t(T * k * s.ff)), bout = host_buffer({}, size_t(T * s.embd));
  auto border = host_buffer({}, T * k), btiles = host_buffer({}, 4 * ops::MoeGemm::max_tiles(T * k, E));
  auto bexp = host_buffer({}, size_t(T * k * s.embd));
  const ops::MoeScratch scratch{{border.get()}, {btiles.get()}, {{bexp.get()}, embd}};
  run([&](Commands& c) {
    ASSERT_TRUE((*route)->record(c, {{bl.get()}, E}, {bids.get()}, {bw.get()}, T, E, k, true).ok());
    c.barrier();
    ASSERT_TRUE((*pair)->record_group(c, {bids.get()}, E, scratch, T, k).ok());
    c.barrier();
    Status st = (*pair)->record_swiglu(c, *wg, *wu, E, {{bx.get()}, embd}, scratch, {{bact.get()}, ff}, T, k);
    ASSERT_TRUE(st.ok()) << st.message();
    c.barrier();
    st = (*dn)->record_down(c, *wd, E, {{bact.get()}, ff}, {bw.get()}, scratch, {{bout.get()}, embd}, T, k);
    ASSERT_TRUE(st.ok()) << st.message();
  });
  std::vector<int32_t> ids(T * k);
  std::memcpy(ids.data(), bids->mapped(), ids.size() * 4);
  ASSERT_EQ(ids, want.ids);
  const auto act = read_floats(*bact, want.act.size()), out = read_floats(*bout, want.out.size());
  expect_near_all(act, want.act, kCpuRel * max_abs(want.act), "act vs cpu");
  expect_near_all(out, want.out, kCpuRel * max_abs(want.out), "out vs cpu");
  // The cooperative-matrix kernel rounds weights and x to f16 (11 bits).
  const float rel = (*pair)->uses_coopmat() ? 3e-3f : 1e-4f;
  const auto act_ref = ref_act(s, gate, up, x, want.ids);
  expect_near_all(act, act_ref, rel * max_abs(act_ref), "act");
  const auto out_ref = ref_out(s, down, act, want.ids, want.weights);
  expect_near_all(out, out_ref, rel * max_abs(out_ref), "out");
}

TEST(VulkanMoeGemm, GroupedExpertGemmsMatchCpu) {
  ZINC_REQUIRE_VULKAN();
  for (uint32_t tile : {32u, 64u})  // experts with more than one tile
    check_moe_gemm({TensorType::Q4_K, 512, 256, 5, 2, 70}, tile);
  check_moe_gemm({TensorType::Q6_K, 256, 256, 9, 3, 13}, 0);
  check_moe_gemm({TensorType::F32, 72, 40, 7, 3, 21}, 32);   // rows and cols off the tile sizes
  check_moe_gemm({TensorType::F32, 72, 40, 7, 3, 21}, 64);
  check_moe_gemm({TensorType::Q8_0, 160, 96, 130, 8, 3}, 0);  // more experts than slots
}

// The scalar kernel where the cooperative-matrix one is the default (NVIDIA).
TEST(VulkanMoeGemm, ScalarKernel) {
  ZINC_REQUIRE_VULKAN();
  if (!dev().caps().coopmat_nv_f16) GTEST_SKIP() << "the scalar kernel is the default here";
  check_moe_gemm({TensorType::Q4_K, 512, 256, 5, 2, 70}, 32, false);
  check_moe_gemm({TensorType::F32, 72, 40, 7, 3, 21}, 64, false);
}

TEST(VulkanMoeRoute, MatchesCpuOnManyExperts) {
  ZINC_REQUIRE_VULKAN();
  for (uint32_t E : {7u, 128u, 256u, 300u}) {
    const uint32_t T = 9, k = E < 8 ? 3 : 8;
    SCOPED_TRACE(E);
    auto logits = random_floats(size_t(T) * E, E, 3.0f);
    logits[5] = logits[6] = logits[E - 1] = 7.5f;  // a tie: the lower id comes first
    graph::GraphBuilder g({T, T}, {});
    auto bl = g.input("logits", E);
    auto ids = g.buffer("ids", k, T, graph::DType::kI32);
    auto weights = g.buffer("weights", k, T);
    g.add("route", graph::MoeRoute{bl, ids, weights, int32_t(k), E != 300});
    cpu::ThreadPool pool(1);
    cpu::Executor ex(g.finish(weights), pool);
    fill(ex, bl, logits);
    CpuBatch b;
    for (uint32_t t = 0; t < T; ++t) b.add(0, int32_t(t));
    auto cache = kv::Cache::create({}, {0, 1, kv::KvType::kF16});
    ex.run(b.view(), **cache);
    std::vector<int32_t> want_ids(T * k);
    std::memcpy(want_ids.data(), ex.buffer(ids).data(), want_ids.size() * 4);

    auto op = ops::MoeRoute::create(dev());
    ASSERT_TRUE(op.ok());
    const uint32_t stride = (E + 3) / 4 * 4 + 4;
    std::vector<float> strided(size_t(T) * stride, 0.f);
    for (uint32_t t = 0; t < T; ++t) std::copy_n(&logits[t * E], E, &strided[t * stride]);
    auto bl2 = host_buffer(strided), bids = host_buffer({}, T * k), bw = host_buffer({}, T * k);
    run([&](Commands& c) { ASSERT_TRUE((*op)->record(c, {{bl2.get()}, stride}, {bids.get()}, {bw.get()}, T, E, k, E != 300).ok()); });
    std::vector<int32_t> got_ids(T * k);
    std::memcpy(got_ids.data(), bids->mapped(), got_ids.size() * 4);
    EXPECT_EQ(got_ids, want_ids);
    expect_near_all(read_floats(*bw, T * k), copy_out(ex, weights), 1e-6f, "weights");
  }
}

TEST(VulkanMoeMatvec, KQuantsMatchCpu) {
  ZINC_REQUIRE_VULKAN();
  for (TensorType t : {TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K})
    for (bool int8 : {true, false}) check_moe({t, 512, 256, 9, 3, 4}, int8);
  // A Qwen3-30B-A3B-shaped gate/up: a lane a term would take more than kMoeWaveWorkgroups.
  check_moe({TensorType::Q4_K, 2048, 768, 9, 8, 1}, true);
}

TEST(VulkanMoeMatvec, OtherTypesMatchCpu) {
  ZINC_REQUIRE_VULKAN();
  check_moe({TensorType::Q8_0, 160, 96, 7, 2, 3}, true);
  check_moe({TensorType::Q8_0, 160, 96, 7, 2, 3}, false);
  check_moe({TensorType::F16, 160, 96, 5, 2, 2}, false);
  check_moe({TensorType::F32, 64, 32, 5, 4, 3}, false);
  check_moe({TensorType::Q4_0, 1024, 64, 6, 2, 1}, true);
  check_moe({TensorType::Q4_0, 64, 32, 300, 8, 2}, true);  // routing over several rounds of logit loads
}

}  // namespace
}  // namespace zinc::vulkan::test
