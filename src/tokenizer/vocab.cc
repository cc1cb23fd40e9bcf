#include "tokenizer/vocab.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "core/check.h"
#include "gguf/file.h"
#include "tokenizer/pre_tokenizer.h"

namespace zinc::tokenizer {
namespace {

uint64_t hash_bytes(std::string_view s) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (s.size() * 0xFF51AFD7ED558CCDull);
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 29;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, s.data() + i, s.size() - i);
  h = (h ^ tail) * 0xC4CEB9FE1A85EC53ull;
  return h ^ (h >> 32);
}

uint64_t hash_pair(uint64_t key) {
  key *= 0x9E3779B97F4A7C15ull;
  return key ^ (key >> 29);
}

// A power of two with the load factor at most 3/4.
size_t table_size_for(size_t n) {
  size_t size = 16;
  while (size * 3 < n * 4) size <<= 1;
  return size;
}

uint16_t attr_from_type(int64_t type) {
  switch (type) {
    case 1: return kAttrNormal;
    case 2: return kAttrUnknown;
    case 3: return kAttrControl;
    case 4: return kAttrUserDefined;
    case 5: return kAttrUnused;
    case 6: return kAttrByte;
    default: return kAttrUndefined;
  }
}

}  // namespace

const char* vocab_kind_name(VocabKind k) {
  switch (k) {
    case VocabKind::kSpm: return "SentencePiece";
    case VocabKind::kBpe: return "byte-level BPE";
    case VocabKind::kWordPiece: return "WordPiece";
  }
  return "?";
}

int32_t Vocab::find(std::string_view text) const {
  if (index_.empty()) return kNoToken;
  const uint64_t h = hash_bytes(text);
  const uint32_t tag = uint32_t(h >> 32);
  const size_t mask = index_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const IndexSlot& slot = index_[i];
    if (slot.id == kNoToken) return kNoToken;
    if (slot.tag == tag && this->text(slot.id) == text) return slot.id;
  }
}

Vocab::Merge Vocab::find_merge(int32_t left, int32_t right) const {
  if (merge_slots_.empty()) return {};
  uint64_t key = (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
  size_t mask = merge_slots_.size() - 1;
  for (size_t i = hash_pair(key) & mask;; i = (i + 1) & mask) {
    const MergeSlot& s = merge_slots_[i];
    if (s.key == key) return s.merge;
    if (s.merge.rank < 0) return {};
  }
}

bool Vocab::is_eog(int32_t id) const { return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id); }

Status Vocab::build_index() {
  index_.assign(table_size_for(size_t(n_tokens())), IndexSlot{});
  const size_t mask = index_.size() - 1;
  for (int32_t id = 0; id < n_tokens(); ++id) {
    std::string_view t = text(id);
    const uint64_t h = hash_bytes(t);
    const uint32_t tag = uint32_t(h >> 32);
    size_t i = h & mask;
    for (; index_[i].id != kNoToken; i = (i + 1) & mask) {
      if (index_[i].tag == tag && text(index_[i].id) == t)
        return error("duplicate token in vocabulary: '%.*s' has ids %d and %d", int(t.size()), t.data(), index_[i].id, id);
    }
    index_[i] = IndexSlot{tag, id};
  }
  return ok_status();
}

Status Vocab::build_merges(const std::vector<std::string_view>& merges) {
  merge_slots_.assign(table_size_for(merges.size()), MergeSlot{});
  size_t mask = merge_slots_.size() - 1;
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    std::string_view m = merges[rank];
    size_t space = m.find(' ', 1);
    if (space == std::string_view::npos) return error("tokenizer.ggml.merges[%zu] has no space: '%.*s'", rank, int(m.size()), m.data());
    std::string_view left = m.substr(0, space), right = m.substr(space + 1);
    int32_t l = find(left), r = find(right);
    joined.assign(left).append(right);
    int32_t result = find(joined);
    // A merge whose parts or result are not tokens can never apply (tokenizers rejects such files).
    if (l == kNoToken || r == kNoToken || result == kNoToken) continue;
    uint64_t key = (uint64_t(uint32_t(l)) << 32) | uint32_t(r);
    size_t i = hash_pair(key) & mask;
    while (merge_slots_[i].merge.rank >= 0 && merge_slots_[i].key != key) i = (i + 1) & mask;
    if (merge_slots_[i].merge.rank >= 0) continue;  // a repeated pair keeps its first (best) rank
    merge_slots_[i] = MergeSlot{key, Merge{int32_t(rank), result}};
    ++n_merges_;
  }
  return ok_status();
}

Result<Vocab> Vocab::from_parts(VocabKind kind, std::string pre, std::vector<std::string> tokens,
                                std::vector<float> scores, std::vector<int32_t> types,
                                std::vector<std::string> merges) {
  Vocab v;
  v.kind_ = kind;
  v.model_name_ = kind == VocabKind::kSpm ? "llama" : kind == VocabKind::kBpe ? "gpt2" : "bert";
  v.pre_ = std::move(pre);
  if (!scores.empty() && scores.size() != tokens.size()) return error("%zu scores for %zu tokens", scores.size(), tokens.size());
  if (!types.empty() && types.size() != tokens.size()) return error("%zu token types for %zu tokens", types.size(), tokens.size());
  v.text_offset_.push_back(0);
  for (size_t i = 0; i < tokens.size(); ++i) {
    v.blob_ += tokens[i].empty() ? "[EMPTY_" + std::to_string(i) + "]" : tokens[i];
    v.text_offset_.push_back(uint32_t(v.blob_.size()));
    v.attrs_.push_back(types.empty() ? uint16_t(kAttrNormal) : attr_from_type(types[i]));
  }
  v.scores_ = std::move(scores);
  std::vector<std::string_view> merge_views(merges.begin(), merges.end());
  ZINC_RETURN_IF_ERROR(v.build_index());
  if (kind == VocabKind::kBpe) ZINC_RETURN_IF_ERROR(v.build_merges(merge_views));
  ZINC_RETURN_IF_ERROR(v.finish(nullptr));
  return v;
}

Result<Vocab> Vocab::load(const gguf::File& file) {
  Vocab v;
  ZINC_ASSIGN_OR_RETURN(auto model, file.find_string("tokenizer.ggml.model"));
  if (!model) return Status::error("no tokenizer in this file (tokenizer.ggml.model is missing)");
  v.model_name_ = std::string(*model);
  if (*model == "llama") {
    v.kind_ = VocabKind::kSpm;
  } else if (*model == "gpt2") {
    v.kind_ = VocabKind::kBpe;
  } else if (*model == "bert") {
    v.kind_ = VocabKind::kWordPiece;
  } else {
    return error("unsupported tokenizer '%s' (tokenizer.ggml.model); zinc supports llama (SentencePiece), "
                 "gpt2 (byte-level BPE) and bert (WordPiece)", v.model_name_.c_str());
  }
  ZINC_ASSIGN_OR_RETURN(auto pre, file.find_string("tokenizer.ggml.pre"));
  if (pre) v.pre_ = std::string(*pre);

  ZINC_ASSIGN_OR_RETURN(const gguf::ValueView* tokens, file.find_array("tokenizer.ggml.tokens", gguf::ValueType::STRING));
  if (!tokens) return Status::error("tokenizer.ggml.tokens is missing");
  const size_t n = tokens->array_count;
  if (n == 0 || n > size_t(INT32_MAX) - 1) return error("tokenizer.ggml.tokens has %zu tokens", n);

  const gguf::ValueView* scores = file.find("tokenizer.ggml.scores");
  if (scores) {
    if (scores->type != gguf::ValueType::ARRAY ||
        (scores->array_type != gguf::ValueType::FLOAT32 && scores->array_type != gguf::ValueType::INT32))
      return Status::error("tokenizer.ggml.scores must be an array of FLOAT32 or INT32");
    if (scores->array_count < n) return error("tokenizer.ggml.scores has %zu entries for %zu tokens", size_t(scores->array_count), n);
  }
  ZINC_ASSIGN_OR_RETURN(const gguf::ValueView* types, file.find_array("tokenizer.ggml.token_type", gguf::ValueType::INT32));
  if (types && types->array_count < n)
    return error("tokenizer.ggml.token_type has %zu entries for %zu tokens", size_t(types->array_count), n);

  size_t blob_bytes = 0;
  for (size_t i = 0; i < n; ++i) blob_bytes += tokens->array_strings[i].size() + 1;
  if (blob_bytes > UINT32_MAX) return error("tokenizer.ggml.tokens holds %zu bytes of text", blob_bytes);
  v.blob_.reserve(blob_bytes);
  v.text_offset_.reserve(n + 1);
  v.text_offset_.push_back(0);
  v.attrs_.reserve(n);
  if (scores) v.scores_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string_view t = tokens->array_strings[i];
    if (t.empty())
      v.blob_ += "[EMPTY_" + std::to_string(i) + "]";
    else
      v.blob_ += t;
    v.text_offset_.push_back(uint32_t(v.blob_.size()));
    v.attrs_.push_back(types ? attr_from_type(types->array_int(i)) : uint16_t(kAttrNormal));
    if (scores)
      v.scores_.push_back(scores->array_type == gguf::ValueType::FLOAT32 ? float(scores->array_float(i))
                                                                        : float(scores->array_int(i)));
  }
  ZINC_RETURN_IF_ERROR(v.build_index());

  if (v.kind_ == VocabKind::kBpe) {
    ZINC_ASSIGN_OR_RETURN(const gguf::ValueView* merges, file.find_array("tokenizer.ggml.merges", gguf::ValueType::STRING));
    if (!merges) return Status::error("tokenizer.ggml.merges is missing (needed by the gpt2 tokenizer)");
    ZINC_RETURN_IF_ERROR(v.build_merges(merges->array_strings));
  }
  ZINC_RETURN_IF_ERROR(v.finish(&file));
  return v;
}

// Defaults by family, then the per-key overrides, then llama.cpp's text-based special-token rules.
Status Vocab::finish(const gguf::File* file) {
  SpecialIds& s = special_;
  switch (kind_) {
    case VocabKind::kSpm:
      s.bos = 1, s.eos = 2, s.unk = 0;
      flags_.add_bos = true, flags_.add_space_prefix = true;
      break;
    case VocabKind::kBpe: {
      s.bos = 11, s.eos = 11;
      const PreTokenizerSpec* spec = find_pre_tokenizer(pre_);
      if (!spec) return error("unknown pre-tokenizer '%s' (tokenizer.ggml.pre)", pre_.c_str());
      flags_.add_bos = spec->add_bos;
      flags_.ignore_merges = spec->ignore_merges;
      flags_.clean_spaces = spec->clean_spaces;
      break;
    }
    case VocabKind::kWordPiece:
      s.bos = 101, s.unk = 100, s.sep = 102, s.pad = 0, s.mask = 103;
      flags_.add_bos = true, flags_.add_sep = true, flags_.clean_spaces = true, flags_.lowercase = true;
      break;
  }
  int32_t* const ids[] = {&s.bos, &s.eos, &s.eot, &s.eom, &s.unk, &s.sep, &s.pad, &s.mask,
                          &s.fim_pre, &s.fim_suf, &s.fim_mid, &s.fim_pad, &s.fim_rep, &s.fim_sep};
  for (int32_t* id : ids)
    if (!valid_id(*id)) *id = kNoToken;  // a default outside this vocabulary
  std::string general_name, architecture;
  if (file) {
    const std::pair<const char*, int32_t*> keys[] = {
        {"tokenizer.ggml.bos_token_id", &s.bos},         {"tokenizer.ggml.eos_token_id", &s.eos},
        {"tokenizer.ggml.eot_token_id", &s.eot},         {"tokenizer.ggml.eom_token_id", &s.eom},
        {"tokenizer.ggml.unknown_token_id", &s.unk},     {"tokenizer.ggml.seperator_token_id", &s.sep},
        {"tokenizer.ggml.padding_token_id", &s.pad},     {"tokenizer.ggml.mask_token_id", &s.mask},
        {"tokenizer.ggml.fim_pre_token_id", &s.fim_pre}, {"tokenizer.ggml.fim_suf_token_id", &s.fim_suf},
        {"tokenizer.ggml.fim_mid_token_id", &s.fim_mid}, {"tokenizer.ggml.fim_pad_token_id", &s.fim_pad},
        {"tokenizer.ggml.fim_rep_token_id", &s.fim_rep}, {"tokenizer.ggml.fim_sep_token_id", &s.fim_sep},
        {"tokenizer.ggml.prefix_token_id", &s.fim_pre},  {"tokenizer.ggml.suffix_token_id", &s.fim_suf},
        {"tokenizer.ggml.middle_token_id", &s.fim_mid},
    };
    for (auto [key, id] : keys) {
      ZINC_ASSIGN_OR_RETURN(auto value, file->find_uint(key));
      if (value && *value < uint64_t(n_tokens())) *id = int32_t(*value);  // out of range: keep the default
    }
    const std::pair<const char*, bool*> bools[] = {
        {"tokenizer.ggml.add_space_prefix", &flags_.add_space_prefix},
        {"tokenizer.ggml.add_bos_token", &flags_.add_bos},
        {"tokenizer.ggml.add_eos_token", &flags_.add_eos},
        {"tokenizer.ggml.add_sep_token", &flags_.add_sep},
        {"tokenizer.ggml.normalizer.lowercase", &flags_.lowercase},
    };
    for (auto [key, flag] : bools) {
      ZINC_ASSIGN_OR_RETURN(auto value, file->find_bool(key));
      if (value) *flag = *value;
    }
    flags_.strip_accents = flags_.lowercase;
    ZINC_ASSIGN_OR_RETURN(auto strip, file->find_bool("tokenizer.ggml.normalizer.strip_accents"));
    if (strip) flags_.strip_accents = *strip;
    ZINC_ASSIGN_OR_RETURN(auto name, file->find_string("general.name"));
    if (name) general_name = std::string(*name);
    architecture = file->architecture();
  } else {
    flags_.strip_accents = flags_.lowercase;
  }
  if (kind_ == VocabKind::kBpe) flags_.add_space_prefix = false;
  if (flags_.add_bos && s.bos == kNoToken) return Status::error("tokenizer.ggml.add_bos_token is true, but there is no BOS token");
  if (flags_.add_eos && s.eos == kNoToken) return Status::error("tokenizer.ggml.add_eos_token is true, but there is no EOS token");
  if (flags_.add_sep && s.sep == kNoToken) {
    if (kind_ == VocabKind::kWordPiece) return Status::error("the bert tokenizer needs a separator token");
    flags_.add_sep = false;
  }
  detect_special_tokens();

  // Per-token strip attributes some families need (llama.cpp sets them by name).
  std::string lower_name = general_name;
  for (char& c : lower_name) c = char(std::tolower(uint8_t(c)));
  auto set_attr = [&](std::string_view text, uint16_t attr, bool on) {
    int32_t id = find(text);
    if (id != kNoToken) attrs_[id] = on ? uint16_t(attrs_[id] | attr) : uint16_t(attrs_[id] & ~attr);
  };
  if (pre_ == "jina-v2-de" || pre_ == "jina-v2-es" || pre_ == "jina-v2-code" ||
      architecture.find("nomic-bert-moe") != std::string::npos || architecture.find("jina-bert-v3") != std::string::npos) {
    set_attr("<mask>", kAttrLstrip, true);
  } else if (lower_name.find("phi-3") != std::string::npos || lower_name.find("phi3") != std::string::npos) {
    for (int32_t id = 0; id < n_tokens(); ++id)
      if (has_attr(id, kAttrControl | kAttrUserDefined | kAttrUnknown)) attrs_[id] |= kAttrRstrip;
    set_attr("</s>", kAttrRstrip, true);
    for (auto t : {"<unk>", "<s>", "<|endoftext|>"}) set_attr(t, kAttrRstrip, false);
  } else if (lower_name.find("modern-bert") != std::string::npos) {
    set_attr("[MASK]", kAttrLstrip, true);
  }
  return ok_status();
}

}  // namespace zinc::tokenizer
