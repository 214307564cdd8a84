#include "omp_env.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "selection.hpp"

namespace knn {
namespace {

// Names the variables knnbench set, so that the program executed again (and its --isolate
// children) can tell its own defaults from a user's.
constexpr const char* kMarker = "KNNBENCH_OMP_DEFAULTS";

bool listed(const char* list, const std::string& name) {
  const auto names = split_commas({list ? list : ""});
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& omp_defaults() {
  static const std::vector<std::pair<std::string, std::string>> d{{"OMP_PROC_BIND", "close"}, {"OMP_PLACES", "cores"}};
  return d;
}

std::vector<std::pair<std::string, std::string>> omp_defaults_missing(const std::function<const char*(const char*)>& getenv) {
  // All or nothing: with either one set, the runtime that reads it binds the initial thread to a
  // place, and that affinity would outlive the exec and shrink the places of the program run again.
  for (const auto& d : omp_defaults())
    if (getenv(d.first.c_str())) return {};
  return omp_defaults();
}

void set_omp_defaults(char** argv) {
  const auto missing = omp_defaults_missing([](const char* n) { return std::getenv(n); });
  if (missing.empty()) return;
  std::string marker;
  for (const auto& [name, value] : missing) {
    ::setenv(name.c_str(), value.c_str(), 1);
    marker += (marker.empty() ? "" : ",") + name;
  }
  ::setenv(kMarker, marker.c_str(), 1);
  ::execv("/proc/self/exe", argv);
  for (const auto& [name, value] : missing) ::unsetenv(name.c_str());  // exec failed: run as the user started it
  ::unsetenv(kMarker);
}

std::string describe_omp_env(const std::function<const char*(const char*)>& getenv) {
  std::string out;
  for (const auto& [name, value] : omp_defaults()) {
    const char* v = getenv(name.c_str());
    std::string item = name + (v ? "=" + std::string(v) : " unset");
    if (v) item += listed(getenv(kMarker), name) ? " (knnbench default)" : " (set by the user)";
    out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

}  // namespace knn
