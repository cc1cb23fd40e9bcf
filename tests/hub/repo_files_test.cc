// Which file a repository reference picks, and what a tree listing may hold.
#include "hub/repo_files.h"

#include <gtest/gtest.h>

namespace zinc::hub {
namespace {

std::vector<RepoFile> files(std::initializer_list<const char*> paths) {
  std::vector<RepoFile> out;
  for (const char* p : paths) out.push_back({p, std::string(64, 'a'), 10, true});
  return out;
}

std::string pick(const std::vector<RepoFile>& fs, const std::string& ref, const std::string& file = "") {
  auto r = parse_repo_ref(ref);
  EXPECT_TRUE(r.ok()) << r.status().message();
  auto f = pick_model_files(fs, *r, file);
  if (!f.ok()) return "error: " + f.status().message();
  std::string paths;
  for (const RepoFile& p : *f) paths += (paths.empty() ? "" : " ") + p.path;
  return paths;
}

TEST(RepoRef, ParsesOwnerNameAndTag) {
  auto r = parse_repo_ref("Qwen/Qwen3-8B-GGUF:q4_k_m");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->repo, "Qwen/Qwen3-8B-GGUF");
  EXPECT_EQ(r->tag, "q4_k_m");
  r = parse_repo_ref("unsloth/gemma-3-1b-it-GGUF");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tag, "");
}

TEST(RepoRef, RejectsWhatIsNotARepository) {
  for (const char* bad : {"", "model", "a/b/c", "/a", "a/", "a//b", "a/../b", "a/b:", "a/b:Q4 K", "a b/c", "a/b:../x", "a/.b"}) {
    auto r = parse_repo_ref(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
}

TEST(PickModelFile, TakesTheTaggedQuantizationCaseInsensitively) {
  const auto fs = files({"README.md", "m-Q8_0.gguf", "m-Q4_K_M.gguf", "m.IQ4_XS.gguf", "mmproj-m-f16.gguf"});
  EXPECT_EQ(pick(fs, "o/m:q8_0"), "m-Q8_0.gguf");
  EXPECT_EQ(pick(fs, "o/m:IQ4_XS"), "m.IQ4_XS.gguf");
  EXPECT_EQ(pick(fs, "o/m:Q4_K_M"), "m-Q4_K_M.gguf");
  // A tag matches where the name has it whole: Q4_K is not Q4_K_M's prefix here.
  EXPECT_NE(pick(fs, "o/m:Q4_K").find("error: o/m has no GGUF model file tagged Q4_K"), std::string::npos);
}

TEST(PickModelFile, DefaultsToQ4KMThenQ8ThenTheFirstModel) {
  EXPECT_EQ(pick(files({"m-Q8_0.gguf", "m-Q4_K_M.gguf"}), "o/m"), "m-Q4_K_M.gguf");
  EXPECT_EQ(pick(files({"m-F16.gguf", "m-Q8_0.gguf"}), "o/m"), "m-Q8_0.gguf");
  EXPECT_EQ(pick(files({"mmproj-F16.gguf", "x.imatrix.gguf", "m-F16.gguf"}), "o/m"), "m-F16.gguf");
}

TEST(PickModelFile, AnExplicitFileAndWhatIsMissing) {
  const auto fs = files({"a/m-Q8_0.gguf", "m-Q4_K_M.gguf"});
  EXPECT_EQ(pick(fs, "o/m", "a/m-Q8_0.gguf"), "a/m-Q8_0.gguf");
  const std::string missing = pick(fs, "o/m", "m-Q2_K.gguf");
  EXPECT_NE(missing.find("no file 'm-Q2_K.gguf'"), std::string::npos) << missing;
  EXPECT_NE(missing.find("a/m-Q8_0.gguf, m-Q4_K_M.gguf"), std::string::npos) << missing;
  EXPECT_NE(pick(files({"README.md"}), "o/m").find("no GGUF model file (GGUF files there: none)"), std::string::npos);
}

TEST(PickModelFile, SplitModelsComeWithAllTheirParts) {
  const auto s = split_info("Q8_0/m-Q8_0-00002-of-00003.gguf");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(s.prefix, "Q8_0/m-Q8_0");
  EXPECT_EQ(split_info("m-Q8_0.gguf").count, 1);
  EXPECT_EQ(split_info("m-00004-of-00003.gguf").count, 1);  // not a part: the index is past the count
  const auto fs = files({"Q8_0/m-Q8_0-00002-of-00003.gguf", "Q8_0/m-Q8_0-00001-of-00003.gguf", "Q8_0/m-Q8_0-00003-of-00003.gguf",
                         "Q4_K_M/m-Q4_K_M-00001-of-00002.gguf"});
  EXPECT_EQ(pick(fs, "o/m:Q8_0"), "Q8_0/m-Q8_0-00001-of-00003.gguf Q8_0/m-Q8_0-00002-of-00003.gguf Q8_0/m-Q8_0-00003-of-00003.gguf");
  const std::string missing = pick(fs, "o/m:Q4_K_M");
  EXPECT_NE(missing.find("part 2 of the 2 of Q4_K_M/m-Q4_K_M-00001-of-00002.gguf is not in the repository"), std::string::npos) << missing;
  const std::string later = pick(fs, "o/m", "Q8_0/m-Q8_0-00002-of-00003.gguf");
  EXPECT_NE(later.find("is part 2 of 3 of a split model"), std::string::npos) << later;
}

TEST(QuantTag, TheQuantizationAtTheEndOfTheName) {
  EXPECT_EQ(quant_tag("Qwen3-8B-Q4_K_M.gguf"), "Q4_K_M");
  EXPECT_EQ(quant_tag("sub/model.q8_0.gguf"), "Q8_0");
  EXPECT_EQ(quant_tag("BF16/m-BF16-00001-of-00002.gguf"), "BF16");
  EXPECT_EQ(quant_tag("model.gguf"), "");
  EXPECT_EQ(quant_tag("my-model.gguf"), "");  // no digit: not a quantization
  EXPECT_EQ(quant_tag("README.md"), "");
}

TEST(ParseTree, ReadsFilesAndTheirLfsHashes) {
  const auto listing = nlohmann::json::parse(R"([
    {"type":"directory","oid":"1111111111111111111111111111111111111111","size":0,"path":"sub"},
    {"type":"file","oid":"2222222222222222222222222222222222222222","size":12,"path":"README.md"},
    {"type":"file","oid":"3333333333333333333333333333333333333333","size":134,"path":"sub/m.gguf",
     "lfs":{"oid":"4444444444444444444444444444444444444444444444444444444444444444","size":99999,"pointerSize":134}}])");
  auto fs = parse_tree(listing);
  ASSERT_TRUE(fs.ok()) << fs.status().message();
  ASSERT_EQ(fs->size(), 2u);
  EXPECT_FALSE((*fs)[0].lfs);
  EXPECT_EQ((*fs)[1].path, "sub/m.gguf");
  EXPECT_TRUE((*fs)[1].lfs);
  EXPECT_EQ((*fs)[1].size, 99999);
  EXPECT_EQ((*fs)[1].oid, std::string(64, '4'));
}

TEST(ParseTree, RefusesPathsThatLeaveTheSnapshotAndBadHashes) {
  for (const char* path : {"../x.gguf", "/etc/passwd", "a/../../x", "a//b", "a\\b", ""}) {
    nlohmann::json listing = nlohmann::json::array({{{"type", "file"}, {"oid", std::string(40, 'a')}, {"size", 1}, {"path", path}}});
    EXPECT_FALSE(parse_tree(listing).ok()) << path;
  }
  nlohmann::json bad_oid = nlohmann::json::array({{{"type", "file"}, {"size", 1}, {"path", "m.gguf"}, {"lfs", {{"oid", "../x"}, {"size", 1}}}}});
  EXPECT_FALSE(parse_tree(bad_oid).ok());
  EXPECT_FALSE(parse_tree(nlohmann::json::object()).ok());
}

}  // namespace
}  // namespace zinc::hub
