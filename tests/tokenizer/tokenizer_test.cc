#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "support/test_data.h"
#include "tokenizer/unicode.h"

namespace zinc::tokenizer {
namespace {

using Ids = std::vector<int32_t>;

std::string decoded(const Tokenizer& t, const Ids& ids, const DecodeOptions& options = {}) {
  auto r = t.decode(ids, options);
  return r.ok() ? r.value() : "error: " + r.status().message();
}

// A byte-level BPE vocabulary: the 256 byte tokens (ids 0..255), then `extra` tokens, then merges.
std::unique_ptr<Tokenizer> tiny_bpe(const std::vector<std::string>& extra, const std::vector<std::string>& merges,
                                    std::vector<int32_t> extra_types = {}, std::string pre = "gpt-2") {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(ByteMap::get().encoded(uint8_t(b))), types.push_back(1);
  for (size_t i = 0; i < extra.size(); ++i) {
    tokens.push_back(extra[i]);
    types.push_back(i < extra_types.size() ? extra_types[i] : 1);
  }
  auto v = Vocab::from_parts(VocabKind::kBpe, pre, tokens, {}, types, merges);
  EXPECT_TRUE(v.ok()) << v.status().message();
  auto t = Tokenizer::create(std::move(v).value());
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

TEST(Bpe, AppliesMergesByRankLeftmostFirst) {
  auto t = tiny_bpe({"ab", "bc", "abc", "aa"}, {"a b", "b c", "ab c", "a a"});
  EXPECT_EQ(t->encode("abc", false, false), (Ids{258}));            // a b, then ab c
  EXPECT_EQ(t->encode("bcb", false, false), (Ids{257, 'b'}));
  EXPECT_EQ(t->encode("aaa", false, false), (Ids{259, 'a'}));       // ties go to the leftmost pair
  EXPECT_EQ(t->encode("a abc", false, false), (Ids{'a', ' ', 258}));  // token id of byte b is b here
}

TEST(Bpe, SpaceIsEncodedAsG) {
  auto t = tiny_bpe({"\xC4\xA0" "a"}, {"\xC4\xA0 a"});  // "Ġa"
  const int32_t space = t->vocab().find("\xC4\xA0");
  EXPECT_EQ(t->encode("a a", false, false), (Ids{'a', 256}));
  EXPECT_EQ(t->encode("  a", false, false), (Ids{space, 256}));
  EXPECT_EQ(decoded(*t, Ids{'a', 256, space}), "a a ");
}

TEST(Bpe, IgnoreMergesTakesWholeWords) {
  // "abc" is a token but no merge builds it: only llama3-style vocabularies emit it directly.
  auto plain = tiny_bpe({"abc"}, {});
  EXPECT_EQ(plain->encode("abc", false, false), (Ids{'a', 'b', 'c'}));
  auto llama3 = tiny_bpe({"abc", "<|begin_of_text|>"}, {}, {1, 3}, "llama-bpe");
  EXPECT_EQ(llama3->encode("abc", false, false), (Ids{256}));
  EXPECT_EQ(llama3->encode("abc", true, false), (Ids{11, 256}));  // add_bos (default bos id 11 here)
}

TEST(SpecialTokens, ParseSpecialAndUserDefined) {
  // 256 "<s>" control, 257 "<think>" user-defined.
  auto t = tiny_bpe({"<s>", "<think>"}, {}, {3, 4});
  Ids plain = t->encode("<s>", false, false);
  EXPECT_EQ(plain, (Ids{'<', 's', '>'}));
  EXPECT_EQ(t->encode("<s>x", false, true), (Ids{256, 'x'}));
  EXPECT_EQ(t->encode("a<think>b", false, false), (Ids{'a', 257, 'b'}));  // user-defined: always
  EXPECT_EQ(t->encode("a<think>b", false, true), (Ids{'a', 257, 'b'}));
  // Decoding: control tokens are silent unless rendered; user-defined print verbatim.
  EXPECT_EQ(decoded(*t, Ids{256, 'x', 257}), "x<think>");
  DecodeOptions render;
  render.render_special = true;
  EXPECT_EQ(decoded(*t, Ids{256, 'x', 257}, render), "<s>x<think>");
}

TEST(SpecialTokens, LongestCandidateIsCutFirst) {
  // llama.cpp semantics: "bcd" (longer) is matched before "ab", even though "ab" starts earlier.
  auto t = tiny_bpe({"bcd", "ab"}, {}, {3, 3});
  EXPECT_EQ(t->encode("abcd", false, true), (Ids{'a', 256}));
  EXPECT_EQ(t->encode("abab", false, true), (Ids{257, 257}));
}

TEST(Decode, InvalidIdIsAnError) {
  auto t = tiny_bpe({}, {});
  auto r = t->decode(Ids{'a', 256});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("256"), std::string::npos);
  EXPECT_NE(r.status().message().find("position 1"), std::string::npos);
  EXPECT_FALSE(t->decode(Ids{-1}).ok());
}

// A small SentencePiece vocabulary: <unk> <s> </s>, byte tokens, then pieces with scores.
std::unique_ptr<Tokenizer> tiny_spm() {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  static const char* kHex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
    scores.push_back(0);
    types.push_back(6);
  }
  const std::pair<const char*, float> pieces[] = {{"\xE2\x96\x81", -1}, {"a", -2}, {"b", -2}, {"c", -2},
                                                  {"ab", -3}, {"\xE2\x96\x81" "a", -1.5}, {"\xE2\x96\x81" "ab", -4},
                                                  {"bc", -0.5}};
  for (auto [p, s] : pieces) tokens.push_back(p), scores.push_back(s), types.push_back(1);
  auto v = Vocab::from_parts(VocabKind::kSpm, "", tokens, scores, types, {});
  EXPECT_TRUE(v.ok()) << v.status().message();
  auto t = Tokenizer::create(std::move(v).value());
  EXPECT_TRUE(t.ok());
  return std::move(t).value();
}

TEST(Spm, ScoreDrivenMergesAndByteFallback) {
  auto t = tiny_spm();
  const int32_t sp = 259, a = 260, b = 261, c = 262, sp_a = 264, bc = 266;
  // "▁abc": best pair is "bc" (-0.5), then "▁a" (-1.5); "▁a"+"bc" is not a token.
  EXPECT_EQ(t->encode("abc", false, false), (Ids{sp_a, bc}));
  EXPECT_EQ(t->encode("abc", true, false), (Ids{1, sp_a, bc}));
  // é is not a piece: its two UTF-8 bytes fall back to <0xC3> <0xA9>.
  EXPECT_EQ(t->encode("a\xC3\xA9", false, false), (Ids{sp_a, 3 + 0xC3, 3 + 0xA9}));
  // A space prefix is added at the start and after every special token.
  EXPECT_EQ(t->encode("a</s>b", false, true), (Ids{sp_a, 2, sp, b}));
  EXPECT_EQ(t->encode("", false, false), Ids{});
  (void)a, (void)c;
}

TEST(Spm, DecodeStripsTheLeadingSpaceUnlessTheSequenceStartsWithBos) {
  auto t = tiny_spm();
  const int32_t sp_a = 264, bc = 266;
  EXPECT_EQ(decoded(*t, Ids{sp_a, bc}), "abc");
  EXPECT_EQ(decoded(*t, Ids{1, sp_a, bc}), " abc");  // llama.cpp keeps it after BOS
  DecodeOptions drop;
  drop.remove_special = true;
  EXPECT_EQ(decoded(*t, Ids{1, sp_a, bc}, drop), " abc");
  EXPECT_EQ(decoded(*t, Ids{sp_a, 3 + 0xC3, 3 + 0xA9}), "a\xC3\xA9");
}

TEST(StreamingDecoder, EmitsOnlyCompleteCharacters) {
  auto t = tiny_spm();
  StreamingDecoder d(*t);
  EXPECT_EQ(d.push(264), " a");
  EXPECT_EQ(d.push(3 + 0xE4), "");  // 中 = E4 B8 AD, one byte fallback piece at a time
  EXPECT_EQ(d.push(3 + 0xB8), "");
  EXPECT_EQ(d.pending_bytes(), 2u);
  EXPECT_EQ(d.push(3 + 0xAD), "\xE4\xB8\xAD");
  EXPECT_EQ(d.push(3 + 0xF0), "");
  EXPECT_EQ(d.flush(), "\xEF\xBF\xBD");  // an unfinished character at the end
  EXPECT_EQ(d.push(3 + 0xFF), "\xEF\xBF\xBD");  // never valid: replaced at once
  EXPECT_EQ(d.push(2), "");  // </s> is control: silent
}

TEST(StreamingDecoder, StripsTheLeadingSpaceAfterBosWhenAsked) {
  auto t = tiny_spm();
  StreamingDecoder d(*t, {.render_special = false, .strip_leading_space = true});
  EXPECT_EQ(d.push(1), "");
  EXPECT_EQ(d.push(264), "a");
  EXPECT_EQ(d.push(264), " a");
  EXPECT_EQ(d.push(1), "");
  EXPECT_EQ(d.push(264), "a");
  StreamingDecoder render(*t, {.render_special = true, .strip_leading_space = false});
  EXPECT_EQ(render.push(1), "<s>");
  EXPECT_EQ(render.push(264), " a");
}

TEST(Vocab, EndOfGenerationAndSpecialIds) {
  ZINC_REQUIRE_TEST_DATA();
  auto f = gguf::open_file(test::data_path("vocab/ggml-vocab-qwen3.gguf"));
  ASSERT_TRUE(f.ok());
  auto v = Vocab::load(**f);
  ASSERT_TRUE(v.ok()) << v.status().message();
  const int32_t im_end = v->find("<|im_end|>"), endoftext = v->find("<|endoftext|>");
  EXPECT_EQ(v->special().eos, im_end);
  EXPECT_TRUE(v->is_eog(im_end));
  EXPECT_TRUE(v->is_eog(endoftext));
  EXPECT_FALSE(v->is_eog(v->find("<|im_start|>")));
  EXPECT_EQ(v->special().fim_pre, v->find("<|fim_prefix|>"));
  EXPECT_FALSE(v->flags().add_bos);
  EXPECT_FALSE(v->flags().clean_spaces);
  EXPECT_TRUE(v->has_attr(v->find("<think>"), kAttrUserDefined));

  auto l3 = gguf::open_file(test::data_path("vocab/ggml-vocab-llama3.gguf"));
  ASSERT_TRUE(l3.ok());
  auto v3 = Vocab::load(**l3);
  ASSERT_TRUE(v3.ok());
  EXPECT_EQ(v3->special().bos, 128000);
  EXPECT_EQ(v3->special().eot, v3->find("<|eot_id|>"));
  EXPECT_TRUE(v3->is_eog(v3->find("<|end_of_text|>")));
  EXPECT_TRUE(v3->is_eog(128009));
  EXPECT_FALSE(v3->is_eog(v3->find("<|start_header_id|>")));
  EXPECT_TRUE(v3->flags().add_bos);
  EXPECT_TRUE(v3->flags().ignore_merges);
}

TEST(Vocab, UnsupportedAndBrokenFilesAreErrors) {
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::string("llama"));
  w.set("tokenizer.ggml.model", gguf::Value::string("t5"));
  w.set("tokenizer.ggml.tokens", gguf::Value::string_array({"a", "b"}));
  std::string path = test::temp_path("t5.gguf");
  ASSERT_TRUE(w.write(path).ok());
  auto f = gguf::open_file(path);
  ASSERT_TRUE(f.ok());
  auto t = Tokenizer::load(**f);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("unsupported tokenizer 't5'"), std::string::npos) << t.status().message();

  gguf::Writer w2;
  w2.set("tokenizer.ggml.model", gguf::Value::string("gpt2"));
  w2.set("tokenizer.ggml.pre", gguf::Value::string("mystery"));
  w2.set("tokenizer.ggml.tokens", gguf::Value::string_array({"a", "b"}));
  w2.set("tokenizer.ggml.merges", gguf::Value::string_array({"a b"}));
  ASSERT_TRUE(w2.write(path).ok());
  auto f2 = gguf::open_file(path);
  ASSERT_TRUE(f2.ok());
  auto t2 = Tokenizer::load(**f2);
  ASSERT_FALSE(t2.ok());
  EXPECT_NE(t2.status().message().find("unknown pre-tokenizer 'mystery'"), std::string::npos);

  auto dup = Vocab::from_parts(VocabKind::kSpm, "", {"a", "b", "a"}, {}, {}, {});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("ids 0 and 2"), std::string::npos);
}

// Phi-3 vocabularies strip whitespace to the right of special tokens (llama.cpp's RSTRIP rule).
TEST(SpecialTokens, Phi3StripsSpacesAfterSpecialTokens) {
  ZINC_REQUIRE_TEST_DATA();
  auto f = gguf::open_file(test::data_path("vocab/ggml-vocab-phi-3.gguf"));
  ASSERT_TRUE(f.ok());
  auto t = Tokenizer::load(**f);
  ASSERT_TRUE(t.ok()) << t.status().message();
  const int32_t user = (*t)->vocab().find("<|user|>");
  ASSERT_NE(user, kNoToken);
  EXPECT_TRUE((*t)->vocab().has_attr(user, kAttrRstrip));
  Ids spaced = (*t)->encode("<|user|>  \n Hi", false, true);
  EXPECT_EQ(spaced, (*t)->encode("<|user|>Hi", false, true));
  EXPECT_EQ(spaced.front(), user);
  // Without parse_special the text stays text (and is not stripped).
  EXPECT_NE((*t)->encode("<|user|>  Hi", false, false).front(), user);
}

// The reference engine's prompt tokens for stories260K survive decode -> encode.
TEST(Spm, StoriesPromptsRoundTrip) {
  ZINC_REQUIRE_TEST_DATA();
  auto f = gguf::open_file(test::data_path("models/stories260K.gguf"));
  ASSERT_TRUE(f.ok());
  auto t = Tokenizer::load(**f);
  ASSERT_TRUE(t.ok()) << t.status().message();
  auto manifest = test::read_file(test::data_path("reference/manifest.json"));
  std::string json(manifest.begin(), manifest.end());
  // Pull every "tokens": [...] list out of the manifest.
  int checked = 0;
  for (size_t pos = 0; (pos = json.find("\"tokens\": [", pos)) != std::string::npos;) {
    pos += 11;
    size_t end = json.find(']', pos);
    Ids ids;
    for (size_t p = pos; p < end;) {
      ids.push_back(int32_t(std::strtol(json.c_str() + p, nullptr, 10)));
      p = json.find(',', p);
      if (p == std::string::npos || p > end) break;
      ++p;
    }
    ASSERT_EQ(ids.front(), (*t)->bos());
    auto text = (*t)->decode(std::span<const int32_t>(ids).subspan(1));
    ASSERT_TRUE(text.ok());
    EXPECT_EQ((*t)->encode(*text, true, false), ids) << *text;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace zinc::tokenizer
