// --interleave (src/interleave.hpp): the order of calls, observed through a test version that logs
// the setting of every call it answers; each setting's own samples; a failing setting; the
// refusals (exit 2, naming the flag); the results file's "interleaved" field, read strictly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "core/errors.hpp"
#include "interleave.hpp"
#include "results_schema.hpp"
#include "spin.hpp"

using namespace knn;

namespace {

// Every call appends its setting's value of "x" to `log` and spins x / 100 ms; x = 99 throws.
struct Logged : VersionInstance {
  std::shared_ptr<std::vector<long>> log;
  explicit Logged(std::shared_ptr<std::vector<long>> l) : log(std::move(l)) {}
  void query(const Problem&, Neighbors out, RunContext& ctx) override {
    const long x = ctx.env.params.integer("x");
    log->push_back(x);
    if (x == 99) throw std::runtime_error("setting 99 fails");
    knn::testing::spin_ms(double(x) / 100);
    out.indices[0] = 0;
    out.distances[0] = 0;
  }
};

const std::vector<ParamDecl> kDecls = {ParamDecl::integer("x", 10, 1, 1000, "hundredths of a ms per call")};

VersionDesc logged_version(std::shared_ptr<std::vector<long>> log) {
  VersionDesc d;
  d.id = "logged";
  d.title = "test: logs each call's setting";
  d.params = kDecls;
  d.make = [log] { return std::make_unique<Logged>(log); };
  return d;
}

struct Pair {
  std::shared_ptr<std::vector<long>> log = std::make_shared<std::vector<long>>();
  Result a, b;
};

// Settings x = xa and x = xb of the logged version interleaved on a one-point problem.
Pair interleave(long xa, long xb, int warmup, int min_samples) {
  Pair out;
  float q[1] = {0}, r[1] = {0};
  const Problem p{1, 1, 1, 1, q, r};
  Environment ea, eb;
  ea.params = ParamValues("logged", kDecls, {{"x", std::to_string(xa)}});
  eb.params = ParamValues("logged", kDecls, {{"x", std::to_string(xb)}});
  MeasureOptions o;  // exactly min_samples samples each, no noise target, nothing else around them
  o.warmup = warmup, o.min_samples = o.max_samples = min_samples, o.min_time_s = 0, o.max_noise_pct = 0;
  o.validate = o.canary = false;
  const VersionDesc desc = logged_version(out.log);
  for (auto [res, env] : {std::pair{&out.a, &ea}, std::pair{&out.b, &eb}}) {
    name_version(*res, desc);
    res->params = env->params.values();
    res->params_set = {"x"};
  }
  measure_pair_unless_skipped(desc, p, ea, eb, o, std::nullopt, std::nullopt, nullptr, out.a, out.b);
  return out;
}

// The kept calls (the log's last n·(ca + cb) entries) as n pairs of batches, A's ca calls and B's cb,
// their order alternating pair by pair: "" when they are, else what breaks it.
std::string kept_calls_alternate(const std::vector<long>& log, long xa, long xb, std::size_t n, int ca, int cb) {
  const std::size_t kept = n * std::size_t(ca + cb);
  if (log.size() < kept) return fmt::format("{} calls logged, {} kept", log.size(), kept);
  std::size_t at = log.size() - kept;
  bool a_first_before = false;
  for (std::size_t i = 0; i < n; ++i) {
    const bool a_first = log[at] == xa;
    if (i > 0 && a_first == a_first_before) return fmt::format("pair {} in the same order as pair {}", i, i - 1);
    a_first_before = a_first;
    for (const auto& [x, count] : a_first ? std::vector<std::pair<long, int>>{{xa, ca}, {xb, cb}} : std::vector<std::pair<long, int>>{{xb, cb}, {xa, ca}})
      for (int c = 0; c < count; ++c, ++at)
        if (log[at] != x) return fmt::format("pair {}: call {} of the log is x={}, expected x={}", i, at, log[at], x);
  }
  return "";
}

knn::testing::Run testbin(const std::string& args) { return knn::testing::run(KNN_TEST_BINARY, args); }

const std::string kCase = "--k 3 --m 4 --n 2000 --warmup 1 --min-samples 3 --min-time 0 --max-noise 0 --no-rates --quiet";

}  // namespace

// Calls of 0.2 and 0.5 ms (one per sample): warm-up A B A B, then samples A B, B A, A B, ...; each
// setting keeps its own samples (B's the slower), as many as the other's, and says it was interleaved.
TEST(Interleave, CallsAlternateSampleBySampleAndEachSettingKeepsItsOwnSamples) {
  const Pair p = interleave(20, 50, 2, 8);
  ASSERT_EQ(p.a.status, Status::pass) << p.a.reason;
  ASSERT_EQ(p.b.status, Status::pass) << p.b.reason;
  ASSERT_EQ(p.a.samples_ms.size(), 8u);
  ASSERT_EQ(p.b.samples_ms.size(), 8u);
  ASSERT_EQ(p.log->size(), 4u + 16u) << "two warm-up calls each, then 8 samples each of one call";
  EXPECT_EQ(std::vector<long>(p.log->begin(), p.log->begin() + 4), (std::vector<long>{20, 50, 20, 50}));
  EXPECT_EQ(std::vector<long>(p.log->begin() + 4, p.log->end()),
            (std::vector<long>{20, 50, 50, 20, 20, 50, 50, 20, 20, 50, 50, 20, 20, 50, 50, 20}));
  EXPECT_EQ(kept_calls_alternate(*p.log, 20, 50, 8, 1, 1), "");
  EXPECT_TRUE(p.a.interleaved && p.b.interleaved);
  EXPECT_GT(p.b.stats.median, 1.5 * p.a.stats.median) << "B spins 0.5 ms, A 0.2 ms";
  EXPECT_NE(p.a.note.find("interleaved with logged[x=50]"), std::string::npos) << p.a.note;
  EXPECT_NE(p.b.note.find("interleaved with logged[x=20]"), std::string::npos) << p.b.note;
}

// Calls of 10 and 40 µs are timed in batches (calls_per_sample): the batches alternate A's, B's, B's,
// A's ..., each setting with its own batch size, and the times are per call. The batch sizes come from
// each setting's fastest warm-up call: three of them, so that one slow call on a loaded host (an
// instrumented build beside other tests) does not size A's batches as B's.
TEST(Interleave, ShortCallsAlternateBatchByBatch) {
  const Pair p = interleave(1, 4, 3, 6);
  ASSERT_EQ(p.a.status, Status::pass) << p.a.reason;
  ASSERT_EQ(p.b.status, Status::pass) << p.b.reason;
  EXPECT_GT(p.a.calls_per_sample, 1);
  EXPECT_GT(p.b.calls_per_sample, 1);
  EXPECT_GT(p.a.calls_per_sample, p.b.calls_per_sample) << "A's calls are the shorter";
  ASSERT_EQ(p.a.samples_ms.size(), p.b.samples_ms.size());
  EXPECT_EQ(kept_calls_alternate(*p.log, 1, 4, p.a.samples_ms.size(), p.a.calls_per_sample, p.b.calls_per_sample), "");
  EXPECT_LT(p.a.stats.median, 0.05) << "per call, not per batch";
}

// A setting whose call throws fails with its error; the other is measured again on its own, says
// so, and is not marked interleaved.
TEST(Interleave, AFailingSettingLeavesTheOtherMeasuredAlone) {
  const Pair p = interleave(20, 99, 1, 4);
  EXPECT_EQ(p.b.status, Status::fail);
  EXPECT_NE(p.b.reason.find("setting 99 fails"), std::string::npos) << p.b.reason;
  ASSERT_EQ(p.a.status, Status::pass) << p.a.reason;
  EXPECT_EQ(p.a.samples_ms.size(), 4u);
  EXPECT_FALSE(p.a.interleaved || p.b.interleaved);
  EXPECT_NE(p.a.note.find("measured alone: logged[x=99] fail"), std::string::npos) << p.a.note;
}

// End to end: a sweep of t7.slowdown over two values, interleaved; both results in the file, read
// back by the strict reader, each with its own samples, as many as the other's.
TEST(Interleave, ARunWritesBothResultsMarkedInterleaved) {
  const std::string json = knn::testing::tmp_path("interleave-run.json");
  const auto r = testbin(fmt::format("{} --version t7 --param t7.slowdown=0,100 --interleave --json {}", kCase, json));
  ASSERT_EQ(r.code, 0) << r.out;
  const ResultsDocument doc = read_results_file(json);
  ASSERT_EQ(doc.results.size(), 2u);
  const Result &a = doc.results[0], &b = doc.results[1];
  EXPECT_EQ(a.params.at("slowdown"), "0");
  EXPECT_EQ(b.params.at("slowdown"), "100");
  EXPECT_TRUE(a.interleaved && b.interleaved);
  EXPECT_EQ(a.samples_ms.size(), b.samples_ms.size());
  EXPECT_GE(a.samples_ms.size(), 3u);
  EXPECT_NE(a.samples_ms, b.samples_ms);
  EXPECT_EQ(a.validated && a.validation.pass && b.validated && b.validation.pass, true) << "both answers graded";
  const auto raw = nlohmann::json::parse(std::ifstream(json));
  EXPECT_EQ(raw["results"][0]["interleaved"], true);
  // Without --interleave the field is not written at all.
  const auto plain = testbin(fmt::format("{} --version t7 --param t7.slowdown=0,100 --json {}", kCase, json));
  ASSERT_EQ(plain.code, 0) << plain.out;
  EXPECT_FALSE(nlohmann::json::parse(std::ifstream(json))["results"][0].contains("interleaved"));
}

TEST(Interleave, UsesItCannotHonourAreRefusedNamingTheFlag) {
  struct Refusal {
    std::string args, message;
  };
  const std::vector<Refusal> refusals = {
      {"--version t7 --interleave", "--interleave: no version runs in two settings"},
      {"--version t7 --param t7.slowdown=0,5,10 --interleave",
       "--interleave: case 0 runs t7 in 3 settings (t7[slowdown=0], t7[slowdown=5], t7[slowdown=10])"},
      {"--version t-params --param t-params.block=8,16 --param t-params.order=rows,cols --interleave", "runs t-params in 4 settings"},
      {"--version t7 --param t7.slowdown=0,5 --interleave --isolate", "--interleave with --isolate"},
      {"--version t7 --param t7.slowdown=0,5 --interleave --resample 2", "--interleave with --resample 2"},
  };
  for (const Refusal& x : refusals) {
    const auto r = testbin(kCase + " " + x.args);
    EXPECT_EQ(r.code, 2) << x.args << "\n" << r.out;
    EXPECT_NE(r.out.find(x.message), std::string::npos) << x.args << "\n" << r.out;
  }
  const std::string ab = "ab --k 3 --m 4 --n 2000 --version t7 --processes 2 --a-param t7.slowdown=0 --b-param t7.slowdown=5 ";
  const auto unpaired = testbin(ab + "--interleave");
  EXPECT_EQ(unpaired.code, 2) << unpaired.out;
  EXPECT_NE(unpaired.out.find("--interleave: without --paired each process runs one side"), std::string::npos) << unpaired.out;
  const auto both = testbin(ab + "--paired --interleave --no-interleave");
  EXPECT_EQ(both.code, 2) << both.out;
  EXPECT_NE(both.out.find("--interleave with --no-interleave"), std::string::npos) << both.out;
}

// The reader: "interleaved" is a boolean; an interleaved result has exactly one partner (its case and
// version, interleaved) with as many samples.
TEST(Interleave, TheReaderChecksTheFieldAndItsPartner) {
  const std::string json = knn::testing::tmp_path("interleave-schema.json");
  const auto r = testbin(fmt::format("{} --version t7 --param t7.slowdown=0,100 --interleave --json {}", kCase, json));
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json good = nlohmann::json::parse(std::ifstream(json));
  const auto refused = [&](const nlohmann::json& doc) -> std::string {
    try {
      read_results_document(doc, "f.json");
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(refused(good), "");
  nlohmann::json text = good;
  text["results"][0]["interleaved"] = "yes";
  EXPECT_NE(refused(text).find("results[0].interleaved: expected true or false"), std::string::npos) << refused(text);
  nlohmann::json alone = good;
  alone["results"][1].erase("interleaved");
  EXPECT_NE(refused(alone).find("results[0].interleaved: true, but 0 other interleaved results of case 0 with t7"), std::string::npos)
      << refused(alone);
  ResultsDocument doc = read_results_document(good, "f.json");
  doc.results[1].samples_ms.push_back(doc.results[1].samples_ms[0]);  // one sample more than its partner
  doc.results[1].stats = summarize(doc.results[1].samples_ms);
  std::string why;
  try {
    check_results_agree("f.json", doc.results);
  } catch (const std::exception& e) {
    why = e.what();
  }
  EXPECT_NE(why.find("do not pair one by one"), std::string::npos) << why;
}
