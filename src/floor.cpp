// A result's floor from the measured rates (floor.hpp); the formulas are docs/measurement.md's "Floors".
#include "floor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace knn {
namespace {

// The largest value the int8 path shifts exactly (a float holds every integer up to 2^24), the
// widest span one shift puts in [-128, 127], the largest k whose int32 sums cannot overflow.
constexpr double kWholeFloatLimit = 16777216.0;
constexpr double kInt8Span = 255.0;
constexpr long long kInt8LargestK = 32768;
constexpr long long kFp16LargestK = 16;  // one m16n8k16 product

// The sum over the devices of one of their rates; 0 when any device lacks it.
double summed(const std::vector<DeviceRates>& rates, const std::string& name) {
  double sum = 0;
  for (const DeviceRates& r : rates) {
    const double x = rate_named(r, name);
    if (!(x > 0)) return 0;
    sum += x;
  }
  return sum;
}

}  // namespace

double* rate_named(DeviceRates& r, const std::string& name) {
  double* fields[] = {&r.sgemm_tflops,    &r.tf32_tflops,       &r.int8_tops,       &r.d2d_gbps,
                      &r.h2d_pinned_gbps, &r.h2d_pageable_gbps, &r.d2h_pinned_gbps, &r.d2h_pageable_gbps, &r.fp16_tflops};
  for (std::size_t i = 0; i < std::size(kRateNames); ++i)
    if (name == kRateNames[i]) return fields[i];
  return nullptr;
}

double rate_named(const DeviceRates& r, const std::string& name) {
  const double* x = rate_named(const_cast<DeviceRates&>(r), name);
  return x ? *x : 0;
}

const char* to_string(FloorBound b) {
  switch (b) {
    case FloorBound::copy: return "copy";
    case FloorBound::compute: return "compute";
    case FloorBound::none: break;
  }
  return "none";
}

bool int8_exact(const ValueTraits& v, long long k) {
  if (!v.known || !v.whole || !v.finite) return false;
  if (std::fabs(double(v.lowest)) > kWholeFloatLimit || std::fabs(double(v.highest)) > kWholeFloatLimit) return false;
  return double(v.highest) - double(v.lowest) <= kInt8Span && k <= kInt8LargestK;
}

bool fp16_exact(const ValueTraits& v, long long k) {
  if (!v.known || !v.finite || k > kFp16LargestK) return false;
  const double centre = double(float(0.5 * (double(v.lowest) + double(v.highest))));
  const double half = std::max(double(v.highest) - centre, centre - double(v.lowest));
  return half == 0 || (half > 1e-18 && half < 1e18);
}

ResultFloor compute_floor(const FloorInput& in) {
  ResultFloor f;
  f.decided = true;
  // Decided by the devices the call used, not the family: a cpu-family version that hands its work
  // to a GPU engine (a sharded version on one rank) is brute force on that device.
  if (in.rates.empty()) {
    f.note = "ran on the host: no GPU floor (the canary's one-thread memory probe bounds no multi-threaded version)";
    return f;
  }
  if (!in.no_rates.empty()) {
    f.note = in.no_rates;
    return f;
  }
  const bool pinned = in.memory == HostMemory::pinned;
  const std::string in_name = pinned ? "h2d_pinned_gbps" : "h2d_pageable_gbps";
  const std::string out_name = pinned ? "d2h_pinned_gbps" : "d2h_pageable_gbps";
  const double r_in = summed(in.rates, in_name), r_out = summed(in.rates, out_name);
  if (!(r_in > 0) || !(r_out > 0)) {
    f.note = fmt::format("no {} or {} measured on a device used", in_name, out_name);
    return f;
  }
  // Bytes: the inputs host to device (a self-join's queries are its references), the answers
  // (an index and a distance, 4 bytes each, per neighbour) back.
  const double query_bytes = in.self_join ? 0.0 : 4.0 * double(in.m) * double(in.k);
  const double reference_bytes = 4.0 * double(in.n) * double(in.k);
  const double answer_bytes = 8.0 * double(in.m) * double(in.topk);
  const double ms_per_gb = 1e3 / 1e9;
  const double inputs_ms = (query_bytes + reference_bytes) * ms_per_gb / r_in;
  // One device: no answer is final before the last reference has arrived, so the answers come
  // back after every reference went over. Several: one device may send while another still
  // receives, so only the larger copy counts.
  const double answers_ms = answer_bytes * ms_per_gb / r_out;
  f.copy_ms = in.rates.size() == 1 ? std::max(inputs_ms, reference_bytes * ms_per_gb / r_in + answers_ms) : std::max(inputs_ms, answers_ms);

  f.bound = FloorBound::copy;
  f.floor_ms = f.copy_ms;
  f.rate_name = in_name;
  f.rate = r_in;
  if (in.family == "tree") {
    f.note = "a tree prunes: copy floor only (no compute floor holds for every data set)";
  } else {
    // Every distance once: 2 m n k operations (a multiply and an add per coordinate); a self-join's
    // distances are symmetric, so half of them, n n k. At the fastest rate that stays exact.
    // fp16 where its proof holds and every device used measured it; else TF32, and the note says so.
    const bool fp16 = !int8_exact(in.values, in.k) && fp16_exact(in.values, in.k);
    const bool fp16_measured = fp16 && summed(in.rates, "fp16_tflops") > 0;
    const std::string gemm = int8_exact(in.values, in.k) ? "int8_tops" : fp16_measured ? "fp16_tflops" : "tf32_tflops";
    if (fp16 && !fp16_measured) f.note = "no fp16_tflops measured on a device used: the TF32 rate instead (a higher floor)";
    const double ops = in.self_join ? double(in.n) * double(in.n) * double(in.k) : 2.0 * double(in.m) * double(in.n) * double(in.k);
    const double rate = summed(in.rates, gemm);
    if (!(rate > 0)) {
      f.note = fmt::format("no {} measured on a device used: copy floor only", gemm);
    } else {
      f.compute_ms = ops / (rate * 1e12) * 1e3;
      if (f.compute_ms > f.copy_ms) f.bound = FloorBound::compute, f.floor_ms = f.compute_ms, f.rate_name = gemm, f.rate = rate;
    }
  }
  if (std::isfinite(in.median_ms) && in.median_ms > 0) f.x_floor = in.median_ms / f.floor_ms;
  return f;
}

}  // namespace knn
