// zinc tokenize -m MODEL [--add-special] [--parse-special] [--json] (TEXT | -f FILE): token ids.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>

#include "cli/command.h"
#include "gguf/file.h"
#include "tokenizer/tokenizer.h"

namespace zinc::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string file;
  bool add_special = false;
  bool parse_special = false;
  bool json = false;
};

bool read_input(const std::string& path, std::string* out) {
  if (path == "-") {
    out->assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    return true;
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return !f.bad();
}

int run(const TokenizeOptions& o, bool have_text) {
  std::string input;
  if (!o.file.empty()) {
    if (!read_input(o.file, &input)) return fail("cannot read " + o.file);
  } else if (have_text) {
    input = o.text;
  } else {
    std::fprintf(stderr, "error: give the text to tokenize, or -f FILE (see zinc tokenize --help)\n");
    return 2;
  }
  auto file = gguf::open_file(o.model);
  if (!file.ok()) return fail(file.status().message());
  auto tok = tokenizer::Tokenizer::load(**file);
  if (!tok.ok()) return fail(o.model + ": " + tok.status().message());
  std::vector<int32_t> ids = (*tok)->encode(input, o.add_special, o.parse_special);
  std::string line = o.json ? "[" : "";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line += o.json ? "," : " ";
    line += std::to_string(ids[i]);
  }
  if (o.json) line += "]";
  std::printf("%s\n", line.c_str());
  return 0;
}

ZINC_REGISTER_COMMAND(tokenize, Command{"tokenize", "Print the token ids of a text",
                                        [](CLI::App& sub) {
                                          auto o = std::make_shared<TokenizeOptions>();
                                          sub.add_option("-m,--model", o->model, "GGUF file (a vocabulary-only GGUF is enough)")
                                              ->required();
                                          auto* text = sub.add_option("text", o->text, "Text to tokenize");
                                          sub.add_option("-f,--file", o->file, "Read the text from FILE ('-' for stdin)")
                                              ->excludes(text);
                                          sub.add_flag("--add-special", o->add_special,
                                                       "Add BOS/EOS as the vocabulary says");
                                          sub.add_flag("--parse-special", o->parse_special,
                                                       "Turn special-token texts such as <|im_start|> into their ids");
                                          sub.add_flag("--json", o->json, "Print a JSON array");
                                          return [o, text]() -> int { return run(*o, text->count() > 0); };
                                        }});

}  // namespace
}  // namespace zinc::cli
