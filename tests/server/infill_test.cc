// llama.cpp's POST /infill: the fill-in-the-middle layout on real FIM vocabularies (Qwen3's, with
// repository and file separators; StarCoder's, without a file separator), its truncation, and
// the endpoint on stories260K with FIM ids set (the answer is /completion's for those ids; bad
// fields are 400s) and without them (501).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gguf/file.h"
#include "server/infill.h"
#include "server_fixture.h"

namespace zinc::server {
namespace {

std::unique_ptr<tokenizer::Tokenizer> vocab_tokenizer(const std::string& name) {
  auto f = gguf::open_file(test::data_path("vocab/" + name));
  EXPECT_TRUE(f.ok());
  auto t = tokenizer::Tokenizer::load(**f);
  EXPECT_TRUE(t.ok());
  return std::move(*t);
}

std::vector<int32_t> cat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(Infill, QwenLayoutWithRepositoryAndFiles) {
  ZINC_REQUIRE_TEST_DATA();
  auto tok = vocab_tokenizer("ggml-vocab-qwen3.gguf");
  const auto& s = tok->vocab().special();
  ASSERT_NE(s.fim_pre, tokenizer::kNoToken);
  ASSERT_NE(s.fim_rep, tokenizer::kNoToken);
  ASSERT_NE(s.fim_sep, tokenizer::kNoToken);
  auto enc = [&](const std::string& t) { return tok->encode(t, false, false); };
  InfillParts parts;
  parts.prefix = enc("def add(a, b):\n    ");
  parts.suffix = enc("\n\nprint(add(1, 2))\n");
  parts.prompt = enc("return");
  parts.extra = {{"util.py", "import math\n"}, {"tmp", "x = 1\n"}};
  const auto ids = infill_tokens(*tok, parts, 2048, 4096);
  const auto expected =
      cat({{s.fim_rep}, enc("myproject\n"), {s.fim_sep}, enc("util.py\n"), enc("import math\n"), {s.fim_sep}, enc("tmp\n"), enc("x = 1\n"),
           {s.fim_sep}, enc("filename\n"), {s.fim_pre}, parts.prefix, parts.prompt, {s.fim_suf}, parts.suffix, {s.fim_mid}});
  EXPECT_EQ(ids, expected);
  tokenizer::DecodeOptions rendered;
  rendered.render_special = true;
  EXPECT_EQ(tok->decode(ids, rendered).value(),
            "<|repo_name|>myproject\n<|file_sep|>util.py\nimport math\n<|file_sep|>tmp\nx = 1\n<|file_sep|>filename\n"
            "<|fim_prefix|>def add(a, b):\n    return<|fim_suffix|>\n\nprint(add(1, 2))\n<|fim_middle|>");
}

TEST(Infill, TruncatesPrefixSuffixAndExtra) {
  ZINC_REQUIRE_TEST_DATA();
  auto tok = vocab_tokenizer("ggml-vocab-qwen3.gguf");
  const auto& s = tok->vocab().special();
  InfillParts parts;
  for (int i = 0; i < 100; ++i) parts.prefix.push_back(1000 + i);
  for (int i = 0; i < 100; ++i) parts.suffix.push_back(2000 + i);
  parts.prompt = {3000, 3001};
  parts.extra = {{"a", "one two three four five six"}};
  const auto ids = infill_tokens(*tok, parts, 64, 5);
  // The window of 64: the prefix's last 48 tokens, the suffix's first 16 - 2 - 2, the extra's last 5.
  std::vector<int32_t> extra = cat({{s.fim_rep}, tok->encode("myproject\n", false, false), {s.fim_sep}, tok->encode("a\n", false, false),
                                    tok->encode("one two three four five six", false, false), {s.fim_sep}, tok->encode("filename\n", false, false)});
  std::vector<int32_t> expected(extra.end() - 5, extra.end());
  expected.push_back(s.fim_pre);
  for (int i = 52; i < 100; ++i) expected.push_back(1000 + i);
  expected.insert(expected.end(), {3000, 3001, s.fim_suf});
  for (int i = 0; i < 12; ++i) expected.push_back(2000 + i);
  expected.push_back(s.fim_mid);
  EXPECT_EQ(ids, expected);
  // No room for the extra context: it is left out; a prompt longer than the suffix's share leaves no suffix.
  parts.prompt.assign(20, 3000);
  const auto tight = infill_tokens(*tok, parts, 64, -10);
  ASSERT_FALSE(tight.empty());
  EXPECT_EQ(tight.front(), s.fim_pre);
  EXPECT_EQ(tight[tight.size() - 2], s.fim_suf);
}

TEST(Infill, SnippetSeparatorsWithoutAFileSeparator) {
  ZINC_REQUIRE_TEST_DATA();
  auto tok = vocab_tokenizer("ggml-vocab-starcoder.gguf");
  const auto& s = tok->vocab().special();
  ASSERT_NE(s.fim_pre, tokenizer::kNoToken);
  ASSERT_EQ(s.fim_sep, tokenizer::kNoToken);
  auto enc = [&](const std::string& t) { return tok->encode(t, false, false); };
  InfillParts parts;
  parts.prefix = enc("int main() {");
  parts.suffix = enc("}");
  parts.extra = {{"ignored.c", "#include <stdio.h>\n"}};
  std::vector<int32_t> rep;
  if (s.fim_rep != tokenizer::kNoToken) rep = cat({{s.fim_rep}, enc("myproject\n")});
  EXPECT_EQ(infill_tokens(*tok, parts, 2048, 4096),
            cat({rep, enc("\n\n--- snippet ---\n\n"), enc("#include <stdio.h>\n"), {s.fim_pre}, parts.prefix, {s.fim_suf}, parts.suffix, {s.fim_mid}}));
}

TEST(Infill, AnswersAsCompletionOfTheLayout) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start({}, "", 2, 256, fim_stories_model());
  const Json body = {{"input_prefix", "Once upon a time"}, {"input_suffix", "the end."}, {"prompt", " there"},
                     {"input_extra", Json::array({{{"filename", "a.txt"}, {"text", "Lily had a dog."}}})},
                     {"n_predict", 8}, {"temperature", 0}, {"return_tokens", true}};
  Reply r = post(*s, "/infill", body);
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body["tokens"].size(), 8u);
  EXPECT_EQ(r.body["stop_type"], "limit");

  InfillParts parts;
  parts.prefix = s->tok->encode("Once upon a time", false, false);
  parts.suffix = s->tok->encode("the end.", false, false);
  parts.prompt = s->tok->encode(" there", false, true);
  parts.extra = {{"a.txt", "Lily had a dog."}};
  const auto ids = infill_tokens(*s->tok, parts, 128, 256 - 128 - 16);
  ASSERT_EQ(ids[ids.size() - 1], 302);
  Reply direct = post(*s, "/completion", Json{{"prompt", ids}, {"n_predict", 8}, {"temperature", 0}, {"return_tokens", true}});
  ASSERT_EQ(direct.status, 200) << direct.text;
  EXPECT_EQ(r.body["tokens"], direct.body["tokens"]);
  EXPECT_EQ(r.body["content"], direct.body["content"]);
  EXPECT_EQ(r.body["tokens_evaluated"], int64_t(ids.size()));

  // Streamed: the same text, llama.cpp's events without [DONE].
  Json streamed_body = body;
  streamed_body["stream"] = true;
  Reply streamed = post(*s, "/infill", streamed_body);
  ASSERT_EQ(streamed.status, 200) << streamed.text;
  Sse sse = parse_sse(streamed.text);
  EXPECT_FALSE(sse.done);
  std::string text;
  for (const Json& e : sse.events) text += e.value("content", "");
  EXPECT_EQ(text, r.body["content"]);

  // Prefix and suffix as arrays of text and token ids.
  Json mixed = body;
  mixed["input_prefix"] = Json::array({"Once upon", " a time"});
  mixed["input_suffix"] = Json::array({s->tok->encode("the end.", false, false)[0], "."});
  EXPECT_EQ(post(*s, "/infill", mixed).status, 200);
}

// OpenAI's completions 'suffix': the prompt and suffix in the same layout, without extra context.
TEST(Infill, CompletionSuffixFillsTheMiddle) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start({}, "", 2, 256, fim_stories_model());
  Reply r = post(*s, "/v1/completions", Json{{"prompt", "Once upon a time"}, {"suffix", "the end."}, {"max_tokens", 6}, {"temperature", 0},
                                             {"return_token_ids", true}});
  ASSERT_EQ(r.status, 200) << r.text;
  InfillParts parts;
  parts.prefix = s->tok->encode("Once upon a time", false, false);
  parts.suffix = s->tok->encode("the end.", false, false);
  const auto ids = infill_tokens(*s->tok, parts, 128, 0);
  EXPECT_EQ(r.body["choices"][0]["prompt_token_ids"], Json(ids));
  Reply direct = post(*s, "/v1/completions", Json{{"prompt", ids}, {"max_tokens", 6}, {"temperature", 0}});
  ASSERT_EQ(direct.status, 200) << direct.text;
  EXPECT_EQ(r.body["choices"][0]["text"], direct.body["choices"][0]["text"]);
  // A prompt of ids is the prefix as it is.
  Reply by_ids = post(*s, "/v1/completions", Json{{"prompt", parts.prefix}, {"suffix", "the end."}, {"max_tokens", 6}, {"temperature", 0}});
  ASSERT_EQ(by_ids.status, 200) << by_ids.text;
  EXPECT_EQ(by_ids.body["choices"][0]["text"], r.body["choices"][0]["text"]);
  // Ollama's generate with a suffix: the same.
  Reply ollama = post(*s, "/api/generate", Json{{"model", "stories"}, {"prompt", "Once upon a time"}, {"suffix", "the end."}, {"stream", false},
                                                {"options", {{"num_predict", 6}, {"temperature", 0}}}});
  ASSERT_EQ(ollama.status, 200) << ollama.text;
  EXPECT_EQ(ollama.body["response"], r.body["choices"][0]["text"]);
  EXPECT_EQ(post(*s, "/api/generate", Json{{"model", "stories"}, {"prompt", "a"}, {"suffix", 3}}).status, 400);
  expect_error(post(*s, "/v1/completions", Json{{"prompt", "a"}, {"suffix", 3}}), 400, "", "suffix");
  expect_error(post(*s, "/v1/completions", Json{{"prompt", "a"}, {"suffix", "b"}, {"echo", true}}), 400, "", "suffix");
  auto plain = TestServer::start();
  expect_error(post(*plain, "/v1/completions", Json{{"prompt", "a"}, {"suffix", "b"}}), 400, "", "suffix");
  Reply no_fim = post(*plain, "/api/generate", Json{{"model", "stories"}, {"prompt", "a"}, {"suffix", "b"}, {"stream", false}});
  EXPECT_EQ(no_fim.status, 400) << no_fim.text;
  EXPECT_TRUE(no_fim.body.contains("error")) << no_fim.text;
}

TEST(Infill, BadFieldsAndModelsWithoutFimTokens) {
  ZINC_REQUIRE_TEST_DATA();
  auto s = TestServer::start({}, "", 2, 256, fim_stories_model());
  const Json ok = {{"input_prefix", "a"}, {"input_suffix", "b"}, {"n_predict", 2}};
  auto with = [&](const char* k, Json v) {
    Json b = ok;
    if (v.is_null()) b.erase(k);
    else b[k] = v;
    return post(*s, "/infill", b);
  };
  expect_error(with("input_prefix", nullptr), 400, "", "input_prefix");
  expect_error(with("input_suffix", nullptr), 400, "", "input_suffix");
  expect_error(with("input_prefix", 5), 400, "", "input_prefix");
  expect_error(with("input_suffix", Json::array({Json::object()})), 400, "", "input_suffix");
  expect_error(with("input_prefix", Json::array({1 << 30})), 400, "", "input_prefix");
  expect_error(with("input_extra", "text"), 400, "", "input_extra");
  expect_error(with("input_extra", Json::array({{{"filename", "a"}}})), 400, "", "input_extra");
  expect_error(with("input_extra", Json::array({{{"filename", 3}, {"text", "x"}}})), 400, "", "input_extra");
  expect_error(with("prompt", Json::object()), 400, "", "prompt");
  expect_error(with("n_predict", "many"), 400, "", "n_predict");
  expect_error(post(*s, "/infill", std::string("{not json")), 400);
  EXPECT_EQ(with("input_extra", nullptr).status, 200);

  auto plain = TestServer::start();
  Reply r = post(*plain, "/infill", ok);
  expect_error(r, 501);
  EXPECT_EQ(r.body["error"]["type"], "not_supported_error");
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find("prefix token is missing"), std::string::npos) << r.text;
}

}  // namespace
}  // namespace zinc::server
