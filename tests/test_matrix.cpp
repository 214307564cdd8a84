#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/errors.hpp"
#include "matrix.hpp"

using knn::ConfigError;
using knn::parse_matrix;

namespace {

std::string error_of(const std::string& text) {
  try {
    parse_matrix(text, "bad.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Matrix, DefaultConfigHasTheSeedCases) {
  const auto mx = knn::load_matrix(std::string(KNN_SOURCE_DIR) + "/configs/default.json");
  ASSERT_EQ(mx.cases.size(), 12u);
  const int expect[12][3] = {{3, 1, 2},      {3, 2, 8},      {3, 1, 1024},        {3, 1, 65536},        {16, 1, 65536},        {3, 1024, 1024},
                             {3, 1024, 65536}, {16, 1024, 65536}, {3, 1, 1 << 24}, {16, 1, 1 << 24}, {3, 1024, 1 << 20}, {16, 1024, 1 << 20}};
  for (int i = 0; i < 12; ++i) {
    const auto& c = mx.cases[i];
    EXPECT_EQ(c.id, i);
    EXPECT_EQ(c.dim, expect[i][0]) << "case " << i;
    EXPECT_EQ(c.m, expect[i][1]) << "case " << i;
    EXPECT_EQ(c.n, expect[i][2]) << "case " << i;
    EXPECT_EQ(c.topk, 1);
    const bool ta = std::find(c.groups.begin(), c.groups.end(), "ta") != c.groups.end();
    const bool large = std::find(c.groups.begin(), c.groups.end(), "large") != c.groups.end();
    EXPECT_EQ(ta, i <= 7);
    EXPECT_EQ(large, i >= 8);
  }
}

TEST(Matrix, DefaultsApplyAndCasesOverride) {
  const auto mx = parse_matrix(R"({"schema_version":1,"defaults":{"topk":4,"distribution":"clusters","seed":7},
    "cases":[{"id":3,"k":2,"m":5,"n":10},{"id":9,"k":2,"m":5,"n":10,"topk":2,"distribution":"duplicates","seed":11,"groups":["a-b","c_1"]}]})",
                               "x.json");
  ASSERT_EQ(mx.cases.size(), 2u);
  EXPECT_EQ(mx.cases[0].topk, 4);
  EXPECT_EQ(mx.cases[0].distribution, knn::Distribution::clusters);
  EXPECT_EQ(mx.cases[0].seed, 7u);
  EXPECT_EQ(mx.cases[1].topk, 2);
  EXPECT_EQ(mx.cases[1].distribution, knn::Distribution::duplicates);
  EXPECT_EQ(mx.cases[1].seed, 11u);
  EXPECT_EQ(mx.cases[1].groups.size(), 2u);
  EXPECT_EQ(mx.checksum.size(), 16u);
}

TEST(Matrix, SeedMayUseAllSixtyFourBits) {
  const auto mx = parse_matrix(R"({"schema_version":1,"cases":[{"id":0,"k":1,"m":1,"n":1,"seed":18446744073709551615}]})", "x.json");
  EXPECT_EQ(mx.cases[0].seed, 18446744073709551615ull);
}

struct BadMatrix {
  const char* name;
  const char* text;
  const char* must_contain;  // part of the message: the JSON path and/or value
};

void PrintTo(const BadMatrix& b, std::ostream* os) { *os << b.name; }

class MatrixRejects : public ::testing::TestWithParam<BadMatrix> {};

TEST_P(MatrixRejects, WithAMessageNamingFileFieldAndValue) {
  const auto& b = GetParam();
  const std::string msg = error_of(b.text);
  ASSERT_FALSE(msg.empty()) << b.name << " was accepted";
  EXPECT_NE(msg.find("bad.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find(b.must_contain), std::string::npos) << "message: " << msg;
}

#define CASE_WITH(fields) "{\"schema_version\":1,\"cases\":[{" fields "}]}"
INSTANTIATE_TEST_SUITE_P(
    Bad, MatrixRejects,
    ::testing::Values(
        BadMatrix{"truncated", R"({"schema_version":1,"cases":[{"id":0,"k":3)", "invalid JSON at byte"},
        BadMatrix{"not_object", R"([1,2,3])", "/: [an array of 3]: expected a JSON object"},
        BadMatrix{"no_schema", R"({"cases":[{"id":0,"k":1,"m":1,"n":1}]})", "/schema_version"},
        BadMatrix{"schema_2", R"({"schema_version":2,"cases":[{"id":0,"k":1,"m":1,"n":1}]})", "/schema_version: 2"},
        BadMatrix{"no_cases", R"({"schema_version":1})", "/cases"},
        BadMatrix{"empty_cases", R"({"schema_version":1,"cases":[]})", "/cases: []"},
        BadMatrix{"unknown_top", R"({"schema_version":1,"cases":[{"id":0,"k":1,"m":1,"n":1}],"extra":1})", "/extra: 1: expected no unknown field"},
        BadMatrix{"unknown_case_field", CASE_WITH(R"("id":0,"k":1,"m":1,"n":1,"dims":3)"), "/cases/0/dims: 3"},
        BadMatrix{"missing_n", CASE_WITH(R"("id":0,"k":1,"m":1)"), "/cases/0/n"},
        BadMatrix{"zero_k", CASE_WITH(R"("id":0,"k":0,"m":1,"n":1)"), "/cases/0/k: 0: expected the dimension k"},
        BadMatrix{"negative_m", CASE_WITH(R"("id":0,"k":1,"m":-4,"n":1)"), "/cases/0/m: -4"},
        BadMatrix{"zero_n", CASE_WITH(R"("id":0,"k":1,"m":1,"n":0)"), "/cases/0/n: 0"},
        BadMatrix{"string_n", CASE_WITH(R"("id":0,"k":1,"m":1,"n":"1024")"), "/cases/0/n: \"1024\""},
        BadMatrix{"float_m", CASE_WITH(R"("id":0,"k":1,"m":1.5,"n":1)"), "/cases/0/m: 1.5"},
        BadMatrix{"huge_n", CASE_WITH(R"("id":0,"k":1,"m":1,"n":4294967296)"), "/cases/0/n: 4294967296"},
        BadMatrix{"topk_over_n", CASE_WITH(R"("id":0,"k":1,"m":1,"n":4,"topk":5)"), "/cases/0/topk: 5: expected topk ≤ n = 4"},
        BadMatrix{"default_topk_over_n", R"({"schema_version":1,"defaults":{"topk":8},"cases":[{"id":0,"k":1,"m":1,"n":4}]})", "/defaults/topk: 8"},
        BadMatrix{"zero_topk", CASE_WITH(R"("id":0,"k":1,"m":1,"n":4,"topk":0)"), "/cases/0/topk: 0"},
        BadMatrix{"bad_distribution", CASE_WITH(R"("id":0,"k":1,"m":1,"n":4,"distribution":"gauss")"), "/cases/0/distribution: \"gauss\""},
        BadMatrix{"duplicate_id", R"({"schema_version":1,"cases":[{"id":1,"k":1,"m":1,"n":1},{"id":1,"k":1,"m":1,"n":1}]})", "/cases/1/id: 1: expected a unique"},
        BadMatrix{"negative_seed", CASE_WITH(R"("id":0,"k":1,"m":1,"n":1,"seed":-1)"), "/cases/0/seed: -1"},
        BadMatrix{"groups_not_array", CASE_WITH(R"("id":0,"k":1,"m":1,"n":1,"groups":"ta")"), "/cases/0/groups: \"ta\""},
        BadMatrix{"group_bad_name", CASE_WITH(R"("id":0,"k":1,"m":1,"n":1,"groups":["Big Cases"])"), "/cases/0/groups/0"},
        BadMatrix{"case_not_object", R"({"schema_version":1,"cases":[7]})", "/cases/0: 7"},
        BadMatrix{"defaults_unknown", R"({"schema_version":1,"defaults":{"k":3},"cases":[{"id":0,"k":1,"m":1,"n":1}]})", "/defaults/k"},
        BadMatrix{"bool_k", CASE_WITH(R"("id":0,"k":true,"m":1,"n":1)"), "/cases/0/k: true"},
        BadMatrix{"nested_junk", CASE_WITH(R"("id":0,"k":[[[[1]]]],"m":1,"n":1)"), "/cases/0/k: [an array of 1]"},
        BadMatrix{"overflow_product", CASE_WITH(R"("id":0,"k":2147483647,"m":1,"n":2147483647)"), "expected k·m and k·n below 2^60"}),
    [](const ::testing::TestParamInfo<BadMatrix>& i) { return std::string(i.param.name); });

TEST(Matrix, MissingFileIsAConfigError) {
  EXPECT_THROW(knn::load_matrix("/nonexistent/knn.json"), ConfigError);
}

// ---------------------------------------------------------------- self-join, integers, validate_queries

namespace {
std::string one_case(const std::string& fields) {
  return R"({"schema_version": 1, "cases": [{"id": 7, "k": 2, )" + fields + "}]}";
}
}  // namespace

TEST(Matrix, SelfJoinTakesNAsM) {
  const auto mx = parse_matrix(one_case(R"("n": 10, "topk": 9, "self_join": true)"), "sj.json");
  ASSERT_EQ(mx.cases.size(), 1u);
  EXPECT_TRUE(mx.cases[0].self_join);
  EXPECT_EQ(mx.cases[0].m, 10);
  EXPECT_EQ(mx.cases[0].topk, 9);
  const auto same = parse_matrix(one_case(R"("m": 10, "n": 10, "self_join": true)"), "sj.json");
  EXPECT_EQ(same.cases[0].m, 10);
  EXPECT_FALSE(parse_matrix(one_case(R"("m": 3, "n": 10, "self_join": false)"), "sj.json").cases[0].self_join);
}

TEST(Matrix, HostileSelfJoinAndIntegersCasesNameFileCaseAndField) {
  struct Bad {
    const char* fields;
    const char* field;  // the JSON path the message must name
    const char* what;   // and a part of what it expects
  };
  const Bad bad[] = {
      {R"("m": 9, "n": 10, "self_join": true)", "/cases/0/m", "self-join (case 7)"},
      {R"("n": 10, "topk": 10, "self_join": true)", "/cases/0/topk", "topk ≤ n − 1 = 9 in case 7"},
      {R"("n": 1, "self_join": true)", "/defaults/topk", "topk ≤ n − 1 = 0 in case 7"},
      {R"("m": 2, "n": 10, "topk": 11)", "/cases/0/topk", "topk ≤ n = 10"},
      {R"("m": 1, "n": 10, "topk": 0)", "/cases/0/topk", "a neighbour count"},
      {R"("m": 1, "n": 10, "topk": -1)", "/cases/0/topk", "a neighbour count"},
      {R"("m": 1, "n": 10, "topk": 1099511627776)", "/cases/0/topk", "a neighbour count"},
      {R"("m": 1, "n": 10, "topk": "5")", "/cases/0/topk", "a neighbour count"},
      {R"("n": 10, "self_join": "yes")", "/cases/0/self_join", "true or false"},
      {R"("n": 10, "self_join": 1)", "/cases/0/self_join", "true or false"},
      {R"("n": 10, "self_join": true, "queries_file": "q.npy")", "/cases/0/queries_file", "no queries_file in a self-join"},
      {R"("m": 1, "n": 10, "distribution": "integers", "max": 0)", "/cases/0/max", "the integers' bound max"},
      {R"("m": 1, "n": 10, "distribution": "integers", "max": -5)", "/cases/0/max", "the integers' bound max"},
      {R"("m": 1, "n": 10, "distribution": "integers", "max": 16777217)", "/cases/0/max", "the integers' bound max"},
      {R"("m": 1, "n": 10, "distribution": "integers", "max": 2.5)", "/cases/0/max", "the integers' bound max"},
      {R"("m": 1, "n": 10, "max": 100)", "/cases/0/max", "unless the distribution is \"integers\" (case 7 is uniform)"},
      {R"("m": 1, "n": 10, "validate_queries": 0)", "/cases/0/validate_queries", "a number of queries to validate"},
      {R"("m": 1, "n": 10, "distribution": "Integers")", "/cases/0/distribution", "\"integers\""},
  };
  for (const Bad& b : bad) {
    const std::string msg = error_of(one_case(b.fields));
    EXPECT_NE(msg.find("bad.json"), std::string::npos) << b.fields << " -> " << msg;
    EXPECT_NE(msg.find(b.field), std::string::npos) << b.fields << " -> " << msg;
    EXPECT_NE(msg.find(b.what), std::string::npos) << b.fields << " -> " << msg;
  }
}

TEST(Matrix, IntegersTakeTheirBoundAndCasesTheirValidationSample) {
  const auto mx = parse_matrix(one_case(R"("m": 4, "n": 10, "distribution": "integers", "max": 1000, "validate_queries": 3)"), "i.json");
  EXPECT_EQ(mx.cases[0].distribution, knn::Distribution::integers);
  EXPECT_EQ(mx.cases[0].integer_max, 1000u);
  EXPECT_EQ(mx.cases[0].validate_queries, 3);
  EXPECT_EQ(parse_matrix(one_case(R"("m": 4, "n": 10, "distribution": "integers")"), "i.json").cases[0].integer_max, knn::kDefaultIntegerMax);
}

TEST(Matrix, SeedsConfigHasTheSeedCases) {
  const auto mx = knn::load_matrix(std::string(KNN_SOURCE_DIR) + "/configs/seeds.json");
  std::vector<int> ids;
  for (const auto& c : mx.cases) ids.push_back(c.id);
  EXPECT_EQ(ids, (std::vector<int>{200, 201, 300, 301, 302, 405, 407, 409, 412, 416, 450}));
  const auto& cities = mx.cases[0];
  EXPECT_TRUE(cities.self_join);
  EXPECT_EQ(cities.m, cities.n);
  EXPECT_EQ(cities.topk, 32);
  EXPECT_EQ(mx.cases[2].distribution, knn::Distribution::integers);
  EXPECT_EQ(mx.cases[2].integer_max, 100u);
  EXPECT_EQ(mx.cases[4].integer_max, 1000u);
}
