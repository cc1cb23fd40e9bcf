// Generated ids → the text a client sees: UTF-8-complete pieces (StreamingDecoder), cut at the
// first stop string without leaking part of one (StopMatcher), and for chats split into
// reasoning and content (ReasoningSplitter). One per request.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "chat/conversation.h"
#include "tokenizer/tokenizer.h"

namespace zinc::server {

class TextPipeline {
 public:
  // split_reasoning: chats; starts_in_reasoning: the prompt opened a <think> block.
  TextPipeline(const tokenizer::Tokenizer& tok, std::vector<std::string> stops, bool split_reasoning, bool starts_in_reasoning);
  // A control token whose text the answer shows (a tool-call syntax's markers); others show nothing.
  void show(int32_t id) { shown_.push_back(id); }
  chat::ReasoningSplitter::Delta push(int32_t id);
  chat::ReasoningSplitter::Delta finish();  // end of generation: what was held back
  bool stopped() const { return stop_.stopped(); }
  const std::string& stop_string() const { return stop_.matched(); }  // the one that stopped it
  int64_t n_tokens() const { return n_tokens_; }  // ids pushed before the stop string completed

 private:
  chat::ReasoningSplitter::Delta route(const std::string& text);
  const tokenizer::Tokenizer& tok_;
  tokenizer::StreamingDecoder decoder_;
  chat::StopMatcher stop_;
  std::optional<chat::ReasoningSplitter> splitter_;
  std::vector<int32_t> shown_;
  int64_t n_tokens_ = 0;
};

}  // namespace zinc::server
