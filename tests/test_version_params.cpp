// The versions' declared parameters (VersionDesc::params, core/params.hpp): every registered version's
// declarations are well formed (defaults pass their own check, names and retired variables unique, a
// retired variable names the same parameter wherever it is declared), and the ones of the GPU versions
// are checked in builds without CUDA too (their declarations are plain C++). v15's engine declares
// every one of its former environment variables, and no code in kernels/ or src/ reads one any more.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/params.hpp"
#include "core/registry.hpp"
#include "kernels/bruteforce/engine.hpp"
#include "kernels/trees/gpu_kdtree/v16_params.hpp"
#include "kernels/trees/rtree/v17_params.hpp"
#include "kernels/warpshuffle/v14_params.hpp"

namespace {

using knn::ParamDecl;

// Every version's declarations: the registered ones, and the GPU versions' from their headers (in a
// build without CUDA they are not registered).
std::map<std::string, std::vector<ParamDecl>> all_declarations() {
  std::map<std::string, std::vector<ParamDecl>> all = {{"v14", knn::gpu::v14_params()},
                                                       {"v15", knn::gpu::engine_params()},
                                                       {"v16", knn::gpu::v16_params()},
                                                       {"v17", knn::gpu::v17_params()}};
  for (const knn::VersionDesc& v : knn::Registry::instance().versions()) all[v.id] = v.params;
  return all;
}

std::vector<std::string> names(const std::vector<ParamDecl>& decls) {
  std::vector<std::string> out;
  for (const ParamDecl& d : decls) out.push_back(d.name);
  return out;
}

std::string upper(std::string s) {
  for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

TEST(VersionParams, DeclarationsAreWellFormed) {
  std::map<std::string, std::string> parameter_of;  // retired variable -> parameter name, over all versions
  for (const auto& [id, decls] : all_declarations()) {
    std::set<std::string> seen_names, seen_env;
    for (const ParamDecl& d : decls) {
      const std::string what = id + "." + d.name;
      EXPECT_FALSE(d.name.empty()) << id;
      EXPECT_TRUE(std::all_of(d.name.begin(), d.name.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_'; }))
          << what << ": names are lowercase words joined by '_'";
      EXPECT_TRUE(seen_names.insert(d.name).second) << what << " declared twice";
      EXPECT_EQ(d.check(d.default_value), "") << what << ": its default '" << d.default_value << "' fails its own check";
      EXPECT_FALSE(d.help.empty()) << what;
      EXPECT_EQ(d.help.find('\n'), std::string::npos) << what << ": help is one line";
      if (d.retired_env.empty()) continue;
      EXPECT_EQ(d.retired_env.rfind("KNN_", 0), 0u) << what << ": " << d.retired_env;
      EXPECT_TRUE(seen_env.insert(d.retired_env).second) << what << ": " << d.retired_env << " retired twice in " << id;
      const auto [it, first] = parameter_of.emplace(d.retired_env, d.name);
      EXPECT_TRUE(first || it->second == d.name) << d.retired_env << " is " << it->second << " in one version, " << d.name
                                                 << " in " << id;
    }
    // The defaults together make a call's values, as the harness fills them.
    EXPECT_NO_THROW(knn::ParamValues(id, decls, {})) << id;
  }
}

// v15's former environment variables, each now a parameter named by its lowercase suffix.
TEST(VersionParams, EngineDeclaresEveryFormerVariable) {
  const std::vector<ParamDecl> decls = knn::gpu::engine_params();
  EXPECT_GE(decls.size(), 17u);
  const std::vector<std::string> declared = names(decls);
  const std::vector<std::string> former = {"int8", "tc", "tc_split", "fp32_filter", "fp32_queries", "fp32_stage", "seed", "collect",
                                           "collect_queries", "collect_balance", "collect_tc", "collect_scores", "ramp", "taper", "merge_runs",
                                           "min_groups", "shared_lists"};
  for (const std::string& name : former) EXPECT_NE(std::find(declared.begin(), declared.end(), name), declared.end()) << name;
  // A former variable's parameter names it (a run that sets it is refused, naming the parameter);
  // a parameter born as one (one_stream) has none.
  for (const ParamDecl& d : decls)
    EXPECT_EQ(d.retired_env, std::find(former.begin(), former.end(), d.name) != former.end() ? "KNN_V15_" + upper(d.name) : "")
        << d.name;
  // Every version that runs the engine declares exactly its parameters: v18 in every build, v15 with CUDA.
  for (const char* id : {"v15", "v18"})
    if (const knn::VersionDesc* v = knn::Registry::instance().find(id)) EXPECT_EQ(names(v->params), declared) << id;
  EXPECT_NE(knn::Registry::instance().find("v18"), nullptr);
}

TEST(VersionParams, GpuVersionsDeclareTheirFormerVariables) {
  const std::map<std::string, std::vector<std::string>> want = {
      {"v14", {"queries_per_thread"}},
      {"v16", {"leaf", "test", "sort", "final", "tail", "vec", "nearest", "lanes", "stage_kib", "answers", "heap_lanes", "overlap", "segment_rows", "readback", "build", "early_pct", "key_sort", "first_batch", "tc", "tail_lanes", "tc_leaves", "tail_queue", "tc_regs"}},
      {"v17", {"fanout", "answers"}}};
  // Declared after the variables were retired: no former variable to name.
  const std::set<std::string> new_since = {"v17.answers", "v16.answers", "v16.heap_lanes", "v16.overlap", "v16.segment_rows", "v16.readback", "v16.build", "v16.early_pct", "v16.key_sort", "v16.first_batch", "v16.tc", "v16.tail_lanes", "v16.tc_leaves", "v16.tail_queue", "v16.tc_regs"};
  const auto all = all_declarations();
  for (const auto& [id, expected] : want) {
    const std::vector<std::string> declared = names(all.at(id));
    EXPECT_EQ(std::set<std::string>(declared.begin(), declared.end()), std::set<std::string>(expected.begin(), expected.end())) << id;
    for (const ParamDecl& d : all.at(id))
      EXPECT_EQ(d.retired_env, new_since.count(id + "." + d.name) ? "" : "KNN_" + upper(id) + "_" + upper(d.name)) << id << "." << d.name;
  }
  // The registered ones (a CUDA build) declare what their headers do.
  for (const char* id : {"v14", "v16", "v17"})
    if (const knn::VersionDesc* v = knn::Registry::instance().find(id)) EXPECT_EQ(names(v->params), names(all.at(id))) << id;
  // The libtorch peers are registered in every build, with or without libtorch.
  for (const char* id : {"p-torch", "p-torch-direct", "p-torch-cpu"}) {
    const knn::VersionDesc* v = knn::Registry::instance().find(id);
    ASSERT_NE(v, nullptr) << id;
    ASSERT_EQ(v->params.size(), 1u) << id;
    EXPECT_EQ(v->params[0].name, "block_kib");
    EXPECT_EQ(v->params[0].retired_env, "KNN_TORCH_BLOCK_KIB");
  }
}

// No code reads a version's former variable: the old readers' calls are gone, and every getenv in
// kernels/ names its variable in place (none a version's variant).
TEST(VersionParams, NoCodeReadsAFormerVariable) {
  const std::filesystem::path root(KNN_SOURCE_DIR);
  const std::regex reader(R"((getenv|mode_knob|int_knob)\("KNN_V)");
  const std::regex any_getenv(R"(getenv\s*\(\s*([^)]*)\))");
  const std::regex former(R"("KNN_(V[0-9]+|TORCH)_)");
  int files = 0;
  for (const char* dir : {"kernels", "src"})
    for (const auto& e : std::filesystem::recursive_directory_iterator(root / dir)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".cu" && ext != ".hpp" && ext != ".cuh" && ext != ".h")) continue;
      ++files;
      std::ifstream in(e.path());
      std::stringstream text;
      text << in.rdbuf();
      const std::string s = text.str();
      const std::string where = std::filesystem::relative(e.path(), root).string();
      EXPECT_FALSE(std::regex_search(s, reader)) << where;
      if (std::string(dir) != "kernels") continue;
      for (auto it = std::sregex_iterator(s.begin(), s.end(), any_getenv); it != std::sregex_iterator(); ++it) {
        const std::string arg = (*it)[1].str();
        EXPECT_EQ(arg.rfind('"', 0), 0u) << where << ": getenv(" << arg << "): name the variable in place";
        EXPECT_FALSE(std::regex_search(arg, former)) << where << ": getenv(" << arg << ")";
      }
    }
  EXPECT_GT(files, 50);
}

}  // namespace
