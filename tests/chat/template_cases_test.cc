// Every (template, case) pair of shared/templates: the rendering must match the reference Jinja2
// output byte for byte, and a case the reference rejected must fail with the same message.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "chat/render_case.h"
#include "chat/template.h"
#include "support/test_data.h"

namespace zinc::chat {
namespace {

using nlohmann::ordered_json;

struct SharedCase {
  std::string template_name;  // without .jinja
  std::string case_name;
  bool expect_error = false;
};

std::string read_text(const std::string& path) {
  auto bytes = test::read_file(path);
  return std::string(bytes.begin(), bytes.end());
}

void PrintTo(const SharedCase& c, std::ostream* os) { *os << c.template_name << " / " << c.case_name; }

std::vector<SharedCase> load_manifest() {
  std::vector<SharedCase> cases;
  if (!test::data_available()) return cases;
  auto manifest = ordered_json::parse(read_text(test::data_path("templates/expected/manifest.json")));
  for (const auto& entry : manifest) {
    std::string name = entry["template"].get<std::string>();
    name = name.substr(0, name.size() - 6);  // ".jinja"
    cases.push_back({name, entry["case"].get<std::string>(), entry["outcome"].get<std::string>() == "error"});
  }
  return cases;
}

std::string test_name(const testing::TestParamInfo<SharedCase>& info) {
  std::string s = info.param.template_name + "__" + info.param.case_name;
  for (char& c : s)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

// Where two strings first differ, shown with some context.
std::string first_difference(const std::string& got, const std::string& want) {
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  size_t from = i > 40 ? i - 40 : 0;
  return "first difference at byte " + std::to_string(i) + "\n  got:  " + ordered_json(got.substr(from, 100)).dump() +
         "\n  want: " + ordered_json(want.substr(from, 100)).dump();
}

class SharedTemplateCase : public testing::TestWithParam<SharedCase> {};

TEST_P(SharedTemplateCase, MatchesReference) {
  ZINC_REQUIRE_TEST_DATA();
  const SharedCase& c = GetParam();
  const std::string source = read_text(test::data_path("templates/sources/" + c.template_name + ".jinja"));
  ordered_json case_json;
  for (const auto& entry : ordered_json::parse(read_text(test::data_path("templates/cases.json"))))
    if (entry["name"] == c.case_name) case_json = entry;
  ASSERT_TRUE(case_json.is_object()) << "no case " << c.case_name;

  auto tmpl = Template::parse(source);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().message();
  auto render_case = render_case_from_json(case_json);
  ASSERT_TRUE(render_case.ok()) << render_case.status().message();
  auto out = tmpl->render(render_case->context, render_case->options);

  const std::string expected_dir = test::data_path("templates/expected/" + c.template_name + "/" + c.case_name);
  if (c.expect_error) {
    ASSERT_FALSE(out.ok()) << "rendered instead of failing:\n" << *out;
    std::string expected = read_text(expected_dir + ".error");
    const std::string prefix = "TemplateError: ";
    if (expected.rfind(prefix, 0) == 0) expected = expected.substr(prefix.size());
    while (!expected.empty() && expected.back() == '\n') expected.pop_back();
    EXPECT_NE(out.status().message().find(expected), std::string::npos) << out.status().message();
    EXPECT_EQ(out.status().message().rfind("line ", 0), 0u) << "errors name the template line";
  } else {
    ASSERT_TRUE(out.ok()) << out.status().message();
    const std::string expected = read_text(expected_dir + ".txt");
    EXPECT_TRUE(*out == expected) << first_difference(*out, expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, SharedTemplateCase, testing::ValuesIn(load_manifest()), test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SharedTemplateCase);

TEST(SharedTemplateCases, AllPresent) {
  ZINC_REQUIRE_TEST_DATA();
  auto cases = load_manifest();
  EXPECT_EQ(cases.size(), 144u);
  size_t errors = 0;
  for (const auto& c : cases) errors += c.expect_error;
  EXPECT_EQ(errors, 6u);
}

}  // namespace
}  // namespace zinc::chat
