#pragma once
// The records reporters read. Reporters never measure anything.
#include <map>
#include <string>
#include <vector>

#include "canary.hpp"
#include "core/params.hpp"
#include "core/environment.hpp"
#include "floor.hpp"
#include "gpu_busy.hpp"
#include "matrix.hpp"
#include "mpi_env.hpp"
#include "stats.hpp"
#include "sysinfo.hpp"
#include "validate.hpp"

namespace knn {

// inexact: a peer (another library) whose answer failed validation. It is a measurement (timed,
// with its wrong queries and recall in the validation), not a failure of knnbench: it does not
// change the exit code unless --strict-peers. knnbench's own versions fail on any wrong answer.
enum class Status { pass, fail, skip, inexact };
const char* to_string(Status s);
// A result with a time: pass, or a peer's inexact answer.
inline bool timed(Status s) { return s == Status::pass || s == Status::inexact; }

// The SM clock and throttle reasons of the device a result ran on, read before its first and
// after its last sample, as nvbench records them (measure.cpp reads them as clocks.hpp's
// ClockRecord per device; a multi-GPU result keeps the device whose clocks moved, else the first).
// 0 MHz and empty text: not recorded (no GPU, or no NVML).
struct ResultClocks {
  double sm_clock_mhz_before = 0, sm_clock_mhz_after = 0;
  std::string throttle_before, throttle_after;  // e.g. "none", "sw_power_cap,hw_slowdown"
  bool recorded() const { return sm_clock_mhz_before > 0 || sm_clock_mhz_after > 0 || !throttle_before.empty() || !throttle_after.empty(); }
  bool changed() const { return sm_clock_mhz_before != sm_clock_mhz_after || throttle_before != throttle_after; }
};

struct Result {
  Case problem_case;
  std::string query_checksum, reference_checksum;
  std::string version, title, family;
  Status status = Status::skip;
  std::string reason;  // skip or failure reason; for inexact, what was wrong
  // The value of every parameter the version declares (defaults included), the ones the user set
  // (in declaration order: the label shows them) and, for each `auto`, what its rule chose here.
  std::map<std::string, std::string> params;
  std::vector<std::string> params_set;
  std::map<std::string, std::string> params_chosen;
  std::string path;    // internal path the version reported, if any
  std::string note;    // harness remark about the measurement (e.g. a single cold sample)
  std::vector<int> devices_used;
  HostMemory host_memory = HostMemory::pageable;
  bool validated = false;
  ValidationReport validation;
  std::vector<double> samples_ms;  // wall time per call of each sample (a sample may time several calls)
  Stats stats;                     // of samples_ms; a result that did not pass has no time (JSON null)
  int calls_per_sample = 1;        // calls timed together per sample, for calls near the timer's resolution
  bool noise_target_missed = false;  // sampling stopped (time or sample limit) before the noise target
  bool interrupted = false;          // cut short by an interrupt: not a measurement
  // --interleave (interleave.hpp): its samples alternated, one by one, with those of the result of
  // the same case and version in the other setting of its swept parameter (sample i beside sample i).
  bool interleaved = false;
  ResultClocks clocks;
  ResultCanary canary;         // the host's speed before and after (canary.hpp); not recorded under --no-canary
  ResultHostFacts host_facts;  // where the inputs lay, the CPUs and their frequency, with the canary
  std::map<std::string, std::vector<double>> phase_samples_ms;  // build, query, h2d, kernel, d2h, ...
  std::map<int, std::map<std::string, std::vector<double>>> device_phase_samples_ms;
  // Read only: a phase's recorded median where its file kept no per-sample times (files trimmed to
  // fit results/ in 5 MB); the tables show it instead of nothing.
  std::map<std::string, double> phase_recorded_median_ms;
  // What the harness found in the inputs (whole numbers, their range), for the floor; not written:
  // the floor records what it used.
  ValueTraits values;
  ResultFloor floor;  // the least time the call could take here (floor.hpp); not decided: none written
  ResultGpuBusy gpu_busy;  // how long one more call kept the GPUs busy (gpu_busy.hpp); not decided: none written
  // "v16[test=median]": the version id with the parameters the user set; the id alone otherwise.
  std::string label() const { return variant_label(version, params, params_set); }
};

// The build that wrote a results file, as the file's "meta" records it. Empty for the run in
// progress: the writer takes its own build from build_info.
struct RecordedBuild {
  std::string knnbench_version, git_sha, build_type, cxx_compiler, cuda_compiler, cuda_architectures;
};

struct RunInfo {
  std::vector<std::string> argv;
  RecordedBuild recorded_build;  // filled by the reader only
  std::string started_utc;
  HostInfo host;
  HostFacts host_facts;  // the process's affinity, NUMA nodes, huge pages, cpufreq (canary.hpp)
  std::vector<DeviceInfo> devices;  // selected devices
  std::vector<double> warmup_ms;    // per selected device
  std::vector<DeviceRates> device_rates;  // per selected device, measured at start-up (rates.hpp); empty: none
  std::string rates_note;                 // why there are none, when there are none
  std::string device_note;          // why there are none, when there are none
  int cuda_runtime_version = 0, cuda_driver_version = 0;
  std::string matrix_file, matrix_checksum;
  // options, as they shaped the measurements
  int warmup = 0, min_samples = 0, max_samples = 0;
  double min_time_s = 0, max_time_s = 0;
  double max_noise_pct = 0;  // --max-noise (0: no target; files from before it existed read 0)
  bool validate = true;
  int validate_queries = 0;
  HostMemory host_memory = HostMemory::pageable;
  bool complete = false;  // false while running or after an interruption
  // Under mpirun: the number of ranks and each rank's host and GPU ("none": the CPU engine).
  // 0 ranks: not started by mpirun.
  int mpi_ranks = 0;
  std::vector<RankPlace> rank_places;
};

}  // namespace knn
