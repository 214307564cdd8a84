// Test-only version: each call sleeps 60 s, longer than SIGTERM's grace period, to test that a
// terminated run ends after the grace with its finished results on disk.
#include <chrono>
#include <thread>

#include "core/registry.hpp"
#include "core/topk.hpp"

namespace {

void very_slow_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext&) {
  std::this_thread::sleep_for(std::chrono::seconds(60));
  for (int q = 0; q < p.m; ++q) knn::bruteforce_one_query(p, q, out);
}

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "t12";
  d.title = "test only: sleeps 60 s per call";
  d.family = knn::Family::cpu;
  d.make = knn::query_only(very_slow_query);
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
