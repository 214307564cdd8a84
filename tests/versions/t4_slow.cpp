// Test-only versions: each call of t4 sleeps 3 s before answering correctly, to test --max-time
// (stopped under --isolate) and interruption; t12 sleeps 60 s, longer than SIGTERM's grace period.
#include <chrono>
#include <thread>

#include "core/topk.hpp"
#include "core/registry.hpp"

namespace {

template <int Seconds>
void slow_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext&) {
  std::this_thread::sleep_for(std::chrono::seconds(Seconds));
  for (int q = 0; q < p.m; ++q) knn::bruteforce_one_query(p, q, out);
}

knn::VersionDesc describe(const char* id, const char* title, knn::QueryFn query) {
  knn::VersionDesc d;
  d.id = id;
  d.title = title;
  d.family = knn::Family::cpu;
  d.make = knn::query_only(query);
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe("t4", "test only: sleeps 3 s per call", slow_query<3>));
KNN_REGISTER_VERSION(describe("t12", "test only: sleeps 60 s per call", slow_query<60>));
