// zinc template: prints the rendering exactly, fails with one line naming the template line,
// reads a model's own template, and rejects bad command lines with exit code 2.
#include <gtest/gtest.h>

#include <string>

#include "gguf/writer.h"
#include "support/test_data.h"

namespace zinc {
namespace {

std::string read_text(const std::string& path) {
  auto bytes = test::read_file(path);
  return std::string(bytes.begin(), bytes.end());
}

std::string write_case(const std::string& name, const std::string& json) {
  std::string path = test::temp_path(name);
  test::write_file(path, json.data(), json.size());
  return path;
}

const char* kSingleUser = R"({"messages": [{"role": "user", "content": "Hello!"}], "add_generation_prompt": true,
                              "now": "2026-01-15T09:30:00"})";

TEST(TemplateCommand, PrintsTheRenderingExactly) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string case_path = write_case("single_user.json", kSingleUser);
  for (const char* name : {"Qwen-Qwen2.5-7B-Instruct", "meta-llama-Llama-3.2-3B-Instruct"}) {
    std::string out;
    const std::string cmd = test::zinc_binary() + " template --template " +
                            test::data_path(std::string("templates/sources/") + name + ".jinja") + " --case " + case_path;
    ASSERT_EQ(test::run_command(cmd + " 2>/dev/null", &out), 0) << out;
    EXPECT_EQ(out, read_text(test::data_path(std::string("templates/expected/") + name + "/single_user.txt")));
  }
}

TEST(TemplateCommand, RaisedErrorIsOneLine) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string case_path = write_case("system.json", R"({"messages": [{"role": "system", "content": "S"},
                                                                {"role": "user", "content": "U"}]})");
  const std::string tmpl = test::data_path("templates/sources/google-gemma-2-2b-it.jinja");
  std::string out;
  EXPECT_EQ(test::run_command(test::zinc_binary() + " template --template " + tmpl + " --case " + case_path, &out), 1);
  EXPECT_EQ(out, "error: " + tmpl + ": line 1: System role not supported\n");
}

TEST(TemplateCommand, MultiLineMessagesPrintOnOneLine) {
  const std::string tmpl = write_case("raise.jinja", "\n{{ raise_exception('first\\nsecond') }}");
  const std::string case_path = write_case("empty.json", R"({"messages": []})");
  std::string out;
  EXPECT_EQ(test::run_command(test::zinc_binary() + " template --template " + tmpl + " --case " + case_path, &out), 1);
  EXPECT_EQ(out, "error: " + tmpl + ": line 2: first second\n");
}

TEST(TemplateCommand, UsesTheModelsTemplateAndTokens) {
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::string("llama"));
  w.set("tokenizer.ggml.tokens", gguf::Value::string_array({"<unk>", "<B>", "<E>"}));
  w.set("tokenizer.ggml.bos_token_id", gguf::Value::u32(1));
  w.set("tokenizer.ggml.eos_token_id", gguf::Value::u32(2));
  w.set("tokenizer.chat_template",
        gguf::Value::string("{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
                            "{% if add_generation_prompt %}assistant:{% endif %}{{ eos_token }}"));
  const std::string model = test::temp_path("templated.gguf");
  ASSERT_TRUE(w.write(model).ok());
  const std::string case_path = write_case("model_case.json", kSingleUser);
  std::string out;
  ASSERT_EQ(test::run_command(test::zinc_binary() + " template -m " + model + " --case " + case_path, &out), 0) << out;
  EXPECT_EQ(out, "<B>user: Hello!\nassistant:<E>");

  ASSERT_EQ(test::run_command(test::zinc_binary() + " template -m " + model + " --variant tool_use --case " + case_path, &out), 1);
  EXPECT_EQ(out, "error: " + model + ": the model has no tokenizer.chat_template.tool_use\n");
}

TEST(TemplateCommand, BadInputs) {
  const std::string tmpl = write_case("ok.jinja", "{{ messages|length }}");
  const std::string good = write_case("good.json", kSingleUser);
  const std::string bad_json = write_case("bad.json", "{not json");
  const std::string no_messages = write_case("nomsg.json", "{}");
  const std::string zinc = test::zinc_binary() + " template ";
  std::string out;
  EXPECT_EQ(test::run_command(zinc + "--template " + tmpl + " --case " + good, &out), 0);
  EXPECT_EQ(out, "1");
  EXPECT_EQ(test::run_command(zinc + "--template " + tmpl + " --case " + bad_json, &out), 1);
  EXPECT_EQ(out, "error: " + bad_json + ": not valid JSON\n");
  EXPECT_EQ(test::run_command(zinc + "--template " + tmpl + " --case " + no_messages, &out), 1);
  EXPECT_EQ(out, "error: " + no_messages + ": a case needs \"messages\": an array\n");
  EXPECT_EQ(test::run_command(zinc + "--template /nonexistent.jinja --case " + good, &out), 1);
  EXPECT_EQ(out, "error: /nonexistent.jinja: cannot open\n");
  const std::string broken = write_case("broken.jinja", "{% for x in y %}");
  EXPECT_EQ(test::run_command(zinc + "--template " + broken + " --case " + good, &out), 1);
  EXPECT_EQ(out, "error: " + broken +
                     ": line 1: unexpected end of template; expected 'endfor' or 'else' to close the 'for' block from line 1\n");
  // Command-line mistakes exit 2.
  EXPECT_EQ(test::run_command(zinc + "--case " + good, &out), 2);
  EXPECT_EQ(test::run_command(zinc + "--template " + tmpl + " -m x.gguf --case " + good, &out), 2);
  EXPECT_EQ(test::run_command(zinc + "--template " + tmpl, &out), 2);
}

}  // namespace
}  // namespace zinc
