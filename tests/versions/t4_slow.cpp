// Test-only version: each call sleeps 3 s before answering correctly, to test --max-time
// (stopped under --isolate) and interruption.
#include <chrono>
#include <thread>

#include "core/topk.hpp"
#include "core/registry.hpp"

namespace {

void slow_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext&) {
  std::this_thread::sleep_for(std::chrono::seconds(3));
  for (int q = 0; q < p.m; ++q) knn::bruteforce_one_query(p, q, out);
}

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "t4";
  d.title = "test only: sleeps 3 s per call";
  d.family = knn::Family::cpu;
  d.make = knn::query_only(slow_query);
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
