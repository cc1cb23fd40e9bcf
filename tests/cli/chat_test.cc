// zinc chat with stdin piped (no terminal): turns, /reset, /system, /save, the model's own chat
// template (or ChatML without one), reasoning, and the KV cache reused across turns.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "support/test_data.h"

namespace zinc::test {
namespace {

std::string stories() { return data_path("models/stories260K.gguf"); }

// Runs `zinc chat` on `model` with `input` as stdin; stdout in *out, stderr in *err.
int chat(const std::string& model, const std::string& input, const std::string& flags, std::string* out,
         std::string* err) {
  static int n = 0;
  const std::string in_path = temp_path("chat_in_" + std::to_string(n) + ".txt");
  const std::string err_path = temp_path("chat_err_" + std::to_string(n++) + ".txt");
  write_file(in_path, input.data(), input.size());
  const int rc = run_command("(" + zinc_binary() + " chat -m " + model + " --temp 0 -t 1 --verbose " + flags + " < " +
                                 in_path + " 2>" + err_path + ")",
                             out);
  const auto e = read_file(err_path);
  err->assign(e.begin(), e.end());
  return rc;
}

nlohmann::json load_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
}

// The "[N tokens, ...; prompt P tokens, C from the cache]" lines of --verbose, as (P, C) pairs.
std::vector<std::pair<int, int>> prompt_stats(const std::string& err) {
  std::vector<std::pair<int, int>> got;
  const std::regex re(R"(prompt (\d+) tokens, (\d+) from the cache)");
  for (auto it = std::sregex_iterator(err.begin(), err.end(), re); it != std::sregex_iterator(); ++it)
    got.emplace_back(std::stoi((*it)[1]), std::stoi((*it)[2]));
  return got;
}

// A copy of stories260K with `chat_template` as its tokenizer.chat_template.
std::string stories_with_template(const std::string& name, const std::string& chat_template) {
  auto file = gguf::open_file(stories());
  EXPECT_TRUE(file.ok()) << file.status().message();
  gguf::Writer w;
  for (const auto& kv : (*file)->metadata()) w.set(std::string(kv.key), gguf::Value::from_view(kv.value));
  w.set("tokenizer.chat_template", gguf::Value::string(chat_template));
  for (const auto& t : (*file)->tensors()) {
    const gguf::File* f = file->get();
    const gguf::TensorInfo* info = &t;
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    Status st = w.add_tensor(std::string(t.name), t.type, ne, [f, info](std::span<uint8_t> out) {
      auto bytes = f->tensor_bytes(*info);
      std::copy(bytes.begin(), bytes.end(), out.begin());
      return Status();
    });
    EXPECT_TRUE(st.ok()) << st.message();
  }
  const std::string path = temp_path(name + ".gguf");
  Status st = w.write(path);
  EXPECT_TRUE(st.ok()) << st.message();
  return path;
}

TEST(ChatCommand, TurnsResetAndSaveWithChatMl) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string s1 = temp_path("chat1.json"), s2 = temp_path("chat2.json"), s3 = temp_path("chat3.json");
  std::string out, err;
  ASSERT_EQ(chat(stories(),
                 "Once upon a time\n/save " + s1 + "\nWhat did Lily do?\n/save " + s2 + "\n/reset\nOnce upon a time\n/save " +
                     s3 + "\n",
                 "-n 24", &out, &err),
            0)
      << out << err;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << "no ANSI codes when stdout is not a terminal";
  const auto j1 = load_json(s1), j2 = load_json(s2), j3 = load_json(s3);
  ASSERT_TRUE(j1.is_array() && j2.is_array() && j3.is_array()) << out << err;
  ASSERT_EQ(j1.size(), 2u);
  EXPECT_EQ(j1[0]["role"], "user");
  EXPECT_EQ(j1[0]["content"], "Once upon a time");
  EXPECT_EQ(j1[1]["role"], "assistant");
  const std::string answer = j1[1]["content"];
  EXPECT_FALSE(answer.empty());
  EXPECT_NE(out.find(answer), std::string::npos) << "the answer is streamed to stdout: " << out;
  ASSERT_EQ(j2.size(), 4u);
  EXPECT_EQ(j2[1], j1[1]);
  EXPECT_EQ(j2[2]["content"], "What did Lily do?");
  // After /reset the same question gets the same greedy answer, from a fresh conversation.
  ASSERT_EQ(j3.size(), 2u);
  EXPECT_EQ(j3, j1);
  EXPECT_NE(out.find("(conversation cleared)"), std::string::npos) << out;

  // Turn 2 prefills only what follows turn 1 (its prompt and answer stay in the cache); turn 3
  // shares its whole prompt but one token with turn 1.
  const auto stats = prompt_stats(err);
  ASSERT_EQ(stats.size(), 3u) << err;
  EXPECT_EQ(stats[0].second, 0);
  EXPECT_GE(stats[1].second, stats[0].first) << err;
  EXPECT_LT(stats[1].second, stats[1].first);
  EXPECT_EQ(stats[2].first, stats[0].first);
  EXPECT_EQ(stats[2].second, stats[0].first - 1) << err;
}

// Reusing the cache gives the conversation a fresh prefill of every turn gives, for an attention
// model and for a hybrid one whose recurrent state goes back to where the generation prompt began.
TEST(ChatCommand, CacheReuseGivesTheSameConversation) {
  ZINC_REQUIRE_TEST_DATA();
  for (const std::string& model : {stories(), data_path("models/qwen35-q4_k_m.gguf")}) {
    std::vector<nlohmann::json> saved;
    for (const char* flag : {"", "--no-cache-reuse"}) {
      const std::string path = temp_path("reuse" + std::to_string(saved.size()) + ".json");
      std::string out, err;
      ASSERT_EQ(chat(model, "Hello there\nAnd then?\nTell me more\n/save " + path + "\n", std::string("-n 8 ") + flag, &out, &err), 0)
          << out << err;
      const auto stats = prompt_stats(err);
      ASSERT_EQ(stats.size(), 3u) << err;
      if (*flag == 0) {
        EXPECT_GT(stats[1].second, 0) << model << ": " << err;
        EXPECT_GT(stats[2].second, stats[1].second) << model << ": " << err;
      } else {
        EXPECT_EQ(stats[2].second, 0) << err;
      }
      saved.push_back(load_json(path));
      ASSERT_EQ(saved.back().size(), 6u) << out << err;
    }
    EXPECT_EQ(saved[0], saved[1]) << model;
  }
}

// A draft model (speculative decoding) gives the same conversation, turn after turn, with the
// cache reused; guesses are checked and kept; a recurrent model refuses one.
TEST(ChatCommand, DraftModelGivesTheSameConversation) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string draft = temp_path("chat-draft-q4_0.gguf");
  std::string out, err;
  ASSERT_EQ(run_command(zinc_binary() + " quantize " + stories() + " " + draft + " Q4_0", &out), 0) << out;
  std::vector<nlohmann::json> saved;
  for (const std::string& flags : {std::string("-n 24"), "-n 24 -md " + draft + " --draft-p-min 0", "-n 24 -md " + stories() + " --draft-max 4"}) {
    const std::string path = temp_path("draft" + std::to_string(saved.size()) + ".json");
    ASSERT_EQ(chat(stories(), "Hello there\nAnd then?\nTell me more\n/save " + path + "\n", flags, &out, &err), 0) << out << err;
    ASSERT_EQ(prompt_stats(err).size(), 3u) << err;
    EXPECT_GT(prompt_stats(err)[2].second, 0) << err;  // the cache was reused
    if (flags.find("-md") != std::string::npos) {
      // Every turn's guesses were checked; the model as its own draft keeps them all, which it
      // does only while the draft's cache follows the conversation's.
      const std::regex re("draft: ([0-9]+) of ([0-9]+) guesses kept");
      int turns = 0;
      for (auto it = std::sregex_iterator(err.begin(), err.end(), re); it != std::sregex_iterator(); ++it, ++turns) {
        EXPECT_GT(std::stoi((*it)[2]), 0) << err;
        if (flags.find(stories()) != std::string::npos) {
          EXPECT_EQ((*it)[1], (*it)[2]) << err;
        }
      }
      EXPECT_EQ(turns, 3) << err;
    }
    saved.push_back(load_json(path));
    ASSERT_EQ(saved.back().size(), 6u) << out << err;
  }
  EXPECT_EQ(saved[1], saved[0]);
  EXPECT_EQ(saved[2], saved[0]);
  EXPECT_EQ(chat(data_path("models/qwen35-q4_k_m.gguf"), "Hi\n", "-md " + data_path("models/qwen35-q4_0.gguf"), &out, &err), 1);
  EXPECT_NE(err.find("speculative decoding needs attention-only models"), std::string::npos) << err;
}

TEST(ChatCommand, SystemPromptThroughTheModelTemplate) {
  ZINC_REQUIRE_TEST_DATA();
  // Gemma's template writes the BOS text (the tokenizer adds BOS: no double BOS) and raises on a
  // system message: the error is reported and the chat goes on.
  const auto source = read_file(data_path("templates/sources/google-gemma-2-2b-it.jinja"));
  const std::string model = stories_with_template("gemma_tmpl", std::string(source.begin(), source.end()));
  const std::string saved = temp_path("gemma.json");
  std::string out, err;
  ASSERT_EQ(chat(model, "/system Be brief.\nHello\n/system\nHello\n/save " + saved + "\n", "-n 8", &out, &err), 0)
      << out << err;
  EXPECT_NE(err.find("error: "), std::string::npos) << err;
  EXPECT_NE(err.find("System role not supported"), std::string::npos) << err;
  const auto j = load_json(saved);
  ASSERT_TRUE(j.is_array()) << out << err;
  ASSERT_EQ(j.size(), 2u) << j.dump();
  EXPECT_EQ(j[0]["content"], "Hello");
  EXPECT_EQ(j[1]["role"], "assistant");
  const auto stats = prompt_stats(err);
  ASSERT_EQ(stats.size(), 1u) << err;

  // The same prompt with a template that accepts a system message grows by the system text.
  const std::string chatml = stories_with_template(
      "chatml_tmpl",
      "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}{% endfor %}"
      "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}");
  ASSERT_EQ(chat(chatml, "Hello\n/reset\n/system Be brief.\nHello\n/save " + saved + "\n", "-n 4", &out, &err), 0)
      << out << err;
  const auto js = load_json(saved);
  ASSERT_EQ(js.size(), 3u) << js.dump();
  EXPECT_EQ(js[0]["role"], "system");
  EXPECT_EQ(js[0]["content"], "Be brief.");
  const auto s = prompt_stats(err);
  ASSERT_EQ(s.size(), 2u) << err;
  EXPECT_GT(s[1].first, s[0].first + 3);
}

TEST(ChatCommand, ReasoningAfterAnOpenThinkTag) {
  ZINC_REQUIRE_TEST_DATA();
  // A template whose generation prompt opens <think> (as Qwen3.5's does): the answer is reasoning.
  const std::string model = stories_with_template(
      "think_tmpl",
      "{% for m in messages %}{{ m['role'] + ': ' + m['content'] + '\n' }}{% endfor %}"
      "{% if add_generation_prompt %}{{ 'assistant: <think>\n' }}{% endif %}");
  const std::string saved = temp_path("think.json");
  std::string out, err;
  ASSERT_EQ(chat(model, "Once upon a time\n/save " + saved + "\n", "-n 12", &out, &err), 0) << out << err;
  const auto j = load_json(saved);
  ASSERT_EQ(j.size(), 2u) << out << err;
  EXPECT_EQ(j[1]["content"], "");
  ASSERT_TRUE(j[1].contains("reasoning_content")) << j.dump();
  const std::string reasoning = j[1]["reasoning_content"];
  EXPECT_FALSE(reasoning.empty());
  EXPECT_NE(out.find("<think>\n" + reasoning), std::string::npos) << out;
}

TEST(ChatCommand, Errors) {
  ZINC_REQUIRE_TEST_DATA();
  std::string out, err;
  EXPECT_EQ(chat(stories(), "/nope\n/save\n", "", &out, &err), 0) << out << err;
  EXPECT_NE(err.find("error: unknown command /nope"), std::string::npos) << err;
  EXPECT_NE(err.find("error: /save needs a file name"), std::string::npos) << err;
  // A conversation longer than the context is refused, and the chat goes on.
  std::string long_text;
  for (int i = 0; i < 40; ++i) long_text += "Once upon a time ";
  EXPECT_EQ(chat(stories(), long_text + "\nHi\n", "-c 64 -n 4", &out, &err), 0) << out << err;
  EXPECT_NE(err.find("the context holds 64"), std::string::npos) << err;
  EXPECT_EQ(prompt_stats(err).size(), 1u) << err;
  EXPECT_EQ(run_command(zinc_binary() + " chat -m /nonexistent.gguf </dev/null", &out), 1) << out;
  EXPECT_EQ(out.rfind("error: ", 0), 0u) << out;
}

}  // namespace
}  // namespace zinc::test
