#include "engine/runner.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/check.h"

namespace zinc::engine {

Result<Backend> parse_backend(std::string_view name) {
  if (name == "auto") return Backend::kAuto;
  if (name == "cpu") return Backend::kCpu;
  if (name == "vulkan") return Backend::kVulkan;
  return error("unknown backend '%.*s' (expected auto, cpu or vulkan)", int(name.size()), name.data());
}

bool vulkan_supports(const model::Model& model, std::string* why) {
  const model::HParams& hp = model.hparams();
  // Every op the builders emit for these runs on Vulkan (MoE of any of them, too).
  if (hp.arch == "llama" || hp.arch == "qwen2" || hp.arch == "qwen3" || hp.arch == "qwen3moe" || hp.arch == "qwen35" ||
      hp.arch == "qwen35moe")
    return true;
  if (why) *why = "architecture " + hp.arch + " does not run on Vulkan yet";
  return false;
}

Runner::Runner(const model::Model& model, const RunnerOptions& options)
    : model_(model), options_(options), pool_(options.n_threads) {}

Result<std::unique_ptr<Runner>> Runner::create(const model::Model& model, const RunnerOptions& options) {
  if (options.n_ctx <= 0 || options.max_batch <= 0 || options.max_seqs <= 0)
    return error("context (%lld), batch (%lld) and sequence count (%d) must be positive", (long long)options.n_ctx,
                 (long long)options.max_batch, options.max_seqs);
  std::unique_ptr<Runner> r(new Runner(model, options));
  kv::CacheOptions co;
  // Each sequence may waste up to one partly filled page.
  co.n_pages = kv::pages_for(options.n_ctx) + options.max_seqs - 1;
  co.max_seqs = options.max_seqs;
  co.type = options.kv_type;
  ZINC_ASSIGN_OR_RETURN(r->cache_, kv::Cache::create(model.state_layout(), co));

  std::string why;
  const bool supported = vulkan_supports(model, &why);
  if (options.backend == Backend::kVulkan) {
    if (!supported) return error("--backend vulkan: %s (use --backend cpu)", why.c_str());
    ZINC_RETURN_IF_ERROR(r->init_vulkan(options.device));
  } else if (options.backend == Backend::kAuto) {
    // The first discrete or integrated GPU; software devices (lavapipe) only when asked for.
    static const int first_gpu = [] {  // probed once per process
      auto inst = vulkan::Instance::create();
      if (inst.ok())
        for (const auto& d : (*inst)->devices())
          if (d.type == "discrete" || d.type == "integrated") return d.index;
      return -1;
    }();
    const int gpu = options.device >= 0 ? options.device : first_gpu;
    if (gpu >= 0 && supported) {
      if (Status s = r->init_vulkan(gpu); !s.ok())
        std::fprintf(stderr, "zinc: running on the CPU: Vulkan device %d: %s\n", gpu, s.message().c_str());
    } else if (gpu >= 0) {
      std::fprintf(stderr, "zinc: running on the CPU: %s\n", why.c_str());
    }
  }
  // The CPU reads weights faster from anonymous huge pages than through the file mapping; the GPU
  // uploaded its copy from the mapping and needs none.
  if (!r->vk_ && options.resident_weights) ZINC_RETURN_IF_ERROR(model.make_weights_resident());
  return r;
}

Status Runner::init_vulkan(int device_index) {
  auto vk = std::make_unique<VulkanState>();
  ZINC_ASSIGN_OR_RETURN(vk->instance, vulkan::Instance::create());
  if (vk->instance->devices().empty()) return error("no Vulkan device");
  if (device_index < 0) device_index = vk->instance->default_device();
  if (device_index >= int(vk->instance->devices().size()))
    return error("Vulkan device %d does not exist (%zu devices; see zinc devices)", device_index,
                 vk->instance->devices().size());
  ZINC_ASSIGN_OR_RETURN(vk->device, vulkan::Device::create(*vk->instance, device_index));
  // Models of hidden size 2048 or less (two groups a lane and row at most): one group a step in
  // the staged matvecs.
  const uint32_t steps = model_.hparams().n_embd <= 2048 ? 1 : 0;
  ZINC_ASSIGN_OR_RETURN(vk->kernels, vulkan::Kernels::create(*vk->device, cache_->type() == kv::KvType::kF16, steps));
  ZINC_ASSIGN_OR_RETURN(vk->weights, vulkan::ModelWeights::create(*vk->device));
  ZINC_ASSIGN_OR_RETURN(vk->kv, vulkan::KvPool::create(*vk->device, *cache_));
  // Upload every weight now (the one-token graph uses them all).
  const bool progress = options_.verbose || isatty(STDERR_FILENO);
  ZINC_RETURN_IF_ERROR(vk->weights->add(model_.build_graph({1, 1}), progress));
  vk_ = std::move(vk);
  cache_->set_page_copier([kv = vk_->kv.get()](int32_t src, int32_t dst, int32_t n_rows) {
    return kv->copy_rows(src, dst, n_rows);
  });
  return ok_status();
}

std::string Runner::device_name() const {
  if (!vk_) return "cpu";
  return vk_->device->caps().name + " (" + vk_->device->caps().type + ")";
}

Result<vulkan::Executor*> Runner::vk_executor(graph::BatchShape shape) {
  const ShapeKey key{shape.n_tokens, shape.n_outputs, shape.hidden};
  auto& ex = vk_->executors;
  if (auto it = ex.find(key); it != ex.end()) return it->second.get();
  if (ex.size() >= kMaxExecutors) {
    auto victim = ex.begin();
    for (auto it = ex.begin(); it != ex.end(); ++it)
      if (it->second->arena_bytes() > victim->second->arena_bytes()) victim = it;
    if (victim->second.get() == vk_->last) vk_->last = nullptr;
    ex.erase(victim);
  }
  ZINC_ASSIGN_OR_RETURN(auto e, vulkan::Executor::create(*vk_->kernels, *vk_->weights, *vk_->kv,
                                                         model_.build_graph(shape), cache_->max_seqs()));
  vulkan::Executor* p = e.get();
  ex[key] = std::move(e);
  return p;
}

cpu::Executor& Runner::executor(graph::BatchShape shape) {
  const ShapeKey key{shape.n_tokens, shape.n_outputs, shape.hidden};
  if (auto it = executors_.find(key); it != executors_.end()) return *it->second;
  // Bound the memory held by executors of shapes seen once (e.g. the tails of chunked prompts):
  // beyond kMaxExecutors, drop the one with the largest arena.
  if (executors_.size() >= kMaxExecutors) {
    auto victim = executors_.begin();
    for (auto it = executors_.begin(); it != executors_.end(); ++it)
      if (it->second->arena_bytes() > victim->second->arena_bytes()) victim = it;
    executors_.erase(victim);
  }
  auto& slot = executors_[key];
  slot = std::make_unique<cpu::Executor>(model_.build_graph(shape), pool_);
  return *slot;
}

Status Runner::check_batch(const graph::Batch& b) {
  const size_t n = b.tokens.size();
  if (n == 0) return error("empty batch");
  if (b.positions.size() != n || b.seq_ids.size() != n)
    return error("batch has %zu tokens but %zu positions and %zu sequence ids", n, b.positions.size(), b.seq_ids.size());
  if (b.output_rows.empty() || b.output_rows.size() > n) return error("batch asks for %zu output rows of %zu tokens", b.output_rows.size(), n);
  const uint32_t n_vocab = model_.hparams().n_vocab;
  std::vector<int64_t>& next = next_position_;
  next.assign(size_t(cache_->max_seqs()), -1);
  for (size_t i = 0; i < n; ++i) {
    if (b.tokens[i] < 0 || uint32_t(b.tokens[i]) >= n_vocab)
      return error("token %d at index %zu is outside the vocabulary of %u", b.tokens[i], i, n_vocab);
    const kv::SeqId s = b.seq_ids[i];
    if (!cache_->has_sequence(s)) return error("batch index %zu names sequence %d, which does not exist", i, s);
    int64_t& expect = next[size_t(s)];
    if (expect < 0) expect = cache_->length(s);
    if (b.positions[i] != expect)
      return error("sequence %d: token at batch index %zu has position %d, expected %lld (positions continue the "
                   "sequence in order)", s, i, b.positions[i], (long long)expect);
    ++expect;
  }
  for (size_t i = 0; i < b.output_rows.size(); ++i)
    if (b.output_rows[i] < 0 || size_t(b.output_rows[i]) >= n)
      return error("output row %d is outside the batch of %zu tokens", b.output_rows[i], n);
  return ok_status();
}

Status Runner::begin_step(const graph::Batch& batch) {
  ZINC_RETURN_IF_ERROR(check_batch(batch));
  if (int64_t(batch.tokens.size()) > options_.max_batch)
    return error("batch of %zu tokens exceeds the maximum batch of %lld", batch.tokens.size(), (long long)options_.max_batch);
  // Reserve pages for every sequence's new end position.
  for (size_t i = 0; i < batch.tokens.size(); ++i)
    ZINC_RETURN_IF_ERROR(cache_->reserve(batch.seq_ids[i], int64_t(batch.positions[i]) + 1));
  return ok_status();
}

void Runner::end_step(const graph::Batch& batch) {
  for (size_t i = 0; i < batch.tokens.size(); ++i)
    cache_->set_length(batch.seq_ids[i], std::max<int64_t>(cache_->length(batch.seq_ids[i]), batch.positions[i] + 1));
}

Result<std::span<const float>> Runner::decode(const graph::Batch& batch) {
  ZINC_RETURN_IF_ERROR(begin_step(batch));
  if (vk_) {
    ZINC_ASSIGN_OR_RETURN(vulkan::Executor * ex, vk_executor(batch.shape()));
    ZINC_RETURN_IF_ERROR(ex->run(batch, *cache_, vulkan::Readback::kLogits));
    vk_->last = ex;
    end_step(batch);
    return ex->output();
  }
  cpu::Executor& ex = executor(batch.shape());
  ex.run(batch, *cache_);
  end_step(batch);
  return ex.output();
}

Result<int32_t> Runner::decode_greedy(kv::SeqId seq, std::span<const int32_t> tokens) {
  if (!vk_ || int64_t(tokens.size()) > options_.max_batch) {
    ZINC_ASSIGN_OR_RETURN(std::span<const float> logits, decode(seq, tokens, false));
    return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  if (!cache_->has_sequence(seq)) return error("sequence %d does not exist", seq);
  if (tokens.empty()) return error("no tokens to decode");
  const int64_t n = int64_t(tokens.size()), start = cache_->length(seq);
  positions_.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) positions_[size_t(i)] = int32_t(start + i);
  seq_ids_.assign(size_t(n), seq);
  output_rows_.assign(1, int32_t(n - 1));
  const graph::Batch b{tokens, positions_, seq_ids_, output_rows_};
  ZINC_RETURN_IF_ERROR(begin_step(b));
  ZINC_ASSIGN_OR_RETURN(vulkan::Executor * ex, vk_executor(b.shape()));
  ZINC_RETURN_IF_ERROR(ex->run(b, *cache_, vulkan::Readback::kArgmax));
  vk_->last = ex;
  end_step(b);
  return ex->argmax()[0];
}

Result<int> Runner::decode_greedy_chain(kv::SeqId seq, int32_t token, int n, const StepCallback& on_step,
                                        double* gpu_ns) {
  if (n < 0) return error("%d greedy steps", n);
  if (!cache_->has_sequence(seq)) return error("sequence %d does not exist", seq);
  const int64_t start = cache_->length(seq);
  ZINC_RETURN_IF_ERROR(cache_->reserve(seq, start + n));  // all steps fit, or none runs
  if (!vk_) {
    for (int i = 0; i < n; ++i) {
      ZINC_ASSIGN_OR_RETURN(token, decode_greedy(seq, std::span<const int32_t>(&token, 1)));
      if (gpu_ns) *gpu_ns += last_step_gpu_ns();
      if (on_step && !on_step(token)) return i + 1;
    }
    return n;
  }
  if (n == 0) return 0;
  // Per slot: the step's token (read only by step 0), position, sequence and output row.
  int32_t tokens[2] = {token, token}, positions[2] = {0, 0}, seqs[2] = {seq, seq}, rows[2] = {0, 0};
  auto batch = [&](int i) {
    const int s = i % 2;
    positions[s] = int32_t(start + i);
    return graph::Batch{std::span<const int32_t>(&tokens[s], 1), std::span<const int32_t>(&positions[s], 1),
                        std::span<const int32_t>(&seqs[s], 1), std::span<const int32_t>(&rows[s], 1)};
  };
  // The later steps' tokens are not known here: step 0 is checked for all.
  ZINC_RETURN_IF_ERROR(check_batch(batch(0)));
  ZINC_ASSIGN_OR_RETURN(vulkan::Executor * ex, vk_executor(batch(0).shape()));
  vk_->last = ex;
  const int ahead = on_step && !cache_->layout().recurrent_layers.empty() ? 1 : 2;  // steps in flight
  bool in_flight[2] = {false, false};
  auto submit = [&](int i) -> Status {
    ZINC_RETURN_IF_ERROR(ex->submit_chained(batch(i), *cache_, i % 2, i == 0));
    in_flight[i % 2] = true;
    return ok_status();
  };
  Status st = ok_status();
  for (int i = 0; i < ahead && i < n && st.ok(); ++i) st = submit(i);
  int done = 0;
  for (int i = 0; st.ok() && i < n; ++i) {
    const int s = i % 2;
    st = ex->wait_chained(s);
    in_flight[s] = false;
    if (!st.ok()) break;
    const int32_t argmax = ex->chained_argmax(s);
    if (gpu_ns) *gpu_ns += ex->last_step_gpu_ns();
    end_step(batch(i));
    done = i + 1;
    if (on_step && !on_step(argmax)) break;
    if (i + ahead < n) st = submit(i + ahead);
  }
  // A step queued past the end (or an error) runs out before returning; it is not counted, and
  // the sequence's length stays at the last decoded step.
  for (int s = 0; s < 2; ++s)
    if (in_flight[s]) (void)ex->wait_chained(s);
  if (!st.ok()) return st;
  return done;
}

double Runner::last_step_gpu_ns() const { return vk_ && vk_->last ? vk_->last->last_step_gpu_ns() : 0.0; }

namespace {
size_t state_floats(const graph::StateLayout& layout) {
  size_t n = 0;
  for (const auto& r : layout.recurrent_layers) n += size_t(r.conv_floats + r.ssm_floats);
  return n;
}
}  // namespace

Result<std::vector<float>> Runner::save_recurrent_state(kv::SeqId seq) {
  if (!cache_->has_sequence(seq)) return error("sequence %d does not exist", seq);
  const size_t n = state_floats(cache_->layout());
  if (n == 0) return std::vector<float>();
  if (vk_) return vk_->kv->read_state(seq);
  const float* base = cache_->conv_state(0, seq);  // layer 0's conv state opens the slot
  return std::vector<float>(base, base + n);
}

Status Runner::restore_recurrent_state(kv::SeqId seq, std::span<const float> state) {
  if (!cache_->has_sequence(seq)) return error("sequence %d does not exist", seq);
  const size_t n = state_floats(cache_->layout());
  if (state.size() != n) return error("recurrent state of %zu floats; sequence %d's holds %zu", state.size(), seq, n);
  if (n == 0) return ok_status();
  if (vk_) return vk_->kv->write_state(seq, state);
  std::copy(state.begin(), state.end(), cache_->conv_state(0, seq));
  return ok_status();
}

Result<std::vector<vulkan::OpTiming>> Runner::profile_step(kv::SeqId seq, std::span<const int32_t> tokens,
                                                          vulkan::Executor::ProfileMode mode) {
  if (!vk_) return error("profiling needs the Vulkan backend");
  if (!cache_->has_sequence(seq)) return error("sequence %d does not exist", seq);
  const int64_t n = int64_t(tokens.size());
  if (n == 0 || n > options_.max_batch)
    return error("profile step of %lld tokens: 1 to %lld", (long long)n, (long long)options_.max_batch);
  const int32_t start = int32_t(cache_->length(seq));
  positions_.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) positions_[size_t(i)] = start + int32_t(i);
  seq_ids_.assign(size_t(n), seq);
  output_rows_.assign(1, int32_t(n - 1));
  const graph::Batch b{tokens, positions_, seq_ids_, output_rows_};
  ZINC_RETURN_IF_ERROR(begin_step(b));
  ZINC_ASSIGN_OR_RETURN(vulkan::Executor * ex, vk_executor(b.shape()));
  ZINC_ASSIGN_OR_RETURN(auto timings, ex->profile(b, *cache_, mode));
  end_step(b);
  return timings;
}

Result<std::span<const float>> Runner::decode(kv::SeqId seq, std::span<const int32_t> tokens, bool all_logits) {
  if (!cache_->has_sequence(seq)) return error("sequence %d does not exist", seq);
  if (tokens.empty()) return error("no tokens to decode");
  const int64_t n_vocab = model_.hparams().n_vocab;
  const int64_t n = int64_t(tokens.size());
  if (all_logits && n > options_.max_batch) logits_.resize(size_t(n * n_vocab));
  std::span<const float> last;
  for (int64_t begin = 0; begin < n; begin += options_.max_batch) {
    const int64_t count = std::min(options_.max_batch, n - begin);
    const int64_t start = cache_->length(seq);
    positions_.resize(size_t(count));
    seq_ids_.assign(size_t(count), seq);
    for (int64_t i = 0; i < count; ++i) positions_[size_t(i)] = int32_t(start + i);
    if (all_logits) {
      output_rows_.resize(size_t(count));
      for (int64_t i = 0; i < count; ++i) output_rows_[size_t(i)] = int32_t(i);
    } else {
      output_rows_.assign(1, int32_t(count - 1));
    }
    graph::Batch b{tokens.subspan(size_t(begin), size_t(count)), positions_, seq_ids_, output_rows_};
    ZINC_ASSIGN_OR_RETURN(last, decode(b));
    if (all_logits && n > options_.max_batch) std::memcpy(logits_.data() + begin * n_vocab, last.data(), last.size_bytes());
  }
  if (all_logits && n > options_.max_batch) return std::span<const float>(logits_);
  return last;
}

Result<std::vector<float>> Runner::embed(std::span<const int32_t> tokens, Pooling pooling) {
  if (tokens.empty()) return error("no tokens to embed");
  ZINC_ASSIGN_OR_RETURN(kv::SeqId seq, cache_->add_sequence());
  const int64_t n_embd = model_.hparams().n_embd, n = int64_t(tokens.size());
  std::vector<double> sum(static_cast<size_t>(n_embd), 0.0);
  Status status = ok_status();
  for (int64_t begin = 0; begin < n && status.ok(); begin += options_.max_batch) {
    const int64_t count = std::min(options_.max_batch, n - begin);
    positions_.resize(size_t(count));
    seq_ids_.assign(size_t(count), seq);
    for (int64_t i = 0; i < count; ++i) positions_[size_t(i)] = int32_t(begin + i);
    if (pooling == Pooling::kMean) {
      output_rows_.resize(size_t(count));
      for (int64_t i = 0; i < count; ++i) output_rows_[size_t(i)] = int32_t(i);
    } else {
      output_rows_.assign(1, pooling == Pooling::kLast ? int32_t(count - 1) : 0);
    }
    graph::Batch b{tokens.subspan(size_t(begin), size_t(count)), positions_, seq_ids_, output_rows_, /*hidden=*/true};
    auto rows = decode(b);
    if (!rows.ok()) {
      status = rows.status();
      break;
    }
    const bool keep = pooling == Pooling::kMean || (pooling == Pooling::kLast ? begin + count == n : begin == 0);
    if (!keep) continue;
    for (size_t r = 0; r < output_rows_.size(); ++r)
      for (int64_t j = 0; j < n_embd; ++j) sum[size_t(j)] += (*rows)[r * size_t(n_embd) + size_t(j)];
  }
  cache_->remove_sequence(seq);
  ZINC_RETURN_IF_ERROR(status);
  double norm = 0;
  for (double v : sum) norm += v * v;
  norm = std::sqrt(norm);
  std::vector<float> out(static_cast<size_t>(n_embd));
  for (int64_t j = 0; j < n_embd; ++j) out[size_t(j)] = float(norm > 0 ? sum[size_t(j)] / norm : 0.0);
  return out;
}

}  // namespace zinc::engine
