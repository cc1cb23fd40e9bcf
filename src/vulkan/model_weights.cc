#include "vulkan/model_weights.h"

#include <algorithm>
#include <cstdio>
#include <variant>
#include <vector>

#include "vulkan/router_fold.h"

namespace zinc::vulkan {

Result<std::unique_ptr<ModelWeights>> ModelWeights::create(const Device& device) {
  std::unique_ptr<ModelWeights> w(new ModelWeights(device));
  ZINC_ASSIGN_OR_RETURN(w->uploader_, Uploader::create(device));
  return w;
}

Status ModelWeights::add(const graph::Graph& graph, bool progress) {
  std::vector<const graph::Weight*> mats, vecs;
  auto mat = [&](const graph::Weight* w) {
    if (w && !matrices_.count(w) && std::find(mats.begin(), mats.end(), w) == mats.end()) mats.push_back(w);
  };
  auto vec = [&](const graph::Weight* w) {
    if (w && !vectors_.count(w) && std::find(vecs.begin(), vecs.end(), w) == vecs.end()) vecs.push_back(w);
  };
  for (const graph::Op& op : graph.ops()) {
    if (const auto* e = std::get_if<graph::Embed>(&op.params)) mat(e->table);
    if (const auto* m = std::get_if<graph::Matmul>(&op.params)) {
      mat(m->w);
      mat(m->up);
      vec(m->bias);
    }
    if (const auto* n = std::get_if<graph::RmsNorm>(&op.params)) vec(n->weight);
    if (const auto* n = std::get_if<graph::QkNorm>(&op.params)) vec(n->weight);
    if (const auto* m = std::get_if<graph::MoeMatmul>(&op.params)) {
      mat(m->w);
      mat(m->up);
    }
    if (const auto* g = std::get_if<graph::SharedExpertGate>(&op.params)) vec(g->gate);
    if (const auto* c = std::get_if<graph::SsmConv1d>(&op.params)) vec(c->kernel);
    if (const auto* d = std::get_if<graph::GatedDeltaNet>(&op.params)) {
      vec(d->a);
      vec(d->dt_bias);
    }
    if (const auto* n = std::get_if<graph::GatedRmsNorm>(&op.params)) vec(n->weight);
  }
  // Stacked experts (ne = [cols, rows, n_expert]) become one matrix of n_expert * rows rows.
  auto all_rows = [](const graph::Weight* w) { return w->rows() * w->ne[2]; };
  uint64_t total = 0, done = 0;
  for (const auto* w : mats) total += w->row_bytes * uint64_t(all_rows(w));
  const bool show = progress && total > (256ull << 20);
  int last_percent = -1;
  for (const graph::Weight* w : mats) {
    if (w->ne[3] != 1) return error("weight %s: 4-D matrices are not supported on Vulkan", w->name.c_str());
    const size_t bytes = w->row_bytes * size_t(all_rows(w));
    auto buf = WeightBuffer::upload(device_, *uploader_, w->type, all_rows(w), w->cols(),
                                    {static_cast<const uint8_t*>(w->data), bytes});
    if (!buf.ok()) return error("uploading %s: %s", w->name.c_str(), buf.status().message().c_str());
    if (w->ne[2] > 1 && (*buf)->chunks().size() != 1)
      return error("weight %s: %lld experts of %lld rows (%zu bytes) do not fit one device buffer", w->name.c_str(),
                   (long long)w->ne[2], (long long)w->rows(), bytes);
    size_bytes_ += (*buf)->size_bytes();
    matrices_[w] = std::move(*buf);
    done += bytes;
    const int percent = int(100 * done / std::max<uint64_t>(total, 1));
    if (show && percent != last_percent) {
      std::fprintf(stderr, "\ruploading weights: %3d%% (%llu of %llu MiB)", percent, (unsigned long long)(done >> 20),
                   (unsigned long long)(total >> 20));
      last_percent = percent;
    }
  }
  if (show) std::fprintf(stderr, "\n");
  for (const graph::Weight* w : vecs) {
    if (w->type != TensorType::F32) return error("weight %s: element-wise weights must be float32", w->name.c_str());
    const size_t bytes = size_t(w->n_elements()) * 4;
    ZINC_ASSIGN_OR_RETURN(auto buf, Buffer::create(device_, bytes, MemoryKind::kDeviceLocal));
    ZINC_RETURN_IF_ERROR(uploader_->upload(*buf, 0, {static_cast<const uint8_t*>(w->data), bytes}));
    size_bytes_ += bytes;
    vectors_[w] = std::move(buf);
  }
  return Status();
}

Result<const ModelWeights::FoldedRouter*> ModelWeights::folded_router(const graph::Weight& router,
                                                                      const graph::Weight& norm,
                                                                      const graph::Weight& projection,
                                                                      TensorType input_type) {
  if (const auto it = folded_routers_.find(&router); it != folded_routers_.end()) return &it->second;
  ZINC_ASSIGN_OR_RETURN(const RouterFold f, fold_router(router, norm, projection, input_type));
  FoldedRouter out;
  ZINC_ASSIGN_OR_RETURN(out.stream, WeightBuffer::upload(device_, *uploader_, RouterFold::kStreamType,
                                                         f.n_expert, f.n_embd, f.stream));
  ZINC_ASSIGN_OR_RETURN(out.input, WeightBuffer::upload(device_, *uploader_, f.input_type,
                                                        f.n_expert, f.in_cols, f.input));
  size_bytes_ += out.stream->size_bytes() + out.input->size_bytes();
  return &(folded_routers_[&router] = std::move(out));
}

const WeightBuffer* ModelWeights::matrix(const graph::Weight* w) const {
  auto it = matrices_.find(w);
  return it == matrices_.end() ? nullptr : it->second.get();
}

BufferRange ModelWeights::vector(const graph::Weight* w) const {
  auto it = vectors_.find(w);
  return it == vectors_.end() ? BufferRange{} : BufferRange{it->second.get(), 0, VK_WHOLE_SIZE};
}

}  // namespace zinc::vulkan
