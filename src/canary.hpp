#pragma once
// The host canary: how fast this host is right now, read before and after each result (a fixed
// CPU loop and a memory-bandwidth probe, a few milliseconds each time), and the facts that could
// explain a slow process (where the inputs lie, their huge pages, the CPUs the threads ran on,
// the CPU frequency). `compare` reads the canaries of two files to tell a host that changed speed
// from code that did (compare_canary.cpp); docs/measurement.md has the rule.
#include <string>
#include <vector>

#include "core/environment.hpp"

namespace knn {

// One reading: the mean of kCanaryLoops runs of a fixed integer loop (ms), and the bandwidth of
// one thread reading a kCanaryBufferBytes buffer allocated by the run's host-memory allocator (GB/s,
// in kCanaryChunks parts). Wall time: a share of the CPU taken by other processes shows.
struct CanaryReading {
  double cpu_ms = 0;
  double mem_gbps = 0;
  std::vector<int> cpus;  // the CPUs the OpenMP threads were on (sched_getcpu), sorted, unique
  double cpu_mhz = 0;     // mean scaling_cur_freq of those CPUs; 0: unreadable
};
inline constexpr int kCanaryLoops = 3;
inline constexpr std::size_t kCanaryBufferBytes = std::size_t(32) << 20;
inline constexpr int kCanaryChunks = 4;  // the buffer is read in 4 parts

// A result's canary, before its first call and after its last. All 0: not recorded (--no-canary,
// a skip, an older file).
struct ResultCanary {
  double cpu_ms_before = 0, cpu_ms_after = 0, mem_gbps_before = 0, mem_gbps_after = 0;
  bool recorded() const { return cpu_ms_before > 0; }
  // The result's host speed: the mean of before and after.
  double cpu_ms() const { return (cpu_ms_before + cpu_ms_after) / 2; }
  double mem_gbps() const { return (mem_gbps_before + mem_gbps_after) / 2; }
};

// What could explain a slow result, read with its canary. Empty numa node: not recorded.
struct ResultHostFacts {
  std::string input_numa_node;       // the NUMA node(s) of the input buffers' pages ("0", "0,1"), or "unknown"
  long long input_anon_huge_kb = -1;  // AnonHugePages of the mappings holding the inputs (kB); -1: unknown
  std::vector<int> cpus;             // CPUs the OpenMP threads ran on at the two canaries
  double cpu_mhz = 0;                // mean CPU frequency at the two canaries (MHz); 0: unreadable
  // Between the two canaries: the share of the machine's CPU time the hypervisor gave to others
  // (/proc/stat's steal over its total, percent), and the process's involuntary context switches
  // (getrusage: other threads or processes took its CPU). -1: unreadable.
  double steal_pct = -1;
  long long involuntary_switches = -1;
  bool recorded() const { return !input_numa_node.empty(); }
};

// The process's facts, once per results file.
struct HostFacts {
  std::vector<int> affinity;  // CPUs the process's OpenMP threads may run on (sched_getaffinity of each)
  std::string numa_nodes;     // /sys/devices/system/node/online ("0", "0-1"), or "unknown"
  std::string transparent_hugepages;  // the selected mode ("always", "madvise", "never"), or "unknown"
  std::string cpufreq;        // "readable" or "unreadable" (scaling_cur_freq)
  bool recorded() const { return !numa_nodes.empty(); }
};

// Reads the canary now; its buffer (one per host-memory kind, kept for the process) is allocated
// and filled at the first reading.
CanaryReading read_canary(HostMemory memory);
HostFacts read_host_facts();

// The NUMA node of the page at `address` (get_mempolicy with MPOL_F_NODE | MPOL_F_ADDR); -1 when
// the kernel does not say (no NUMA support, a container that forbids the call).
int numa_node_of(const void* address);
// The AnonHugePages (kB) of the mappings of /proc/self/smaps holding any of `addresses`; -1 unreadable.
long long anon_huge_kb_of(const std::vector<const void*>& addresses);
// /proc/stat's first line: the machine's steal and total CPU time so far (jiffies); false unreadable.
bool read_cpu_times(long long& steal, long long& total);
// CPU numbers as ranges: {0, 1, 2, 5} -> "0-2,5".
std::string cpu_list(const std::vector<int>& cpus);

// Reads the canary before a result (the constructor) and after it (finish), and the facts of the
// inputs `buffers` (each a pointer and a size in bytes; smaps only for those of 2 MiB or more).
// A reading younger than 0.5 s is used again (canary.cpp). Off: does nothing.
class CanaryProbe {
 public:
  CanaryProbe(bool on, HostMemory memory, std::vector<std::pair<const void*, std::size_t>> buffers);
  void finish(ResultCanary& canary, ResultHostFacts& facts);

 private:
  bool on_;
  HostMemory memory_;
  CanaryReading before_;
  ResultHostFacts facts_;
  long long steal_before_ = -1, total_before_ = -1, switches_before_ = -1;
};

// Across the results of one run: the canary's min, median and max, and max/min (report).
struct CanarySpread {
  int results = 0;  // results with a canary
  double cpu_min = 0, cpu_median = 0, cpu_max = 0;
  double mem_min = 0, mem_median = 0, mem_max = 0;
  double cpu_ratio() const { return cpu_min > 0 ? cpu_max / cpu_min : 0; }
  double mem_ratio() const { return mem_min > 0 ? mem_max / mem_min : 0; }
};
// Before and after readings of every result, each one value.
CanarySpread canary_spread(const std::vector<ResultCanary>& canaries);
// Above this max/min within one run, report warns: the host changed speed during the run.
inline constexpr double kCanarySpreadWarning = 1.3;

}  // namespace knn
