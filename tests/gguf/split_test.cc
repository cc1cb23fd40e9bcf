// Split models (llama-gguf-split's NAME-0000i-of-0000N.gguf): opening the first part lists every
// part's tensors with their bytes; parts that are missing, misnumbered, overlapping or miscounted,
// and opening a later part, are errors that say which.
#include <gtest/gtest.h>

#include <filesystem>

#include "gguf/file.h"
#include "support/gguf_split.h"
#include "support/test_data.h"

namespace zinc::gguf {
namespace {

const char* kModel = "models/stories260K.gguf";

std::string message(const std::string& path) {
  auto f = open_file(path);
  return f.ok() ? "opened" : f.status().message();
}

TEST(SplitModel, TheFirstPartOpensEveryTensor) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string prefix = test::temp_path("split3");
  ASSERT_TRUE(test::write_split(test::data_path(kModel), prefix, 3).ok());
  auto whole = open_file(test::data_path(kModel));
  auto split = open_file(test::split_part_path(prefix, 0, 3));
  ASSERT_TRUE(whole.ok() && split.ok()) << split.status().message();
  EXPECT_EQ((*split)->n_parts(), 3u);
  EXPECT_EQ((*split)->part_path(2), test::split_part_path(prefix, 2, 3));
  ASSERT_EQ((*split)->tensors().size(), (*whole)->tensors().size());
  std::vector<int> per_part(3, 0);
  for (const TensorInfo& t : (*whole)->tensors()) {
    const TensorInfo* s = (*split)->find_tensor(t.name);
    ASSERT_NE(s, nullptr) << t.name;
    EXPECT_EQ(s->type, t.type);
    EXPECT_EQ(s->ne, t.ne);
    ASSERT_EQ(s->size_bytes, t.size_bytes);
    EXPECT_TRUE(std::equal(t.data, t.data + t.size_bytes, s->data)) << t.name;
    const auto part = (*split)->part_bytes(s->part);
    EXPECT_TRUE(s->data >= part.data() && s->data + s->size_bytes <= part.data() + part.size()) << t.name;
    ++per_part[s->part];
  }
  for (int n : per_part) EXPECT_GT(n, 0);
  EXPECT_EQ((*split)->architecture(), (*whole)->architecture());
}

TEST(SplitModel, BrokenSplitsAreNamed) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string model = test::data_path(kModel);
  const std::string a = test::temp_path("later");
  ASSERT_TRUE(test::write_split(model, a, 3).ok());
  EXPECT_NE(message(test::split_part_path(a, 1, 3)).find("this is part 2 of 3 of a split model: open the first part"), std::string::npos)
      << message(test::split_part_path(a, 1, 3));
  std::filesystem::remove(test::split_part_path(a, 2, 3));
  EXPECT_NE(message(test::split_part_path(a, 0, 3)).find(test::split_part_path(a, 2, 3) + ": cannot open"), std::string::npos)
      << message(test::split_part_path(a, 0, 3));

  const std::string b = test::temp_path("misnumbered");
  ASSERT_TRUE(test::write_split(model, b, 3, [](int i, Writer& w) {
                if (i == 2) w.set("split.no", Value::u16(1));
              }).ok());
  EXPECT_NE(message(test::split_part_path(b, 0, 3)).find("part 2 of 3, not part 3 of 3"), std::string::npos) << message(test::split_part_path(b, 0, 3));

  const std::string c = test::temp_path("overlap");
  ASSERT_TRUE(test::write_split(model, c, 2, [](int i, Writer& w) {
                if (i == 1) (void)w.add_tensor("token_embd.weight", TensorType::F32, {4}, [](std::span<uint8_t>) { return ok_status(); });
              }).ok());
  EXPECT_NE(message(test::split_part_path(c, 0, 2)).find("tensor 'token_embd.weight' is in an earlier part too"), std::string::npos)
      << message(test::split_part_path(c, 0, 2));

  const std::string d = test::temp_path("miscounted");
  ASSERT_TRUE(test::write_split(model, d, 2, [](int i, Writer& w) {
                if (i == 0) w.set("split.tensors.count", Value::i32(3));
              }).ok());
  EXPECT_NE(message(test::split_part_path(d, 0, 2)).find("split.tensors.count says 3 tensors"), std::string::npos) << message(test::split_part_path(d, 0, 2));

  // A first part renamed: its siblings cannot be found.
  const std::string renamed = test::temp_path("renamed.gguf");
  std::filesystem::copy_file(test::split_part_path(d, 0, 2), renamed);
  EXPECT_NE(message(renamed).find("must be named NAME-00001-of-00002.gguf"), std::string::npos) << message(renamed);
}

}  // namespace
}  // namespace zinc::gguf
