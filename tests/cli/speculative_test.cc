// zinc run --model-draft: speculative decoding gives the tokens plain decoding gives, greedy and
// seeded, with a draft that guesses wrong part of the time (a Q4_0 copy of the model); a draft
// of another vocabulary and a model with recurrent layers are refused in one line.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "gguf/file.h"
#include "model/gguf_edit.h"
#include "support/test_data.h"

namespace zinc::test {
namespace {

std::string run_tokens(const std::string& model, const std::string& flags) {
  std::string out;
  EXPECT_EQ(run_command("{ " + zinc_binary() + " run -m " + model + " --tokens 1,403,407 -n 48 -t 1 " + flags + " 2>/dev/null; }", &out), 0)
      << out;
  return out;
}

TEST(SpeculativeRun, AQuantizedDraftChangesNoToken) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string model = data_path("models/stories260K.gguf"), draft = temp_path("stories-q4_0.gguf");
  std::string out;
  ASSERT_EQ(run_command(zinc_binary() + " quantize " + model + " " + draft + " Q4_0", &out), 0) << out;
  for (const std::string sampling : {"--temp 0", "--temp 0.9 --seed 7", "--temp 0.7 --top-k 20 --seed 3"}) {
    const std::string plain = run_tokens(model, sampling);
    EXPECT_EQ(run_tokens(model, sampling + " -md " + draft + " --draft-p-min 0"), plain) << sampling;
    EXPECT_EQ(run_tokens(model, sampling + " --model-draft " + draft + " --draft-max 2"), plain) << sampling;
    EXPECT_EQ(run_tokens(model, sampling + " -md " + model), plain) << sampling;  // the model as its own draft
  }
  // The guesses were checked, and some were wrong: the rejection path ran.
  ASSERT_EQ(run_command("{ " + zinc_binary() + " run -m " + model + " --tokens 1,403,407 -n 48 -t 1 --temp 0 --verbose -md " + draft +
                            " --draft-p-min 0 2>&1 >/dev/null; }",
                        &out),
            0);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("draft: ([0-9]+) guesses checked, ([0-9]+) kept"))) << out;
  EXPECT_GT(std::stoi(m[2]), 0) << out;
  EXPECT_LT(std::stoi(m[2]), std::stoi(m[1])) << out;
  // The model as its own greedy draft guesses right every time, whatever the rounds kept before:
  // the draft's cache follows what was kept.
  ASSERT_EQ(run_command("{ " + zinc_binary() + " run -m " + model + " --tokens 1,403,407 -n 48 -t 1 --temp 0 --verbose -md " + model +
                            " --draft-p-min 0 --draft-max 5 2>&1 >/dev/null; }",
                        &out),
            0);
  ASSERT_TRUE(std::regex_search(out, m, std::regex("draft: ([0-9]+) guesses checked, ([0-9]+) kept"))) << out;
  EXPECT_GT(std::stoi(m[1]), 30) << out;
  EXPECT_EQ(m[2], m[1]) << out;
}

TEST(SpeculativeRun, TextPromptsOnARealVocabulary) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string model = data_path("models/llama-f32.gguf"), draft = data_path("models/llama-q4_0.gguf");
  std::string plain, spec;
  ASSERT_EQ(run_command("{ " + zinc_binary() + " run -m " + model + " -p 'The quick brown fox' -n 24 --temp 0 -t 1 2>/dev/null; }", &plain), 0);
  ASSERT_EQ(run_command("{ " + zinc_binary() + " run -m " + model + " -md " + draft + " -p 'The quick brown fox' -n 24 --temp 0 -t 1 2>/dev/null; }", &spec), 0);
  EXPECT_EQ(spec, plain);
}

TEST(SpeculativeRun, UnfitDraftsAreRefused) {
  ZINC_REQUIRE_TEST_DATA();
  std::string out;
  // A copy of the model whose token 300 reads otherwise: the same size, another vocabulary.
  const std::string model = data_path("models/stories260K.gguf"), other = temp_path("stories-other-vocab.gguf");
  {
    auto f = gguf::open_file(model);
    ASSERT_TRUE(f.ok());
    const gguf::ValueView* tokens = (*f)->find("tokenizer.ggml.tokens");
    ASSERT_NE(tokens, nullptr);
    gguf::Value edited = gguf::Value::from_view(*tokens);
    std::get<gguf::Value::Array>(edited.data)[300] = gguf::Value::string("<changed>");
    GgufEdits e;
    e.set_keys.push_back({"tokenizer.ggml.tokens", edited});
    ASSERT_TRUE(copy_gguf(model, other, e).ok());
  }
  EXPECT_EQ(run_command(zinc_binary() + " run -m " + model + " -md " + other + " -p 'Once' -n 4 -t 1", &out), 1);
  EXPECT_NE(out.find("error: " + other + ": the draft model's vocabulary is not the model's"), std::string::npos) << out;
  EXPECT_EQ(run_command(zinc_binary() + " run -m " + data_path("models/qwen35-f32.gguf") + " -md " + data_path("models/qwen35-q4_0.gguf") +
                            " --tokens 1,2,3 -n 4 -t 1",
                        &out),
            1);
  EXPECT_NE(out.find("error: speculative decoding needs attention-only models"), std::string::npos) << out;
  EXPECT_EQ(run_command(zinc_binary() + " run -m " + data_path("models/stories260K.gguf") + " -md x.gguf --draft-max 0 --tokens 1 -n 2", &out), 2);
}

}  // namespace
}  // namespace zinc::test
