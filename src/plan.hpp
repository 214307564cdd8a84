#pragma once
// The plan of a run: every selected (case, version) in the order it runs, each with the way it
// runs (in this process, in an --isolate child, or sharded over the ranks of mpirun). The runner
// walks it case by case; nothing here measures or reads data.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "matrix.hpp"

namespace knn {

enum class Way {
  in_process,  // measured in this process (rank 0 alone under mpirun)
  isolated,    // --isolate: a child knnbench process per (case, version)
  sharded,     // under mpirun with several ranks, a version that shards the references: every rank
};
const char* to_string(Way w);

// One version with the values of its declared parameters (a sweep gives one item per combination).
struct PlanItem {
  const VersionDesc* version = nullptr;
  Way way = Way::in_process;
  ParamValues params;  // every declared parameter's value for this item, defaults included
  // "v16[test=median,sort=off]": the id, with the parameters the user set.
  std::string label() const { return variant_label(version->id, params); }
};

struct CasePlan {
  Case c;                    // as the run takes it: --seed applied
  int validate_queries = 0;  // --validate-queries, else the case's own, else 0 (every query)
  std::vector<PlanItem> items;  // the sharded versions first (every rank), then the others
  // The versions run the way `w`, in order (a version once per variant).
  std::vector<const VersionDesc*> versions(Way w) const;
  // The items run the way `w`, in order.
  std::vector<const PlanItem*> items_of(Way w) const;
};

struct Plan {
  std::vector<CasePlan> cases;
  int total() const;  // (case, version) items: the progress line's N
};

// What of the options and of the process decides the plan.
struct PlanChoices {
  std::optional<std::uint64_t> seed;  // --seed: every case's data seed
  int validate_queries = 0;           // --validate-queries (0: each case's own)
  bool isolate = false;               // --isolate
  bool many_ranks = false;            // under mpirun with more than one rank
  // --param VERSION.NAME=V1[,V2...]: each names a selected version; several values sweep.
  std::vector<std::string> param_specs;
  std::string matrix_file;  // names the file in errors of a case's "params"
};

// Every case with every version, in the order given, each version once per combination of its
// parameters' values (--param, then the case's "params" for what --param does not set): under
// several ranks the versions that shard the references run that way (before the others), the rest in
// this process or, with --isolate, in a child each. ParamError (exit 2) for a --param that names no
// version, a version not selected, an undeclared parameter or a value its declaration refuses; the
// matrix's "params" may name versions that are not selected (a study's file serves several runs) or
// not in this build.
Plan make_plan(const std::vector<Case>& cases, const std::vector<const VersionDesc*>& versions, const PlanChoices& choices);

}  // namespace knn
