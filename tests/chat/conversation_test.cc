// ChatFormat (model templates, ChatML fallback, BOS handling), the reasoning splitter and the stop
// matcher, fed one byte at a time as well as whole.
#include "chat/conversation.h"

#include <gtest/gtest.h>

#include "gguf/file.h"
#include "support/test_data.h"
#include "tokenizer/tokenizer.h"

namespace zinc::chat {
namespace {

using nlohmann::ordered_json;

struct Loaded {
  std::unique_ptr<gguf::File> file;
  std::unique_ptr<tokenizer::Tokenizer> tok;
};

Loaded load(const std::string& rel) {
  Loaded l;
  auto f = gguf::open_file(test::data_path(rel));
  EXPECT_TRUE(f.ok());
  l.file = std::move(*f);
  auto t = tokenizer::Tokenizer::load(*l.file);
  EXPECT_TRUE(t.ok());
  l.tok = std::move(*t);
  return l;
}

ChatRequest hello() {
  ChatRequest r;
  r.messages = ordered_json::array({{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}});
  return r;
}

TEST(ChatFormat, ModelWithoutTemplateFallsBackToChatml) {
  ZINC_REQUIRE_TEST_DATA();
  auto l = load("models/stories260K.gguf");
  auto f = ChatFormat::create(*l.file, *l.tok);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_TRUE(f->is_fallback());
  EXPECT_EQ(f->render(hello()).value(),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatFormat, Llama3TemplateWritesBosOnce) {
  ZINC_REQUIRE_TEST_DATA();
  auto l = load("vocab/ggml-vocab-llama3.gguf");
  auto f = ChatFormat::create(*l.file, *l.tok);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_FALSE(f->is_fallback());
  auto text = f->render(hello());
  ASSERT_TRUE(text.ok()) << text.status().message();
  ASSERT_EQ(text->rfind("<|begin_of_text|>", 0), 0u) << *text;
  auto ids = f->tokenize(*text);
  ASSERT_GT(ids.size(), 2u);
  EXPECT_EQ(ids[0], l.tok->bos());
  EXPECT_NE(ids[1], l.tok->bos());
  EXPECT_EQ(std::count(ids.begin(), ids.end(), l.tok->bos()), 1);
}

TEST(ChatFormat, ContentPartsAndKwargs) {
  ZINC_REQUIRE_TEST_DATA();
  auto l = load("vocab/ggml-vocab-qwen3.gguf");
  auto f = ChatFormat::create(*l.file, *l.tok);
  ASSERT_TRUE(f.ok()) << f.status().message();
  ChatRequest r;
  r.messages = ordered_json::array(
      {{{"role", "user"}, {"content", ordered_json::array({{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}})}}});
  r.kwargs = {{"enable_thinking", false}};
  auto text = f->render(r);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_NE(text->find("<|im_start|>user\nab<|im_end|>"), std::string::npos) << *text;
  EXPECT_NE(text->find("<think>\n\n</think>"), std::string::npos) << *text;
  EXPECT_FALSE(prompt_opens_reasoning(*text));
  EXPECT_TRUE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n"));
}

TEST(ChatFormat, MalformedMessagesAreErrors) {
  ZINC_REQUIRE_TEST_DATA();
  auto l = load("models/stories260K.gguf");
  auto f = ChatFormat::create(*l.file, *l.tok).value();
  ChatRequest r;
  EXPECT_FALSE(f.render(r).ok());
  r.messages = ordered_json::array({{{"content", "x"}}});
  EXPECT_NE(f.render(r).status().message().find("messages[0]"), std::string::npos);
  r.messages = ordered_json::array({{{"role", "user"}, {"content", 3}}});
  EXPECT_FALSE(f.render(r).ok());
  r.messages = ordered_json::array({{{"role", "user"}, {"content", ordered_json::array({{{"type", "image_url"}}})}}});
  EXPECT_FALSE(f.render(r).ok());
  EXPECT_FALSE(ChatFormat::from_source("{% for %}", *l.tok, "", "").ok());
}

// Feeds `text` in pieces of `step` bytes; returns {reasoning, content}.
std::pair<std::string, std::string> split(std::string_view text, size_t step, bool open) {
  ReasoningSplitter s(open);
  std::string r, c;
  for (size_t i = 0; i < text.size(); i += step) {
    auto d = s.push(text.substr(i, step));
    r += d.reasoning;
    c += d.content;
  }
  auto d = s.flush();
  return {r + d.reasoning, c + d.content};
}

TEST(ReasoningSplitter, SplitsWholeAndByteByByte) {
  for (size_t step : {1, 2, 3, 100}) {
    auto [r, c] = split("<think>\nplan</think>\n\nanswer <b>", step, false);
    EXPECT_EQ(r, "plan") << step;
    EXPECT_EQ(c, "answer <b>") << step;
    auto [r2, c2] = split("plan it</think>answer", step, true);
    EXPECT_EQ(r2, "plan it") << step;
    EXPECT_EQ(c2, "answer") << step;
    auto [r3, c3] = split("no tags < here <thin", step, false);
    EXPECT_EQ(r3, "");
    EXPECT_EQ(c3, "no tags < here <thin") << step;
  }
}

std::string stop_run(std::vector<std::string> stops, std::string_view text, size_t step, bool* stopped) {
  StopMatcher m(std::move(stops));
  std::string out;
  for (size_t i = 0; i < text.size() && !m.stopped(); i += step) {
    const std::string piece = m.push(text.substr(i, step));
    // Nothing emitted may be the start of a stop string that then completes.
    out += piece;
  }
  *stopped = m.stopped();
  return out + m.flush();
}

TEST(StopMatcher, NeverLeaksAPartialStop) {
  for (size_t step : {1, 2, 5, 100}) {
    bool stopped = false;
    EXPECT_EQ(stop_run({"END", "\n\n"}, "one two EN three END four", step, &stopped), "one two EN three ") << step;
    EXPECT_TRUE(stopped);
    EXPECT_EQ(stop_run({"END"}, "one two EN", step, &stopped), "one two EN") << step;
    EXPECT_FALSE(stopped);
    EXPECT_EQ(stop_run({"aab"}, "xaaab!", step, &stopped), "xa") << step;
  }
  StopMatcher m({"Stop"});
  EXPECT_EQ(m.push("go St"), "go ");
  EXPECT_EQ(m.push("o"), "");
  EXPECT_EQ(m.push("p!"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "Stop");
}

}  // namespace
}  // namespace zinc::chat
