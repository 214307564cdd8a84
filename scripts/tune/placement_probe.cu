// Is a slow host side tied to where a process's buffers landed in physical memory, or to the time
// it ran? (docs/measurement.md: the same single-threaded code ran 1.8-2x faster or slower from one
// process to the next, pinned to one CPU.) Allocates `buffers` buffers of `mib` MiB, each
// first-touched by this one thread, then, for `rounds` rounds, times in turn: one thread reading
// each buffer (GB/s), a loop that touches no memory (ns per step: the CPU's speed at that moment)
// and, where a GPU answers, a pinned copy of each buffer to it (cudaHostRegister; GB/s). Prints a
// line per buffer with the median over the rounds, and where the process may read
// /proc/self/pagemap (root), the physical GiB its pages lie in.
//   placement_probe [buffers = 8] [mib = 256] [rounds = 5]
#include <cuda_runtime.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// One thread sums the buffer with 8 accumulators (bound by memory, not by the adds).
double read_gbps(const float* p, std::size_t count, float* sink) {
  const auto t0 = Clock::now();
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (std::size_t i = 0; i + 8 <= count; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += p[i + j];
  *sink += acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];
  return double(count * sizeof(float)) / seconds_since(t0) / 1e9;
}

// A dependent chain of integer steps: no memory, so its time is the core's speed alone.
double compute_ns_per_step(std::uint64_t* sink) {
  constexpr std::uint64_t kSteps = 50'000'000;
  std::uint64_t x = *sink | 1;
  const auto t0 = Clock::now();
  for (std::uint64_t i = 0; i < kSteps; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  *sink = x;
  return seconds_since(t0) * 1e9 / double(kSteps);
}

// The physical GiB (frame >> 18) of the buffer's pages, one sample every 2 MiB; empty without
// the right to read frames (they read as 0).
std::string physical_gib(const void* p, std::size_t bytes) {
  const int fd = open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0) return "pagemap: not readable";
  std::set<std::uint64_t> gib;
  for (std::size_t off = 0; off < bytes; off += std::size_t(2) << 20) {
    const std::uint64_t page = (reinterpret_cast<std::uintptr_t>(p) + off) / 4096;
    std::uint64_t e = 0;
    if (pread(fd, &e, sizeof e, off_t(page * sizeof e)) != off_t(sizeof e) || !(e >> 63)) continue;
    const std::uint64_t frame = e & ((1ull << 55) - 1);
    if (frame != 0) gib.insert(frame >> 18);
  }
  close(fd);
  if (gib.empty()) return "frames: hidden (not root)";
  std::string s = "GiB";
  for (std::uint64_t g : gib) s += " " + std::to_string(g);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const int buffers = argc > 1 ? std::atoi(argv[1]) : 8, mib = argc > 2 ? std::atoi(argv[2]) : 256;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
  if (buffers < 1 || mib < 1 || rounds < 1) {
    std::fprintf(stderr, "usage: placement_probe [buffers >= 1] [mib >= 1] [rounds >= 1]\n");
    return 2;
  }
  const std::size_t bytes = std::size_t(mib) << 20, count = bytes / sizeof(float);
  std::vector<float*> buf(buffers);
  for (int b = 0; b < buffers; ++b) {
    buf[b] = static_cast<float*>(std::aligned_alloc(std::size_t(2) << 20, bytes));
    if (buf[b] == nullptr) { std::fprintf(stderr, "placement_probe: out of memory\n"); return 1; }
    for (std::size_t i = 0; i < count; ++i) buf[b][i] = float(i % 1024);  // first touch, by this thread
  }
  int devices = 0;
  const bool gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  float* device = nullptr;
  if (gpu && cudaMalloc(&device, bytes) != cudaSuccess) device = nullptr;
  std::vector<std::vector<double>> read(buffers), copy(buffers);
  std::vector<double> compute;
  float fsink = 0;
  std::uint64_t isink = 1;
  for (int r = 0; r < rounds; ++r) {
    compute.push_back(compute_ns_per_step(&isink));
    for (int b = 0; b < buffers; ++b) read[b].push_back(read_gbps(buf[b], count, &fsink));
    if (device == nullptr) continue;
    for (int b = 0; b < buffers; ++b) {
      if (cudaHostRegister(buf[b], bytes, cudaHostRegisterDefault) != cudaSuccess) continue;
      cudaMemcpy(device, buf[b], bytes, cudaMemcpyHostToDevice);  // once untimed
      const auto t0 = Clock::now();
      cudaMemcpy(device, buf[b], bytes, cudaMemcpyHostToDevice);
      copy[b].push_back(double(bytes) / seconds_since(t0) / 1e9);
      cudaHostUnregister(buf[b]);
    }
  }
  std::printf("pid %d, cpu %d at the end, %d buffers of %d MiB, %d rounds; compute loop %.3f ns/step (median; min %.3f max %.3f)\n",
              int(getpid()), sched_getcpu(), buffers, mib, rounds, median(compute),
              *std::min_element(compute.begin(), compute.end()), *std::max_element(compute.begin(), compute.end()));
  std::printf("buffer  read GB/s (median, min, max)   pinned H2D GB/s (median)   physical placement\n");
  for (int b = 0; b < buffers; ++b)
    std::printf("%6d  %6.2f %6.2f %6.2f              %s   %s\n", b, median(read[b]),
                *std::min_element(read[b].begin(), read[b].end()), *std::max_element(read[b].begin(), read[b].end()),
                copy[b].empty() ? "  n/a" : std::to_string(median(copy[b])).substr(0, 6).c_str(),
                physical_gib(buf[b], bytes).c_str());
  std::printf("(checksum %g %llu)\n", double(fsink), (unsigned long long)isink);
  if (device != nullptr) cudaFree(device);
  for (float* p : buf) std::free(p);
  return 0;
}
