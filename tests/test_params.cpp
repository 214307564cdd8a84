// Declared parameters: parsing, checking, sweeps, the plan, the matrix's "params", the results'
// record (schema 2, schema 1 still read), compare's pairing and every bad-input message. End to end
// through knnbench-testbin's t-params (tests/versions/t22_params.cpp), a CPU version with one
// parameter of each kind.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "cli_support.hpp"
#include "compare.hpp"
#include "core/params.hpp"
#include "matrix.hpp"
#include "param_list.hpp"
#include "plan.hpp"
#include "results_schema.hpp"

using knn::ParamDecl;
using knn::ParamError;
using knn::ParamValues;
using nlohmann::json;

namespace {

std::vector<ParamDecl> decls() {
  return {ParamDecl::mode("split", "a path"), ParamDecl::integer("block", 8, 1, 64, "rows per block"),
          ParamDecl::choice("order", "rows", {"rows", "cols"}, "loop order"), ParamDecl::flag("extra", true, "an extra step")};
}

// The message of the ParamError `f` throws, or "" when it throws none.
template <class F>
std::string param_error(F f) {
  try {
    f();
  } catch (const ParamError& e) {
    return e.what();
  }
  return "";
}

knn::VersionDesc version(const std::string& id) {
  knn::VersionDesc v;
  v.id = id;
  v.params = decls();
  return v;
}

knn::Case small_case(int id) {
  knn::Case c;
  c.id = id, c.dim = 4, c.m = 8, c.n = 64, c.topk = 2;
  return c;
}

std::string tmp(const std::string& name) { return knn::testing::tmp_path(name); }

knn::testing::Run testbin(const std::string& args) { return knn::testing::run(KNN_TEST_BINARY, args); }

const std::string kSmall = "--k 4 --m 8 --n 64 --topk 2 --warmup 0 --min-samples 3 --min-time 0 --quiet";

}  // namespace

TEST(Params, DeclarationsCheckTheirValues) {
  for (const ParamDecl& d : decls()) EXPECT_EQ(d.check(d.default_value), "") << d.name;
  const auto ds = decls();
  EXPECT_EQ(ds[0].check("auto"), "");
  EXPECT_EQ(ds[0].check("maybe"), "'maybe': expected auto|off|on");
  EXPECT_EQ(ds[1].check("64"), "");
  EXPECT_EQ(ds[1].check("65"), "'65': expected an integer in [1, 64]");
  for (const char* bad : {"0", "-1", "8x", "", " 8", "1e1", "99999999999999999999"}) EXPECT_NE(ds[1].check(bad), "") << bad;
  EXPECT_EQ(ds[2].check("cols"), "");
  EXPECT_EQ(ds[2].check("Rows"), "'Rows': expected rows|cols");
  EXPECT_EQ(ds[3].check("off"), "");
  EXPECT_EQ(ds[3].check("1"), "'1': expected on|off");
}

TEST(Params, ValuesHoldEveryDefaultAndWhatWasSet) {
  const ParamValues p("t", decls(), {{"order", "cols"}, {"block", "16"}});
  EXPECT_EQ(p.values().size(), 4u);
  EXPECT_EQ(p.mode("split"), knn::Mode::automatic);
  EXPECT_EQ(p.integer("block"), 16);
  EXPECT_EQ(p.text("order"), "cols");
  EXPECT_TRUE(p.on("extra"));
  // Declaration order, whatever the order given.
  EXPECT_EQ(p.set_names(), (std::vector<std::string>{"block", "order"}));
  EXPECT_EQ(knn::variant_label("t", p), "t[block=16,order=cols]");
  EXPECT_EQ(knn::variant_label("t", ParamValues("t", decls(), {})), "t");
  EXPECT_THROW(p.text("nope"), std::logic_error);  // a version reading what it did not declare
  EXPECT_EQ(param_error([] { ParamValues("t", decls(), {{"size", "1"}}); }),
            "t.size: no such parameter (t declares split, block, order, extra)");
  EXPECT_EQ(param_error([] { ParamValues("t", decls(), {{"block", "0"}}); }), "t.block = '0': expected an integer in [1, 64]");
}

TEST(Params, RequestsParseOrSayWhatIsExpected) {
  const knn::ParamRequest r = knn::parse_param_request("v16.test=box,median", "--param");
  EXPECT_EQ(r.version, "v16");
  EXPECT_EQ(r.name, "test");
  EXPECT_EQ(r.values, (std::vector<std::string>{"box", "median"}));
  EXPECT_EQ(knn::parse_param_request("p-torch.block_kib=64", "--param").version, "p-torch");
  for (const char* bad : {"v16", "v16.leaf", "leaf=1", ".leaf=1", "v16.=1", "v16.Leaf=1", "v16.leaf=", "v16.leaf=1,,2", "v16.leaf=1,"})
    EXPECT_NE(param_error([&] { knn::parse_param_request(bad, "--param"); }).find("--param"), std::string::npos) << bad;
  EXPECT_EQ(param_error([] { knn::parse_param_request("v16.leaf=1,2,1", "--param"); }), "--param 'v16.leaf=1,2,1': the value '1' is given twice");
  // Integers are one value however written: "+8" and "08" are 8 (so that results pair), and a sweep
  // of "2,02" runs 2 once.
  EXPECT_EQ(ParamValues("t", decls(), {{"block", "+8"}}).text("block"), "8");
  EXPECT_EQ(param_error([] { knn::expand_params("t", decls(), {knn::parse_param_request("t.block=2,02", "x")}, "--param"); }),
            "--param: t.block = '02': the same value twice");
}

TEST(Params, SweepsGiveEveryCombinationLastVaryingFastest) {
  const std::vector<knn::ParamRequest> req{knn::parse_param_request("t.order=rows,cols", "--param"),
                                           knn::parse_param_request("t.block=1,2,4", "--param"),
                                           knn::parse_param_request("other.x=1", "--param")};
  const auto all = knn::expand_params("t", decls(), req, "--param");
  ASSERT_EQ(all.size(), 6u);
  std::vector<std::string> labels;
  for (const auto& p : all) labels.push_back(knn::variant_label("t", p));
  EXPECT_EQ(labels, (std::vector<std::string>{"t[block=1,order=rows]", "t[block=2,order=rows]", "t[block=4,order=rows]", "t[block=1,order=cols]",
                                              "t[block=2,order=cols]", "t[block=4,order=cols]"}));
  EXPECT_EQ(knn::expand_params("t", decls(), {}, "--param").size(), 1u);  // the defaults
  EXPECT_EQ(knn::expand_params("u", {}, req, "--param").size(), 1u);      // requests for others ignored
  EXPECT_EQ(param_error([&] { knn::expand_params("t", decls(), {knn::parse_param_request("t.block=1,99", "--param")}, "--param"); }),
            "--param: t.block = '99': expected an integer in [1, 64]");
  EXPECT_EQ(param_error([&] {
              knn::expand_params("t", decls(), {knn::parse_param_request("t.block=1", "x"), knn::parse_param_request("t.block=2", "x")}, "--param");
            }),
            "--param: t.block is given twice");
}

TEST(Params, ThePlanRunsEachVariantAndRefusesParametersOfVersionsNotSelected) {
  const knn::VersionDesc a = version("ta"), b = version("tb");
  knn::PlanChoices choices;
  choices.param_specs = {"ta.block=2,4", "ta.extra=off"};
  const knn::Plan plan = knn::make_plan({small_case(1), small_case(2)}, {&a, &b}, choices);
  ASSERT_EQ(plan.cases.size(), 2u);
  std::vector<std::string> labels;
  for (const auto& item : plan.cases[0].items) labels.push_back(item.label());
  EXPECT_EQ(labels, (std::vector<std::string>{"ta[block=2,extra=off]", "ta[block=4,extra=off]", "tb"}));
  EXPECT_EQ(plan.total(), 6);
  EXPECT_EQ(plan.cases[0].items[1].params.integer("block"), 4);
  EXPECT_EQ(plan.cases[0].items[2].params.integer("block"), 8);  // tb: its defaults

  choices.param_specs = {"tc.block=2"};
  EXPECT_EQ(param_error([&] { knn::make_plan({small_case(1)}, {&a}, choices); }), "--param tc.block=2: no version tc (knnbench --list)");
  choices.param_specs = {"v0.block=2"};  // registered, not selected
  EXPECT_EQ(param_error([&] { knn::make_plan({small_case(1)}, {&a}, choices); }), "--param v0.block=2: v0 is not selected (add it to --version)");
  choices.param_specs = {"ta.block=2", "ta.block=4"};
  EXPECT_EQ(param_error([&] { knn::make_plan({small_case(1)}, {&a}, choices); }),
            "--param ta.block=2 and --param ta.block=4: ta.block given twice (one --param with VALUE,VALUE sweeps)");
  choices.param_specs = {"ta.size=2"};
  EXPECT_NE(param_error([&] { knn::make_plan({small_case(1)}, {&a}, choices); }).find("ta.size: no such parameter"), std::string::npos);
}

TEST(Params, TheMatrixCarriesParamsForTheFileAndEachCase) {
  const std::string path = tmp("params-matrix.json");
  std::ofstream(path) << R"({"schema_version": 1, "params": {"t-params.order": ["rows", "cols"], "t-params.block": 4},
    "cases": [{"id": 1, "k": 4, "m": 8, "n": 64},
              {"id": 2, "k": 4, "m": 8, "n": 64, "params": {"t-params.block": [2, 16]}}]})";
  const knn::Matrix mx = knn::load_matrix(path);
    // (JSON objects come in key order; the order of parameters does not matter: a label follows the declaration.)
  EXPECT_EQ(mx.cases[0].param_specs, (std::vector<std::string>{"t-params.block=4", "t-params.order=rows,cols"}));
  EXPECT_EQ(mx.cases[1].param_specs, (std::vector<std::string>{"t-params.block=2,16", "t-params.order=rows,cols"}));
  for (const auto& [params, part] : std::vector<std::pair<std::string, std::string>>{
           {R"([1])", "/params: [an array of 1]"},
           {R"({})", "/params: {}"},
           {R"({"leaf": 1})", "/params/leaf"},
           {R"({"v16.leaf": []})", "/params/v16.leaf"},
           {R"({"v16.leaf": [1.5]})", "/params/v16.leaf"},
           {R"({"v16.leaf": "1,2"})", "/params/v16.leaf"},
           {R"({"v16.leaf": [1, 1]})", "/params/v16.leaf"}}) {
    std::ofstream(path) << R"({"schema_version": 1, "params": )" << params << R"(, "cases": [{"id": 1, "k": 4, "m": 8, "n": 64}]})";
    try {
      knn::load_matrix(path);
      ADD_FAILURE() << params << " was accepted";
    } catch (const knn::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  }
}

TEST(Params, ASweepGivesOneValidatedResultPerVariantRecordedInTheJson) {
  const std::string json_path = tmp("sweep.json"), md = tmp("sweep.md");
  const auto r = testbin(fmt::format("--version t-params,v0 --param t-params.block=2,4 --param t-params.order=cols {} --json {} --md {}", kSmall,
                                     json_path, md));
  ASSERT_EQ(r.code, 0) << r.out;
  const json doc = json::parse(std::ifstream(json_path));
  EXPECT_EQ(doc["schema_version"], 2);
  std::vector<json> mine;
  for (const json& x : doc["results"])
    if (x["version"] == "t-params") mine.push_back(x);
  ASSERT_EQ(mine.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const json& x = mine[std::size_t(i)];
    EXPECT_EQ(x["status"], "pass");
    EXPECT_EQ(x["validation"]["status"], "pass");
    EXPECT_EQ(x["params"], (json{{"block", i == 0 ? "2" : "4"}, {"order", "cols"}, {"split", "auto"}, {"extra", "on"}}));
    EXPECT_EQ(x["params_set"], (json{"block", "order"}));
    EXPECT_EQ(x["params_chosen"], (json{{"split", "off"}}));  // n = 64: its rule said off
    EXPECT_EQ(x["path"], fmt::format("block={} order=cols extra=on split=off", i == 0 ? 2 : 4));
  }
  // The two differ only in their parameters, path and timings.
  json a = mine[0], b = mine[1];
  for (json* x : {&a, &b})
    for (const char* k : {"params", "path", "samples_ms", "stats", "phases", "calls_per_sample", "noise_target_missed", "clocks", "note", "canary", "host_facts"})
      x->erase(k);
  EXPECT_EQ(a, b);
  std::ifstream in(md);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("t-params[block=2,order=cols]"), std::string::npos) << text;
  EXPECT_NE(text.find("t-params[block=4,order=cols]"), std::string::npos) << text;
  // And it reads back: report, and compare of the file against itself pairs variant with variant.
  const auto rep = knn::read_results_file(json_path);
  ASSERT_EQ(rep.results.size(), 3u);
  EXPECT_EQ(rep.results[1].label(), "t-params[block=2,order=cols]");  // after v0
  knn::CompareOptions o;
  const knn::CompareReport self = knn::compare_runs(rep, rep, o);
  EXPECT_EQ(self.pairs.size(), 3u);
}

TEST(Params, BadRequestsExitTwoNamingVersionParameterAndValue) {
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"--version t-params --param t-params.block=0", "t-params.block = '0': expected an integer in [1, 64]"},
           {"--version t-params --param t-params.color=red", "t-params.color: no such parameter (t-params declares split, block, order, extra)"},
           {"--version t-params --param t-params.order=diagonal", "t-params.order = 'diagonal': expected rows|cols"},
           {"--version v0 --param t-params.block=2", "--param t-params.block=2: t-params is not selected (add it to --version)"},
           {"--version t-params --param v99.block=2", "--param v99.block=2: no version v99"},
           {"--version t-params --param block=2", "expected VERSION.NAME=VALUE"}}) {
    const auto r = testbin(args + " " + kSmall + " --json " + tmp("bad.json"));
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(says), std::string::npos) << args << "\n" << r.out;
  }
}

TEST(Params, ARetiredEnvironmentVariableStopsTheRunNamingItsParameter) {
  const auto r = knn::testing::run("KNN_T22_BLOCK=4 " + std::string(KNN_TEST_BINARY), "--version t-params " + kSmall + " --json " + tmp("env.json"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("KNN_T22_BLOCK=4 is no longer read: use --param t-params.block=VALUE (an integer in [1, 64])"), std::string::npos) << r.out;
  const auto other = knn::testing::run("KNN_V99_ANY=1 " + std::string(KNN_TEST_BINARY), "--version v0 " + kSmall + " --json " + tmp("env2.json"));
  EXPECT_EQ(other.code, 2) << other.out;
  EXPECT_NE(other.out.find("KNN_V99_ANY=1 is no longer read, and no parameter replaces it"), std::string::npos) << other.out;
  // A variable named after a version and one of its parameters points to it.
  const auto named = knn::testing::run("KNN_V18_TAPER=0 " + std::string(KNN_TEST_BINARY), "--version v0 " + kSmall + " --json " + tmp("env3.json"));
  EXPECT_EQ(named.code, 2) << named.out;
  EXPECT_NE(named.out.find("KNN_V18_TAPER=0 is no longer read: use --param v18.taper=VALUE (on|off)"), std::string::npos) << named.out;
}

TEST(Params, ListingsShowEveryParameter) {
  const auto r = testbin("params t-params");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* s : {"t-params.split", "auto|off|on", "t-params.block", "1..64", "default 8", "rows per block", "t-params.order",
                        "rows|cols", "t-params.extra", "on|off"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  const auto v0 = testbin("params v0");
  EXPECT_NE(v0.out.find("v0: no parameters"), std::string::npos) << v0.out;
  const auto list = testbin("--list --params --version t-params --k 4 --m 8 --n 64");
  EXPECT_EQ(list.code, 0) << list.out;
  EXPECT_NE(list.out.find("t-params.block"), std::string::npos) << list.out;
  EXPECT_EQ(testbin("params v404").code, 2);
}

TEST(Params, AnIsolatedVariantRunsWithItsOwnValues) {
  const std::string json_path = tmp("iso.json");
  const auto r = testbin(fmt::format("--isolate --version t-params --param t-params.block=3,5 {} --json {}", kSmall, json_path));
  ASSERT_EQ(r.code, 0) << r.out;
  const json doc = json::parse(std::ifstream(json_path));
  ASSERT_EQ(doc["results"].size(), 2u);
  EXPECT_EQ(doc["results"][0]["path"], "block=3 order=rows extra=on split=off");
  EXPECT_EQ(doc["results"][1]["path"], "block=5 order=rows extra=on split=off");
}

// A matrix's "params" errors name the matrix file: a repeated value in a sweep is named at load;
// a parameter the version does not declare is named with the file and the case (the plan, in a run
// as in --list). Settings for a version this build does not register are set aside, not refused (a
// GPU version in a build without CUDA and a misspelt id look alike to a build): a run says so on
// stderr, naming them and the file, and still runs the rest; --list lists them.
TEST(Params, MatrixParamsErrorsNameTheFileTheRepeatedValueAndTheSettingsSetAside) {
  const std::string path = tmp("params-named.json"), json_path = tmp("params-named-out.json");
  std::ofstream(path) << R"({"schema_version": 1, "params": {"t-params.block": [4, 4]}, "cases": [{"id": 1, "k": 4, "m": 8, "n": 64}]})";
  try {
    knn::load_matrix(path);
    ADD_FAILURE() << "[4, 4] was accepted";
  } catch (const knn::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": /params/t-params.block: [an array of 2]: expected", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("the value '4' is given twice"), std::string::npos) << e.what();
  }
  std::ofstream(path) << R"({"schema_version": 1, "cases": [{"id": 1, "k": 4, "m": 8, "n": 64, "params": {"t-params.blokc": 4}}]})";
  for (const std::string how : {std::string("--list"), fmt::format("--warmup 0 --min-samples 3 --min-time 0 --quiet --json {}", json_path)}) {
    const auto r = testbin(fmt::format("--config {} --version t-params {}", path, how));
    EXPECT_EQ(r.code, 2) << how << ": " << r.out;
    EXPECT_NE(r.out.find(path + ": case 1: t-params.blokc: no such parameter"), std::string::npos) << how << ": " << r.out;
  }
  std::ofstream(path) << R"({"schema_version": 1, "params": {"v99x.leaf": 4}, "cases": [{"id": 1, "k": 4, "m": 8, "n": 64, "topk": 2}]})";
  const auto run = testbin(fmt::format("--config {} --version t-params --warmup 0 --min-samples 3 --min-time 0 --quiet --json {}", path, json_path));
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("knnbench: warning: " + path + ": \"params\" for a version this build does not have, set aside: v99x.leaf=4"),
            std::string::npos)
      << run.out;
  const auto list = testbin(fmt::format("--config {} --version t-params --list", path));
  EXPECT_EQ(list.code, 0) << list.out;
  EXPECT_NE(list.out.find("set aside):\n  v99x.leaf=4"), std::string::npos) << list.out;
}

TEST(Params, TheCommandLineWinsOverTheMatrix) {
  const std::string path = tmp("case-params.json"), json_path = tmp("case-params-out.json");
  std::ofstream(path) << R"({"schema_version": 1, "cases": [{"id": 1, "k": 4, "m": 8, "n": 64, "topk": 2},
      {"id": 2, "k": 4, "m": 8, "n": 200, "topk": 2, "params": {"t-params.block": 16}}]})";
  const auto r = testbin(fmt::format("--config {} --version t-params --param t-params.block=2 --warmup 0 --min-samples 3 --min-time 0 --quiet --json {}",
                                     path, json_path));
  ASSERT_EQ(r.code, 0) << r.out;
  const json doc = json::parse(std::ifstream(json_path));
  ASSERT_EQ(doc["results"].size(), 2u);
  EXPECT_EQ(doc["results"][0]["params"]["block"], "2");
  EXPECT_EQ(doc["results"][1]["params"]["block"], "2");  // the case says 16: --param overrides it
  EXPECT_EQ(doc["results"][1]["params_chosen"]["split"], "on");  // n = 200
}

namespace {

knn::Result timed_result(const std::string& version, std::map<std::string, std::string> params, std::vector<std::string> set, double ms) {
  knn::Result r;
  r.problem_case = small_case(3);
  r.query_checksum = r.reference_checksum = "00ff";
  r.version = version;
  r.status = knn::Status::pass;
  r.validated = true;
  r.validation.pass = true;
  r.params = std::move(params);
  r.params_set = std::move(set);
  for (int i = 0; i < 12; ++i) r.samples_ms.push_back(ms * (1 + 0.001 * i));
  r.stats = knn::summarize(r.samples_ms);
  return r;
}

knn::ResultsDocument doc_of(std::vector<knn::Result> rs, const std::string& file) {
  knn::ResultsDocument d;
  d.file = file;
  d.results = std::move(rs);
  return d;
}

}  // namespace

TEST(Params, ComparePairsOnParametersAndSaysWhichDiffer) {
  const auto box = timed_result("t", {{"test", "box"}, {"leaf", "8"}}, {}, 10);
  const auto median = timed_result("t", {{"test", "median"}, {"leaf", "8"}}, {"test"}, 5);
  knn::CompareOptions o;
  // Another variant on each side: not paired, and the report says which parameter differs.
  knn::CompareReport rep = knn::compare_runs(doc_of({box}, "A"), doc_of({median}, "B"), o);
  EXPECT_TRUE(rep.pairs.empty());
  ASSERT_EQ(rep.uncompared.size(), 1u);
  EXPECT_NE(rep.uncompared[0].detail.find("other parameters (test: box vs median); --ignore-params pairs them"), std::string::npos)
      << rep.uncompared[0].detail;
  o.ignore_params = true;
  rep = knn::compare_runs(doc_of({box}, "A"), doc_of({median}, "B"), o);
  ASSERT_EQ(rep.pairs.size(), 1u);
  EXPECT_EQ(rep.pairs[0].verdict, knn::Verdict::faster);
  bool said = false;
  for (const auto& n : rep.notes) said = said || n.find("paired under --ignore-params although its parameters differ (test: box vs median)") != std::string::npos;
  EXPECT_TRUE(said);
  // A file written before parameters were recorded pairs with one that records them, saying so.
  o.ignore_params = false;
  const auto old = timed_result("t", {}, {}, 10);
  rep = knn::compare_runs(doc_of({old}, "old"), doc_of({box}, "new"), o);
  ASSERT_EQ(rep.pairs.size(), 1u);
  EXPECT_EQ(rep.pairs[0].verdict, knn::Verdict::same);
  // Both variants in both files: each pairs with its own.
  rep = knn::compare_runs(doc_of({box, median}, "A"), doc_of({median, box}, "B"), o);
  ASSERT_EQ(rep.pairs.size(), 2u);
  for (const auto& p : rep.pairs) EXPECT_EQ(p.verdict, knn::Verdict::same) << p.version;
}

TEST(Params, CompareParamsJudgesTwoSettingsInsideOneFile) {
  const auto box = timed_result("t", {{"test", "box"}, {"leaf", "8"}}, {"test"}, 10);
  const auto median = timed_result("t", {{"test", "median"}, {"leaf", "8"}}, {"test"}, 5);
  const auto other = timed_result("u", {}, {}, 1);
  const auto [a, b] = knn::split_by_params(doc_of({box, median, other}, "f.json"), "t.test=box", "t.test=median");
  EXPECT_EQ(a.file, "f.json [t.test=box]");
  ASSERT_EQ(a.results.size(), 1u);
  ASSERT_EQ(b.results.size(), 1u);
  knn::CompareOptions o;
  const knn::CompareReport rep = knn::compare_runs(a, b, o);
  ASSERT_EQ(rep.pairs.size(), 1u);
  EXPECT_EQ(rep.pairs[0].verdict, knn::Verdict::faster);
  for (const auto& [x, y, says] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"t.test=box", "t.test=box", "the two settings are the same"},
           {"t.test=box", "t.test=cone", "no result in f.json has t.test = cone"},
           {"t.test=box,median", "t.test=box", "one value per side"},
           {"test=box", "t.test=median", "expected VERSION.NAME=VALUE"}}) {
    try {
      knn::split_by_params(doc_of({box, median}, "f.json"), x, y);
      ADD_FAILURE() << x << " " << y;
    } catch (const knn::CompareError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
}

TEST(Params, ResultsOfSchemaOneStillRead) {
  // A committed results file written before schema 2 (no params): report and compare read it.
  const auto doc = knn::read_results_file(std::string(KNN_SOURCE_DIR) + "/results/cpu-2core/peers/torch-cpu-default.json.gz");
  ASSERT_FALSE(doc.results.empty());
  for (const auto& r : doc.results) {
    EXPECT_TRUE(r.params.empty());
    EXPECT_EQ(r.label(), r.version);
  }
  knn::CompareOptions o;
  EXPECT_FALSE(knn::compare_runs(doc, doc, o).pairs.empty());
}
