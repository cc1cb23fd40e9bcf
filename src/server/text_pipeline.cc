#include "server/text_pipeline.h"

#include <algorithm>

namespace zinc::server {

TextPipeline::TextPipeline(const tokenizer::Tokenizer& tok, std::vector<std::string> stops, bool split_reasoning,
                           bool starts_in_reasoning)
    : tok_(tok), decoder_(tok), stop_(std::move(stops)) {
  if (split_reasoning) splitter_.emplace(starts_in_reasoning);
}

chat::ReasoningSplitter::Delta TextPipeline::route(const std::string& text) {
  if (splitter_) return splitter_->push(text);
  return {"", text};
}

chat::ReasoningSplitter::Delta TextPipeline::push(int32_t id) {
  if (stop_.stopped() || !tok_.vocab().valid_id(id)) return {};
  ++n_tokens_;
  if (std::find(shown_.begin(), shown_.end(), id) != shown_.end())
    return route(stop_.push(decoder_.flush() + std::string(tok_.decode_piece(id, /*render_special=*/true))));
  return route(stop_.push(decoder_.push(id)));
}

chat::ReasoningSplitter::Delta TextPipeline::finish() {
  std::string rest;
  if (!stop_.stopped()) {
    rest = stop_.push(decoder_.flush());
    if (!stop_.stopped()) rest += stop_.flush();
  }
  auto d = route(rest);
  if (splitter_) {
    auto tail = splitter_->flush();
    d.reasoning += tail.reasoning;
    d.content += tail.content;
  }
  return d;
}

}  // namespace zinc::server
