#pragma once
// The floor of a result: the least time its call could take on the devices it used, from the rates
// measured at start-up on each GPU (rates.hpp). floor_ms = max(copy floor, compute floor); x_floor
// = median / floor_ms. docs/measurement.md ("Floors") gives each formula and why it is a bound.
// Reporters read ResultFloor; nothing here measures.
#include <string>
#include <vector>

#include "core/environment.hpp"
#include "core/problem.hpp"

namespace knn {

// What one GPU did at start-up (rates.cpp): GEMM rates in 10^12 operations per second (a
// multiply-add is two), copy rates in 10^9 bytes per second. All 0: not measured.
struct DeviceRates {
  double sgemm_tflops = 0;      // fp32 GEMM (CUBLAS_COMPUTE_32F)
  double tf32_tflops = 0;       // fp32 in, TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32)
  double int8_tops = 0;         // int8 in, int32 out (CUBLAS_COMPUTE_32I)
  double d2d_gbps = 0;          // device memory: bytes read + bytes written by a device-to-device copy
  double h2d_pinned_gbps = 0, h2d_pageable_gbps = 0;  // host to device, from pinned / pageable memory
  double d2h_pinned_gbps = 0, d2h_pageable_gbps = 0;  // device to host, into pinned / pageable memory
  double ms = 0;                // the measurement's own time
  double fp16_tflops = 0;       // fp16 in, fp32 sums (CUBLAS_COMPUTE_32F); 0 where its GEMM failed or a file predates it
  bool measured() const { return sgemm_tflops > 0; }
};

// The names of the rates, as results files write them (devices[i].rates) and as a floor names the
// rate it used.
inline constexpr const char* kRateNames[] = {"sgemm_tflops",    "tf32_tflops",       "int8_tops",       "d2d_gbps",
                                            "h2d_pinned_gbps", "h2d_pageable_gbps", "d2h_pinned_gbps", "d2h_pageable_gbps",
                                            "fp16_tflops"};
// The one rate a results file may lack or hold as null (files from before it; a GEMM that failed).
inline constexpr const char* kOptionalRate = "fp16_tflops";
// The rate called `name` (one of kRateNames), as a pointer into `r` (nullptr for another name).
double* rate_named(DeviceRates& r, const std::string& name);
double rate_named(const DeviceRates& r, const std::string& name);

enum class FloorBound { none, copy, compute };
const char* to_string(FloorBound b);

// A result's floor. `decided` false: nobody computed one (a result of an older file, or a result
// without a time). Decided without a floor (bound none): `note` says why (no GPU, no rates).
struct ResultFloor {
  bool decided = false;
  FloorBound bound = FloorBound::none;
  double floor_ms = 0, x_floor = 0;  // 0: none
  double copy_ms = 0, compute_ms = 0;  // each term; 0: not counted (a tree has no compute floor)
  std::string rate_name;  // the rate of the bound that gave floor_ms: one of kRateNames
  double rate = 0;        // that rate summed over the devices used (GB/s or T op/s)
  std::string note;       // why there is no floor, or what the floor leaves out
  bool has_floor() const { return bound != FloorBound::none; }
};

// Everything the floor of one result depends on.
struct FloorInput {
  long long m = 0, n = 0, k = 0, topk = 0;
  bool self_join = false;
  std::string family;  // Result::family: "cpu", "gpu", "multi-gpu", "tree", "peer"
  HostMemory memory = HostMemory::pageable;  // where the inputs and the answers lie
  ValueTraits values;                        // what the harness found in the inputs
  std::vector<DeviceRates> rates;            // of each device the call used; empty: it used none
  std::string no_rates;                      // set: a device used has no rates, and why
  double median_ms = 0;                      // the result's median; <= 0 or NaN: none
};

// Whether the dot products of these values are exact on the int8 GEMM path (int32 sums): every
// value known, whole and finite, within 2^24 in magnitude, all of them within 256 consecutive
// integers (one shift puts them in [-128, 127]) and k <= 32768 (k · 255² < 2^31).
bool int8_exact(const ValueTraits& v, long long k);

// Whether fp16 products with fp32 sums give exact answers by a proven bound (v15's tile filter,
// kernels/bruteforce/detail/filters/tc_tile.hpp): every value known and finite, k <= 16, and the values'
// half span about their centre either 0 or within [1e-18, 1e18] (its power-of-two scale stays in float).
bool fp16_exact(const ValueTraits& v, long long k);

// The floor by the formulas of docs/measurement.md ("Floors").
ResultFloor compute_floor(const FloorInput& in);

}  // namespace knn
