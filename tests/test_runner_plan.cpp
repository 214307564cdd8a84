// The runner's pieces (src/plan.hpp, src/prepare.hpp, src/executor.hpp): the plan of (case, version)
// items and the way each runs, a case prepared once (inputs, checksums, a validation reference
// computed only for a version that runs), and the executors' results, skips included.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/registry.hpp"
#include "data.hpp"
#include "executor.hpp"
#include "plan.hpp"
#include "prepare.hpp"
#include "test_support.hpp"

using namespace knn;

namespace {

VersionDesc version(std::string id, bool shards = false) {
  VersionDesc v;
  v.id = std::move(id);
  v.title = "test " + v.id;
  v.shards_references = shards;
  v.make = query_only([](const Problem& p, Neighbors out, RunContext&) {
    for (int q = 0; q < p.m; ++q) bruteforce_one_query(p, q, out);
  });
  return v;
}

Case make_case(int id, int validate_queries = 0) {
  Case c;
  c.id = id;
  c.dim = 3;
  c.m = 20;
  c.n = 50;
  c.topk = 2;
  c.seed = 100 + std::uint64_t(id);
  c.validate_queries = validate_queries;
  return c;
}

// What the executors and prepare_case told the reporters, in order.
struct Recorder : Progress {
  std::vector<std::string> said;
  void step(const Case& c, const std::string& what) override { said.push_back(std::to_string(c.id) + ": " + what); }
  void start(const Case& c, const std::string& label) override { said.push_back(std::to_string(c.id) + " " + label); }
};

MeasureOptions once() {
  MeasureOptions o;
  o.warmup = 0;
  o.min_samples = o.max_samples = 1;
  o.min_time_s = 0;
  o.max_noise_pct = 0;
  return o;
}

}  // namespace

TEST(RunnerPlan, EveryCaseWithEveryVersionInOrder) {
  const VersionDesc a = version("v901"), b = version("v902");
  const Plan plan = make_plan({make_case(4), make_case(2)}, {&a, &b}, PlanChoices{});
  ASSERT_EQ(plan.cases.size(), 2u);
  EXPECT_EQ(plan.total(), 4);
  EXPECT_EQ(plan.cases[0].c.id, 4);
  EXPECT_EQ(plan.cases[1].c.id, 2);
  for (const CasePlan& cp : plan.cases) {
    ASSERT_EQ(cp.items.size(), 2u);
    EXPECT_EQ(cp.items[0].version, &a);
    EXPECT_EQ(cp.items[1].version, &b);
    EXPECT_EQ(cp.items[0].way, Way::in_process);
    EXPECT_TRUE(cp.versions(Way::isolated).empty());
  }
}

TEST(RunnerPlan, SeedAndValidatedQueriesComeFromTheFlagsBeforeTheCase) {
  const VersionDesc a = version("v901");
  const std::vector<Case> cases{make_case(1, 0), make_case(2, 7)};
  const Plan own = make_plan(cases, {&a}, PlanChoices{});
  EXPECT_EQ(own.cases[0].c.seed, 101u);
  EXPECT_EQ(own.cases[0].validate_queries, 0);  // every query
  EXPECT_EQ(own.cases[1].validate_queries, 7);  // the case's own
  PlanChoices flags;
  flags.seed = 5;
  flags.validate_queries = 3;
  const Plan given = make_plan(cases, {&a}, flags);
  for (const CasePlan& cp : given.cases) {
    EXPECT_EQ(cp.c.seed, 5u);
    EXPECT_EQ(cp.validate_queries, 3);
  }
}

TEST(RunnerPlan, UnderSeveralRanksShardingVersionsRunFirstOnEveryRank) {
  const VersionDesc a = version("v901"), s = version("v918", true), b = version("v902");
  PlanChoices ranks;
  ranks.many_ranks = true;
  ranks.isolate = true;  // (refused under mpirun by the runner; the plan only sorts the ways)
  const CasePlan cp = make_plan({make_case(1)}, {&a, &s, &b}, ranks).cases.at(0);
  ASSERT_EQ(cp.items.size(), 3u);
  EXPECT_EQ(cp.items[0].version, &s);
  EXPECT_EQ(cp.items[0].way, Way::sharded);
  EXPECT_EQ(cp.versions(Way::isolated), (std::vector<const VersionDesc*>{&a, &b}));
  // One rank: the sharding version runs like any other, in its place.
  const CasePlan one = make_plan({make_case(1)}, {&a, &s, &b}, PlanChoices{}).cases.at(0);
  EXPECT_EQ(one.versions(Way::in_process), (std::vector<const VersionDesc*>{&a, &s, &b}));
  EXPECT_TRUE(one.versions(Way::sharded).empty());
}

TEST(RunnerPrepare, InputsAndChecksumsAreTheGeneratedOnesAndTheReferenceWaitsForAVersion) {
  const VersionDesc a = version("v901");
  const CasePlan cp = make_plan({make_case(3)}, {&a}, PlanChoices{}).cases.at(0);
  Recorder said;
  const auto data = prepare_case(Matrix{}, cp, Way::in_process, Environment{}, once(), said);
  ASSERT_FALSE(data->skip) << *data->skip;
  EXPECT_EQ(said.said, (std::vector<std::string>{"3: generating data"}));
  const knn::testing::Dataset same(3, 20, 50, 2, Distribution::uniform, 103);
  const Result r = data->result_for(a);
  EXPECT_EQ(r.version, "v901");
  EXPECT_EQ(r.problem_case.id, 3);
  EXPECT_EQ(r.query_checksum, to_hex(checksum(same.queries.data(), same.queries.size())));
  EXPECT_EQ(r.reference_checksum, to_hex(checksum(same.references.data(), same.references.size())));
  EXPECT_EQ(data->problem.m, 20);
  EXPECT_EQ(data->problem.n, 50);

  const Reference* first = data->reference(said);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->rows.size(), 20u);
  EXPECT_EQ(data->reference(said), first);  // computed once
  EXPECT_EQ(said.said.size(), 2u);
  EXPECT_EQ(said.said.back(), "3: validation reference (v0 on every core)");

  MeasureOptions unvalidated = once();
  unvalidated.validate = false;
  Recorder quiet;
  EXPECT_EQ(prepare_case(Matrix{}, cp, Way::in_process, Environment{}, unvalidated, quiet)->reference(quiet), nullptr);
}

TEST(RunnerExecutors, InProcessMeasuresAndGradesAndASkippedVersionNeverNeedsTheReference) {
  VersionDesc pass = version("v901"), unsupported = version("v902");
  unsupported.supports = [](const Problem&, const Environment&) -> std::optional<std::string> { return std::string("not here"); };
  const CasePlan cp = make_plan({make_case(5)}, {&unsupported, &pass}, PlanChoices{}).cases.at(0);
  const MeasureOptions o = once();
  const Environment env;
  Recorder said;
  const auto data = prepare_case(Matrix{}, cp, Way::in_process, env, o, said);
  const auto executor = make_executor(Way::in_process, *data, RunOptions{}, o, env);
  const Result skipped = executor->run(cp.items.at(0), said);
  EXPECT_EQ(skipped.status, Status::skip);
  EXPECT_EQ(skipped.reason, "not here");
  EXPECT_EQ(said.said, (std::vector<std::string>{"5: generating data", "5 v902"}));  // no reference yet
  const Result r = executor->run(cp.items.at(1), said);
  EXPECT_EQ(r.status, Status::pass) << r.reason;
  EXPECT_TRUE(r.validated);
  EXPECT_EQ(r.validation.queries_checked, 20);
  EXPECT_EQ(r.stats.samples, 1);
  EXPECT_EQ(r.reference_checksum, data->result_for(pass).reference_checksum);
  EXPECT_EQ(said.said, (std::vector<std::string>{"5: generating data", "5 v902", "5: validation reference (v0 on every core)", "5 v901"}));
}

TEST(RunnerExecutors, ACaseWithoutItsDataSkipsEveryVersionWithTheReason) {
  const VersionDesc a = version("v901"), b = version("v902");
  Case c = make_case(6);
  c.queries_file = c.queries_path = "absent.npy";
  c.missing_data = "absent.npy is missing: run fetch-data.sh";
  const MeasureOptions o = once();
  for (const Way way : {Way::in_process, Way::isolated}) {
    const CasePlan cp = make_plan({c}, {&a, &b}, PlanChoices{}).cases.at(0);
    Recorder said;
    const auto data = prepare_case(Matrix{}, cp, way, Environment{}, o, said);
    ASSERT_TRUE(data->skip) << to_string(way);
    const auto executor = make_executor(way, *data, RunOptions{}, o, Environment{});
    EXPECT_FALSE(executor->stops_between_versions());
    for (const PlanItem& item : cp.items) {
      const VersionDesc* v = item.version;
      const Result r = executor->run(item, said);
      EXPECT_EQ(r.status, Status::skip);
      EXPECT_EQ(r.reason, c.missing_data);
      EXPECT_EQ(r.version, v->id);
      EXPECT_EQ(r.title, v->title);
    }
    EXPECT_EQ(said.said, (std::vector<std::string>{"6 v901", "6 v902"})) << to_string(way);
  }
}
