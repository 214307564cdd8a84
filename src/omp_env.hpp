#pragma once
// Thread binding for the host-side OpenMP work (the tree builds): unbound threads migrate between
// cores from one call to the next, one source of run-to-run variance. Unless the user set them,
// knnbench runs with OMP_PROC_BIND=close and OMP_PLACES=cores (OMP_PROC_BIND=false turns binding
// off), and, on machines of 8 or more cores, OMP_WAIT_POLICY=active: threads spin between the
// parallel regions of one call instead of sleeping and waking (measured in docs/measurement.md;
// on fewer cores the spinning threads would take the cores the rest of the program needs).
// Freed host memory is kept for reuse (keep_freed_host_memory): the trees' builds allocate tens of
// MB per call, and returning them to the kernel makes every call page-fault them in again.
// The OpenMP runtime reads its
// environment once, when it loads (libgomp: before main), so setting them means executing the
// program again with them; set_omp_defaults() does that first thing in main.
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace knn {

// The binding defaults, in order.
const std::vector<std::pair<std::string, std::string>>& omp_defaults();
inline constexpr int kActiveWaitMinCores = 8;

// The defaults to set, given `getenv` and the machine's cores: both binding defaults when the user
// set neither (a user who set either one, even empty, chose the binding), and OMP_WAIT_POLICY=active
// when the user did not set it and the machine has kActiveWaitMinCores or more.
std::vector<std::pair<std::string, std::string>> omp_defaults_missing(const std::function<const char*(const char*)>& getenv,
                                                                      int cores);

// glibc malloc keeps freed blocks up to 32 MiB in the heap (no mmap per large allocation) and never
// trims below 1 GiB, unless the user tuned malloc through GLIBC_TUNABLES. Returns what it did.
std::string keep_freed_host_memory();
std::string keep_freed_host_memory_now();  // the same, without recording it for malloc_policy()
// What keep_freed_host_memory() did in this process ("malloc defaults" when it was not called).
const std::string& malloc_policy();

// At the very start of main, before anything touches OpenMP: sets the missing defaults and
// executes this program again with `argv`. Returns when nothing was missing, or when the exec
// failed (then nothing stays set).
void set_omp_defaults(char** argv);

// What the run used: "OMP_PROC_BIND=close (knnbench default), OMP_PLACES=cores (knnbench default),
// OMP_WAIT_POLICY=active (knnbench default)";
// a user's value reads "(set by the user)"; an unset one "unset".
std::string describe_omp_env(const std::function<const char*(const char*)>& getenv);

}  // namespace knn
