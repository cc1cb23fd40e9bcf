#include "engine/scheduler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"

namespace zinc::engine {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "error";
}

void Stream::push(Event e) {
  {
    std::lock_guard lock(mu_);
    events_.push_back(std::move(e));
  }
  cv_.notify_all();
}

std::optional<Event> Stream::next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
  Event e = std::move(events_.front());
  events_.pop_front();
  return e;
}

struct Scheduler::Active {
  Request req;
  std::shared_ptr<Stream> stream;
  std::unique_ptr<Sampler> sampler;
  kv::SeqId seq = -1;
  std::vector<int32_t> tokens;  // prompt, then every sampled token; the cache holds a prefix
  int64_t n_prompt = 0, n_cached = 0, n_generated = 0;
  int64_t checkpoint = 0;  // > 0: a snapshot is due when the cache holds this many tokens
  int32_t pending = -1;  // sampled, to be evaluated next step
  bool done = false;
  int64_t task = -1;
  int32_t slot = -1;  // index in slots_ while admitted
};

Scheduler::Scheduler(Runner& runner, const SchedulerOptions& options)
    : runner_(runner),
      options_(options),
      prefixes_(runner.cache(), options.max_cached_prefixes, std::chrono::minutes(30), options.max_prefix_state_bytes) {
  prefixes_.set_state_io({[&runner](kv::SeqId seq) { return runner.save_recurrent_state(seq); },
                          [&runner](kv::SeqId seq, std::span<const float> state) {
                            return runner.restore_recurrent_state(seq, state);
                          }});
  ZINC_CHECK(options_.parallel > 0 && options_.parallel <= runner.cache().max_seqs());
  ZINC_CHECK(options_.prefill_chunk > 0 && options_.n_ctx > 0);
  options_.prefill_chunk = std::min(options_.prefill_chunk, runner.options().max_batch - options_.parallel);
  ZINC_CHECK(options_.prefill_chunk > 0);
  pages_used_ = runner.cache().used_pages();
  slots_.resize(size_t(options_.parallel));
  for (int32_t i = 0; i < options_.parallel; ++i) slots_[size_t(i)].id = i;
  worker_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

std::shared_ptr<Stream> Scheduler::submit(Request request) {
  auto a = std::make_unique<Active>();
  a->stream = std::make_shared<Stream>();
  auto stream = a->stream;
  a->task = next_task_++;
  a->n_prompt = int64_t(request.prompt.size());
  a->req = std::move(request);
  const int64_t n_vocab = runner_.model().hparams().n_vocab;
  std::string err;
  if (a->req.prompt.empty()) err = "the prompt is empty";
  else if (a->n_prompt >= options_.n_ctx)
    err = "the prompt has " + std::to_string(a->n_prompt) + " tokens; the context holds " + std::to_string(options_.n_ctx) +
          " (prompt and completion)";
  for (int32_t t : a->req.prompt)
    if (err.empty() && (t < 0 || t >= n_vocab)) err = "token " + std::to_string(t) + " is outside the vocabulary";
  if (a->req.max_tokens < (a->req.prompt_logprobs >= 0 ? 0 : 1) && err.empty()) err = "max_tokens must be at least 1";
  if (!err.empty()) {
    finish(*a, FinishReason::kError, err);
    return stream;
  }
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(a));
  }
  cv_.notify_all();
  return stream;
}

std::vector<SlotState> Scheduler::slots() const {
  std::lock_guard lock(slots_mu_);
  return slots_;
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats s;
  {
    std::lock_guard lock(mu_);
    s.queue_depth = int64_t(queue_.size());
  }
  s.active = n_active_;
  s.kv_pages_used = pages_used_;
  s.kv_pages_total = runner_.cache().n_pages();
  s.prompt_tokens_cached = cached_total_;
  s.prompt_tokens_computed = computed_total_;
  s.cached_prefixes = n_prefixes_;
  s.steps = steps_;
  return s;
}

void Scheduler::finish(Active& a, FinishReason reason, std::string error) {
  if (a.done) return;
  a.done = true;
  kv::Cache& cache = runner_.cache();
  if (a.seq >= 0) {
    const int64_t n = cache.length(a.seq);
    // Snapshots: only a chat turn's end (its next turn repeats the answer after the history, so
    // the answer is not prefilled again where the template renders it unchanged).
    const bool keep = !prefixes_.snapshots_state()
                          ? reason != FinishReason::kError
                          : (reason == FinishReason::kStop || reason == FinishReason::kLength) &&
                                a.req.checkpoint > 0 && prefixes_.enabled() && n > a.req.checkpoint;
    if (keep) prefixes_.insert(a.seq, std::span<const int32_t>(a.tokens.data(), size_t(n)));
    cache.remove_sequence(a.seq);
    a.seq = -1;
    --n_active_;  // before the event: whoever sees it sees the slot free
    if (a.slot >= 0) {
      std::lock_guard lock(slots_mu_);
      SlotState& slot = slots_[size_t(a.slot)];
      slot = SlotState{};
      slot.id = a.slot;
      a.slot = -1;
    }
    n_prefixes_ = int64_t(prefixes_.size());
    pages_used_ = cache.used_pages();
  }
  Event e;
  e.kind = Event::Kind::kDone;
  e.finish = reason;
  e.error = std::move(error);
  e.prompt_tokens = a.n_prompt;
  e.cached_tokens = a.n_cached;
  e.completion_tokens = a.n_generated;
  a.stream->push(std::move(e));
}

bool Scheduler::admit(std::unique_ptr<Active>& a) {
  if (a->stream->cancelled()) {
    finish(*a, FinishReason::kCancelled);
    return false;
  }
  kv::Cache& cache = runner_.cache();
  auto seq = cache.add_sequence();
  if (!seq.ok()) {
    finish(*a, FinishReason::kError, seq.status().message());
    return false;
  }
  a->seq = *seq;
  ++n_active_;
  {
    std::lock_guard lock(slots_mu_);
    for (SlotState& slot : slots_) {
      if (slot.processing) continue;
      slot.processing = true;
      slot.task = a->task;
      slot.n_prompt = a->n_prompt;
      slot.max_tokens = a->req.max_tokens;
      slot.sampling = a->req.sampling;
      slot.sampling.dry.breakers = nullptr;  // a copy for reading, not for sampling
      slot.sampling.logit_bias.clear();
      a->slot = slot.id;
      break;
    }
  }
  a->tokens = a->req.prompt;
  a->tokens.reserve(size_t(a->n_prompt + a->req.max_tokens));
  // The last token is always computed; a scored prompt, every token.
  a->n_cached = a->req.prompt_logprobs >= 0 ? 0 : prefixes_.adopt(a->seq, a->req.prompt, a->n_prompt - 1);
  cached_total_ += a->n_cached;
  if (prefixes_.snapshots_state()) {
    const int64_t at = a->req.checkpoint < 0 ? a->n_prompt - 1 : std::min(a->req.checkpoint, a->n_prompt - 1);
    if (at > a->n_cached) a->checkpoint = at;
  }
  a->sampler = std::make_unique<Sampler>(a->req.sampling, int32_t(runner_.model().hparams().n_vocab));
  for (int32_t t : a->req.prompt) a->sampler->accept(t);
  if (a->req.prompt_logprobs >= 0) {
    Event e;
    e.kind = Event::Kind::kPrompt;
    e.token = a->req.prompt[0];
    e.scored = false;
    a->stream->push(std::move(e));
  }
  return true;
}

int64_t Scheduler::embedding_size() const { return runner_.model().hparams().n_embd; }

void Scheduler::run_task(std::function<void(Runner*)> task, int64_t pages) {
  {
    std::lock_guard lock(mu_);
    if (!stop_) {
      tasks_.push_back({std::move(task), pages});
      task = nullptr;
    }
  }
  if (task) task(nullptr);
  cv_.notify_all();
}

void Scheduler::loop() {
  for (;;) {
    std::vector<std::unique_ptr<Active>> incoming;
    Task task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty() || !active_.empty() || !tasks_.empty(); });
      if (stop_) break;
      if (!tasks_.empty() && active_.size() < size_t(options_.parallel)) {  // a sequence is free for it
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      while (active_.size() + incoming.size() + (task.run ? 1 : 0) < size_t(options_.parallel) && !queue_.empty()) {
        incoming.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    if (task.run) {
      prefixes_.evict_for(task.pages);
      n_prefixes_ = int64_t(prefixes_.size());
      task.run(&runner_);
    }
    for (auto& a : incoming)
      if (admit(a)) active_.push_back(std::move(a));
    for (auto& a : active_)
      if (a->stream->cancelled()) finish(*a, FinishReason::kCancelled);
    std::erase_if(active_, [](const auto& a) { return a->done; });
    if (active_.empty()) continue;
    if (Status s = step(); !s.ok())
      for (auto& a : active_) finish(*a, FinishReason::kError, s.message());
    std::erase_if(active_, [](const auto& a) { return a->done; });
    pages_used_ = runner_.cache().used_pages();
    std::lock_guard lock(slots_mu_);
    for (const auto& a : active_)
      if (a->slot >= 0) slots_[size_t(a->slot)].n_decoded = a->n_generated;
  }
  for (auto& a : active_) finish(*a, FinishReason::kCancelled);
  active_.clear();
  std::deque<Task> left;
  {
    std::lock_guard lock(mu_);
    for (auto& a : queue_) finish(*a, FinishReason::kCancelled);
    queue_.clear();
    left.swap(tasks_);
  }
  for (auto& t : left) t.run(nullptr);
}

namespace {

void fill_logprobs(std::span<const float> row, int32_t chosen, int32_t n_top, Event& e) {
  float max = row[0];
  for (float x : row) max = std::max(max, x);
  double sum = 0;
  for (float x : row) sum += std::exp(double(x - max));
  const float log_z = max + float(std::log(sum));
  e.logprob = row[size_t(chosen)] - log_z;
  e.rank = 1 + int32_t(std::count_if(row.begin(), row.end(), [&](float x) { return x > row[size_t(chosen)]; }));
  if (n_top <= 0) return;
  std::vector<int32_t> ids(row.size());
  std::iota(ids.begin(), ids.end(), 0);
  const size_t k = std::min(size_t(n_top), ids.size());
  std::partial_sort(ids.begin(), ids.begin() + long(k), ids.end(),
                    [&](int32_t a, int32_t b) { return row[size_t(a)] > row[size_t(b)] || (row[size_t(a)] == row[size_t(b)] && a < b); });
  for (size_t i = 0; i < k; ++i) e.top.push_back({ids[i], row[size_t(ids[i])] - log_z});
}

// The probability the sampling chain gave `chosen` and its n likeliest candidates (ties: lower id first).
void fill_post_sampling(std::span<const Candidate> cands, int32_t chosen, int32_t n, Event& e) {
  for (const Candidate& c : cands)
    if (c.id == chosen) e.prob = c.p;
  std::vector<Candidate> best(std::min(size_t(n), cands.size()));
  std::partial_sort_copy(cands.begin(), cands.end(), best.begin(), best.end(),
                         [](const Candidate& a, const Candidate& b) { return a.p > b.p || (a.p == b.p && a.id < b.id); });
  for (const Candidate& c : best) e.post_top.push_back({c.id, c.p});
}

}  // namespace

Status Scheduler::step() {
  kv::Cache& cache = runner_.cache();
  tokens_.clear();
  positions_.clear();
  seq_ids_.clear();
  output_rows_.clear();
  row_owner_.clear();
  int64_t need_pages = 0;
  auto add = [&](Active& a, std::span<const int32_t> toks, bool output) {
    const int64_t start = cache.length(a.seq);
    for (size_t i = 0; i < toks.size(); ++i) {
      tokens_.push_back(toks[i]);
      positions_.push_back(int32_t(start + int64_t(i)));
      seq_ids_.push_back(a.seq);
    }
    if (output) {
      output_rows_.push_back(int32_t(tokens_.size() - 1));
      row_owner_.push_back({&a, -1});
    }
    need_pages += std::max<int64_t>(0, kv::pages_for(start + int64_t(toks.size())) - int64_t(cache.page_table(a.seq).size()));
  };
  // Every decoding sequence gets its token; prompts share the rest of the step's budget.
  for (auto& a : active_)
    if (a->pending >= 0) add(*a, std::span<const int32_t>(&a->pending, 1), true);
  int64_t budget = options_.prefill_chunk;
  for (auto& a : active_) {
    const int64_t done = cache.length(a->seq);
    if (a->pending >= 0 || done >= a->n_prompt || budget <= 0) continue;
    const bool scored = a->req.prompt_logprobs >= 0;
    int64_t n = std::min(a->checkpoint > done ? a->checkpoint - done : a->n_prompt - done, budget);
    if (scored) n = std::min(n, kScoredChunk);
    budget -= n;
    computed_total_ += n;
    const size_t first_row = tokens_.size();
    const bool last = done + n == a->n_prompt;
    add(*a, std::span<const int32_t>(a->tokens.data() + done, size_t(n)), last && !scored);
    if (scored) {  // each token's row scores the next prompt token; the last one's samples
      for (int64_t i = 0; i < n; ++i) {
        output_rows_.push_back(int32_t(first_row + size_t(i)));
        row_owner_.push_back({a.get(), done + i + 1 < a->n_prompt ? done + i + 1 : -1});
      }
    }
  }
  if (tokens_.empty()) return ok_status();
  if (output_rows_.empty()) {  // only prompt chunks: the runner still produces one row, unused
    output_rows_.push_back(int32_t(tokens_.size() - 1));
    row_owner_.push_back({});
  }
  prefixes_.evict_for(need_pages);
  n_prefixes_ = int64_t(prefixes_.size());
  graph::Batch batch{tokens_, positions_, seq_ids_, output_rows_};
  ZINC_ASSIGN_OR_RETURN(std::span<const float> logits, runner_.decode(batch));
  ++steps_;
  for (auto& a : active_)
    if (a->checkpoint > 0 && cache.length(a->seq) == a->checkpoint) {
      prefixes_.insert(a->seq, std::span<const int32_t>(a->tokens.data(), size_t(a->checkpoint)));
      a->checkpoint = 0;
      n_prefixes_ = int64_t(prefixes_.size());
    }
  pages_used_ = cache.used_pages();
  const size_t n_vocab = size_t(runner_.model().hparams().n_vocab);
  for (size_t r = 0; r < row_owner_.size(); ++r) {
    if (!row_owner_[r].active || row_owner_[r].active->done) continue;
    Active& a = *row_owner_[r].active;
    const std::span<const float> row = logits.subspan(r * n_vocab, n_vocab);
    if (row_owner_[r].scores >= 0) {
      Event e;
      e.kind = Event::Kind::kPrompt;
      e.token = a.tokens[size_t(row_owner_[r].scores)];
      fill_logprobs(row, e.token, a.req.prompt_logprobs, e);
      a.stream->push(std::move(e));
      continue;
    }
    a.pending = -1;
    if (a.req.max_tokens == 0) {  // the prompt scored, nothing to generate
      finish(a, FinishReason::kLength);
      continue;
    }
    std::span<const float> sample_row = row;
    if (a.req.constraint) {
      masked_.assign(row.begin(), row.end());
      a.req.constraint->mask(masked_);
      sample_row = masked_;
    }
    const int32_t t = a.sampler->sample(sample_row);
    if (std::find(a.req.stop_ids.begin(), a.req.stop_ids.end(), t) != a.req.stop_ids.end()) {
      finish(a, FinishReason::kStop);
      continue;
    }
    a.sampler->accept(t);
    if (a.req.constraint) a.req.constraint->accept(t);
    a.tokens.push_back(t);
    ++a.n_generated;
    Event e;
    e.token = t;
    if (a.req.top_logprobs >= 0) fill_logprobs(row, t, a.req.top_logprobs, e);
    if (a.req.post_sampling_probs >= 0) fill_post_sampling(a.sampler->last_candidates(), t, a.req.post_sampling_probs, e);
    a.stream->push(std::move(e));
    if (a.req.constraint && a.req.constraint->finished()) {
      finish(a, FinishReason::kStop);
      continue;
    }
    if (a.n_generated >= a.req.max_tokens || int64_t(a.tokens.size()) >= options_.n_ctx) {
      finish(a, FinishReason::kLength);
      continue;
    }
    a.pending = t;
  }
  return ok_status();
}

}  // namespace zinc::engine
