// Reads the lines a user types: with editing and history (libedit) when stdin and stdout are
// terminals and zinc was built with libedit, plain lines from stdin otherwise.
#pragma once

#include <memory>
#include <string>

namespace zinc::cli {

class LineReader {
 public:
  enum class Outcome { kLine, kEnd, kInterrupted };  // kEnd: Ctrl-D or end of input

  // `editing`: use line editing when it is available (the caller checks for terminals).
  static std::unique_ptr<LineReader> create(const char* program_name, bool editing);
  virtual ~LineReader() = default;

  // One line without its newline. kInterrupted when a signal (Ctrl-C) ended the read.
  virtual Outcome read(const std::string& prompt, std::string* line) = 0;
  virtual bool editing() const = 0;
};

}  // namespace zinc::cli
