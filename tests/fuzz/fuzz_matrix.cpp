// libFuzzer target for the matrix loader: the input bytes go to knn::parse_matrix as a file's text.
// ConfigError is the only acceptable exception; another exception, a crash or a sanitizer report is a
// finding. With KNN_FUZZ_MESSAGES=1 in the environment, so is a ConfigError whose message holds a
// control character (below 0x20: a line break, an escape sequence) or does not start with the file
// label (the target aborts).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/errors.hpp"
#include "fuzz_messages.hpp"
#include "matrix.hpp"

namespace {

const char* const kLabel = "fuzz.json";

void check_message(const std::string& m) {
  if (knn::fuzz::keeps_message_contract(m, std::string(kLabel) + ": ")) return;
  std::fprintf(stderr, "fuzz_matrix: ConfigError message breaks the contract (one line, no control characters, starting with the file): %.300s\n",
               m.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    knn::parse_matrix(text, kLabel);
  } catch (const knn::ConfigError& e) {
    if (knn::fuzz::check_messages()) check_message(e.what());
  }
  return 0;
}
