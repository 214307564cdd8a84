// Test-only version: dies with SIGSEGV on its first call, to test --isolate.
#include <csignal>

#include "core/registry.hpp"

namespace {

void segfault_query(const knn::Problem&, knn::Neighbors, knn::RunContext&) { std::raise(SIGSEGV); }

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "t2";
  d.title = "test only: crashes with SIGSEGV";
  d.family = knn::Family::cpu;
  d.make = knn::query_only(segfault_query);
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
