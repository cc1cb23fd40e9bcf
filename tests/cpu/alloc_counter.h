// Heap allocations counted by the cpu_tests binary's replaced global operator new (defined once,
// in no_alloc_op_test.cc): tests arm the counter around code that must not allocate.
#pragma once

#include <atomic>

namespace zinc::test {

extern std::atomic<bool> g_count_allocations;
extern std::atomic<int> g_allocations;

}  // namespace zinc::test
