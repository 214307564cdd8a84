#pragma once
// Tuning knobs read from environment variables, for versions that take one: an integer, or a mode
// (auto, off, on).
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

// A path's mode: "auto" (or unset, or empty: the version's rule decides), "off" (never), "on"
// (wherever it is exact, whatever the shape).
enum class Mode { automatic, off, on };

// The mode in `name`; anything else throws std::invalid_argument
// "NAME = 'value': expected auto, off or on".
inline Mode mode_knob(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return Mode::automatic;
  const std::string text(value);
  if (text == "auto") return Mode::automatic;
  if (text == "off") return Mode::off;
  if (text == "on") return Mode::on;
  throw std::invalid_argument(fmt::format("{} = '{}': expected auto, off or on", name, text));
}

}  // namespace knn::env
