// JSON Schema's minimum / maximum / exclusiveMinimum / exclusiveMaximum, and an integer's
// multipleOf, held while a number is written: after each byte, whether some number starting with
// the bytes so far is within the bounds (and a multiple). A bounded number is written without an
// exponent (as an integer always is); values are followed in long double, exact for integers up
// to 2^64.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace zinc::engine {

struct NumberBounds {
  long double lo = -std::numeric_limits<long double>::infinity();
  long double hi = std::numeric_limits<long double>::infinity();
  bool lo_open = false, hi_open = false;
  long double multiple = 0;  // integers only: > 0, an integer the value must be a multiple of
  bool any() const { return std::isfinite(lo) || std::isfinite(hi) || multiple > 0; }
  bool holds(long double v) const {
    return (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi) && (multiple <= 0 || std::fmod(v, multiple) == 0);
  }
  // Whether an integer in [a, z] (integers or infinities) is within the bounds and a multiple.
  bool holds_integer_in(long double a, long double z) const {
    const long double low = next_multiple(std::max(a, lo_open ? std::floor(lo) + 1 : std::ceil(lo)));
    return low <= std::min(z, hi_open ? std::ceil(hi) - 1 : std::floor(hi));
  }

 private:
  // The least multiple of `multiple` at or above the integer v (v itself without one).
  long double next_multiple(long double v) const {
    if (multiple <= 0 || !std::isfinite(v)) return v;
    const long double r = std::fmod(v, multiple);  // the sign of v
    return r == 0 ? v : r < 0 ? v - r : v + (multiple - r);
  }
};

// A number's bytes so far (sign, integer digits, '.', fraction digits).
class NumberProgress {
 public:
  void take(uint8_t c) {
    if (c == '-') negative_ = true;
    else if (c == '.') dot_ = true;
    else if (dot_) frac_ = frac_ * 10 + (c - '0'), ++frac_digits_;
    else whole_ = whole_ * 10 + (c - '0'), ++digits_;
  }
  long double value() const {
    const long double v = whole_ + (frac_digits_ ? frac_ / std::pow(10.0L, frac_digits_) : 0.0L);
    return negative_ ? -v : v;
  }
  // Whether a number the bytes so far begin (perhaps these alone) can be within b.
  bool feasible(const NumberBounds& b, bool integer) const {
    if (negative_) {  // -x within [lo, hi] when x within [-hi, -lo]
      NumberBounds m{-b.hi, -b.lo, b.hi_open, b.lo_open, b.multiple};
      return feasible_magnitude(m, integer);
    }
    return feasible_magnitude(b, integer);
  }
  bool operator==(const NumberProgress&) const = default;

 private:
  // Some magnitude x this prefix can still become (sign aside) within b.
  bool feasible_magnitude(const NumberBounds& b, bool integer) const {
    if (digits_ == 0) return meets(0, std::numeric_limits<long double>::infinity(), b, integer);  // just "-"
    if (dot_) {
      const long double unit = std::pow(10.0L, -int(frac_digits_));
      const long double low = whole_ + frac_ * unit;
      return meets(low, low + unit, b, false);
    }
    if (whole_ == 0) return meets(0, integer ? 0 : 1, b, integer);  // "0": 0, or 0.xxx
    // whole_ followed by k more digits: [whole_ 10^k, (whole_ + 1) 10^k)
    for (long double scale = 1; std::isfinite(whole_ * scale); scale *= 10) {
      const long double low = whole_ * scale;
      if (b.hi < low) return false;
      if (meets(low, integer ? (whole_ + 1) * scale - 1 : (whole_ + 1) * scale, b, integer)) return true;
    }
    return false;
  }
  // Integers: [a, z] holds an integer within b. Numbers: [a, z) meets b.
  static bool meets(long double a, long double z, const NumberBounds& b, bool integer) {
    if (integer) return b.holds_integer_in(a, z);
    const long double low = std::max(a, b.lo);
    if (!(low < z)) return false;
    if (low < b.hi) return true;
    return low == b.hi && !b.hi_open && !(b.lo_open && b.lo == low);
  }

  long double whole_ = 0, frac_ = 0;
  uint16_t digits_ = 0, frac_digits_ = 0;
  bool negative_ = false, dot_ = false;
};

}  // namespace zinc::engine
