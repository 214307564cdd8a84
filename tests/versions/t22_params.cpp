// Test-only version, linked into knnbench-testbin and the unit tests, never into knnbench: exact
// answers (v0's), and one declared parameter of each kind, so that the harness's handling of
// parameters (--param, sweeps, the matrix's "params", the results' record, compare's pairing, the
// retired environment variable) is tested on a CPU machine. Its path names the values it read; its
// `auto` mode records the choice of its rule (on for n > 100).
#include <optional>
#include <string>

#include <fmt/format.h>

#include "core/registry.hpp"
#include "core/topk.hpp"

namespace {

void answer(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  const knn::ParamValues& v = ctx.env.params;
  const bool split = v.mode("split") == knn::Mode::on || (v.mode("split") == knn::Mode::automatic && p.n > 100);
  if (v.mode("split") == knn::Mode::automatic) ctx.chosen["split"] = split ? "on" : "off";
  ctx.path = fmt::format("block={} order={} extra={} split={}", v.integer("block"), v.text("order"), v.text("extra"), split ? "on" : "off");
  for (int q = 0; q < p.m; ++q) knn::bruteforce_one_query(p, q, out);
}

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "t-params";
  d.title = "test only: exact, with one declared parameter of each kind";
  d.family = knn::Family::cpu;
  d.params = {knn::ParamDecl::mode("split", "a path the rule takes for n > 100"),
              knn::ParamDecl::integer("block", 8, 1, 64, "rows per block", "KNN_T22_BLOCK"),
              knn::ParamDecl::choice("order", "rows", {"rows", "cols"}, "the loop order"),
              knn::ParamDecl::flag("extra", true, "an extra step")};
  // A parameter that decides what the version can run: block 64 refuses topk > 8 (a skip reason).
  d.supports = [](const knn::Problem& p, const knn::Environment& env) -> std::optional<std::string> {
    if (p.self_join) return std::string("does not answer self-joins");
    if (env.params.integer("block") == 64 && p.topk > 8) return std::string("block=64 takes topk <= 8");
    return std::nullopt;
  };
  d.make = knn::query_only(answer);
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
