// zinc detokenize -m MODEL [--special] IDS...: the text of token ids.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <memory>

#include "cli/command.h"
#include "gguf/file.h"
#include "tokenizer/tokenizer.h"

namespace zinc::cli {
namespace {

struct DetokenizeOptions {
  std::string model;
  std::vector<std::string> ids;
  bool special = false;
};

// Ids separated by spaces or commas; brackets are ignored so `tokenize --json` output works too.
bool parse_ids(const std::vector<std::string>& args, std::vector<int32_t>* ids, std::string* bad) {
  for (const std::string& arg : args) {
    std::string item;
    auto flush = [&]() -> bool {
      if (item.empty()) return true;
      char* end = nullptr;
      long long v = std::strtoll(item.c_str(), &end, 10);
      if (*end != '\0' || v < INT32_MIN || v > INT32_MAX) {
        *bad = item;
        return false;
      }
      ids->push_back(int32_t(v));
      item.clear();
      return true;
    };
    for (char c : arg) {
      if (c == ' ' || c == ',' || c == '\t' || c == '\n' || c == '\r' || c == '[' || c == ']') {
        if (!flush()) return false;
      } else {
        item += c;
      }
    }
    if (!flush()) return false;
  }
  return true;
}

int run(DetokenizeOptions& o) {
  if (o.ids.empty()) o.ids.emplace_back(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  std::vector<int32_t> ids;
  std::string bad;
  if (!parse_ids(o.ids, &ids, &bad)) {
    std::fprintf(stderr, "error: '%s' is not a token id (see zinc detokenize --help)\n", bad.c_str());
    return 2;
  }
  auto file = gguf::open_file(o.model);
  if (!file.ok()) return fail(file.status().message());
  auto tok = tokenizer::Tokenizer::load(**file);
  if (!tok.ok()) return fail(o.model + ": " + tok.status().message());
  tokenizer::DecodeOptions options;
  options.render_special = o.special;
  auto text = (*tok)->decode(ids, options);
  if (!text.ok()) return fail(text.status().message());
  std::fwrite(text->data(), 1, text->size(), stdout);
  std::fputc('\n', stdout);
  return 0;
}

ZINC_REGISTER_COMMAND(detokenize, Command{"detokenize", "Print the text of token ids",
                                          [](CLI::App& sub) {
                                            auto o = std::make_shared<DetokenizeOptions>();
                                            sub.add_option("-m,--model", o->model, "GGUF file (a vocabulary-only GGUF is enough)")
                                                ->required();
                                            sub.add_option("ids", o->ids, "Token ids (read from stdin when none are given)");
                                            sub.add_flag("--special", o->special, "Print control tokens such as <s> too");
                                            return [o]() -> int { return run(*o); };
                                          }});

}  // namespace
}  // namespace zinc::cli
