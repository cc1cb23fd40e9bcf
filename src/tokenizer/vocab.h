// A tokenizer vocabulary read from GGUF metadata (tokenizer.ggml.*, model-spec §4.1): token
// texts, scores and types, BPE merges, special ids and flags. Owns all its data (the GGUF file
// may be closed afterwards); copyable; read-only and thread-compatible after load().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace zinc::gguf {
class File;
}

namespace zinc::tokenizer {

constexpr int32_t kNoToken = -1;

// tokenizer.ggml.model
enum class VocabKind { kSpm, kBpe, kWordPiece };
const char* vocab_kind_name(VocabKind k);

// Token attributes (bit set); the GGUF token_type maps to exactly one of the first seven, later
// rules add CONTROL, UNUSED, LSTRIP or RSTRIP.
enum TokenAttr : uint16_t {
  kAttrUndefined = 1 << 0,
  kAttrUnknown = 1 << 1,
  kAttrUnused = 1 << 2,
  kAttrNormal = 1 << 3,
  kAttrControl = 1 << 4,
  kAttrUserDefined = 1 << 5,
  kAttrByte = 1 << 6,
  kAttrLstrip = 1 << 7,
  kAttrRstrip = 1 << 8,
};

struct SpecialIds {
  int32_t bos = kNoToken, eos = kNoToken, eot = kNoToken, eom = kNoToken, unk = kNoToken;
  int32_t sep = kNoToken, pad = kNoToken, mask = kNoToken;
  int32_t fim_pre = kNoToken, fim_suf = kNoToken, fim_mid = kNoToken;
  int32_t fim_pad = kNoToken, fim_rep = kNoToken, fim_sep = kNoToken;
};

struct VocabFlags {
  bool add_bos = false;
  bool add_eos = false;
  bool add_sep = false;
  bool add_space_prefix = false;  // SPM: prepend ' ' to the text and after special tokens
  bool ignore_merges = false;     // BPE: a word that is a whole token is emitted as is
  bool clean_spaces = false;      // decode: HF clean_up_tokenization_spaces
  bool lowercase = false;         // WordPiece normalizer
  bool strip_accents = false;     // WordPiece normalizer
};

class Vocab {
 public:
  // Reads tokenizer.ggml.* from `file`. Errors name the key and the numbers.
  static Result<Vocab> load(const gguf::File& file);

  // Builds a vocabulary from parts (tests, tools). `types` uses the GGUF token_type values
  // (empty: all NORMAL); `scores` may be empty; `merges` are "left right" strings.
  static Result<Vocab> from_parts(VocabKind kind, std::string pre, std::vector<std::string> tokens,
                                  std::vector<float> scores, std::vector<int32_t> types,
                                  std::vector<std::string> merges);

  VocabKind kind() const { return kind_; }
  const std::string& model_name() const { return model_name_; }  // tokenizer.ggml.model
  const std::string& pre() const { return pre_; }                // tokenizer.ggml.pre ("" if absent)

  int32_t n_tokens() const { return int32_t(text_offset_.size()) - 1; }
  bool valid_id(int64_t id) const { return id >= 0 && id < n_tokens(); }
  std::string_view text(int32_t id) const {
    return std::string_view(blob_).substr(text_offset_[id], text_offset_[id + 1] - text_offset_[id]);
  }
  float score(int32_t id) const { return scores_.empty() ? 0.0f : scores_[id]; }
  uint16_t attrs(int32_t id) const { return attrs_[id]; }
  bool has_attr(int32_t id, uint16_t mask) const { return (attrs_[id] & mask) != 0; }

  // The id whose text is exactly `text`, or kNoToken.
  int32_t find(std::string_view text) const;

  // BPE merge of two adjacent token ids: its rank (lower merges first) and the merged token.
  struct Merge {
    int32_t rank = -1;
    int32_t result = kNoToken;
  };
  Merge find_merge(int32_t left, int32_t right) const;
  size_t n_merges() const { return n_merges_; }

  const SpecialIds& special() const { return special_; }
  const VocabFlags& flags() const { return flags_; }
  // End of generation: eos, eot, eom, fim pad/rep/sep and tokens with end-of-turn texts.
  bool is_eog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }

 private:
  Vocab() = default;
  Status finish(const gguf::File* file);  // indexes, specials, attributes (after the arrays are read)
  Status build_index();
  Status build_merges(const std::vector<std::string_view>& merges);
  void detect_special_tokens();

  VocabKind kind_ = VocabKind::kSpm;
  std::string model_name_;
  std::string pre_;
  std::string blob_;                   // all token texts, back to back
  std::vector<uint32_t> text_offset_;  // n_tokens + 1 offsets into blob_
  std::vector<float> scores_;
  std::vector<uint16_t> attrs_;
  struct IndexSlot {
    uint32_t tag = 0;        // high bits of the text's hash, to skip most text compares
    int32_t id = kNoToken;   // kNoToken: empty
  };
  std::vector<IndexSlot> index_;  // open addressing: token ids by text hash
  struct MergeSlot {
    uint64_t key = ~uint64_t(0);
    Merge merge;
  };
  std::vector<MergeSlot> merge_slots_;  // open addressing by (left << 32 | right)
  size_t n_merges_ = 0;
  SpecialIds special_;
  VocabFlags flags_;
  std::vector<int32_t> eog_ids_;  // sorted
};

}  // namespace zinc::tokenizer
