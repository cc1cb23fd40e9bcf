#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "core/check.h"
#include "gguf/file.h"
#include "tokenizer/models.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/unicode.h"

namespace zinc::tokenizer {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581, SentencePiece's space

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string_view::npos; pos = hit + from.size())
    out.append(s.substr(pos, hit - pos)).append(to);
  out.append(s.substr(pos));
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// "<0xAB>" -> 0xAB, or -1.
int parse_byte_token(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  int hi = hex_digit(t[3]), lo = hex_digit(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// HF clean_up_tokenization_spaces, as llama.cpp applies it to whole decoded strings.
void clean_up_spaces(std::string& t) {
  size_t n = t.size(), total = n ? 1 : 0;
  for (size_t i = 1; i < n; ++i) {  // " ?", " !", " .", " ,"
    char x = t[i];
    if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
    t[total++] = x;
  }
  n = total, total = n ? 1 : 0;
  for (size_t i = 1; i < n; ++i) {  // " ' " -> "'"
    char x = t[i];
    if (x == '\'' && i + 1 < n && t[i - 1] == ' ' && t[i + 1] == ' ') {
      --total;
      t[++i] = '\0';
    }
    t[total++] = x;
  }
  n = total, total = n ? 1 : 0;
  for (size_t i = 1; i < n; ++i) {  // " 's", " 'm", " 're", " 've"
    char x = t[i];
    if (t[i - 1] == ' ' && x == '\'' && i + 1 < n) {
      char x1 = t[i + 1];
      if (x1 == 's' || x1 == 'm') {
        --total;
      } else if (i + 2 < n) {
        char x2 = t[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --total;
      }
    }
    t[total++] = x;
  }
  t.resize(total);
}

}  // namespace

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}
Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::load(const gguf::File& file) {
  auto vocab = Vocab::load(file);
  if (!vocab.ok()) return vocab.status().with_context("tokenizer");
  auto t = create(std::move(vocab).value());
  if (!t.ok()) return t.status().with_context("tokenizer");
  return t;
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::create(Vocab vocab) {
  std::unique_ptr<Tokenizer> t(new Tokenizer(std::move(vocab)));
  const Vocab& v = t->vocab_;
  t->byte_tokens_.fill(kNoToken);
  if (v.kind() == VocabKind::kBpe) {
    const PreTokenizerSpec* spec = find_pre_tokenizer(v.pre());
    if (!spec) return error("unknown pre-tokenizer '%s' (tokenizer.ggml.pre)", v.pre().c_str());
    ZINC_ASSIGN_OR_RETURN(PreTokenizer pre, PreTokenizer::compile(spec->regexes));
    t->pre_tokenizer_.emplace(std::move(pre));
    for (int b = 0; b < 256; ++b) t->byte_tokens_[b] = v.find(ByteMap::get().encoded(uint8_t(b)));
  } else if (v.kind() == VocabKind::kSpm) {
    static const char* kHex = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) {
      const char name[6] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
      int32_t id = v.find(std::string_view(name, 6));
      if (id == kNoToken) id = v.find(std::string_view(reinterpret_cast<const char*>(&b), 1));
      t->byte_tokens_[b] = id;
    }
    for (int32_t id = 0; id < v.n_tokens(); ++id) {
      if (v.has_attr(id, kAttrControl | kAttrUnknown | kAttrByte)) continue;
      std::string_view text = v.text(id);
      for (size_t p = text.find(kSpaceMark, 1); p != std::string_view::npos; p = text.find(kSpaceMark, p + 1)) {
        size_t start = p - 1;
        while (start > 0 && (uint8_t(text[start]) & 0xC0) == 0x80) --start;
        std::string before(text.substr(start, p - start));
        if (before != kSpaceMark && std::find(t->spm_joins_before_space_.begin(), t->spm_joins_before_space_.end(),
                                              before) == t->spm_joins_before_space_.end())
          t->spm_joins_before_space_.push_back(before);
      }
    }
  }
  t->special_ = std::make_unique<SpecialMatcher>(v);

  // Pieces for decoding (control and unknown tokens are handled in decode_piece).
  const ByteMap& map = ByteMap::get();
  t->piece_offset_.reserve(size_t(v.n_tokens()) + 1);
  t->piece_offset_.push_back(0);
  std::string& blob = t->piece_blob_;
  for (int32_t id = 0; id < v.n_tokens(); ++id) {
    std::string_view text = v.text(id);
    if (v.has_attr(id, kAttrControl | kAttrUnknown)) {
      // empty unless rendered
    } else if (v.has_attr(id, kAttrUserDefined)) {
      blob += text;
    } else if (v.has_attr(id, kAttrNormal)) {
      if (v.kind() == VocabKind::kBpe) {
        for (size_t pos = 0; pos < text.size();) {
          size_t start = pos;
          uint32_t cp = decode_utf8(text, &pos);
          int b = map.byte_of(cp);
          if (b >= 0)
            blob += char(b);
          else
            blob += text.substr(start, pos - start);  // not byte-encoded: keep the character
        }
      } else {
        blob += replace_all(text, kSpaceMark, " ");
      }
    } else if (v.has_attr(id, kAttrByte)) {
      int b = parse_byte_token(text);
      if (b >= 0)
        blob += char(b);
      else
        blob += text;
    }
    if (blob.size() > UINT32_MAX) return Status::error("decoded pieces exceed 4 GiB");
    t->piece_offset_.push_back(uint32_t(blob.size()));
  }
  return t;
}

std::string_view Tokenizer::decode_piece(int32_t id, bool render_special) const {
  ZINC_CHECK(vocab_.valid_id(id));
  if (vocab_.has_attr(id, kAttrControl | kAttrUnknown)) return render_special ? vocab_.text(id) : std::string_view();
  return std::string_view(piece_blob_).substr(piece_offset_[id], piece_offset_[id + 1] - piece_offset_[id]);
}

void Tokenizer::encode_fragment(std::string_view text, bool after_special, std::vector<int32_t>* out) const {
  switch (vocab_.kind()) {
    case VocabKind::kSpm: {
      std::string escaped;
      if (vocab_.flags().add_space_prefix && after_special) escaped = kSpaceMark;
      escaped += replace_all(text, " ", kSpaceMark);
      // Merge word by word: cut before each "▁" that no token joins to the character before it.
      std::string_view rest = escaped;
      size_t cut = 0;
      for (size_t p = rest.find(kSpaceMark, 1); p != std::string_view::npos; p = rest.find(kSpaceMark, p + 1)) {
        size_t start = p - 1;
        while (start > cut && (uint8_t(rest[start]) & 0xC0) == 0x80) --start;
        std::string_view before = rest.substr(start, p - start);
        if (before == kSpaceMark || std::find(spm_joins_before_space_.begin(), spm_joins_before_space_.end(),
                                              before) != spm_joins_before_space_.end())
          continue;
        internal::spm_encode(vocab_, byte_tokens_, rest.substr(cut, p - cut), out);
        cut = p;
      }
      internal::spm_encode(vocab_, byte_tokens_, rest.substr(cut), out);
      break;
    }
    case VocabKind::kBpe: {
      thread_local std::vector<std::string_view> words;
      words.clear();
      pre_tokenizer_->split(text, &words);
      for (std::string_view w : words) internal::bpe_encode_word(vocab_, byte_tokens_, w, out);
      break;
    }
    case VocabKind::kWordPiece:
      internal::wordpiece_encode(vocab_, text, out);
      break;
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  const VocabFlags& f = vocab_.flags();
  const bool word_piece = vocab_.kind() == VocabKind::kWordPiece;
  if (add_special && (f.add_bos || word_piece) && bos() != kNoToken) out.push_back(bos());
  std::vector<Fragment> fragments;
  special_->partition(vocab_, text, parse_special, &fragments);
  bool after_special = true;  // the start counts as "after a special token" (SPM space prefix)
  for (const Fragment& frag : fragments) {
    if (frag.token != kNoToken) {
      out.push_back(frag.token);
      after_special = true;
    } else {
      encode_fragment(text.substr(frag.offset, frag.length), after_special, &out);
      after_special = false;
    }
  }
  if (add_special) {
    if (word_piece) {
      if (vocab_.special().sep != kNoToken) out.push_back(vocab_.special().sep);
    } else if (f.add_eos && eos() != kNoToken) {
      out.push_back(eos());
    }
  }
  return out;
}

Result<std::string> Tokenizer::decode(std::span<const int32_t> ids, const DecodeOptions& options) const {
  for (size_t i = 0; i < ids.size(); ++i)
    if (!vocab_.valid_id(ids[i]))
      return error("token id %d at position %zu is out of range (the vocabulary has %d tokens)", ids[i], i,
                   vocab_.n_tokens());
  const VocabFlags& f = vocab_.flags();
  bool remove_space = f.add_space_prefix;
  if (options.remove_special && f.add_bos && !ids.empty() && ids.front() == bos()) {
    remove_space = false;
    ids = ids.subspan(1);
  }
  if (options.remove_special && f.add_eos && !ids.empty() && ids.back() == eos()) ids = ids.first(ids.size() - 1);
  std::string text;
  for (int32_t id : ids) {
    std::string_view piece = decode_piece(id, options.render_special);
    if (remove_space && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
    remove_space = false;
    text += piece;
  }
  if (options.clean_spaces && f.clean_spaces) clean_up_spaces(text);
  return text;
}

}  // namespace zinc::tokenizer
