// Errors from outside input (files, text, requests, drivers) travel as values: Status / Result<T>.
// Broken internal invariants stop the process through ZINC_CHECK (check.h) instead.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <variant>

namespace zinc {

// An error message, or success. Cheap to return; the message names the object and the numbers.
class Status {
 public:
  Status() = default;
  static Status error(std::string message) { return Status(std::move(message), true); }
  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }
  // Prefixes the message with context ("file.gguf: " + message).
  Status with_context(const std::string& context) const {
    return failed_ ? Status(context + ": " + message_, true) : *this;
  }

 private:
  Status(std::string m, bool failed) : message_(std::move(m)), failed_(failed) {}
  std::string message_;
  bool failed_ = false;
};

inline Status ok_status() { return Status(); }

// printf-style message for Status::error.
template <typename... Args>
std::string format(const char* fmt, Args... args) {
  int n = std::snprintf(nullptr, 0, fmt, args...);
  std::string s(n > 0 ? n : 0, '\0');
  if (n > 0) std::snprintf(s.data(), s.size() + 1, fmt, args...);
  return s;
}

template <typename... Args>
Status error(const char* fmt, Args... args) {
  return Status::error(format(fmt, args...));
}
inline Status error(const std::string& message) { return Status::error(message); }

// A value or the Status that explains why there is none.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Status status) : v_(std::move(status)) {}
  bool ok() const { return v_.index() == 0; }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  Status status() const { return ok() ? Status() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace zinc

#define ZINC_CONCAT_INNER(a, b) a##b
#define ZINC_CONCAT(a, b) ZINC_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when `expr` (a Status) failed.
#define ZINC_RETURN_IF_ERROR(expr)              \
  do {                                          \
    ::zinc::Status zinc_status_ = (expr);       \
    if (!zinc_status_.ok()) return zinc_status_; \
  } while (0)

// `ZINC_ASSIGN_OR_RETURN(auto x, f())`: unwraps a Result or returns its Status.
#define ZINC_ASSIGN_OR_RETURN(lhs, expr) ZINC_ASSIGN_OR_RETURN_IMPL(ZINC_CONCAT(zinc_r_, __LINE__), lhs, expr)
#define ZINC_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
