#include "plan.hpp"

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

int Plan::total() const {
  std::size_t n = 0;
  for (const CasePlan& cp : cases) n += cp.items.size();
  return int(n);
}

Plan make_plan(const std::vector<Case>& cases, const std::vector<const VersionDesc*>& versions, const PlanChoices& choices) {
  const Way whole = choices.isolate ? Way::isolated : Way::in_process;
  const auto way_of = [&](const VersionDesc* v) { return choices.many_ranks && v->shards_references ? Way::sharded : whole; };
  Plan plan;
  for (const Case& original : cases) {
    CasePlan& cp = plan.cases.emplace_back();
    cp.c = original;
    if (choices.seed) cp.c.seed = *choices.seed;
    cp.validate_queries = choices.validate_queries > 0 ? choices.validate_queries : cp.c.validate_queries;
    for (const Way w : {Way::sharded, whole})
      for (const VersionDesc* v : versions)
        if (way_of(v) == w) cp.items.push_back(PlanItem{v, w});
  }
  return plan;
}

}  // namespace knn
