// The special-token rules llama.cpp applies by token text (model-spec §4.1): EOT and FIM ids
// missing from the metadata, "unused" control tokens, and the end-of-generation set.
#include <algorithm>
#include <iterator>

#include "tokenizer/vocab.h"

namespace zinc::tokenizer {
namespace {

constexpr std::string_view kEotTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                          "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                                          "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>",
                                          "<end_of_utterance>"};
constexpr std::string_view kEogTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
                                          "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>",
                                          "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>",
                                          "<turn|>", "<|tool_response>",
                                          "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>"};
constexpr std::string_view kFimPre[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                                        "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>", "<PRE>",
                                        "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"};
constexpr std::string_view kFimSuf[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                                        "<\xef\xbd\x9c" "fim\xe2\x96\x81" "hole\xef\xbd\x9c>", "<SUF>",
                                        "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"};
constexpr std::string_view kFimMid[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                                        "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>", "<MID>",
                                        "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"};
constexpr std::string_view kFimPad[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
constexpr std::string_view kFimRep[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
constexpr std::string_view kFimSep[] = {"<|file_sep|>"};

template <size_t N>
bool is_one_of(std::string_view s, const std::string_view (&list)[N]) {
  return std::find(std::begin(list), std::end(list), s) != std::end(list);
}

}  // namespace

void Vocab::detect_special_tokens() {
  SpecialIds& s = special_;
  auto force_control = [&](int32_t id) { attrs_[id] |= kAttrControl; };
  // Missing EOT/FIM ids come from well-known texts, in the order of the lists.
  struct Rule {
    int32_t* id;
    const std::string_view* begin;
    const std::string_view* end;
  };
  const Rule rules[] = {
      {&s.eot, std::begin(kEotTexts), std::end(kEotTexts)},
      {&s.fim_pre, std::begin(kFimPre), std::end(kFimPre)},
      {&s.fim_suf, std::begin(kFimSuf), std::end(kFimSuf)},
      {&s.fim_mid, std::begin(kFimMid), std::end(kFimMid)},
      {&s.fim_pad, std::begin(kFimPad), std::end(kFimPad)},
      {&s.fim_rep, std::begin(kFimRep), std::end(kFimRep)},
      {&s.fim_sep, std::begin(kFimSep), std::end(kFimSep)},
  };
  for (const Rule& r : rules) {
    for (const std::string_view* t = r.begin; t != r.end && *r.id == kNoToken; ++t) {
      int32_t id = find(*t);  // the first text of the list that the vocabulary has
      if (id != kNoToken) *r.id = id, force_control(id);
    }
  }
  if (s.eom == kNoToken) {
    int32_t id = find("<|eom_id|>");
    if (id != kNoToken) s.eom = id, force_control(id);
  }
  for (int32_t id = 0; id < n_tokens(); ++id)
    if (has_attr(id, kAttrControl) && text(id).find("unused") != std::string_view::npos) attrs_[id] |= kAttrUnused;

  std::vector<int32_t> eog;
  for (int32_t id : {s.fim_pad, s.fim_rep, s.fim_sep, s.eos, s.eot, s.eom})
    if (id != kNoToken) eog.push_back(id);
  for (int32_t id = 0; id < n_tokens(); ++id) {
    if (is_one_of(text(id), kEogTexts)) {
      eog.push_back(id);
      force_control(id);
    }
  }
  // gpt-oss renders these as text.
  for (auto t : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}) {
    int32_t id = find(t);
    if (id != kNoToken) attrs_[id] = kAttrUserDefined;
  }
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  auto has = [&](std::string_view t) {
    int32_t id = find(t);
    return id != kNoToken && std::binary_search(eog.begin(), eog.end(), id);
  };
  auto drop = [&](std::string_view t, uint16_t new_attr) {
    int32_t id = find(t);
    auto it = std::lower_bound(eog.begin(), eog.end(), id);
    if (it != eog.end() && *it == id) eog.erase(it);
    attrs_[id] = new_attr;
  };
  // <|end|> ends a message, not the generation, in harmony-style (gpt-oss, solar-open) vocabularies.
  if (has("<|end|>") && ((has("<|return|>") && (has("<|call|>") || has("<|calls|>"))) ||
                         ((has("<|call|>") || has("<|calls|>")) && has("<|flush|>"))))
    drop("<|end|>", kAttrUserDefined);
  if (has("<|tool_response>") && has("</s>")) drop("</s>", kAttrNormal);
  eog_ids_ = std::move(eog);
}

}  // namespace zinc::tokenizer
