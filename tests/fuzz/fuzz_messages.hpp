#pragma once
// What both fuzz targets check of a ConfigError message when KNN_FUZZ_MESSAGES=1 is set.
#include <cstdlib>
#include <string>

namespace knn::fuzz {

// Whether KNN_FUZZ_MESSAGES asks for the message checks (set and not "0").
inline bool check_messages() {
  static const bool on = [] {
    const char* v = std::getenv("KNN_FUZZ_MESSAGES");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

// The contract every ConfigError message keeps: one line, no control character (below 0x20), and
// starting with `prefix` (the file's label and its separator).
inline bool keeps_message_contract(const std::string& message, const std::string& prefix) {
  for (unsigned char c : message)
    if (c < 0x20) return false;
  return message.rfind(prefix, 0) == 0;
}

}  // namespace knn::fuzz
