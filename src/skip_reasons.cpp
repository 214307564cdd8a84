#include "skip_reasons.hpp"

#include <fmt/format.h>

namespace knn::skip_reason {

std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / 1073741824.0); }

std::string no_device() { return "no CUDA device"; }

std::string no_self_join() { return "does not answer self-joins"; }

std::string device_memory(std::size_t need, int ordinal, std::size_t have) {
  return fmt::format("needs {}, device {} has {} free", gib(double(need)), ordinal, gib(double(have)));
}

std::string host_memory(double need, double have) {
  return fmt::format("needs {} of host memory, host has {} available", gib(need), gib(have));
}

std::string working_memory(double need, double have) {
  return fmt::format("needs {} of host memory (working memory and answers), {} available", gib(need), gib(have));
}

std::string out_of_host_memory(const std::string& doing, double known_bytes, double have) {
  return fmt::format("out of host memory {} (inputs and answers {}, {} available)", doing, gib(known_bytes), gib(have));
}

std::string interrupted(std::size_t samples_taken) {
  return fmt::format("interrupted: stopped after {} of the samples it needed", samples_taken);
}

}  // namespace knn::skip_reason
