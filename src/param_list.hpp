#pragma once
// The versions' declared parameters as the user sees them: `knnbench params [VERSION]`,
// `--list --params`, and the check that no retired environment variable is still set.
#include <string>
#include <vector>

#include "core/registry.hpp"

namespace knn {

// Each version's parameters: name (as --param writes it), kind, default and help; a version that
// declares none says so. Returns the text.
std::string describe_params(const std::vector<const VersionDesc*>& versions);

// ConfigError (exit 2) when an environment variable that set a parameter before (ParamDecl::
// retired_env), or any other KNN_V<n>_ variable, is set: a run must not silently ignore it. The
// message names the parameter that replaces it.
void refuse_retired_environment();

}  // namespace knn
