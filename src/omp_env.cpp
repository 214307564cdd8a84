#include "omp_env.hpp"

#include <malloc.h>
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

std::vector<std::pair<std::string, std::string>> omp_defaults_missing(const std::function<const char*(const char*)>& getenv,
                                                                      int cores) {
  // Binding is all or nothing: with either one set, the runtime that reads it binds the initial
  // thread to a place, and that affinity would outlive the exec and shrink the places of the
  // program run again.
  std::vector<std::pair<std::string, std::string>> out;
  if (std::none_of(omp_defaults().begin(), omp_defaults().end(), [&](const auto& d) { return getenv(d.first.c_str()) != nullptr; }))
    out = omp_defaults();
  if (!getenv("OMP_WAIT_POLICY") && cores >= kActiveWaitMinCores) out.emplace_back("OMP_WAIT_POLICY", "active");
  return out;
}

namespace {
std::string& malloc_policy_text() {
  static std::string text = "malloc defaults";
  return text;
}
}  // namespace

const std::string& malloc_policy() { return malloc_policy_text(); }

std::string keep_freed_host_memory() {
  malloc_policy_text() = [] { return keep_freed_host_memory_now(); }();
  return malloc_policy_text();
}

std::string keep_freed_host_memory_now() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables && std::string(tunables).find("glibc.malloc.") != std::string::npos) return "malloc tuned by the user (GLIBC_TUNABLES)";
  const bool ok = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;
  return ok ? "malloc keeps freed memory (mmap threshold 32 MiB, trim threshold 1 GiB; knnbench default)" : "malloc defaults (mallopt refused)";
}

void set_omp_defaults(char** argv) {
  const auto missing = omp_defaults_missing([](const char* n) { return std::getenv(n); }, int(::sysconf(_SC_NPROCESSORS_ONLN)));
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
  auto names = omp_defaults();
  names.emplace_back("OMP_WAIT_POLICY", "active");
  for (const auto& [name, value] : names) {
    const char* v = getenv(name.c_str());
    std::string item = name + (v ? "=" + std::string(v) : " unset");
    if (v) item += listed(getenv(kMarker), name) ? " (knnbench default)" : " (set by the user)";
    out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

}  // namespace knn
