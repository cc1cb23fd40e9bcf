// TextPipeline: control tokens show nothing unless shown (a tool-call syntax's markers), and a
// shown one keeps the text around it whole.
#include "server/text_pipeline.h"

#include <gtest/gtest.h>

#include "gguf/file.h"
#include "support/test_data.h"

namespace zinc::server {
namespace {

TEST(TextPipeline, ShowsOnlyTheControlTokensItIsTold) {
  ZINC_REQUIRE_TEST_DATA();
  auto file = gguf::open_file(test::data_path("models/stories260K.gguf"));
  ASSERT_TRUE(file.ok()) << file.status().message();
  auto tok = tokenizer::Tokenizer::load(**file);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  const std::vector<int32_t> once = (*tok)->encode("Once upon", false, false);
  const int32_t bos = (*tok)->bos();
  auto run = [&](bool show) {
    TextPipeline p(**tok, {}, /*split_reasoning=*/false, false);
    if (show) p.show(bos);
    std::string text;
    for (int32_t id : once) text += p.push(id).content;
    text += p.push(bos).content;
    for (int32_t id : once) text += p.push(id).content;
    return text + p.finish().content;
  };
  const std::string hidden = run(false), shown = run(true);
  EXPECT_EQ(hidden.find("<s>"), std::string::npos) << hidden;
  const size_t at = shown.find("<s>");
  ASSERT_NE(at, std::string::npos) << shown;
  EXPECT_EQ(shown.substr(0, at) + shown.substr(at + 3), hidden);
}

}  // namespace
}  // namespace zinc::server
