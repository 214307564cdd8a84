#pragma once
// An integer tuning knob read from an environment variable, for versions that take one.
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace knn::env {

// The value of `name` when it is set and not empty, else nullopt (the caller's default). The whole
// value must be an integer (std::stoi's syntax) in [lo, hi]; otherwise std::invalid_argument
// "<owner>: NAME = 'value': must be an integer in [lo, hi]<note>", which supports() returns as the skip.
inline std::optional<int> int_knob(const char* name, int lo, int hi, const char* owner, const char* note = "") {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  const std::string text(value);
  std::size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {  // no digits, or out of int's range
    used = 0;
  }
  if (used != text.size() || v < lo || v > hi)
    throw std::invalid_argument(fmt::format("{}: {} = '{}': must be an integer in [{}, {}]{}", owner, name, text, lo, hi, note));
  return v;
}

}  // namespace knn::env
