// zinc run -m MODEL (-p PROMPT | --tokens 1,2,3) [-n 128] [sampling flags] [--json-schema SCHEMA |
// --json-schema-file FILE | --grammar GBNF | --grammar-file FILE]: generates a continuation and
// streams it to stdout (text for a text prompt, ids for an id prompt). A text prompt is a user
// turn through the model's chat template when it has one (--raw: as is). A JSON schema holds the
// continuation to a document of it, as response_format json_schema does in the server
// (engine/json_schema.h); a grammar to its language, as llama.cpp's --grammar (engine/gbnf.h).
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "chat/conversation.h"
#include "cli/command.h"
#include "cli/draft_flags.h"
#include "cli/model_flags.h"
#include "cli/sampling_flags.h"
#include "cli/token_list.h"
#include "engine/generate.h"
#include "engine/grammar_constraint.h"
#include "engine/json_schema.h"
#include "engine/runner.h"
#include "engine/speculative.h"
#include "gguf/file.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace zinc::cli {
namespace {

struct RunOptions {
  std::string model, prompt, tokens, stop, backend = "auto", json_schema, json_schema_file, grammar, grammar_file, draft_model;
  engine::DraftOptions draft;
  hub::ModelSource source;  // -m and the flags that fetch a model; resolved into `model`
  bool raw = false, verbose = false;
  int n_predict = 128, threads = 0, device = -1;
  int64_t n_ctx = 4096;
  engine::SamplerParams sampling;
};

int run_generate(const RunOptions& o) {
  using Clock = std::chrono::steady_clock;
  const auto t_load = Clock::now();
  if (o.prompt.empty() == o.tokens.empty()) return fail("give the prompt as text (-p) or as token ids (--tokens)");
  auto backend = engine::parse_backend(o.backend);
  if (!backend.ok()) return fail(backend.status().message());
  auto model = model::Model::load(o.model);
  if (!model.ok()) return fail(model.status().message());

  // Text prompts go through the model's tokenizer, with BOS as the vocabulary asks; a model with a
  // chat template gets the prompt as one user turn (as llama-cli's conversation mode), unless
  // --raw. The continuation is streamed as text.
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::vector<int32_t> prompt_ids;
  bool templated = false;
  if (!o.prompt.empty()) {
    auto t = tokenizer::Tokenizer::load((*model)->file());
    if (!t.ok()) return fail(o.model + ": " + t.status().message());
    tok = std::move(*t);
    auto has_template = (*model)->file().find_string("tokenizer.chat_template");
    if (!o.raw && has_template.ok() && *has_template) {
      auto format = chat::ChatFormat::create((*model)->file(), *tok);
      if (!format.ok()) return fail(o.model + ": " + format.status().message());
      chat::ChatRequest request;
      request.messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", o.prompt}}});
      auto ids = format->render_tokens(request);
      if (!ids.ok()) return fail(o.model + ": chat template: " + ids.status().message());
      prompt_ids = std::move(*ids);
      templated = true;
    } else {
      prompt_ids = tok->encode(o.prompt, /*add_special=*/true, /*parse_special=*/true);
    }
    if (prompt_ids.empty()) return fail("the prompt has no tokens");
  } else {
    auto ids = parse_token_list("--tokens", o.tokens);
    if (!ids.ok()) return fail(ids.status().message());
    prompt_ids = std::move(*ids);
  }
  std::span<const int32_t> prompt(prompt_ids);

  engine::GenerateOptions go;
  go.max_new_tokens = o.n_predict;
  const bool schema_given = !o.json_schema.empty() || !o.json_schema_file.empty();
  const bool grammar_given = !o.grammar.empty() || !o.grammar_file.empty();
  if (schema_given && grammar_given) return fail("give a JSON schema or a grammar, not both");
  if (!o.json_schema.empty() && !o.json_schema_file.empty()) return fail("give the schema once: --json-schema or --json-schema-file");
  if (!o.grammar.empty() && !o.grammar_file.empty()) return fail("give the grammar once: --grammar or --grammar-file");
  if ((schema_given || grammar_given) && !tok)
    return fail(std::string(schema_given ? "--json-schema" : "--grammar") + " needs a text prompt (-p)");
  // The text of --X, or of the file --X-file names.
  auto text_or_file = [](const std::string& text, const std::string& file) -> Result<std::string> {
    return file.empty() ? Result<std::string>(text) : read_text(file);
  };
  if (grammar_given) {
    auto text = text_or_file(o.grammar, o.grammar_file);
    if (!text.ok()) return fail(text.status().message());
    const engine::Grammar::Tokens tokens = engine::grammar_tokens(*tok);
    auto grammar = engine::Grammar::compile(*text, &tokens);
    if (!grammar.ok()) return fail((o.grammar_file.empty() ? "--grammar: " : o.grammar_file + ": ") + grammar.status().message());
    go.constraint = engine::GrammarConstraint::make(engine::TokenVocab::of(*tok), *grammar, tok->vocab().eog_ids());
  }
  if (schema_given) {
    auto text = text_or_file(o.json_schema, o.json_schema_file);
    if (!text.ok()) return fail(text.status().message());
    const auto json = nlohmann::ordered_json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) return fail("--json-schema: not valid JSON");
    auto schema = engine::JsonSchema::compile(json);
    if (!schema.ok()) return fail("--json-schema: " + schema.status().message());
    go.constraint = std::make_shared<engine::SchemaConstraint>(engine::TokenVocab::of(*tok), engine::SchemaPrefix(schema->get()),
                                                               tok->vocab().eog_ids(), *schema);
  }
  if (!o.stop.empty()) {
    auto stop = parse_token_list("--stop", o.stop);
    if (!stop.ok()) return fail(stop.status().message());
    go.stop_tokens = *stop;
  } else if (tok) {
    go.stop_tokens = tok->vocab().eog_ids();
  } else if (auto eos = (*model)->file().find_u32("tokenizer.ggml.eos_token_id"); eos.ok() && *eos) {
    go.stop_tokens = {int32_t(**eos)};
  }
  engine::RunnerOptions ro;
  ro.backend = *backend;
  ro.device = o.device;
  ro.verbose = o.verbose;
  ro.n_threads = o.threads;
  ro.n_ctx = std::max<int64_t>(o.n_ctx, int64_t(prompt.size()) + o.n_predict);
  auto runner = engine::Runner::create(**model, ro);
  if (!runner.ok()) return fail(runner.status().message());
  auto seq = (*runner)->cache().add_sequence();
  if (!seq.ok()) return fail(seq.status().message());
  // A draft model guesses ahead (engine/speculative.h): it must share the vocabulary.
  std::unique_ptr<model::Model> draft_model;
  std::unique_ptr<engine::Runner> draft_runner;
  kv::SeqId draft_seq = -1;
  if (!o.draft_model.empty()) {
    auto dm = model::Model::load(o.draft_model);
    if (!dm.ok()) return fail(dm.status().message());
    draft_model = std::move(*dm);
    if (tok) {
      auto dt = tokenizer::Tokenizer::load(draft_model->file());
      if (!dt.ok()) return fail(o.draft_model + ": " + dt.status().message());
      if (Status same = check_draft_vocab(*tok, **dt); !same.ok()) return fail(o.draft_model + ": " + same.message());
    }
    auto dr = engine::Runner::create(*draft_model, ro);
    if (!dr.ok()) return fail(o.draft_model + ": " + dr.status().message());
    draft_runner = std::move(*dr);
    auto ds = draft_runner->cache().add_sequence();
    if (!ds.ok()) return fail(ds.status().message());
    draft_seq = *ds;
  }

  const double load_seconds = std::chrono::duration<double>(Clock::now() - t_load).count();

  engine::Sampler sampler(prepared_sampling(o.sampling, tok.get()), int32_t((*model)->hparams().n_vocab));
  std::unique_ptr<tokenizer::StreamingDecoder> decoder;
  if (tok) {
    decoder = std::make_unique<tokenizer::StreamingDecoder>(*tok);
    if (!templated) std::fputs(o.prompt.c_str(), stdout);  // a chat shows only the reply
    std::fflush(stdout);
  }
  auto print = [&](int32_t t) {
    if (decoder) {
      if (!tok->vocab().valid_id(t)) return true;
      std::fputs(decoder->push(t).c_str(), stdout);
    } else {
      std::printf("%d ", t);
    }
    std::fflush(stdout);
    return true;
  };
  engine::DraftStats draft_stats;
  auto res = draft_runner ? engine::generate_speculative(**runner, *seq, *draft_runner, draft_seq, prompt, sampler, go, o.draft, print, &draft_stats)
                          : engine::generate(**runner, *seq, prompt, sampler, go, print);
  if (decoder) std::fputs(decoder->flush().c_str(), stdout);
  std::printf("\n");
  std::fflush(stdout);
  if (!res.ok()) return fail(res.status().message());
  if (o.verbose) {
    const double n = double(res->tokens.size());
    std::fprintf(stderr, "zinc: load %.2f s; prompt %lld tokens, %.1f tok/s; generated %zu tokens, %.1f tok/s (%s)\n",
                 load_seconds, (long long)res->prompt_tokens,
                 double(res->prompt_tokens) / std::max(res->prefill_seconds, 1e-9), res->tokens.size(),
                 n / std::max(res->decode_seconds, 1e-9),
                 res->reason == engine::StopReason::kEndOfGeneration ? "end of generation" : "token limit");
    if (draft_runner)
      std::fprintf(stderr, "zinc: draft: %lld guesses checked, %lld kept (%.1f %%)\n", (long long)draft_stats.drafted,
                   (long long)draft_stats.accepted, 100.0 * double(draft_stats.accepted) / double(std::max<int64_t>(draft_stats.drafted, 1)));
  }
  return 0;
}

ZINC_REGISTER_COMMAND(run, Command{"run", "Generate a continuation of a prompt (text or token ids)",
                                   [](CLI::App& sub) {
                                     auto o = std::make_shared<RunOptions>();
                                     auto& s = o->sampling;
                                     add_model_flags(sub, o->source, "GGUF model file");
                                     sub.add_option("-p,--prompt", o->prompt, "Prompt text");
                                     sub.add_option("--tokens", o->tokens, "Prompt token ids, comma separated (instead of -p)");
                                     sub.add_flag("--raw", o->raw, "Use the prompt as is, without the model's chat template");
                                     sub.add_flag("--verbose", o->verbose, "Print load time, prompt and decode speed to stderr");
                                     sub.add_option("-n,--n-predict", o->n_predict, "Tokens to generate at most")->capture_default_str();
                                     sub.add_option("--stop", o->stop, "End-of-generation ids (default: the model's EOS)");
                                     sub.add_option("-c,--ctx-size", o->n_ctx, "KV cache size in tokens")->capture_default_str();
                                     add_sampling_flags(sub, s);
                                     sub.add_option("--json-schema", o->json_schema, "Hold the output to this JSON schema (an object's)");
                                     sub.add_option("--json-schema-file", o->json_schema_file, "Hold the output to the JSON schema in this file");
                                     sub.add_option("--grammar", o->grammar, "Hold the output to this GBNF grammar (llama.cpp's syntax)");
                                     sub.add_option("--grammar-file", o->grammar_file, "Hold the output to the GBNF grammar in this file");
                                     add_draft_flags(sub, o->draft_model, o->draft);
                                     sub.add_option("-t,--threads", o->threads, "CPU threads (0: all)")->capture_default_str();
                                     sub.add_option("--backend", o->backend, "auto, cpu or vulkan")->capture_default_str();
                                     sub.add_option("--device", o->device, "Vulkan device index (see zinc devices; -1: auto)")->capture_default_str();
                                     return [o]() { return with_model(*o, run_generate); };
                                   }});

}  // namespace
}  // namespace zinc::cli
