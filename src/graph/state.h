// What per-sequence state a model keeps between steps: K/V rows for attention layers and fixed
// recurrent slots (conv + delta-net state) for linear-attention layers. Ops refer to these by
// index (kv_layer, recurrent_layer); kv::Cache allocates exactly this.
#pragma once

#include <cstdint>
#include <vector>

namespace zinc::graph {

struct KvLayerSpec {
  int32_t n_head_kv = 0;
  int32_t head_dim_k = 0;
  int32_t head_dim_v = 0;
  int64_t k_row_elems() const { return int64_t(n_head_kv) * head_dim_k; }
  int64_t v_row_elems() const { return int64_t(n_head_kv) * head_dim_v; }
};

struct RecurrentLayerSpec {
  int64_t conv_floats = 0;  // (kernel - 1) * channels
  int64_t ssm_floats = 0;   // n_v_heads * d_v * d_k
};

struct StateLayout {
  std::vector<KvLayerSpec> kv_layers;
  std::vector<RecurrentLayerSpec> recurrent_layers;
};

}  // namespace zinc::graph
