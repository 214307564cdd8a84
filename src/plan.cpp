#include "plan.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace knn {

const char* to_string(Way w) {
  switch (w) {
    case Way::in_process: return "in process";
    case Way::isolated: return "isolated";
    case Way::sharded: return "sharded";
  }
  return "?";
}

std::vector<const VersionDesc*> CasePlan::versions(Way w) const {
  std::vector<const VersionDesc*> out;
  for (const PlanItem& item : items)
    if (item.way == w) out.push_back(item.version);
  return out;
}

std::vector<const PlanItem*> CasePlan::items_of(Way w) const {
  std::vector<const PlanItem*> out;
  for (const PlanItem& item : items)
    if (item.way == w) out.push_back(&item);
  return out;
}

namespace {

std::vector<ParamRequest> parse_all(const std::vector<std::string>& specs, const std::string& where) {
  std::vector<ParamRequest> out;
  for (const auto& s : specs) out.push_back(parse_param_request(s, where));
  return out;
}

// --param's requests: each names a registered, selected version.
std::vector<ParamRequest> command_line_requests(const std::vector<std::string>& specs, const std::vector<const VersionDesc*>& versions) {
  std::vector<ParamRequest> out = parse_all(specs, "--param");
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::string& id = out[i].version;
    for (std::size_t j = 0; j < i; ++j)
      if (out[j].version == id && out[j].name == out[i].name)
        throw ParamError(fmt::format("--param {} and --param {}: {}.{} given twice (one --param with VALUE,VALUE sweeps)", specs[j], specs[i], id,
                                     out[i].name));
    if (std::none_of(versions.begin(), versions.end(), [&](const VersionDesc* v) { return v->id == id; }))
      throw ParamError(fmt::format("--param {}: {}", specs[i],
                                   Registry::instance().find(id) ? fmt::format("{} is not selected (add it to --version)", id)
                                                                 : fmt::format("no version {} (knnbench --list)", id)));
  }
  return out;
}

// The command line's requests, then the case's for the parameters the command line does not set: a
// --param overrides the matrix, as flags override a file.
std::vector<ParamRequest> merged(const std::vector<ParamRequest>& cli, const Case& c, const std::string& file) {
  const std::string where = fmt::format("{}{}case {}: params", file, file.empty() ? "" : ": ", c.id);
  // A version this build does not have (a GPU version in a build without CUDA) runs nowhere here: its
  // settings are set aside (--list names them), as those of a version not selected are.
  std::vector<ParamRequest> out = cli;
  for (ParamRequest& r : parse_all(c.param_specs, where))
    if (Registry::instance().find(r.version) != nullptr &&
        std::none_of(cli.begin(), cli.end(), [&](const ParamRequest& o) { return o.version == r.version && o.name == r.name; }))
      out.push_back(std::move(r));
  return out;
}

}  // namespace

int Plan::total() const {
  std::size_t n = 0;
  for (const CasePlan& cp : cases) n += cp.items.size();
  return int(n);
}

Plan make_plan(const std::vector<Case>& cases, const std::vector<const VersionDesc*>& versions, const PlanChoices& choices) {
  const Way whole = choices.isolate ? Way::isolated : Way::in_process;
  const auto way_of = [&](const VersionDesc* v) { return choices.many_ranks && v->shards_references ? Way::sharded : whole; };
  const std::vector<ParamRequest> cli = command_line_requests(choices.param_specs, versions);
  Plan plan;
  for (const Case& original : cases) {
    CasePlan& cp = plan.cases.emplace_back();
    cp.c = original;
    if (choices.seed) cp.c.seed = *choices.seed;
    cp.validate_queries = choices.validate_queries > 0 ? choices.validate_queries : cp.c.validate_queries;
    const std::vector<ParamRequest> requests = merged(cli, cp.c, choices.matrix_file);
    const std::string& file = choices.matrix_file;
    const std::string where = cp.c.param_specs.empty() ? std::string("--param") : fmt::format("{}{}case {}", file, file.empty() ? "" : ": ", cp.c.id);
    for (const Way w : {Way::sharded, whole})
      for (const VersionDesc* v : versions)
        if (way_of(v) == w)
          for (ParamValues& p : expand_params(v->id, v->params, requests, where)) cp.items.push_back(PlanItem{v, w, std::move(p)});
  }
  return plan;
}

}  // namespace knn
