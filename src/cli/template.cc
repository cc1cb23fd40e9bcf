// zinc template (-m MODEL | --template FILE.jinja) --case CASE.json: prints the rendered prompt,
// exactly (no newline added).
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "chat/render_case.h"
#include "chat/template.h"
#include "cli/command.h"
#include "gguf/file.h"

namespace zinc::cli {
namespace {

struct TemplateOptions {
  std::string model;
  std::string template_file;
  std::string case_file;
  std::string variant;
};

// One line for the terminal: a template's message may hold newlines.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

int run(const TemplateOptions& o) {
  std::string source, bos = "<s>", eos = "</s>", origin;
  if (!o.model.empty()) {
    auto file = gguf::open_file(o.model);
    if (!file.ok()) return fail(file.status().message());
    auto t = chat::model_template(**file, o.variant);
    if (!t.ok()) return fail(o.model + ": " + t.status().message());
    source = std::move(t->source);
    if (!t->bos_token.empty()) bos = t->bos_token;
    if (!t->eos_token.empty()) eos = t->eos_token;
    origin = o.model;
  } else {
    auto text = read_text(o.template_file);
    if (!text.ok()) return fail(text.status().message());
    source = std::move(*text);
    origin = o.template_file;
  }
  auto case_text = read_text(o.case_file);
  if (!case_text.ok()) return fail(case_text.status().message());
  auto case_json = nlohmann::ordered_json::parse(*case_text, nullptr, false);
  if (case_json.is_discarded()) return fail(o.case_file + ": not valid JSON");
  auto render_case = chat::render_case_from_json(case_json, bos, eos);
  if (!render_case.ok()) return fail(o.case_file + ": " + render_case.status().message());

  auto tmpl = chat::Template::parse(source);
  if (!tmpl.ok()) return fail(one_line(origin + ": " + tmpl.status().message()));
  auto prompt = tmpl->render(render_case->context, render_case->options);
  if (!prompt.ok()) return fail(one_line(origin + ": " + prompt.status().message()));
  std::fwrite(prompt->data(), 1, prompt->size(), stdout);
  return 0;
}

ZINC_REGISTER_COMMAND(template, Command{"template", "Render a chat template (a model's or a .jinja file) for a conversation",
                                        [](CLI::App& sub) {
                                          auto o = std::make_shared<TemplateOptions>();
                                          auto* source = sub.add_option_group("template source");
                                          auto* model = source->add_option("-m,--model", o->model, "GGUF model whose tokenizer.chat_template to use");
                                          source->add_option("--template", o->template_file, "Jinja template file");
                                          source->require_option(1);
                                          sub.add_option("--variant", o->variant, "Named template of the model (tokenizer.chat_template.<name>, e.g. tool_use)")->needs(model);
                                          sub.add_option("--case", o->case_file, "JSON: messages, tools, add_generation_prompt, context, bos_token, eos_token, now")->required();
                                          return [o]() -> int { return run(*o); };
                                        }});

}  // namespace
}  // namespace zinc::cli
