#pragma once
// A call of a known length for the sampler's tests: busy for `ms` milliseconds of wall time (never
// less; a preempted spin is longer).
#include <chrono>

namespace knn::testing {

inline void spin_ms(double ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(ms);
  while (std::chrono::steady_clock::now() < end) {
  }
}

}  // namespace knn::testing
