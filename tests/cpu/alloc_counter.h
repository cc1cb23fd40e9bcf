// Counts heap allocations of this test binary (it replaces the global operator new) while a
// CountAllocations object is alive. One definition for every test in tests/cpu.
#pragma once

#include <cstdint>

namespace zinc::test {

class CountAllocations {
 public:
  CountAllocations();
  ~CountAllocations();
  int64_t count() const;
};

}  // namespace zinc::test
