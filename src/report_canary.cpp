// The host canary of one run in the reports (canary.hpp): its spread over the results, the host's
// facts, and a warning when the host's speed changed during the run.
#include <fmt/format.h>

#include <algorithm>

#include "canary.hpp"
#include "report.hpp"

namespace knn {

std::string canary_spread_text(const RunInfo& info, const std::vector<Result>& results, bool markdown) {
  std::vector<ResultCanary> canaries;
  for (const Result& r : results) canaries.push_back(r.canary);
  const CanarySpread s = canary_spread(canaries);
  if (s.results == 0) return "";
  const char* item = markdown ? "- " : "  ";
  std::string out = markdown ? "## Host canary\n\n" : "Host canary (before and after each result):\n";
  if (markdown) out += fmt::format("Read before and after each of {} results (a fixed CPU loop; one thread reading {} MiB):\n\n", s.results, kCanaryBufferBytes >> 20);
  out += fmt::format("{}CPU loop ms: min {:.3f}, median {:.3f}, max {:.3f} (max/min {:.2f})\n", item, s.cpu_min, s.cpu_median, s.cpu_max, s.cpu_ratio());
  out += fmt::format("{}memory GB/s: min {:.2f}, median {:.2f}, max {:.2f} (max/min {:.2f})\n", item, s.mem_min, s.mem_median, s.mem_max, s.mem_ratio());
  const HostFacts& f = info.host_facts;
  if (f.recorded())
    out += fmt::format("{}host: CPUs {}, NUMA nodes {}, transparent huge pages {}, CPU frequency {}\n", item, f.affinity.empty() ? "unknown" : cpu_list(f.affinity),
                       f.numa_nodes, f.transparent_hugepages, f.cpufreq);
  const double worst = std::max(s.cpu_ratio(), s.mem_ratio());
  if (worst > kCanarySpreadWarning)
    out += fmt::format("{}the host's speed changed during this run: the canary's max/min is {:.2f} (over {}); times of host-side "
                       "versions (CPU versions, host-side builds) are not comparable across this run; `knnbench ab` judges them in "
                       "alternating processes\n",
                       markdown ? "\n> **Warning:** " : "WARNING: ", worst, kCanarySpreadWarning);
  return out + (markdown ? "\n" : "");
}

}  // namespace knn
