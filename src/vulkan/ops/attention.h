// Causal GQA attention (graph::Attention) over the paged device KV pool: a flash-attention
// kernel (tiles of 128 keys, online softmax, up to 8 query heads of one KV head per workgroup)
// split over the keys for few-token batches, the splits merged by the last workgroup or by a
// combine pass; batches of more than 8 tokens
// take a kernel tiled over queries too (up to 32 query vectors of one KV head share each K/V
// tile), or where the device has NV cooperative matrices (f16 caches, head dims multiples of 16)
// its flash-attention-2 form on them (64 query rows per workgroup); optional sigmoid output gate.
// Rows of a batch may belong to different sequences (StepData). No barrier added after.
#pragma once

#include <memory>

#include "vulkan/ops/kv_write.h"

namespace zinc::vulkan::ops {

struct AttentionOptions {
  bool coopmat = true;  // the cooperative-matrix prefill kernel where the device has it
  // Tests only: that kernel with its matrices emulated in scalar code, on any device.
  bool emulate_coopmat = false;
  // The decode kernel times its phases into this buffer (shaders/phase_clock.glsl, 256 bytes a
  // workgroup), for the phase benchmarks. Needs DeviceCaps::shader_clock.
  const Buffer* phase_clock = nullptr;
};

struct AttentionArgs {
  Activations q;
  graph::HeadLayout q_heads;
  const Activations* gate = nullptr;  // optional
  graph::HeadLayout gate_heads;
  Activations out;                    // [n_tokens, n_q_heads * head_dim_v]
  float scale = 1.f;
};

class Attention {
 public:
  static Result<std::unique_ptr<Attention>> create(const Device& device, bool f16,
                                                   const AttentionOptions& options = {});
  ~Attention();
  // Splits of the key range for a batch of n_tokens when keys may reach max_keys: 1 for large
  // batches (enough workgroups already), more for decode.
  static uint32_t splits_for(uint32_t n_tokens, uint32_t max_keys);
  // Floats of partial results record() needs with `n_splits` > 1.
  static uint64_t partial_floats(uint32_t n_tokens, uint32_t n_q_heads, uint32_t head_dim_v, uint32_t n_splits);
  // uint32 counters record() needs for merging splits in the attention kernel.
  static uint64_t counter_words(uint32_t n_tokens, uint32_t n_q_heads) { return uint64_t(n_tokens) * n_q_heads; }
  // With n_splits > 1, `partials` holds partial_floats(...) floats. Given `counters`
  // (counter_words(...) zeros, left zero), the decode kernel's last workgroup per head group
  // merges the splits; otherwise a combine pass follows after a barrier.
  Status record(Commands& cmd, const AttentionArgs& a, const KvLayerBuffers& layer, const StepData& step,
                uint32_t n_tokens, uint32_t n_splits, const BufferRange* partials,
                const BufferRange* counters = nullptr) const;
  // Whether prefill batches with head dims that are multiples of 16 take the cooperative-matrix kernel.
  bool uses_coopmat() const { return coopmat128_ != nullptr; }
  // Shared memory of that kernel built for head dims up to max_dim (128 or 256) and tiles of
  // `keys` keys (64 or 32); it is used where tiles of 32 fit.
  static uint32_t coopmat_shared_bytes(uint32_t max_dim, uint32_t keys);

 private:
  Attention() = default;
  bool f16_ = true;
  const Buffer* phase_clock_ = nullptr;
  uint32_t prefill_rows_ = 16;  // query vectors per workgroup of the prefill kernel (its kMaxR)
  std::unique_ptr<Pipeline> pipeline_, combine_, prefill_;
  std::unique_ptr<Pipeline> decode_;  // shaders/attention_decode.comp, for steps of a few tokens
  std::unique_ptr<Pipeline> decode4_;  // the same for at most 4 query heads per KV head
  // shaders/attention_prefill_coopmat.comp for head dims up to 128 and up to 256.
  std::unique_ptr<Pipeline> coopmat128_, coopmat256_;
};

}  // namespace zinc::vulkan::ops
