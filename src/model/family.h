// An architecture family: how its hyper-parameters are read, its weight table and its graph
// builder. Variants within a family (biases, QK-norm, MoE) are data, read from the file.
#pragma once

#include <span>
#include <string_view>

#include "core/status.h"
#include "graph/graph.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace zinc::model {

class Model;

struct Family {
  std::string_view arch;             // general.architecture
  graph::RopeMode rope_mode;
  // Reads the keys beyond the generic ones (model-spec 3.0.1) and fills ffn, moe, delta_net and
  // layer_kind; checks the combination.
  Status (*load_arch)(const KeyReader& keys, HParams& hp);
  std::span<const WeightSpec> weights;
  // Emits the forward pass for one batch shape.
  graph::Graph (*build)(const Model& model, graph::BatchShape shape);
};

// The family for `arch`, or nullptr.
const Family* find_family(std::string_view arch);

// Families, defined one per file (llama.cc, qwen35.cc).
extern const Family kLlamaFamily, kQwen2Family, kQwen3Family, kQwen3MoeFamily;
extern const Family kQwen35Family, kQwen35MoeFamily;

}  // namespace zinc::model
