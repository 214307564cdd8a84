#include <gtest/gtest.h>

#include <random>

#include "test_support.hpp"

using namespace knn;
using knn::testing::Dataset;

namespace {
// Random inputs for each check (fixed seed per test for reproducibility, never zeros).
Dataset random_dataset(int dim, int m, int n, int topk, std::uint64_t seed) { return Dataset(dim, m, n, topk, Distribution::uniform, seed); }
}  // namespace

TEST(Validate, ExactMatchPasses) {
  Dataset d = random_dataset(5, 50, 300, 1, 11);
  const auto ref = d.reference_answer();
  const auto rep = validate_neighbors(d.problem, ref.data(), ref.data());
  EXPECT_TRUE(rep.pass);
  EXPECT_EQ(rep.checked, 50);
  EXPECT_EQ(rep.mismatches, 0);
  EXPECT_EQ(rep.ties_accepted, 0);
  EXPECT_EQ(rep.max_rel_error, 0.0);
}

TEST(Validate, AnotherIndexAtAnEqualDistanceIsATie) {
  // References 0 and 2 are the same point: both are exact nearest neighbours of the query.
  Dataset d(2, 1, {0.5f, 0.5f}, {0.25f, 0.25f, 0.9f, 0.9f, 0.25f, 0.25f});
  const std::vector<std::int32_t> ref{0}, got{2};
  const auto rep = validate_neighbors(d.problem, ref.data(), got.data());
  EXPECT_TRUE(rep.pass);
  EXPECT_EQ(rep.ties_accepted, 1);
}

TEST(Validate, RealMismatchIsCaught) {
  Dataset d = random_dataset(3, 40, 500, 1, 12);
  auto ref = d.reference_answer();
  auto got = ref;
  got[7] = (got[7] + 1) % d.problem.n;  // a different point: almost surely farther
  const auto rep = validate_neighbors(d.problem, ref.data(), got.data());
  EXPECT_FALSE(rep.pass);
  EXPECT_EQ(rep.mismatches, 1);
  EXPECT_GT(rep.max_rel_error, 0.0);
  EXPECT_NE(rep.first_problem.find("query 7"), std::string::npos) << rep.first_problem;
}

TEST(Validate, OutOfRangeAndUnwrittenIndicesAreCaught) {
  Dataset d = random_dataset(3, 10, 100, 1, 13);
  auto ref = d.reference_answer();
  auto got = ref;
  got[3] = -1;   // an unwritten (poisoned) slot
  got[4] = 100;  // one past the end
  const auto rep = validate_neighbors(d.problem, ref.data(), got.data());
  EXPECT_FALSE(rep.pass);
  EXPECT_EQ(rep.invalid, 2);
}

TEST(Validate, TopkDuplicateIndexIsCaught) {
  Dataset d = random_dataset(4, 20, 200, 5, 14);
  auto ref = d.reference_answer();
  auto got = ref;
  got[2 * 5 + 4] = got[2 * 5 + 3];
  const auto rep = validate_neighbors(d.problem, ref.data(), got.data());
  EXPECT_FALSE(rep.pass);
  EXPECT_EQ(rep.invalid, 1);
  EXPECT_NE(rep.first_problem.find("duplicate"), std::string::npos);
}

TEST(Validate, TopkMustBeSortedByDistance) {
  Dataset d = random_dataset(4, 20, 200, 5, 15);
  auto ref = d.reference_answer();
  auto got = ref;
  std::swap(got[0], got[4]);  // same multiset, wrong order
  const auto rep = validate_neighbors(d.problem, ref.data(), got.data());
  EXPECT_FALSE(rep.pass);
  EXPECT_NE(rep.first_problem.find("not sorted"), std::string::npos) << rep.first_problem;
}

TEST(Validate, TopkWrongMemberIsCaughtEvenWhenSorted) {
  Dataset d = random_dataset(4, 20, 200, 5, 16);
  d.problem.topk = 6;
  auto ref6 = d.reference_answer();
  d.problem.topk = 5;
  auto ref = d.reference_answer();
  auto got = ref;
  got[5 * 1 + 4] = ref6[6 * 1 + 5];  // the 6th nearest instead of the 5th
  const auto rep = validate_neighbors(d.problem, ref.data(), got.data());
  EXPECT_FALSE(rep.pass);
  EXPECT_EQ(rep.mismatches, 1);
}

TEST(Validate, ReferenceEqualsSerialV0BitForBit) {
  Dataset d = random_dataset(7, 333, 1001, 3, 17);
  const auto par = d.reference_answer();
  std::vector<std::int32_t> ser(par.size());
  std::vector<float> dist(par.size());
  TimingSink sink;
  Environment env;
  RunContext ctx{sink, env, {}, {}};
  Registry::instance().find("v0")->make()->query(d.problem, Neighbors{ser.data(), dist.data()}, ctx);
  EXPECT_EQ(par, ser);
}

TEST(Validate, SampledReferenceCoversSpreadRowsAndCatchesErrorsThere) {
  Dataset d = random_dataset(3, 1000, 400, 2, 18);
  const Reference sampled = compute_reference(d.problem, 10);
  ASSERT_EQ(sampled.rows.size(), 10u);
  EXPECT_EQ(sampled.rows.front(), 0);
  EXPECT_EQ(sampled.rows.back(), 999);
  EXPECT_TRUE(sampled.sampled(d.problem));
  const auto full = d.reference_answer();
  for (std::size_t i = 0; i < sampled.rows.size(); ++i)
    for (int j = 0; j < 2; ++j) EXPECT_EQ(sampled.indices[i * 2 + j], full[std::size_t(sampled.rows[i]) * 2 + j]);
  auto got = full;
  EXPECT_TRUE(validate_neighbors(d.problem, sampled, got.data()).pass);
  const auto rep_ok = validate_neighbors(d.problem, sampled, got.data());
  EXPECT_EQ(rep_ok.queries_checked, 10);
  EXPECT_EQ(rep_ok.checked, 20);
  got[std::size_t(sampled.rows[3]) * 2] = -1;  // a sampled row is wrong
  EXPECT_FALSE(validate_neighbors(d.problem, sampled, got.data()).pass);
  EXPECT_FALSE(compute_reference(d.problem, 0).sampled(d.problem));
}
