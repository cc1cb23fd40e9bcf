// Runs a graph (one BatchShape) on a Vulkan device. At creation it allocates the activation
// arena as the graph planned it, scratch for fused ops and a small host-visible step buffer;
// the whole step is recorded into a command buffer once (per readback mode) and replayed: run()
// writes the per-step data (token ids, positions, sequence ids, page tables, output rows, RoPE
// tables) into the step buffer, submits once and waits; greedy chains (submit_chained) alternate
// two staging slots so that a step can be queued behind the one running. Weights (ModelWeights),
// kernels and the KV pool are borrowed and shared with the model's other executors.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "graph/batch.h"
#include "graph/graph.h"
#include "kv/cache.h"
#include "vulkan/kernels.h"
#include "vulkan/kv_pool.h"
#include "vulkan/model_weights.h"
#include "vulkan/timestamps.h"

namespace zinc::vulkan {

enum class Readback : uint8_t {
  kLogits,  // the output rows, n_outputs x n_vocab floats
  kArgmax,  // only the index of each output row's largest logit
};

struct OpTiming {
  std::string kind;  // graph::op_kind_name
  std::string name;  // the graph op's name ("blk.3.ffn_gate")
  double ns = 0;
};

class Executor {
 public:
  // Uploads the graph's weights not on the device yet (add() of `weights`). max_seqs: sequence
  // ids the page tables cover (kv::Cache::max_seqs()).
  static Result<std::unique_ptr<Executor>> create(Kernels& kernels, ModelWeights& weights, const KvPool& kv,
                                                  graph::Graph graph, int32_t max_seqs);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  const graph::Graph& graph() const { return graph_; }
  size_t arena_bytes() const { return graph_.arena_bytes(); }

  // One step for `batch` (the graph's shape, checked by the caller, pages reserved in `cache`).
  Status run(const graph::Batch& batch, const kv::Cache& cache, Readback readback = Readback::kLogits);
  // After run(kLogits): [n_outputs, n_vocab]. After run(kArgmax): one id per output row.
  std::span<const float> output() const;
  std::span<const int32_t> argmax() const;
  // GPU time of the last run(), from timestamps at the start and end of its recording (0 where the
  // device has no timestamps).
  double last_step_gpu_ns() const;

  // Greedy chains of one-token steps (graph shape of one token and one output): step data for
  // `batch` go into staging slot `slot` (0 or 1), its token too only when token_from_host
  // (otherwise the chained step before put its argmax there), and the slot's recording is
  // submitted without waiting. That recording waits for the work submitted before it, and ends
  // by copying its argmax into the other slot's token, so a step can be queued before the one
  // before it has been read back. wait_chained(slot) waits for the slot's step, after which
  // chained_argmax(slot) is its result and last_step_gpu_ns() its GPU time. A slot must not be
  // submitted again before it was waited for.
  Status submit_chained(const graph::Batch& batch, const kv::Cache& cache, int slot, bool token_from_host);
  Status wait_chained(int slot);
  int32_t chained_argmax(int slot) const;

  // The step again with a timestamp after every op: GPU time per op, in graph order.
  // kOps: a barrier after every op too (each op's own time). kStages: the step's own barriers
  // only, a timestamp after each: GPU time per stage (the ops between two barriers, which run
  // concurrently; kind "stage", name the stage's op names joined by '+', an op listed where it
  // ends); the stages add up to the step's GPU time.
  enum class ProfileMode { kOps, kStages };
  Result<std::vector<OpTiming>> profile(const graph::Batch& batch, const kv::Cache& cache,
                                        ProfileMode mode = ProfileMode::kOps);

  // Tests and graph inputs: copy a float buffer's contents to / from the device.
  Status write_buffer(graph::BufferId id, std::span<const float> data);
  Result<std::vector<float>> read_buffer(graph::BufferId id);

 private:
  Executor(Kernels& k, ModelWeights& w, const KvPool& kv) : kernels_(k), weights_(w), kv_(kv) {}
  Status plan();
  // chain_slot >= 0: the chained recording of that staging slot (submit_chained).
  // With timestamps: the profile recording of `mode`.
  // short_ctx: the recording for short contexts (the AttentionO fusions on).
  Status record(Commands& cmd, Readback readback, TimestampPool* timestamps, int chain_slot = -1,
                ProfileMode mode = ProfileMode::kOps, bool short_ctx = false);
  Status record_op(Commands& cmd, size_t index);
  Status record_matmul(Commands& cmd, size_t index, const graph::Matmul& m);  // executor_matmul.cc
  // MoE and hybrid ops (executor_moe.cc).
  Status record_moe_op(Commands& cmd, size_t index);
  static constexpr uint32_t kMatvecMaxTokens = 8;     // matvec up to here, else GEMM
  static constexpr uint32_t kMoeMatvecMaxTokens = 8;  // moe_matvec up to here, else grouped GEMMs
  // Rope of q, Rope of k and KvWrite of k (k dead afterwards), after the QkNorms of q and k
  // where the graph has them right before: one fused dispatch (executor_fusion.cc plans them).
  struct RopeKvFusion {
    size_t rope_q = 0, kv_write = 0;
    const graph::QkNorm* q_norm = nullptr;
    const graph::QkNorm* k_norm = nullptr;
    size_t n_ops = 3;  // graph ops it stands for, from the first
  };
  std::optional<RopeKvFusion> match_rope_kv(size_t i) const;
  // Decode fusions (executor_fusion.cc): a residual add done by the matvec that produces it, and
  // an RMSNorm whose output only feeds matvecs done by those matvecs on the fly.
  // An RMSNorm feeding other ops too is done by its first consumer, a matvec, which also writes
  // the normalised vector (`out`) for the rest.
  struct DeferredNorm {
    graph::BufferId in;
    const graph::Weight* weight = nullptr;
    float eps = 0.f;
    graph::BufferId out;  // materialised norms only
  };
  static bool references(const graph::Op& op, graph::BufferId id);  // whether op names the buffer
  Status plan_fusions();
  void materialize_norm(size_t n);  // the norm at op n, by its first consumer if that can
  void plan_routing();              // MoeRoute done by the gate/up dispatch right after it
  void plan_shared_experts();       // shared experts folded into the routed down projection
  // Delta-net decode fusions (executor_fusion.cc): an SsmConv1d done as the epilogue of the
  // matvec producing its input, a GatedRmsNorm done by the matvec consuming it.
  void plan_delta_net_fusions();
  // Whether no buffer other than b that is live within ops [from, to] and used at run time
  // shares b's bytes.
  bool unclobbered(graph::BufferId b, int32_t from, int32_t to) const;
  bool untouched(int32_t buffer) const;  // a buffer the fusions leave unused (by index)
  ops::StateSlots state_slots() const;  // the device state and this step's sequence ids
  static std::pair<uint64_t, uint64_t> conv_state_range(int32_t layer);  // for the barrier tracking
  // Likewise for a KV layer: both pools (pool -1), the K pool (0) or the V pool (1).
  static std::pair<uint64_t, uint64_t> kv_range(int32_t layer, int pool = -1);
  bool on_matvec_path(const graph::Matmul& m) const;
  bool fusable_matvec(const graph::Matmul& m) const;  // on the matvec path as one dispatch
  // Whether the ops `writers` (all that reference r before its norm) can add into `stream`.
  bool foldable_writers(std::span<const size_t> writers, graph::BufferId r, graph::BufferId stream) const;
  Status record_rope_kv(Commands& cmd, const RopeKvFusion& f);
  // A RopeKvFusion done in the epilogues of the matvecs producing q (rotated), k (rotated and
  // stored) and v (stored): no dispatch of its own. With QK norms or pairs other than adjacent,
  // the q and k matvecs finish each head in the last workgroup of its rows (per_head).
  struct RopeKvEpilogue {
    const graph::RopeParams* rope = nullptr;  // null: no rotation (v)
    int32_t head_dim = 0;
    int32_t kv_layer = -1;  // the pool stored into; -1: none (q)
    bool v = false;         // the V pool, else the K pool
    bool per_head = false;
    const graph::QkNorm* norm = nullptr;
    int32_t head_stride = 0;    // rows between heads (per_head)
    uint32_t counter_word = 0;  // its per-head counters in head_counters_ (per_head)
  };
  void plan_rope_kv_epilogues();
  // One-token decode: an Attention whose output only the op right after it reads, a matvec
  // adding into the residual stream, runs fused with it (ops::AttentionO) in the recordings for
  // steps whose keys all fit AttentionO::kMaxKeys (short_context); the others record both.
  struct AttentionOPlan {
    size_t o = 0;               // the output projection's op index
    uint32_t counter_word = 0;  // its row blocks' counters in head_counters_
    bool router = false;        // o carries a folded router (router_folds_[o]), done in the same dispatch
  };
  void plan_attention_o();
  Status record_attention_o(Commands& cmd, size_t index, const AttentionOPlan& f);
  bool short_context(const graph::Batch& batch) const;
  // A decode MoE router folded into the projection P before it (vulkan/router_fold.h,
  // executor_router_fold.cc): R s is recorded just before P (op `projection`), M a just after it
  // into the router's logits (adding R s); P also writes the new stream times the norm weight
  // and its partial sums of squares (ops::NormOut), from which the routed gate/up (op `gate_up`)
  // normalises its input, scales the logits and writes the normalised vector where later ops
  // read it; neither the router nor its norm runs.
  struct RouterFoldPlan {
    size_t projection = 0, gate_up = 0;
    const ModelWeights::FoldedRouter* weights = nullptr;
    graph::BufferId stream, normed, logits;  // s (P adds into it), the norm's output, the logits
    const graph::Weight* norm_weight = nullptr;
    float eps = 0.f;
    uint32_t n_partials = 0;  // NormOut's partial sums a token
    // Where the projection is fused with the attention (AttentionOPlan::router): the partial
    // sums it writes in short-context recordings (at least n_partials; 0: not fused).
    uint32_t fused_partials = 0;
    // Bytes into private_: R s, the weighted stream, the partial sums.
    uint64_t stream_logits = 0, weighted = 0, partials = 0;
    bool write_normed = false;
    // M a's dispatch also ranks the experts (ops::TopK, counters from head_counters_ word
    // counter_word) and the gate/up reads the ids: where the kernels allow.
    bool ranked = false;
    graph::BufferId ids;
    uint32_t k = 0, counter_word = 0;
  };
  ops::Activations weighted_stream(const RouterFoldPlan& f) const;
  BufferRange norm_partials(const RouterFoldPlan& f) const;
  uint32_t partial_words(const RouterFoldPlan& f) const;  // the partial sums the recording in progress writes
  std::vector<std::pair<uint64_t, uint64_t>> norm_out_ranges(const RouterFoldPlan& f) const;
  Status plan_router_folds();
  Status record_router_stream(Commands& cmd, const RouterFoldPlan& f);  // R s
  Status record_router_input(Commands& cmd, const RouterFoldPlan& f);   // M a + R s
  // The kernel of a plain (not SwiGLU) matvec over `w`. In a graph with router folds, the
  // NORM_OUT variant (its flag off), as the projections: on the H200 the plain kernel beside the
  // variant cost 3-4 % of a MoE decode step (qwen3-30b-a3b tg128 264 -> 254), for reasons not
  // found; without folds (the dense models) the plain kernel, which is faster there.
  Result<const ops::Matvec*> plain_matvec(const WeightBuffer& w);
  // `cmd`, recorded (with the step timer) on first use.
  Result<Commands*> step_recording(std::unique_ptr<Commands>& cmd, Readback readback, int chain_slot, bool short_ctx);
  Status write_step(const graph::Batch& batch, const kv::Cache& cache, int slot = 0, bool write_tokens = true);
  // Zeroes the device recurrent state of the batch's sequences that start at position 0.
  Status zero_new_states(const graph::Batch& batch);
  ops::Activations act(graph::BufferId id) const;
  // A compute barrier that also ends the tracked reads and writes.
  void barrier(Commands& cmd);
  // Barrier tracking: ranges of a notional address space (arena, scratch, KV layers).
  void access(Commands& cmd, std::span<const std::pair<uint64_t, uint64_t>> reads,
              std::span<const std::pair<uint64_t, uint64_t>> writes);
  std::pair<uint64_t, uint64_t> range_of(graph::BufferId id) const;

  Kernels& kernels_;
  ModelWeights& weights_;
  const KvPool& kv_;
  graph::Graph graph_;
  int32_t max_seqs_ = 1;
  std::unique_ptr<Buffer> arena_, scratch_, partials_, attention_counters_, head_counters_, moe_scratch_, step_host_, step_, logits_, ids_;
  std::unique_ptr<Buffer> argmax_scratch_;  // the sliced argmax of the readback (decode shapes)
  uint64_t moe_tiles_offset_ = 0, moe_expert_out_offset_ = 0;  // bytes into moe_scratch_
  std::unique_ptr<Commands> zero_cmd_;
  std::vector<int32_t> zero_seqs_;
  ops::StepData step_data_;
  uint32_t tokens_word_ = 0, output_rows_word_ = 0;
  struct RopeTable {
    graph::RopeParams params;
    uint32_t word = 0;
  };
  std::vector<RopeTable> rope_tables_;
  uint32_t n_splits_ = 1;
  uint64_t step_words_ = 0, ids_slot_bytes_ = 0;  // one slot of step_host_ / ids_, each holding two
  // Recordings by context class ([1]: short_context) and, for the chained ones, by slot first.
  std::unique_ptr<Commands> logits_cmd_[2], argmax_cmd_[2], profile_cmd_[2], chain_cmd_[2][2];
  int chain_class_[2] = {0, 0};    // the class each chained slot last submitted
  bool profile_short_[2] = {false, false};  // the class profile_cmd_[mode] was recorded for
  std::unique_ptr<TimestampPool> timestamps_[2];  // by ProfileMode
  // Two queries around run()'s recordings, then two around each chained slot's.
  std::unique_ptr<TimestampPool> step_timer_;
  uint32_t last_timer_query_ = 0;
  std::vector<std::string> profile_kinds_[2];  // by ProfileMode: what each timed dispatch group ran
  std::vector<std::string> profile_names_[2];  // and the name of its (first) graph op
  // While a stage profile records: its pool, and the ops recorded since the last barrier.
  TimestampPool* stage_pool_ = nullptr;
  std::string stage_ops_;
  std::vector<std::pair<uint64_t, uint64_t>> pending_reads_, pending_writes_;
  uint32_t n_barriers_ = 0;
  bool recording_short_ = false;  // record() is recording a short-context step (short_context)
  std::map<int32_t, DeferredNorm> deferred_norms_;    // by the index of the norm's output buffer
  std::map<size_t, DeferredNorm> materialized_norms_;  // by the op index of the matvec doing it
  std::map<size_t, size_t> routed_gate_ups_;           // decode MoE gate/up op -> the MoeRoute it does
  // A decode MoE down projection that also does the shared expert's down projection and gate:
  // the shared gate/up matvec (op gate_up) is recorded just before it; ops down, gate skipped.
  // With early_gate the routed gate/up dispatch computes the gate (ops::MoeSharedGate) into
  // private_ at gate_values, and the down projection reads it.
  struct SharedDown {
    size_t gate_up = 0, down = 0, gate = 0;
    bool early_gate = false;
    uint64_t gate_values = 0;
  };
  std::map<size_t, SharedDown> shared_downs_;  // by the routed down projection's op index
  std::map<size_t, size_t> early_gates_;       // routed gate/up op index -> its shared_downs_ key
  void plan_early_gates();
  // Buffers kept outside the arena (in private_): router logits read by the routed gate/up
  // dispatch after their last use in the graph, shared-expert activations computed ahead of
  // their place; the arena may give their bytes to other buffers meanwhile.
  std::map<int32_t, uint64_t> private_offsets_;  // buffer index -> byte offset in private_
  uint64_t private_bytes_ = 0;
  std::unique_ptr<Buffer> private_;
  void make_private(graph::BufferId id);
  uint64_t reserve_private(uint64_t bytes);  // bytes of private_ for a fusion's own data: their offset
  std::pair<uint64_t, uint64_t> private_range(uint64_t offset, uint64_t bytes) const;
  ops::Activations private_act(uint64_t offset, uint64_t bytes, uint32_t stride) const;
  std::map<size_t, graph::BufferId> residual_folds_;  // matmul op index -> the stream it adds into
  std::set<size_t> folded_adds_, skipped_ops_;        // norms whose add is folded; ops not run
  std::map<size_t, size_t> conv_folds_;               // matmul op index -> the SsmConv1d it runs
  std::map<int32_t, size_t> gated_norms_;             // norm output buffer index -> GatedRmsNorm op
  std::map<size_t, RopeKvFusion> rope_kv_;            // by the index of its first op
  std::map<size_t, RopeKvEpilogue> rope_kv_epilogues_;  // by the op index of the matvec doing it
  std::set<size_t> folded_rope_kv_;                    // rope_kv_ keys done by those epilogues
  uint64_t head_counter_words_ = 1;                    // what the per-head epilogues need
  std::map<size_t, RouterFoldPlan> router_folds_;      // by the projection's op index
  std::map<size_t, AttentionOPlan> attention_o_;       // by the attention's op index
  std::set<size_t> attention_o_skips_;                 // their output projections
  uint64_t attention_o_partials_ = 0;                  // bytes into private_ of their partial sums
  std::map<size_t, size_t> folded_gate_ups_;           // gate/up op index -> its router_folds_ key
};

}  // namespace zinc::vulkan
