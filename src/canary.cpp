// The host canary and the host's facts (canary.hpp). Linux interfaces only, read directly: no
// libnuma (get_mempolicy through syscall), /proc/self/smaps, /sys's cpufreq and node files.
#include "canary.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

#include "host_memory.hpp"
#include "stats.hpp"

namespace knn {
namespace {

using Clock = std::chrono::steady_clock;

// Inputs smaller than one huge page are not looked up in /proc/self/smaps (their AnonHugePages read null).
constexpr std::size_t kHugePageBytes = std::size_t(2) << 20;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// A fixed chain of dependent integer steps (xorshift): about a millisecond, no memory traffic.
constexpr long kLoopSteps = 300'000;
volatile std::uint64_t g_sink = 0;

// The mean of kCanaryLoops runs: time the thread spent off its CPU (other processes on a busy
// host) counts, as it counts in a version's time.
double cpu_loop_ms() {
  double total = 0;
  for (int run = 0; run < kCanaryLoops; ++run) {
    std::uint64_t x = 88172645463325252ull + std::uint64_t(run);
    const auto t0 = Clock::now();
    for (long i = 0; i < kLoopSteps; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
    }
    const double ms = ms_since(t0);
    g_sink = g_sink + x;
    total += ms;
  }
  return total / kCanaryLoops;
}

// One buffer per kind of host memory, allocated as the inputs are (HostArray) and filled once, so
// that every page is there before the first reading. Kept until the process ends and never freed:
// a pinned buffer freed by a static destructor would reach the CUDA runtime after its teardown.
HostArray& probe_buffer(HostMemory memory) {
  static std::mutex lock;
  static auto* buffers = new std::map<HostMemory, std::unique_ptr<HostArray>>;
  const std::lock_guard<std::mutex> hold(lock);
  std::unique_ptr<HostArray>& b = (*buffers)[memory];
  if (!b) {
    b = std::make_unique<HostArray>(kCanaryBufferBytes / sizeof(float), memory);
    std::uint32_t* w = b->as<std::uint32_t>();
    for (std::size_t i = 0; i < b->size(); ++i) w[i] = std::uint32_t(i * 2654435761u);
  }
  return *b;
}

// One thread reads the whole buffer once, in kCanaryChunks parts; GB/s of the whole read (time off
// the CPU counts, as in the CPU loop).
double mem_gbps(HostMemory memory) {
  const HostArray& b = probe_buffer(memory);
  const std::uint32_t* w = b.as<std::uint32_t>();
  const std::size_t part = b.size() / kCanaryChunks;
  double total_ms = 0;
  for (int c = 0; c < kCanaryChunks; ++c) {
    const std::uint32_t* p = w + std::size_t(c) * part;
    std::uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i + 4 <= part; i += 4) {
      s0 += p[i];
      s1 += p[i + 1];
      s2 += p[i + 2];
      s3 += p[i + 3];
    }
    const double ms = ms_since(t0);
    g_sink = g_sink + s0 + s1 + s2 + s3;
    total_ms += ms;
  }
  return total_ms > 0 ? double(kCanaryChunks * part * sizeof(std::uint32_t)) / (total_ms * 1e6) : 0;
}

std::vector<int> omp_cpus() {
  std::set<int> seen;
  std::mutex lock;
#pragma omp parallel
  {
    const int cpu = sched_getcpu();
    const std::lock_guard<std::mutex> hold(lock);
    if (cpu >= 0) seen.insert(cpu);
  }
  return {seen.begin(), seen.end()};
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  return line;
}

// kHz in scaling_cur_freq; 0 when no CPU of `cpus` has a readable one.
double mean_mhz(const std::vector<int>& cpus) {
  double sum = 0;
  int count = 0;
  for (const int c : cpus) {
    const std::string khz = first_line(fmt::format("/sys/devices/system/cpu/cpu{}/cpufreq/scaling_cur_freq", c));
    if (khz.empty() || khz.find_first_not_of("0123456789") != std::string::npos) continue;
    sum += std::stod(khz) / 1000;
    ++count;
  }
  return count ? sum / count : 0;
}

// A reading younger than this is the host's speed now, too: results that follow each other within
// it share one (the "after" of one result is the "before" of the next), so that a run of many short
// results does not spend its time on the canary (1000 trivial results: a reading every 0.5 s).
constexpr double kReuseMs = 500;

struct Kept {
  bool valid = false;
  Clock::time_point at;
  CanaryReading reading;
};

CanaryReading recent_canary(HostMemory memory) {
  static std::mutex lock;
  static std::map<HostMemory, Kept> kept;
  const std::lock_guard<std::mutex> hold(lock);
  Kept& k = kept[memory];
  if (!k.valid || ms_since(k.at) > kReuseMs) {
    k.reading = read_canary(memory);
    k.at = Clock::now();
    k.valid = true;
  }
  return k.reading;
}

}  // namespace

CanaryReading read_canary(HostMemory memory) {
  CanaryReading r;
  r.cpus = omp_cpus();
  r.cpu_ms = cpu_loop_ms();
  r.mem_gbps = mem_gbps(memory);
  r.cpu_mhz = mean_mhz(r.cpus);
  return r;
}

int numa_node_of(const void* address) {
#ifdef SYS_get_mempolicy
  constexpr unsigned long kFlagNode = 1, kFlagAddr = 2;  // MPOL_F_NODE, MPOL_F_ADDR (linux/mempolicy.h)
  int node = -1;
  if (syscall(SYS_get_mempolicy, &node, nullptr, 0UL, const_cast<void*>(address), kFlagNode | kFlagAddr) == 0) return node;
#else
  (void)address;
#endif
  return -1;
}

long long anon_huge_kb_of(const std::vector<const void*>& addresses) {
  std::ifstream in("/proc/self/smaps");
  if (!in) return -1;
  long long total = 0;
  bool inside = false, any = false;
  std::string line;
  while (std::getline(in, line)) {
    // A mapping's first line: "start-end perms offset dev inode path"; its fields follow.
    const auto dash = line.find('-');
    const auto space = line.find(' ');
    if (dash != std::string::npos && space != std::string::npos && dash < space && line.find(':') > space) {
      std::uint64_t lo = 0, hi = 0;
      try {
        lo = std::stoull(line.substr(0, dash), nullptr, 16);
        hi = std::stoull(line.substr(dash + 1, space - dash - 1), nullptr, 16);
      } catch (const std::exception&) {
        continue;
      }
      inside = false;
      for (const void* a : addresses) {
        const auto x = reinterpret_cast<std::uintptr_t>(a);
        inside = inside || (x >= lo && x < hi);
      }
      any = any || inside;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      std::istringstream fields(line.substr(14));
      long long kb = 0;
      if (fields >> kb) total += kb;
    }
  }
  return any ? total : -1;
}

bool read_cpu_times(long long& steal, long long& total) {
  // "cpu  user nice system idle iowait irq softirq steal guest guest_nice"
  std::istringstream in(first_line("/proc/stat"));
  std::string label;
  if (!(in >> label) || label != "cpu") return false;
  long long v[8] = {};
  for (long long& x : v)
    if (!(in >> x)) return false;
  total = 0;
  for (const long long x : v) total += x;  // guest time is already in user
  steal = v[7];
  return true;
}

namespace {
long long involuntary_switches_now() {
  rusage u{};
  return ::getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_nivcsw : -1;
}
}  // namespace

std::string cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + (j == i ? std::to_string(cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]));
    i = j + 1;
  }
  return out;
}

HostFacts read_host_facts() {
  HostFacts f;
  // Each OpenMP thread's own mask (bound threads each have their place): their union.
  std::set<int> allowed;
  std::mutex lock;
#pragma omp parallel
  {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
      const std::lock_guard<std::mutex> hold(lock);
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) allowed.insert(c);
    }
  }
  f.affinity.assign(allowed.begin(), allowed.end());
  f.numa_nodes = first_line("/sys/devices/system/node/online");
  if (f.numa_nodes.empty()) f.numa_nodes = "unknown";
  // "always [madvise] never": the mode in brackets is the one in force.
  const std::string thp = first_line("/sys/kernel/mm/transparent_hugepage/enabled");
  const auto open = thp.find('['), close = thp.find(']');
  f.transparent_hugepages = open != std::string::npos && close > open ? thp.substr(open + 1, close - open - 1) : "unknown";
  f.cpufreq = mean_mhz(f.affinity) > 0 ? "readable" : "unreadable";
  return f;
}

CanaryProbe::CanaryProbe(bool on, HostMemory memory, std::vector<std::pair<const void*, std::size_t>> buffers) : on_(on), memory_(memory) {
  if (!on_) return;
  // The facts of the inputs first (a few pages of each), then the canary.
  std::set<int> nodes;
  bool unknown = false;
  std::vector<const void*> addresses;  // of buffers that can hold a huge page: smaps costs milliseconds
  for (const auto& [ptr, bytes] : buffers) {
    if (ptr == nullptr || bytes == 0) continue;
    const auto* base = static_cast<const char*>(ptr);
    if (bytes >= kHugePageBytes) addresses.push_back(base);
    for (const std::size_t at : {std::size_t(0), bytes / 2, bytes - 1}) {
      const int node = numa_node_of(base + at);
      if (node < 0) unknown = true;
      else nodes.insert(node);
    }
  }
  std::string list;
  for (const int n : nodes) list += (list.empty() ? "" : ",") + std::to_string(n);
  facts_.input_numa_node = unknown || list.empty() ? "unknown" : list;
  facts_.input_anon_huge_kb = addresses.empty() ? -1 : anon_huge_kb_of(addresses);
  before_ = recent_canary(memory_);
  if (!read_cpu_times(steal_before_, total_before_)) steal_before_ = total_before_ = -1;
  switches_before_ = involuntary_switches_now();
}

void CanaryProbe::finish(ResultCanary& canary, ResultHostFacts& facts) {
  if (!on_) return;
  const CanaryReading after = recent_canary(memory_);
  canary = ResultCanary{before_.cpu_ms, after.cpu_ms, before_.mem_gbps, after.mem_gbps};
  facts = facts_;
  std::set<int> cpus(before_.cpus.begin(), before_.cpus.end());
  cpus.insert(after.cpus.begin(), after.cpus.end());
  facts.cpus.assign(cpus.begin(), cpus.end());
  const int readable = (before_.cpu_mhz > 0) + (after.cpu_mhz > 0);
  facts.cpu_mhz = readable ? (before_.cpu_mhz + after.cpu_mhz) / readable : 0;
  long long steal = 0, total = 0;
  if (total_before_ >= 0 && read_cpu_times(steal, total) && total > total_before_)
    facts.steal_pct = 100.0 * double(steal - steal_before_) / double(total - total_before_);
  const long long switches = involuntary_switches_now();
  if (switches_before_ >= 0 && switches >= switches_before_) facts.involuntary_switches = switches - switches_before_;
}

CanarySpread canary_spread(const std::vector<ResultCanary>& canaries) {
  std::vector<double> cpu, mem;
  CanarySpread s;
  for (const ResultCanary& c : canaries) {
    if (!c.recorded()) continue;
    ++s.results;
    cpu.insert(cpu.end(), {c.cpu_ms_before, c.cpu_ms_after});
    mem.insert(mem.end(), {c.mem_gbps_before, c.mem_gbps_after});
  }
  if (cpu.empty()) return s;
  const auto [cmin, cmax] = std::minmax_element(cpu.begin(), cpu.end());
  const auto [mmin, mmax] = std::minmax_element(mem.begin(), mem.end());
  s.cpu_min = *cmin, s.cpu_max = *cmax, s.cpu_median = median_of(cpu);
  s.mem_min = *mmin, s.mem_max = *mmax, s.mem_median = median_of(mem);
  return s;
}

}  // namespace knn
