#include "cli/line_reader.h"

#include <cerrno>
#include <cstdio>
#include <iostream>

#ifdef ZINC_HAVE_LIBEDIT
#include <histedit.h>
#endif

namespace zinc::cli {
namespace {

class PlainReader final : public LineReader {
 public:
  Outcome read(const std::string& prompt, std::string* line) override {
    if (!prompt.empty()) {
      std::fputs(prompt.c_str(), stdout);
      std::fflush(stdout);
    }
    line->clear();
    errno = 0;
    for (int c; (c = std::getchar()) != '\n';) {
      if (c == EOF) {
        if (errno == EINTR) {
          std::clearerr(stdin);
          return Outcome::kInterrupted;
        }
        return line->empty() ? Outcome::kEnd : Outcome::kLine;
      }
      line->push_back(char(c));
    }
    if (!line->empty() && line->back() == '\r') line->pop_back();
    return Outcome::kLine;
  }
  bool editing() const override { return false; }
};

#ifdef ZINC_HAVE_LIBEDIT
class EditReader final : public LineReader {
 public:
  explicit EditReader(const char* program_name) {
    history_ = history_init();
    HistEvent ev;
    history(history_, &ev, H_SETSIZE, 1000);
    history(history_, &ev, H_SETUNIQUE, 1);
    el_ = el_init(program_name, stdin, stdout, stderr);
    el_set(el_, EL_CLIENTDATA, this);
    el_set(el_, EL_PROMPT, &EditReader::prompt_of);
    el_set(el_, EL_EDITOR, "emacs");
    el_set(el_, EL_HIST, history, history_);
    el_source(el_, nullptr);  // the user's ~/.editrc, if any
  }
  ~EditReader() override {
    el_end(el_);
    history_end(history_);
  }

  Outcome read(const std::string& prompt, std::string* line) override {
    prompt_ = prompt;
    int count = 0;
    errno = 0;
    const char* text = el_gets(el_, &count);
    if (!text) {
      if (errno == EINTR) {
        std::fputc('\n', stdout);
        return Outcome::kInterrupted;
      }
      return Outcome::kEnd;
    }
    line->assign(text, size_t(count));
    while (!line->empty() && (line->back() == '\n' || line->back() == '\r')) line->pop_back();
    if (!line->empty()) {
      HistEvent ev;
      history(history_, &ev, H_ENTER, line->c_str());
    }
    return Outcome::kLine;
  }
  bool editing() const override { return true; }

 private:
  static char* prompt_of(EditLine* el) {
    void* self = nullptr;
    el_get(el, EL_CLIENTDATA, &self);
    return const_cast<char*>(static_cast<EditReader*>(self)->prompt_.c_str());
  }

  EditLine* el_ = nullptr;
  History* history_ = nullptr;
  std::string prompt_;
};
#endif

}  // namespace

std::unique_ptr<LineReader> LineReader::create(const char* program_name, bool editing) {
#ifdef ZINC_HAVE_LIBEDIT
  if (editing) return std::make_unique<EditReader>(program_name);
#else
  (void)program_name;
  (void)editing;
#endif
  return std::make_unique<PlainReader>();
}

}  // namespace zinc::cli
