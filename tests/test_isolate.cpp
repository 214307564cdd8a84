// The options an --isolate child receives: serialised once as JSON, every field and every run
// flag surviving the round trip.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <tuple>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "isolate.hpp"
#include "options.hpp"

using namespace knn;

namespace {

RunOptions parse_run_flags(std::vector<std::string> args) {
  CLI::App app{"test"};
  RunOptions o;
  add_run_options(app, o);
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector in reverse order
  app.parse(args);
  return o;
}

// Every field, written out here independently of options.cpp's own list.
auto fields(const RunOptions& o) {
  const MeasureOptions& m = o.measure;
  return std::tie(o.config, o.case_specs, o.groups, o.version_specs, o.devices, o.host_memory, o.seed, m.warmup, m.min_samples, m.min_time_s,
                  m.max_time_s, m.max_samples, m.max_noise_pct, m.validate, m.validate_queries, m.kill_after_max_time, o.quiet, o.list, o.isolate,
                  o.isolated_child, o.json_path, o.md_path, o.csv_path, o.argv);
}

RunOptions round_trip(const RunOptions& o) { return nlohmann::json::parse(nlohmann::json(o).dump()).get<RunOptions>(); }

}  // namespace

TEST(IsolateOptions, EveryFieldRoundTrips) {
  RunOptions o;
  o.config = "m.json";
  o.case_specs = {"3", "8-11"};
  o.groups = {"smoke"};
  o.version_specs = {"v1,v3"};
  o.devices = "0,1";
  o.host_memory = "pageable";
  o.seed = 18446744073709551615ull;  // the largest seed must not lose bits
  o.measure.warmup = 3;
  o.measure.min_samples = 7;
  o.measure.min_time_s = 0.125;
  o.measure.max_time_s = 2.5;
  o.measure.max_samples = 9;
  o.measure.max_noise_pct = 2.5;
  o.measure.validate = false;
  o.measure.validate_queries = 11;
  o.measure.kill_after_max_time = true;
  o.quiet = true;
  o.list = true;
  o.isolate = true;
  o.isolated_child = true;
  o.json_path = "a.json";
  o.md_path = "a.md";
  o.csv_path = "a.csv";
  o.argv = {"knnbench", "--case", "3"};
  o.rates_given = true;  // the parent's rates, handed to the child
  o.given_rates = {knn::DeviceRates{50.5, 423, 1424, 2966, 54.9, 8.1, 54.9, 11.4, 302, 790}};
  o.given_rates_note = "measured by the parent";

  EXPECT_EQ(fields(round_trip(o)), fields(o));
  EXPECT_DOUBLE_EQ(round_trip(o).given_rates.at(0).int8_tops, 1424);
  EXPECT_DOUBLE_EQ(round_trip(o).given_rates.at(0).fp16_tflops, 790);
  RunOptions no_seed = o;
  no_seed.seed.reset();
  EXPECT_FALSE(round_trip(no_seed).seed.has_value());
}

// A flag added to the command line but not to to_json would reach the parent and not the
// children: each run flag, given a non-default value, must change the serialised options, and
// those must read back to the same JSON.
TEST(IsolateOptions, EveryRunFlagReachesTheChild) {
  CLI::App app{"test"};
  RunOptions defaults;
  add_run_options(app, defaults);
  const nlohmann::json base = nlohmann::json(parse_run_flags({}));
  int checked = 0;
  for (const CLI::Option* opt : app.get_options()) {
    const std::string name = opt->get_name(false, true);
    if (name.rfind("--", 0) != 0 || name == "--help") continue;
    std::vector<std::vector<std::string>> tries;
    if (opt->get_expected_min() == 0) {
      tries = {{name}};
    } else {
      const std::string type = opt->get_type_name();
      if (type.find("FLOAT") != std::string::npos) tries = {{name, "0.25"}, {name, "3.5"}};
      else if (type.find("INT") != std::string::npos) tries = {{name, "7"}, {name, "3"}};
      else tries = {{name, "x7"}, {name, "x3"}};
    }
    bool changed = false;
    for (const auto& args : tries) {
      const RunOptions o = parse_run_flags(args);
      const nlohmann::json j = nlohmann::json(o);
      changed = changed || j != base;
      EXPECT_EQ(nlohmann::json(round_trip(o)), j) << name;
    }
    EXPECT_TRUE(changed) << name << " does not reach the serialised options (options.cpp to_json/from_json)";
    ++checked;
  }
  EXPECT_GE(checked, 20);  // the run flags of today; a lower count means the walk above missed them
}

TEST(IsolateOptions, AChildRunsExactlyOneCaseAndVersionIntoItsOwnFile) {
  RunOptions o;
  o.case_specs = {"0-11"};
  o.groups = {"ta"};
  o.version_specs = {"v1,v3"};
  o.md_path = "x.md";
  o.csv_path = "x.csv";
  o.isolate = true;
  o.seed = 5;
  o.measure.min_samples = 9;
  o.param_specs = {"v3.leaf=32,64", "v1.other=1"};
  o.rates_given = true;
  o.given_rates = {knn::DeviceRates{50, 400, 1400, 3000, 55, 8, 55, 11, 300}};
  knn::VersionDesc v3;
  v3.id = "v3";
  v3.params = {knn::ParamDecl::integer("leaf", 256, 1, 8192, "leaf size"), knn::ParamDecl::mode("path", "a path")};
  const knn::PlanItem item{&v3, knn::Way::isolated, knn::ParamValues("v3", v3.params, {{"leaf", "64"}})};
  const RunOptions c = child_options(o, 4, item, "/tmp/r.json");
  // The variant alone: its one value of each parameter the user set, the matrix's sweeps unread.
  EXPECT_EQ(c.param_specs, std::vector<std::string>{"v3.leaf=64"});
  EXPECT_TRUE(c.ignore_matrix_params);
  EXPECT_EQ(c.case_specs, std::vector<std::string>{"4"});
  EXPECT_TRUE(c.groups.empty());
  EXPECT_EQ(c.version_specs, std::vector<std::string>{"v3"});
  EXPECT_EQ(c.json_path, "/tmp/r.json");
  EXPECT_TRUE(c.md_path.empty() && c.csv_path.empty());
  EXPECT_FALSE(c.isolate);
  EXPECT_TRUE(c.isolated_child);
  EXPECT_EQ(c.seed, o.seed);
  EXPECT_EQ(c.measure.min_samples, 9);
  // The parent's rates reach the child, which records them instead of measuring again.
  EXPECT_TRUE(c.rates_given);
  ASSERT_EQ(c.given_rates.size(), 1u);
  EXPECT_DOUBLE_EQ(c.given_rates[0].tf32_tflops, 400);
}

TEST(IsolateOptions, AnUnreadableOptionsFileNamesTheFile) {
  try {
    read_child_options("/nonexistent/opts.json");
    FAIL() << "expected ConfigError";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/opts.json"), std::string::npos) << e.what();
  }
}
