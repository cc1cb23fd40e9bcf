#include "graph/validate.h"

#include <cstdio>
#include <cstdlib>

#include "graph/graph.h"

namespace zinc::graph {

const char* op_kind_name(const OpParams& p) {
  static constexpr const char* kNames[] = {"embed",      "rms_norm",   "qk_norm",    "matmul",
                                           "rope",       "kv_write",   "attention",  "add",
                                           "moe_route",  "moe_matmul", "shared_expert_gate",
                                           "ssm_conv1d", "gated_delta_net", "gated_rms_norm",
                                           "gather_rows", "argmax"};
  static_assert(std::size(kNames) == std::variant_size_v<OpParams>);
  return kNames[p.index()];
}

namespace {

class Checker {
 public:
  Checker(const Op& op, const std::vector<Buffer>& buffers, const BatchShape& shape, const StateLayout& state)
      : op_(op), buffers_(buffers), shape_(shape), state_(state) {}

  void require(bool ok, const char* what, long long a = 0, long long b = 0) const {
    if (ok) return;
    std::fprintf(stderr, "zinc: internal error: graph op '%s' (%s): %s (%lld vs %lld)\n", op_.name.c_str(),
                 op_kind_name(op_.params), what, a, b);
    std::abort();
  }
  const Buffer& buf(BufferId id, const char* what) const {
    require(id.valid(), what);
    return buffers_[size_t(id.index)];
  }
  const Buffer& f32(BufferId id, const char* what) const {
    const Buffer& b = buf(id, what);
    require(b.dtype == DType::kF32, what);
    return b;
  }
  void heads_fit(const HeadLayout& h, const Buffer& b, const char* what) const {
    require(h.n_heads > 0 && h.head_dim > 0 && h.offset >= 0 && h.head_stride >= h.head_dim, what);
    require(h.span() <= b.cols, what, h.span(), b.cols);
  }
  void weight(const Weight* w, const char* what) const { require(w != nullptr && w->data != nullptr, what); }
  void vec(const Weight* w, int64_t n, const char* what) const {
    weight(w, what);
    require(w->type == TensorType::F32 && w->n_elements() == n, what, w->n_elements(), n);
  }
  void same_rows(const Buffer& a, const Buffer& b, const char* what) const { require(a.rows == b.rows, what, a.rows, b.rows); }
  void tokens(const Buffer& b, const char* what) const { require(b.rows == shape_.n_tokens, what, b.rows, shape_.n_tokens); }
  void kv_layer(int32_t i) const { require(i >= 0 && size_t(i) < state_.kv_layers.size(), "kv layer index", i); }
  void rec_layer(int32_t i) const {
    require(i >= 0 && size_t(i) < state_.recurrent_layers.size(), "recurrent layer index", i);
  }

  void operator()(const Embed& o) const {
    weight(o.table, "table");
    const Buffer& out = f32(o.out, "out");
    tokens(out, "out rows");
    require(out.cols == o.table->cols(), "out cols = n_embd", out.cols, o.table->cols());
  }
  void operator()(const RmsNorm& o) const {
    const Buffer& in = f32(o.in, "in");
    const Buffer& out = f32(o.out, "out");
    same_rows(in, out, "rows");
    require(in.cols == out.cols, "cols", in.cols, out.cols);
    if (o.add.valid()) {
      const Buffer& add = f32(o.add, "add");
      require(add.rows == in.rows && add.cols == in.cols, "add shape", add.cols, in.cols);
    }
    if (o.weight) vec(o.weight, in.cols, "weight [cols]");
  }
  void operator()(const QkNorm& o) const {
    heads_fit(o.heads, f32(o.buf, "buf"), "heads");
    vec(o.weight, o.heads.head_dim, "weight [head_dim]");
  }
  void operator()(const Matmul& o) const {
    weight(o.w, "w");
    const Buffer& in = f32(o.in, "in");
    const Buffer& out = f32(o.out, "out");
    same_rows(in, out, "rows");
    require(o.w->ne[2] == 1 && o.w->ne[3] == 1, "w is a matrix", o.w->ne[2]);
    require(in.cols == o.w->cols(), "in cols = w cols", in.cols, o.w->cols());
    require(out.cols == o.w->rows(), "out cols = w rows", out.cols, o.w->rows());
    if (o.bias) vec(o.bias, o.w->rows(), "bias [rows]");
    if (o.up) {
      weight(o.up, "up");
      require(o.up->ne == o.w->ne, "up shape = w shape", o.up->rows(), o.w->rows());
    }
  }
  void operator()(const Rope& o) const {
    heads_fit(o.heads, f32(o.buf, "buf"), "heads");
    const auto& p = o.params;
    require(p.n_rot > 0 && p.n_rot % 2 == 0 && p.n_rot <= o.heads.head_dim, "n_rot", p.n_rot, o.heads.head_dim);
    if (p.freq_factors) vec(p.freq_factors, p.n_rot / 2, "freq_factors [n_rot/2]");
  }
  void operator()(const KvWrite& o) const {
    kv_layer(o.kv_layer);
    const auto& s = state_.kv_layers[size_t(o.kv_layer)];
    const Buffer& k = f32(o.k, "k");
    const Buffer& v = f32(o.v, "v");
    tokens(k, "k rows");
    tokens(v, "v rows");
    heads_fit(o.k_heads, k, "k heads");
    heads_fit(o.v_heads, v, "v heads");
    require(o.k_heads.n_heads == s.n_head_kv && o.k_heads.head_dim == s.head_dim_k, "k heads = cache",
            o.k_heads.n_heads, s.n_head_kv);
    require(o.v_heads.n_heads == s.n_head_kv && o.v_heads.head_dim == s.head_dim_v, "v heads = cache",
            o.v_heads.n_heads, s.n_head_kv);
  }
  void operator()(const Attention& o) const {
    kv_layer(o.kv_layer);
    const auto& s = state_.kv_layers[size_t(o.kv_layer)];
    const Buffer& q = f32(o.q, "q");
    tokens(q, "q rows");
    heads_fit(o.q_heads, q, "q heads");
    require(o.q_heads.head_dim == s.head_dim_k, "q head_dim = k head_dim", o.q_heads.head_dim, s.head_dim_k);
    require(o.q_heads.n_heads % s.n_head_kv == 0, "q heads multiple of kv heads", o.q_heads.n_heads, s.n_head_kv);
    const Buffer& out = f32(o.out, "out");
    same_rows(q, out, "out rows");
    require(out.cols == int64_t(o.q_heads.n_heads) * s.head_dim_v, "out cols", out.cols,
            int64_t(o.q_heads.n_heads) * s.head_dim_v);
    if (o.gate.valid()) {
      const Buffer& g = f32(o.gate, "gate");
      same_rows(g, q, "gate rows");
      heads_fit(o.gate_heads, g, "gate heads");
      require(o.gate_heads.n_heads == o.q_heads.n_heads && o.gate_heads.head_dim == s.head_dim_v, "gate heads",
              o.gate_heads.head_dim, s.head_dim_v);
    }
  }
  void operator()(const Add& o) const {
    const Buffer& a = f32(o.a, "a");
    const Buffer& b = f32(o.b, "b");
    const Buffer& out = f32(o.out, "out");
    require(a.rows == b.rows && a.cols == b.cols, "a shape = b shape", a.cols, b.cols);
    require(out.rows == a.rows && out.cols == a.cols, "out shape", out.cols, a.cols);
  }
  void operator()(const MoeRoute& o) const {
    const Buffer& l = f32(o.logits, "logits");
    const Buffer& ids = buf(o.ids, "ids");
    const Buffer& w = f32(o.weights, "weights");
    require(ids.dtype == DType::kI32, "ids int32");
    require(o.k > 0 && o.k <= l.cols, "k <= n_expert", o.k, l.cols);
    require(ids.rows == l.rows && ids.cols == o.k, "ids shape", ids.cols, o.k);
    require(w.rows == l.rows && w.cols == o.k, "weights shape", w.cols, o.k);
  }
  void operator()(const MoeMatmul& o) const {
    weight(o.w, "w");
    const Buffer& ids = buf(o.ids, "ids");
    require(ids.dtype == DType::kI32, "ids int32");
    const Buffer& in = f32(o.in, "in");
    const Buffer& out = f32(o.out, "out");
    const int64_t k = ids.cols, T = ids.rows;
    require(out.cols == o.w->rows(), "out cols = w rows", out.cols, o.w->rows());
    require(in.cols == o.w->cols(), "in cols = w cols", in.cols, o.w->cols());
    if (o.up) {
      weight(o.up, "up");
      require(o.up->ne == o.w->ne, "up shape = w shape");
      require(in.rows == T && out.rows == T * k, "gate/up rows", out.rows, T * k);
    } else {
      const Buffer& w = f32(o.weights, "weights");
      require(w.rows == T && w.cols == k, "weights shape", w.cols, k);
      require(in.rows == T * k && out.rows == T, "down rows", in.rows, T * k);
    }
  }
  void operator()(const SharedExpertGate& o) const {
    const Buffer& x = f32(o.x, "x");
    const Buffer& s = f32(o.shared, "shared");
    const Buffer& out = f32(o.out, "out");
    vec(o.gate, x.cols, "gate [cols]");
    require(s.rows == x.rows && out.rows == x.rows && s.cols == out.cols, "shapes", s.cols, out.cols);
  }
  void operator()(const SsmConv1d& o) const {
    rec_layer(o.recurrent_layer);
    const Buffer& in = f32(o.in, "in");
    const Buffer& out = f32(o.out, "out");
    tokens(in, "in rows");
    require(out.rows == in.rows && out.cols == in.cols, "out shape", out.cols, in.cols);
    require(o.kernel && o.kernel->type == TensorType::F32 && o.kernel->rows() == in.cols, "kernel [K, channels]",
            o.kernel ? o.kernel->rows() : 0, in.cols);
    const int64_t need = (o.kernel->cols() - 1) * in.cols;
    require(state_.recurrent_layers[size_t(o.recurrent_layer)].conv_floats == need, "conv state size",
            state_.recurrent_layers[size_t(o.recurrent_layer)].conv_floats, need);
  }
  void operator()(const GatedDeltaNet& o) const {
    rec_layer(o.recurrent_layer);
    require(o.n_k_heads > 0 && o.n_v_heads % o.n_k_heads == 0, "n_v_heads multiple of n_k_heads", o.n_v_heads,
            o.n_k_heads);
    const Buffer& qkv = f32(o.qkv, "qkv");
    tokens(qkv, "qkv rows");
    require(qkv.cols == 2LL * o.n_k_heads * o.d_k + int64_t(o.n_v_heads) * o.d_v, "qkv cols", qkv.cols);
    const Buffer& beta = f32(o.beta, "beta");
    const Buffer& alpha = f32(o.alpha, "alpha");
    require(beta.rows == qkv.rows && beta.cols == o.n_v_heads, "beta shape", beta.cols, o.n_v_heads);
    require(alpha.rows == qkv.rows && alpha.cols == o.n_v_heads, "alpha shape", alpha.cols, o.n_v_heads);
    const Buffer& out = f32(o.out, "out");
    require(out.rows == qkv.rows && out.cols == int64_t(o.n_v_heads) * o.d_v, "out shape", out.cols);
    vec(o.a, o.n_v_heads, "a [n_v]");
    vec(o.dt_bias, o.n_v_heads, "dt_bias [n_v]");
    const int64_t need = int64_t(o.n_v_heads) * o.d_v * o.d_k;
    require(state_.recurrent_layers[size_t(o.recurrent_layer)].ssm_floats == need, "ssm state size",
            state_.recurrent_layers[size_t(o.recurrent_layer)].ssm_floats, need);
  }
  void operator()(const GatedRmsNorm& o) const {
    const Buffer& in = f32(o.in, "in");
    const Buffer& g = f32(o.gate, "gate");
    const Buffer& out = f32(o.out, "out");
    require(o.group > 0 && in.cols % o.group == 0, "group divides cols", in.cols, o.group);
    require(g.rows == in.rows && g.cols == in.cols && out.rows == in.rows && out.cols == in.cols, "shapes");
    vec(o.weight, o.group, "weight [group]");
  }
  void operator()(const GatherRows& o) const {
    const Buffer& in = f32(o.in, "in");
    const Buffer& out = f32(o.out, "out");
    tokens(in, "in rows");
    require(out.rows == shape_.n_outputs && out.cols == in.cols, "out shape", out.rows, shape_.n_outputs);
  }
  void operator()(const Argmax& o) const {
    const Buffer& in = f32(o.in, "in");
    const Buffer& out = buf(o.out, "out");
    require(out.dtype == DType::kI32 && out.rows == in.rows && out.cols == 1, "out int32 [rows, 1]");
  }

 private:
  const Op& op_;
  const std::vector<Buffer>& buffers_;
  const BatchShape& shape_;
  const StateLayout& state_;
};

}  // namespace

void validate_op(const Op& op, const std::vector<Buffer>& buffers, const BatchShape& shape, const StateLayout& state) {
  std::visit(Checker(op, buffers, shape, state), op.params);
}

}  // namespace zinc::graph
