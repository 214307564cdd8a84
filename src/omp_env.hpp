#pragma once
// Thread binding for the host-side OpenMP work (the tree builds): unbound threads migrate between
// cores from one call to the next, one source of run-to-run variance. Unless the user set them,
// knnbench runs with OMP_PROC_BIND=close and OMP_PLACES=cores (OMP_PROC_BIND=false turns binding
// off). The OpenMP runtime reads its
// environment once, when it loads (libgomp: before main), so setting them means executing the
// program again with them; set_omp_defaults() does that first thing in main.
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace knn {

// The defaults, in order.
const std::vector<std::pair<std::string, std::string>>& omp_defaults();

// The defaults to set, given `getenv`: all of them when the user set none, else none (a user who
// set either one, even empty, chose the binding).
std::vector<std::pair<std::string, std::string>> omp_defaults_missing(const std::function<const char*(const char*)>& getenv);

// At the very start of main, before anything touches OpenMP: sets the missing defaults and
// executes this program again with `argv`. Returns when nothing was missing, or when the exec
// failed (then nothing stays set).
void set_omp_defaults(char** argv);

// What the run used: "OMP_PROC_BIND=close (knnbench default), OMP_PLACES=cores (knnbench default)";
// a user's value reads "(set by the user)"; an unset one "unset".
std::string describe_omp_env(const std::function<const char*(const char*)>& getenv);

}  // namespace knn
