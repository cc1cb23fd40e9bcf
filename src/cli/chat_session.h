// One terminal chat with a model, run on the engine directly: the messages, the chat template
// that turns them into a prompt, and one KV-cache sequence that keeps the conversation, so each
// turn prefills only the tokens its prompt does not share with what the cache already holds.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "chat/conversation.h"
#include "core/status.h"
#include "engine/generate.h"
#include "engine/runner.h"
#include "engine/sampler.h"
#include "engine/speculative.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace zinc::cli {

struct ChatSessionOptions {
  engine::Backend backend = engine::Backend::kAuto;
  int device = -1;            // Vulkan device index (-1: the default choice)
  int n_threads = 0;          // 0: one per hardware thread
  int64_t n_ctx = 4096;       // KV cache size in tokens: the whole conversation must fit
  int32_t n_predict = -1;     // tokens per answer at most (-1: until the context is full)
  engine::SamplerParams sampling;
  bool reuse_cache = true;    // false: every turn prefills the whole conversation (for checks)
  std::string draft_model;    // a draft model for speculative decoding ("" : none)
  engine::DraftOptions draft;
};

struct TurnStats {
  int64_t prompt_tokens = 0;  // the whole rendered conversation
  int64_t cached_tokens = 0;  // of those, already in the KV cache (not prefilled again)
  int64_t generated_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;
  engine::StopReason reason = engine::StopReason::kMaxTokens;
  engine::DraftStats draft;   // with a draft model: its guesses this turn
};

// Receives the answer as it streams: reasoning (inside <think>…</think>) or content.
using ChatOutput = std::function<void(bool reasoning, std::string_view text)>;

class ChatSession {
 public:
  static Result<std::unique_ptr<ChatSession>> create(const std::string& model_path, const ChatSessionOptions& options);

  // Sends one user message and streams the answer; `cancelled` is polled after every token
  // (a cancelled answer is kept as far as it got). On an error the user message is dropped.
  Result<TurnStats> send(const std::string& user_text, const ChatOutput& out, const std::function<bool()>& cancelled);

  // Empty text removes the system prompt; it applies from the next message on.
  void set_system(std::string text) { system_ = std::move(text); }
  const std::string& system() const { return system_; }
  // Forgets the messages (not the system prompt); the cache stays for the prefix they share.
  void reset() { messages_.clear(); }
  // [{role, content[, reasoning_content]}...], the system prompt first when set.
  nlohmann::ordered_json messages() const;
  Status save(const std::string& path) const;

  bool has_model_template() const { return !format_->is_fallback(); }  // false: ChatML is used
  const std::string& model_path() const { return model_path_; }

 private:
  ChatSession() = default;
  struct Message {
    std::string role, content, reasoning;
  };
  std::string model_path_;
  ChatSessionOptions options_;
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::unique_ptr<engine::Runner> runner_;
  std::unique_ptr<engine::Sampler> sampler_;
  kv::SeqId seq_ = 0;
  std::unique_ptr<model::Model> draft_model_;  // with options_.draft_model: guesses ahead on draft_seq_,
  std::unique_ptr<engine::Runner> draft_;      // which holds what seq_ holds
  kv::SeqId draft_seq_ = 0;
  std::vector<int32_t> cached_;  // the tokens sequence seq_ holds, in order
  std::vector<float> saved_state_;  // recurrent models: the state after saved_length_ tokens
  size_t saved_length_ = 0;
  std::vector<int32_t> stop_tokens_;
  std::unique_ptr<chat::ChatFormat> format_;  // borrows tokenizer_
  std::string system_;
  std::vector<Message> messages_;
};

}  // namespace zinc::cli
