// zinc run with token ids: greedy decoding reproduces the reference engine's greedy tokens.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/gguf_split.h"
#include "support/test_data.h"

namespace zinc::test {
namespace {

// `zinc run --tokens` of a stories260K manifest case (`flags` added) prints the reference's greedy tokens.
void expect_greedy_stories(const std::string& prompt, const std::string& flags) {
  std::ifstream f(data_path("reference/manifest.json"));
  const auto manifest = nlohmann::json::parse(f);
  for (const auto& c : manifest["cases"]) {
    if (c["model"] != "models/stories260K.gguf" || c["prompt"] != prompt) continue;
    std::string tokens;
    for (int t : c["tokens"]) tokens += (tokens.empty() ? "" : ",") + std::to_string(t);
    const auto greedy = c["greedy"].get<std::vector<int>>();
    std::string out;
    ASSERT_EQ(run_command(zinc_binary() + " run -m " + data_path("models/stories260K.gguf") + " --tokens " + tokens +
                              " -n " + std::to_string(greedy.size()) + " --temp 0 --stop 0 " + flags + " 2>/dev/null",
                          &out),
              0)
        << out;
    std::istringstream in(out);
    std::vector<int> got;
    for (int t; in >> t;) got.push_back(t);
    EXPECT_EQ(got, greedy);
    return;
  }
  FAIL() << "no stories260K " << prompt << " case in the manifest";
}

TEST(RunCommand, GreedyMatchesTheReferenceOnStories) {
  ZINC_REQUIRE_TEST_DATA();
  expect_greedy_stories("p1", "-t 1");
}

// A split model (llama-gguf-split's parts) runs from its first part as the single file does.
TEST(RunCommand, SplitModelGeneratesWhatTheSingleFileDoes) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string prefix = temp_path("stories-split");
  ASSERT_TRUE(write_split(data_path("models/stories260K.gguf"), prefix, 3).ok());
  const std::string args = " --tokens 1,403,407 -n 16 --temp 0 -t 1 2>/dev/null; }";
  std::string single, split;
  ASSERT_EQ(run_command("{ " + zinc_binary() + " run -m " + data_path("models/stories260K.gguf") + args, &single), 0) << single;
  ASSERT_EQ(run_command("{ " + zinc_binary() + " run -m " + split_part_path(prefix, 0, 3) + args, &split), 0) << split;
  EXPECT_EQ(split, single);
  EXPECT_FALSE(single.empty());
}

// The same on the Vulkan executor (lavapipe in CI), with the longer prompt (pages, split attention).
TEST(RunCommand, GreedyMatchesTheReferenceOnStoriesOnVulkan) {
  ZINC_REQUIRE_TEST_DATA();
  std::string devices;
  if (run_command(zinc_binary() + " devices 2>&1", &devices) != 0 || devices.find("no Vulkan") != std::string::npos)
    GTEST_SKIP() << "no Vulkan device";
  expect_greedy_stories("p2", "--backend vulkan");
}

// A text prompt goes through the tokenizer: the prompt of the stories260K p1 case, as text, gives
// the same tokens, so the streamed text is the prompt followed by the reference's greedy tokens.
TEST(RunCommand, TextPromptStreamsTheGreedyStory) {
  ZINC_REQUIRE_TEST_DATA();
  std::ifstream f(data_path("reference/manifest.json"));
  const auto manifest = nlohmann::json::parse(f);
  const std::string model = data_path("models/stories260K.gguf");
  for (const auto& c : manifest["cases"]) {
    if (c["model"] != "models/stories260K.gguf" || c["prompt"] != "p1") continue;
    auto ids = [](const nlohmann::json& a, size_t from) {
      std::string s;
      for (size_t i = from; i < a.size(); ++i) s += " " + std::to_string(a[i].get<int>());
      return s;
    };
    std::string prompt, story;
    ASSERT_EQ(run_command(zinc_binary() + " detokenize -m " + model + ids(c["tokens"], 1), &prompt), 0) << prompt;
    ASSERT_EQ(run_command(zinc_binary() + " detokenize -m " + model + ids(c["tokens"], 1) + ids(c["greedy"], 0), &story),
              0)
        << story;
    while (!prompt.empty() && prompt.back() == '\n') prompt.pop_back();
    while (!story.empty() && story.back() == '\n') story.pop_back();
    ASSERT_EQ(prompt, "Once upon a time, there was a little girl named Lily.");
    std::string out;
    ASSERT_EQ(run_command(zinc_binary() + " run -m " + model + " -p '" + prompt + "' -n " +
                              std::to_string(c["greedy"].size()) + " --temp 0 -t 1 2>/dev/null",
                          &out),
              0)
        << out;
    EXPECT_EQ(out, story + "\n");
    return;
  }
  FAIL() << "no stories260K p1 case in the manifest";
}

TEST(RunCommand, NeedsExactlyOnePrompt) {
  ZINC_REQUIRE_TEST_DATA();
  std::string out;
  EXPECT_EQ(run_command(zinc_binary() + " run -m " + data_path("models/stories260K.gguf"), &out), 1);
  EXPECT_NE(out.find("error: give the prompt"), std::string::npos) << out;
}

// llama.cpp's other sampling flags: DRY changes a greedy answer that repeats itself, mirostat
// and the others run seeded, and bad values are flag errors.
TEST(RunCommand, DryMirostatAndTheOtherSamplers) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string run = zinc_binary() + " run -m " + data_path("models/stories260K.gguf") + " --raw -t 1 -n 30 ";
  std::string plain, dry, dry_again;
  const std::string prompt = "-p 'Lily and Lily and Lily and Lily and' --temp 0 ";
  ASSERT_EQ(run_command(run + prompt + "2>/dev/null", &plain), 0) << plain;
  ASSERT_EQ(run_command(run + prompt + "--dry-multiplier 2 --dry-sequence-breaker none 2>/dev/null", &dry), 0) << dry;
  EXPECT_NE(dry, plain);
  ASSERT_EQ(run_command(run + prompt + "--dry-multiplier 2 --dry-sequence-breaker none 2>/dev/null", &dry_again), 0);
  EXPECT_EQ(dry, dry_again);
  for (const char* flags : {"--mirostat 1", "--mirostat 2 --mirostat-ent 3 --mirostat-lr 0.2", "--typical 0.9 --xtc-probability 0.5",
                            "--top-nsigma 1.5 --dynatemp-range 0.5 --dynatemp-exp 2"}) {
    std::string a, b;
    const std::string cmd = run + "-p 'Once upon a time' --temp 1 -s 9 " + flags + " 2>/dev/null";
    ASSERT_EQ(run_command(cmd, &a), 0) << flags << ": " << a;
    ASSERT_EQ(run_command(cmd, &b), 0);
    EXPECT_EQ(a, b) << flags;  // seeded
    EXPECT_EQ(a.rfind("Once upon a time", 0), 0u) << a;
  }
  std::string out;
  EXPECT_EQ(run_command(run + "-p x --mirostat 3 2>&1", &out), 2) << out;
  EXPECT_NE(out.find("--mirostat"), std::string::npos) << out;
}

// --json-schema holds the continuation to a document of the schema, sampled or greedy, on the
// CPU and on Vulkan (which then samples on the host); bad schemas are one-line errors.
TEST(RunCommand, JsonSchemaHoldsTheOutput) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string model = data_path("models/stories260K.gguf");
  const std::string schema = R"({"type":"object","properties":{"name":{"type":"string","maxLength":8},)"
                             R"("age":{"type":"integer","minimum":0,"maximum":99},"kind":{"enum":["cat","dog"]}},)"
                             R"("required":["name","age","kind"]})";
  std::string devices;
  const bool vulkan = run_command(zinc_binary() + " devices 2>&1", &devices) == 0 && devices.find("no Vulkan") == std::string::npos;
  for (const std::string& flags : std::vector<std::string>{"--temp 0.8 --seed 3", "--temp 0", vulkan ? "--temp 0 --backend vulkan" : ""}) {
    if (flags.empty()) continue;
    std::string out;
    ASSERT_EQ(run_command(zinc_binary() + " run -m " + model + " -p 'Once upon a time' -n 120 " + flags + " --json-schema '" + schema +
                              "' 2>/dev/null", &out), 0) << out;
    ASSERT_EQ(out.rfind("Once upon a time", 0), 0u) << out;
    const auto doc = nlohmann::json::parse(out.substr(16), nullptr, false);
    ASSERT_TRUE(doc.is_object()) << out;
    EXPECT_TRUE(doc["name"].is_string()) << out;
    EXPECT_TRUE(doc["age"].is_number_integer() && doc["age"] >= 0 && doc["age"] <= 99) << out;
    EXPECT_TRUE(doc["kind"] == "cat" || doc["kind"] == "dog") << out;
  }
  std::string out;
  EXPECT_EQ(run_command(zinc_binary() + " run -m " + model + " -p x --json-schema '{\"type\":\"string\"}' 2>&1", &out), 1);
  EXPECT_EQ(out.rfind("error: --json-schema: ", 0), 0u) << out;
  EXPECT_EQ(run_command(zinc_binary() + " run -m " + model + " -p x --json-schema '{' 2>&1", &out), 1);
  EXPECT_EQ(run_command(zinc_binary() + " run -m " + model + " -p x --json-schema-file /nonexistent.json 2>&1", &out), 1);
  EXPECT_NE(out.find("cannot open"), std::string::npos) << out;
}

// --grammar / --grammar-file hold the continuation to a GBNF grammar's language; bad grammars
// and clashing flags are one-line errors.
TEST(RunCommand, GrammarHoldsTheOutput) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string model = data_path("models/stories260K.gguf");
  const std::string grammar = R"(root ::= "The " animal " is " color ".")" "\n" R"(animal ::= "cat" | "dog" | "bird")" "\n"
                              R"(color ::= [a-z]{2,8})";
  for (const std::string& flags : std::vector<std::string>{"--temp 0.9 --seed 5", "--temp 0"}) {
    std::string out;
    ASSERT_EQ(run_command(zinc_binary() + " run -m " + model + " -p 'Once upon a time' -n 40 " + flags + " --grammar '" + grammar +
                              "' 2>/dev/null", &out), 0) << out;
    ASSERT_EQ(out.rfind("Once upon a time", 0), 0u) << out;
    const std::string text = out.substr(16);
    EXPECT_TRUE(std::regex_match(text, std::regex("The (cat|dog|bird) is [a-z]{2,8}\\.\n?"))) << text;
  }
  const std::string file = ::testing::TempDir() + "/zinc_run_grammar.gbnf";
  {
    std::ofstream f(file);
    f << "root ::= [0-9]{1,3} \" apples\"\n";
  }
  std::string out;
  ASSERT_EQ(run_command(zinc_binary() + " run -m " + model + " -p 'Count' -n 30 --temp 0 --grammar-file " + file + " 2>/dev/null", &out), 0);
  EXPECT_TRUE(std::regex_match(out.substr(5), std::regex("[0-9]{1,3} apples\n?"))) << out;
  EXPECT_EQ(run_command(zinc_binary() + " run -m " + model + " -p x --grammar 'root ::= item' 2>&1", &out), 1);
  EXPECT_EQ(out, "error: --grammar: grammar: rule 'item' is used but not defined\n");
  EXPECT_EQ(run_command(zinc_binary() + " run -m " + model + " -p x --grammar 'root ::= \"a\"' --json-schema '{\"type\":\"object\"}' 2>&1", &out), 1);
  EXPECT_NE(out.find("not both"), std::string::npos) << out;
  EXPECT_EQ(run_command(zinc_binary() + " run -m " + model + " -p x --grammar-file /nonexistent.gbnf 2>&1", &out), 1);
  EXPECT_NE(out.find("cannot open"), std::string::npos) << out;
  // Token references resolve against the model's vocabulary: <s> (a control token, no text), an id.
  ASSERT_EQ(run_command(zinc_binary() + " run -m " + model + " -p 'Once upon a time' -n 10 --temp 0 --grammar 'root ::= \"ok\" <s> \" x\"' 2>/dev/null",
                        &out), 0);
  EXPECT_TRUE(std::regex_match(out, std::regex("Once upon a timeok x\n?"))) << out;
  EXPECT_EQ(run_command(zinc_binary() + " run -m " + model + " -p x --grammar 'root ::= <[99999]>' 2>&1", &out), 1);
  EXPECT_EQ(out, "error: --grammar: grammar line 1: token id 99999 is not in the vocabulary (512 tokens)\n");
}

}  // namespace
}  // namespace zinc::test
