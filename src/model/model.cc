#include "model/model.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/check.h"
#include "core/quant.h"
#include "gguf/file.h"
#include "model/architectures.h"
#include "model/resident_bytes.h"

namespace zinc::model {

Model::Model() = default;
Model::~Model() = default;

Result<std::unique_ptr<Model>> Model::load(const std::string& path) {
  auto file = gguf::open_file(path);
  if (!file.ok()) return file.status();
  auto model = from_file(std::move(file).value());
  if (!model.ok()) return model.status().with_context(path);
  (*model)->path_ = path;
  return model;
}

Result<std::unique_ptr<Model>> Model::from_file(std::unique_ptr<gguf::File> file) {
  const std::string arch = file->architecture();
  if (arch.empty()) return error("missing metadata key 'general.architecture'");
  const Family* family = find_family(arch);
  if (!family) {
    std::string list;
    for (auto a : supported_architectures()) list += (list.empty() ? "" : ", ") + std::string(a);
    return error("architecture '%s' is not supported (zinc runs: %s)", arch.c_str(), list.c_str());
  }
  std::unique_ptr<Model> m(new Model());
  m->file_ = std::move(file);
  m->family_ = family;
  ZINC_ASSIGN_OR_RETURN(m->hp_, load_hparams(*m->file_, *family));
  ZINC_RETURN_IF_ERROR(m->bind());
  return m;
}

namespace {

std::string shape_string(const std::array<int64_t, 4>& ne, int n_dims) {
  std::string s = "[";
  for (int i = 0; i < n_dims; ++i) s += (i ? ", " : "") + std::to_string(ne[size_t(i)]);
  return s + "]";
}

}  // namespace

Status Model::bind() {
  const HParams& hp = hp_;
  global_.assign(kNumWeightIds, nullptr);
  layers_.assign(hp.n_layer, std::vector<const graph::Weight*>(kNumWeightIds, nullptr));
  for (const WeightSpec& spec : family_->weights) {
    const bool global = spec.scope == Scope::kGlobal;
    const int first = global ? -1 : 0, last = global ? 0 : int(hp.n_layer);
    for (int il = first; il < last; ++il) {
      if (!scope_applies(spec.scope, hp, il)) continue;
      const std::string name = weight_name(spec, il);
      const gguf::TensorInfo* t = file_->find_tensor(name);
      if (spec.need == Need::kUnsupported) {
        if (t) return error("tensor '%s' is present, and zinc cannot run models that have it yet", name.c_str());
        continue;
      }
      if (!t) {
        if (spec.need == Need::kRequired) return error("missing tensor '%s'", name.c_str());
        continue;
      }
      // Shape: the table's dims, trailing dims 1.
      std::array<int64_t, 4> want{1, 1, 1, 1};
      std::string want_text = "[";
      for (size_t d = 0; d < 3; ++d) {
        if (spec.shape[d] == Dim::kNone) break;
        want[d] = dim_value(spec.shape[d], hp, il);
        want_text += (d ? ", " : "") + std::string(dim_name(spec.shape[d])) + "=" + std::to_string(want[d]);
      }
      want_text += "]";
      if (t->ne != want)
        return error("tensor '%s' has shape %s, expected %s", name.c_str(),
                     shape_string(t->ne, std::max<int>(int(t->n_dims), 1)).c_str(), want_text.c_str());
      if (!can_dequantize(t->type))
        return error("tensor '%s' has type %s, which this build of zinc cannot compute with", name.c_str(),
                     std::string(type_name(t->type)).c_str());
      // A file may align its tensors to as little as 1 byte (general.alignment); the block
      // layouts need 4 (core/quant.h), so such a tensor is copied to aligned memory.
      const uint8_t* data = t->data;
      if (reinterpret_cast<uintptr_t>(data) % 4 != 0) {
        std::vector<AlignedChunk>& copy =
            aligned_copies_.emplace_back((t->size_bytes + sizeof(AlignedChunk) - 1) / sizeof(AlignedChunk));
        std::memcpy(copy.data(), data, t->size_bytes);
        data = reinterpret_cast<const uint8_t*>(copy.data());
      }
      graph::Weight w;
      w.name = name;
      w.type = t->type;
      w.data = data;
      w.ne = t->ne;
      w.row_bytes = t->row_bytes();
      w.slice_bytes = w.row_bytes * size_t(t->ne[1]);
      weight_bytes_ += t->size_bytes;
      if (hp.moe && t->n_dims == 3 && t->ne[2] == int64_t(hp.moe->n_expert))
        decode_bytes_ += t->size_bytes / hp.moe->n_expert * hp.moe->n_expert_used;
      else if (name == "token_embd.weight" && file_->find_tensor("output.weight"))
        decode_bytes_ += t->row_bytes();
      else
        decode_bytes_ += t->size_bytes;
      if (spec.elementwise && t->type != TensorType::F32) {
        std::vector<float>& f = converted_.emplace_back(size_t(t->n_elements()));
        const int64_t rows = t->n_elements() / t->ne[0];
        for (int64_t r = 0; r < rows; ++r)
          dequantize_row(t->type, data + size_t(r) * w.row_bytes, f.data() + r * t->ne[0], t->ne[0]);
        w.type = TensorType::F32;
        w.data = f.data();
        w.row_bytes = size_t(t->ne[0]) * 4;
        w.slice_bytes = w.row_bytes * size_t(t->ne[1]);
      }
      const graph::Weight* bound = &storage_.emplace_back(std::move(w));
      (global ? global_ : layers_[size_t(il)])[size_t(spec.id)] = bound;
    }
  }
  if (!global_[size_t(WeightId::kOutput)]) global_[size_t(WeightId::kOutput)] = global_[size_t(WeightId::kTokenEmbd)];

  kv_index_.assign(hp.n_layer, -1);
  rec_index_.assign(hp.n_layer, -1);
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    if (hp.layer_kind[il] == LayerKind::kAttention) {
      kv_index_[il] = int32_t(state_.kv_layers.size());
      state_.kv_layers.push_back({int32_t(hp.n_head_kv[il]), int32_t(hp.n_head_dim_k), int32_t(hp.n_head_dim_v)});
    } else {
      const DeltaNetParams& dn = *hp.delta_net;
      rec_index_[il] = int32_t(state_.recurrent_layers.size());
      state_.recurrent_layers.push_back(
          {int64_t(dn.conv_kernel - 1) * dn.conv_dim(), int64_t(dn.n_v_heads) * dn.d_v * dn.d_k});
    }
  }
  return ok_status();
}

Status Model::make_weights_resident() const {
  std::lock_guard<std::mutex> lock(resident_mutex_);
  if (!resident_.empty() || path_.empty()) return ok_status();
  // Each file of the model (one, or a split model's parts) copies the range its tensors span.
  std::vector<std::unique_ptr<ResidentBytes>> copies;
  std::vector<std::pair<const uint8_t*, const uint8_t*>> ranges;
  for (uint32_t part = 0; part < file_->n_parts(); ++part) {
    const uint8_t* begin = nullptr;
    const uint8_t* end = nullptr;
    for (const gguf::TensorInfo& t : file_->tensors()) {
      if (t.part != part || t.size_bytes == 0) continue;
      begin = begin ? std::min(begin, t.data) : t.data;
      end = std::max(end, t.data + t.size_bytes);
    }
    if (!begin) continue;
    // From an aligned address, so that the weights keep their alignment in the copy.
    begin = reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(begin) & ~uintptr_t(alignof(AlignedChunk) - 1));
    const uint8_t* file_start = file_->part_bytes(part).data();
    ZINC_ASSIGN_OR_RETURN(auto copy, ResidentBytes::read(file_->part_path(part), uint64_t(begin - file_start), size_t(end - begin)));
    copies.push_back(std::move(copy));
    ranges.emplace_back(begin, end);
  }
  // storage_ is only ever read through const pointers by graphs; the weights are ours to rebind.
  for (const graph::Weight& w : storage_) {
    const auto* p = static_cast<const uint8_t*>(w.data);
    for (size_t i = 0; i < ranges.size(); ++i)
      if (p >= ranges[i].first && p < ranges[i].second) const_cast<graph::Weight&>(w).data = copies[i]->data() + (p - ranges[i].first);
  }
  resident_ = std::move(copies);
  return ok_status();
}

bool Model::weights_resident() const {
  std::lock_guard<std::mutex> lock(resident_mutex_);
  return !resident_.empty();
}

const graph::Weight* Model::weight(WeightId id, int layer) const {
  if (layer < 0) return global_[size_t(id)];
  ZINC_CHECK(size_t(layer) < layers_.size());
  return layers_[size_t(layer)][size_t(id)];
}

const graph::Weight& Model::need(WeightId id, int layer) const {
  const graph::Weight* w = weight(id, layer);
  ZINC_CHECK(w != nullptr);
  return *w;
}

}  // namespace zinc::model
