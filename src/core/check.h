// Invariant checks: always on (ZINC_CHECK) and debug-only (ZINC_DCHECK, for hot loops).
// A failed check is a bug in zinc, never a reaction to bad input: input errors return a Status.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace zinc {
[[noreturn]] inline void check_failed(const char* file, int line, const char* expr) {
  std::fprintf(stderr, "zinc: internal error at %s:%d: check failed: %s\n", file, line, expr);
  std::abort();
}
}  // namespace zinc

#define ZINC_CHECK(cond) \
  do {                   \
    if (!(cond)) ::zinc::check_failed(__FILE__, __LINE__, #cond); \
  } while (0)

#ifdef NDEBUG
#define ZINC_DCHECK(cond) \
  do {                    \
  } while (0)
#else
#define ZINC_DCHECK(cond) ZINC_CHECK(cond)
#endif
