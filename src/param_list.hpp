#pragma once
// The versions' declared parameters as the user sees them: `knnbench params [VERSION]`,
// `--list --params`, and the check that no retired environment variable is still set.
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "matrix.hpp"
#include "plan.hpp"

namespace knn {

// Each version's parameters: name (as --param writes it), kind, default and help; a version that
// declares none says so. Returns the text.
std::string describe_params(const std::vector<const VersionDesc*>& versions);

// For --list: the variants the plan runs when parameters are set ("" when none is), and the matrix's
// settings for versions this build does not have (set aside).
std::string describe_variants(const Plan& plan, const std::vector<Case>& cases);

// The cases' "params" settings ("v3.tile=4") for versions this build does not register (a GPU version
// in a build without CUDA, or a misspelt id: the build cannot tell them apart), set aside by the plan.
std::vector<std::string> settings_set_aside(const std::vector<Case>& cases);
// For a run: one warning line naming the matrix file and those settings ("" when there are none), so
// that a run says what --list shows instead of passing over them in silence.
std::string set_aside_warning(const std::vector<Case>& cases, const std::string& matrix_file);

// ConfigError (exit 2) when an environment variable that set a parameter before (ParamDecl::
// retired_env), or any other KNN_V<n>_ variable, is set: a run must not silently ignore it. The
// message names the parameter that replaces it.
void refuse_retired_environment();

}  // namespace knn
