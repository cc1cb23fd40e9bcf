// zinc serve's command line (bad flags, a missing model, SIGTERM shutdown) and zinc run with a
// model that has a chat template (the prompt becomes a user turn; --raw keeps it as is).
#include <gtest/gtest.h>

#include <string>

#include "model/gguf_edit.h"
#include "support/test_data.h"

namespace zinc::test {
namespace {

TEST(ServeCommand, BadInputFailsWithOneLine) {
  ZINC_REQUIRE_TEST_DATA();
  std::string out;
  EXPECT_EQ(run_command(zinc_binary() + " serve -m " + data_path("models/stories260K.gguf") + " --parallel x 2>&1", &out), 2) << out;
  EXPECT_EQ(run_command(zinc_binary() + " serve -m /nonexistent.gguf 2>&1", &out), 1) << out;
  EXPECT_EQ(out.rfind("error: ", 0), 0u) << out;
  EXPECT_EQ(run_command(zinc_binary() + " serve -m " + data_path("models/stories260K.gguf") + " --parallel 0 2>&1", &out), 1) << out;
  EXPECT_EQ(run_command(zinc_binary() + " serve -m " + data_path("models/stories260K.gguf") +
                            " --chat-template-file /nonexistent.jinja 2>&1", &out), 1) << out;
  // A device that is not there: on a machine with Vulkan, named; without, the backend is missing.
  EXPECT_EQ(run_command(zinc_binary() + " serve -m " + data_path("models/stories260K.gguf") + " --backend vulkan --device 99 2>&1", &out), 1)
      << out;
  EXPECT_NE(out.find("error: "), std::string::npos) << out;
  EXPECT_EQ(run_command(zinc_binary() + " serve -m " + data_path("models/stories260K.gguf") + " --device x 2>&1", &out), 2) << out;
  EXPECT_EQ(run_command(zinc_binary() + " serve -m " + data_path("models/stories260K.gguf") + " --pooling max 2>&1", &out), 1) << out;
  EXPECT_NE(out.find("--pooling"), std::string::npos) << out;
  EXPECT_EQ(run_command(zinc_binary() + " serve -m " + data_path("models/stories260K.gguf") + " --cache-ram -1 2>&1", &out), 1) << out;
  EXPECT_NE(out.find("--cache-ram"), std::string::npos) << out;
  EXPECT_EQ(run_command(zinc_binary() + " serve -m " + data_path("models/stories260K.gguf") + " --responses-store -5 2>&1", &out), 1) << out;
  EXPECT_NE(out.find("--responses-store"), std::string::npos) << out;
  EXPECT_EQ(run_command(zinc_binary() + " --version", &out), 0) << out;
  EXPECT_EQ(out.rfind("zinc ", 0), 0u) << out;
}

TEST(ServeCommand, StopsCleanlyOnSigterm) {
  ZINC_REQUIRE_TEST_DATA();
  std::string out;
  // Port 0: any free port; the server prints where it listens, then SIGTERM ends it with status 0.
  const std::string log = temp_path("serve.log");
  const std::string cmd = zinc_binary() + " serve -m " + data_path("models/stories260K.gguf") + " --port 0 -t 1 >" + log +
                          " 2>&1 & pid=$!; for i in $(seq 300); do grep -q serving " + log +
                          " && break; sleep 0.1; done; kill -TERM $pid; wait $pid; s=$?; cat " + log + "; exit $s";
  EXPECT_EQ(run_command("sh -c '" + cmd + "'", &out), 0) << out;
  EXPECT_NE(out.find("serving stories260K on http://127.0.0.1:"), std::string::npos) << out;
  EXPECT_NE(out.find("SIGTERM, shutting down"), std::string::npos) << out;
}

TEST(RunCommand, ChatTemplateMakesThePromptAUserTurn) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string model = temp_path("stories-chat.gguf");
  GgufEdits e;
  e.set_keys.push_back({"tokenizer.chat_template",
                        gguf::Value::string("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}assistant:")});
  ASSERT_TRUE(copy_gguf(data_path("models/stories260K.gguf"), model, e).ok());
  std::string chat, raw;
  ASSERT_EQ(run_command(zinc_binary() + " run -m " + model + " -p 'Once upon a time' -n 8 --temp 0 -t 1 2>/dev/null", &chat), 0) << chat;
  ASSERT_EQ(run_command(zinc_binary() + " run -m " + model + " --raw -p 'Once upon a time' -n 8 --temp 0 -t 1 2>/dev/null", &raw), 0) << raw;
  EXPECT_EQ(raw.rfind("Once upon a time", 0), 0u) << raw;   // raw: the prompt, then its continuation
  EXPECT_NE(chat.rfind("Once upon a time", 0), 0u) << chat;  // chat: only the reply
  EXPECT_NE(chat, raw);
}

}  // namespace
}  // namespace zinc::test
