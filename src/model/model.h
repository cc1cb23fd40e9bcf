// A loaded model: the mapped GGUF file, typed hyper-parameters, and every weight bound and
// shape-checked against its family's table. Weights stay in the mapping (element-wise weights of
// a non-float32 type are converted once) unless make_weights_resident() copies them out.
// Immutable and thread-compatible after load, except for that one call.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "graph/graph.h"
#include "model/family.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace zinc::gguf {
class File;
}

namespace zinc::model {

class ResidentBytes;

class Model {
 public:
  // Opens, validates and binds `path`. Errors read "<path>: <what>".
  static Result<std::unique_ptr<Model>> load(const std::string& path);
  static Result<std::unique_ptr<Model>> from_file(std::unique_ptr<gguf::File> file);
  ~Model();

  const HParams& hparams() const { return hp_; }
  const Family& family() const { return *family_; }
  const gguf::File& file() const { return *file_; }

  // The bound weight, or nullptr for an absent optional one. layer < 0: global weights. An absent
  // output.weight is bound to token_embd.weight (tied embeddings).
  const graph::Weight* weight(WeightId id, int layer = -1) const;
  // As weight(), for weights the table guarantees (a missing one is a bug).
  const graph::Weight& need(WeightId id, int layer = -1) const;

  // Which cache slot each executed layer uses: kv_layer for attention layers, recurrent_layer for
  // delta-net layers, -1 otherwise.
  int32_t kv_layer(int layer) const { return kv_index_[size_t(layer)]; }
  int32_t recurrent_layer(int layer) const { return rec_index_[size_t(layer)]; }
  const graph::StateLayout& state_layout() const { return state_; }

  graph::Graph build_graph(graph::BatchShape shape) const { return family_->build(*this, shape); }
  uint64_t weight_bytes() const { return weight_bytes_; }  // bytes of all bound tensors as stored
  // Weight bytes one decode token reads: routed experts count k / n_expert of their tensors and the
  // embedding table one row (unless the output head reuses it).
  uint64_t decode_bytes() const { return decode_bytes_; }

  // Copies the tensor data out of the file mapping into anonymous, huge-page-advised memory and
  // points every weight there (the CPU backend asks: its products then fault and miss the TLB far
  // less; a GPU backend uploads from the mapping and never calls this). Done once; later calls
  // return at once. Weight data pointers change: call it before graphs read them, never while
  // another thread computes with this model. Models made by from_file() keep their weights.
  Status make_weights_resident() const;
  bool weights_resident() const;

 private:
  Model();
  Status bind();

  std::unique_ptr<gguf::File> file_;
  const Family* family_ = nullptr;
  HParams hp_;
  std::deque<graph::Weight> storage_;
  std::vector<std::vector<float>> converted_;  // element-wise weights converted to float32
  struct alignas(32) AlignedChunk {
    uint8_t bytes[32];
  };
  std::vector<std::vector<AlignedChunk>> aligned_copies_;  // tensors the file did not align to 4 bytes
  std::vector<const graph::Weight*> global_;   // [kNumWeightIds]
  std::vector<std::vector<const graph::Weight*>> layers_;  // [n_layer][kNumWeightIds]
  std::vector<int32_t> kv_index_, rec_index_;
  graph::StateLayout state_;
  uint64_t weight_bytes_ = 0;
  uint64_t decode_bytes_ = 0;
  std::string path_;  // the file load() opened; empty for from_file()
  mutable std::mutex resident_mutex_;
  mutable std::vector<std::unique_ptr<ResidentBytes>> resident_;  // one copy per file of the model
};

}  // namespace zinc::model
