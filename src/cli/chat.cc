// zinc chat [-m MODEL] [sampling flags] [-c CTX] [-t THREADS] [--backend ...] [--device N]: an interactive chat
// with the model in the terminal (no server). The model's chat template builds the prompt; the KV
// cache keeps the conversation. Commands: /help /reset /system /save /exit. Ctrl-C stops an
// answer; at the prompt, a second Ctrl-C (or Ctrl-D) leaves.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "cli/chat_session.h"
#include "cli/command.h"
#include "cli/draft_flags.h"
#include "cli/model_flags.h"
#include "cli/sampling_flags.h"
#include "cli/line_reader.h"

namespace zinc::cli {
namespace {

struct ChatOptions {
  std::string model, system, backend = "auto";
  hub::ModelSource source;  // -m and the flags that fetch a model; resolved into `model`
  bool verbose = false, no_cache_reuse = false;
  ChatSessionOptions session;
};

std::atomic<int> g_interrupts{0};
void on_sigint(int) { g_interrupts.fetch_add(1, std::memory_order_relaxed); }

// SIGINT sets a flag instead of ending the process. Without SA_RESTART a read at the prompt
// returns EINTR, so the line reader sees the Ctrl-C.
void install_sigint_handler() {
  struct sigaction sa = {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, nullptr);
}

constexpr const char* kHelp =
    "Commands:\n"
    "  /help          this list\n"
    "  /reset         forget the conversation (keeps the system prompt)\n"
    "  /system TEXT   set the system prompt (/system alone removes it)\n"
    "  /save FILE     write the messages as JSON\n"
    "  /exit          leave (also Ctrl-D)\n"
    "Ctrl-C stops an answer; at the prompt, Ctrl-C twice leaves.\n";

class Terminal {
 public:
  explicit Terminal(bool tty) : tty_(tty) {}
  // Reasoning is dimmed on a terminal and wrapped in <think> tags otherwise.
  void answer(bool reasoning, std::string_view text) {
    if (reasoning != in_reasoning_) {
      if (tty_) std::fputs(reasoning ? "\x1b[2m" : "\x1b[0m\n", stdout);
      else std::fputs(reasoning ? "<think>\n" : "\n</think>\n", stdout);
      in_reasoning_ = reasoning;
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
  void end_answer() {
    if (in_reasoning_) answer(false, "");
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  // A line of the chat's own (not the model's): dimmed on a terminal.
  void note(const std::string& text) {
    if (tty_) std::printf("\x1b[2m%s\x1b[0m\n", text.c_str());
    else std::printf("%s\n", text.c_str());
    std::fflush(stdout);
  }

 private:
  bool tty_;
  bool in_reasoning_ = false;
};

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r\n") - a + 1);
}

// Runs one /command; returns false to leave.
bool run_command_line(const std::string& line, ChatSession& session, Terminal& term) {
  const size_t space = line.find(' ');
  const std::string name = line.substr(0, space);
  const std::string arg = space == std::string::npos ? "" : trim(line.substr(space + 1));
  if (name == "/exit" || name == "/quit") return false;
  if (name == "/help") {
    std::fputs(kHelp, stdout);
  } else if (name == "/reset") {
    session.reset();
    term.note("(conversation cleared)");
  } else if (name == "/system") {
    session.set_system(arg);
    term.note(arg.empty() ? "(system prompt removed)" : "(system prompt set)");
  } else if (name == "/save") {
    if (arg.empty()) {
      std::fprintf(stderr, "error: /save needs a file name\n");
    } else if (Status st = session.save(arg); !st.ok()) {
      std::fprintf(stderr, "error: %s\n", st.message().c_str());
    } else {
      term.note("(saved " + std::to_string(session.messages().size()) + " messages to " + arg + ")");
    }
  } else {
    std::fprintf(stderr, "error: unknown command %s (/help lists them)\n", name.c_str());
  }
  return true;
}

int run_chat(ChatOptions& o) {
  auto backend = engine::parse_backend(o.backend);
  if (!backend.ok()) return fail(backend.status().message());
  o.session.backend = *backend;
  o.session.reuse_cache = !o.no_cache_reuse;
  auto created = ChatSession::create(o.model, o.session);
  if (!created.ok()) return fail(created.status().message());
  ChatSession& session = **created;
  session.set_system(o.system);

  const bool tty_in = isatty(STDIN_FILENO), tty_out = isatty(STDOUT_FILENO);
  Terminal term(tty_out);
  auto reader = LineReader::create("zinc", tty_in && tty_out);
  install_sigint_handler();
  const std::string prompt = tty_in ? "> " : "";
  if (tty_in) {
    term.note("zinc chat: " + o.model + (session.has_model_template() ? "" : " (no chat template: ChatML)") +
              ", context " + std::to_string(o.session.n_ctx) + " tokens. /help lists the commands.");
  }

  bool interrupted_at_prompt = false;
  for (;;) {
    g_interrupts.store(0);
    std::string line;
    const LineReader::Outcome got = reader->read(prompt, &line);
    if (got == LineReader::Outcome::kEnd) break;
    if (got == LineReader::Outcome::kInterrupted || g_interrupts.load() > 0) {
      if (interrupted_at_prompt) break;
      interrupted_at_prompt = true;
      term.note("(Ctrl-C again or Ctrl-D to leave)");
      continue;
    }
    interrupted_at_prompt = false;
    line = trim(line);
    if (line.empty()) continue;
    if (line[0] == '/') {
      if (!run_command_line(line, session, term)) break;
      continue;
    }
    auto stats = session.send(line, [&](bool reasoning, std::string_view text) { term.answer(reasoning, text); },
                              [] { return g_interrupts.load(std::memory_order_relaxed) > 0; });
    term.end_answer();
    if (!stats.ok()) {
      std::fprintf(stderr, "error: %s\n", stats.status().message().c_str());
      continue;
    }
    if (stats->reason == engine::StopReason::kCallback) term.note("(stopped)");
    if (o.verbose || tty_out) {
      const double tps = double(stats->generated_tokens) / std::max(stats->decode_seconds, 1e-9);
      const std::string draft = o.session.draft_model.empty()
                                    ? ""
                                    : format("; draft: %lld of %lld guesses kept", (long long)stats->draft.accepted, (long long)stats->draft.drafted);
      std::fprintf(stderr, "%s[%lld tokens, %.1f tok/s; prompt %lld tokens, %lld from the cache%s]%s\n",
                   tty_out ? "\x1b[2m" : "", (long long)stats->generated_tokens, tps,
                   (long long)stats->prompt_tokens, (long long)stats->cached_tokens, draft.c_str(), tty_out ? "\x1b[0m" : "");
    }
  }
  if (tty_in) std::fputc('\n', stdout);
  return 0;
}

ZINC_REGISTER_COMMAND(chat, Command{"chat", "Chat with a model in the terminal",
                                    [](CLI::App& sub) {
                                      auto o = std::make_shared<ChatOptions>();
                                      auto& s = o->session.sampling;
                                      add_model_flags(sub, o->source, "GGUF model file (default: $ZINC_MODEL)");
                                      sub.add_option("--system", o->system, "System prompt");
                                      sub.add_option("-n,--n-predict", o->session.n_predict, "Tokens per answer at most (-1: until the context is full)")->capture_default_str();
                                      sub.add_option("-c,--ctx-size", o->session.n_ctx, "Context size in tokens (the whole conversation)")->capture_default_str()->check(CLI::Range(int64_t(16), int64_t(1) << 24));
                                      add_sampling_flags(sub, s);
                                      sub.add_option("-t,--threads", o->session.n_threads, "CPU threads (0: all)")->capture_default_str();
                                      sub.add_option("--backend", o->backend, "auto, cpu or vulkan")->capture_default_str();
                                      sub.add_option("--device", o->session.device, "Vulkan device index (see zinc devices; -1: auto)")->capture_default_str();
                                      sub.add_flag("--no-cache-reuse", o->no_cache_reuse, "Prefill the whole conversation every turn (to compare)");
                                      add_draft_flags(sub, o->session.draft_model, o->session.draft);
                                      sub.add_flag("--verbose", o->verbose, "Print each answer's token counts and speed to stderr");
                                      return [o]() {
                                        const hub::ModelSource& m = o->source;
                                        if (m.path.empty() && m.hf_repo.empty() && m.url.empty()) {
                                          const char* env = std::getenv("ZINC_MODEL");
                                          if (!env) return fail("give a model with -m MODEL.gguf or -hf OWNER/NAME[:QUANT] (or set ZINC_MODEL)");
                                          o->source.path = env;
                                        }
                                        return with_model(*o, run_chat);
                                      };
                                    }});

}  // namespace
}  // namespace zinc::cli
