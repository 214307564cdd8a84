#include "param_list.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.hpp"

extern char** environ;

namespace knn {

namespace {

const char* kind_name(ParamDecl::Kind k) {
  switch (k) {
    case ParamDecl::Kind::mode: return "mode";
    case ParamDecl::Kind::integer: return "integer";
    case ParamDecl::Kind::words: return "choice";
  }
  return "?";
}

// KNN_V<digits>_...: the prefix the versions' variables had.
bool looks_like_version_variable(const std::string& name) {
  if (name.rfind("KNN_V", 0) != 0) return false;
  std::size_t i = 5;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
  return i > 5 && i < name.size() && name[i] == '_';
}

}  // namespace

std::string describe_params(const std::vector<const VersionDesc*>& versions) {
  std::string out;
  for (const VersionDesc* v : versions) {
    if (v->params.empty()) {
      out += fmt::format("{}: no parameters\n", v->id);
      continue;
    }
    out += fmt::format("{} ({} parameter{}; set with --param {}.NAME=VALUE, sweep with VALUE,VALUE...):\n", v->id, v->params.size(),
                       v->params.size() == 1 ? "" : "s", v->id);
    std::size_t width = 0;
    for (const ParamDecl& d : v->params) width = std::max(width, v->id.size() + 1 + d.name.size());
    for (const ParamDecl& d : v->params) {
      const std::string values = d.kind == ParamDecl::Kind::integer ? fmt::format("{}..{}", d.lo, d.hi) : d.allowed();
      out += fmt::format("  {:<{}}  {:<7}  {:<14}  default {:<5}  {}\n", v->id + "." + d.name, width, kind_name(d.kind), values, d.default_value,
                         d.help);
    }
  }
  return out;
}

std::vector<std::string> settings_set_aside(const std::vector<Case>& cases) {
  std::vector<std::string> aside;
  for (const Case& c : cases)
    for (const std::string& spec : c.param_specs)
      if (Registry::instance().find(spec.substr(0, spec.find('.'))) == nullptr && std::find(aside.begin(), aside.end(), spec) == aside.end())
        aside.push_back(spec);
  return aside;
}

std::string set_aside_warning(const std::vector<Case>& cases, const std::string& matrix_file) {
  const std::vector<std::string> aside = settings_set_aside(cases);
  if (aside.empty()) return "";
  return fmt::format("knnbench: warning: {}: \"params\" for {} this build does not have, set aside: {} (a version built only with "
                     "CUDA, or a misspelt id: knnbench --list names this build's versions)\n",
                     matrix_file, aside.size() == 1 ? "a version" : "versions", fmt::join(aside, ", "));
}

std::string describe_variants(const Plan& plan, const std::vector<Case>& cases) {
  std::vector<std::string> labels;
  for (const CasePlan& cp : plan.cases)
    for (const PlanItem& item : cp.items)
      if (!item.params.set_names().empty() && std::find(labels.begin(), labels.end(), item.label()) == labels.end()) labels.push_back(item.label());
  const std::vector<std::string> aside = settings_set_aside(cases);
  std::string out;
  if (!labels.empty()) out += fmt::format("\nVariants ({} runs of (case, version) in all):\n  {}\n", plan.total(), fmt::join(labels, "\n  "));
  if (!aside.empty()) out += fmt::format("\nSettings for versions this build does not have (set aside):\n  {}\n", fmt::join(aside, "\n  "));
  return out;
}

void refuse_retired_environment() {
  std::vector<std::string> found;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq == nullptr || eq[1] == '\0') continue;  // set but empty read as unset before, too
    const std::string name(*e, std::size_t(eq - *e)), value(eq + 1);
    // The declaration that retired it; of several (v18 declares v15's engine's), the version the name
    // holds ("KNN_V15_TC": v15) first; else a parameter named like the variable's tail.
    std::string replacement;
    bool own = false;
    for (const VersionDesc& v : Registry::instance().versions())
      for (const ParamDecl& d : v.params) {
        std::string prefix = "KNN_" + v.id + "_", lower;
        for (char& ch : prefix) ch = char(std::toupper(static_cast<unsigned char>(ch)));
        for (const char ch : name.substr(std::min(name.size(), prefix.size()))) lower += char(std::tolower(static_cast<unsigned char>(ch)));
        const bool mine = name.rfind(prefix, 0) == 0;
        if ((d.retired_env == name || (mine && lower == d.name)) && (replacement.empty() || (mine && !own))) {
          replacement = fmt::format("--param {}.{}=VALUE ({})", v.id, d.name, d.allowed());
          own = mine;
        }
      }
    if (!replacement.empty())
      found.push_back(fmt::format("{}={} is no longer read: use {}", name, value, replacement));
    else if (looks_like_version_variable(name))
      found.push_back(fmt::format("{}={} is no longer read, and no parameter replaces it (knnbench params)", name, value));
  }
  if (found.empty()) return;
  std::string msg = "the versions' variants are parameters now, not environment variables (knnbench params lists them):";
  for (const auto& f : found) msg += "\n  " + f;
  msg += "\nunset the variable" + std::string(found.size() == 1 ? "" : "s") + " to run";
  throw ConfigError(msg);
}

}  // namespace knn
