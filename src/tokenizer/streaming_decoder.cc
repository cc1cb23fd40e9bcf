#include "core/check.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace zinc::tokenizer {

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer) : StreamingDecoder(tokenizer, Options{}) {}

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, Options options)
    : tokenizer_(tokenizer), options_(options) {}

std::string StreamingDecoder::push(int32_t id) {
  const Vocab& vocab = tokenizer_.vocab();
  ZINC_CHECK(vocab.valid_id(id));
  if (id == tokenizer_.bos()) at_start_ = true;
  std::string_view piece = tokenizer_.decode_piece(id, options_.render_special);
  if (!vocab.has_attr(id, kAttrControl | kAttrUnknown) && !piece.empty()) {
    if (at_start_ && options_.strip_leading_space && piece.front() == ' ') piece.remove_prefix(1);
    at_start_ = false;
  }
  pending_ += piece;
  size_t complete = utf8_complete_prefix(pending_);
  if (complete == 0) return {};
  std::string out = sanitize_utf8(std::string_view(pending_).substr(0, complete));
  pending_.erase(0, complete);
  return out;
}

std::string StreamingDecoder::flush() {
  std::string out = sanitize_utf8(pending_);
  pending_.clear();
  at_start_ = true;
  return out;
}

}  // namespace zinc::tokenizer
