#pragma once
// A version's declared parameters: the variants that buy its speed, visible to the user, set from the
// command line or the matrix (`--param v16.leaf=128`, `"params": {"v16.test": ["box", "median"]}`),
// swept as axes and recorded in every result. A version declares them in its VersionDesc; its code
// reads the values of the call from `Environment::params`, never from the process environment.
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/errors.hpp"

namespace knn {

// A path's mode: "auto" (the version's rule decides), "off" (never), "on" (wherever it is exact).
enum class Mode { automatic, off, on };
const char* to_string(Mode m);

// A bad parameter request: unknown version or parameter, a value out of range or not in the list.
// The harness turns it into exit code 2.
class ParamError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

struct ParamDecl {
  enum class Kind { mode, integer, words };
  std::string name;  // "leaf": the user writes "<version>.leaf"
  Kind kind = Kind::mode;
  std::string default_value;       // as the user would write it
  long lo = 0, hi = 0;             // integer: the range, both ends allowed
  std::vector<std::string> words;  // words: the allowed values, in the order help lists them
  std::string help;                // one line
  std::string retired_env;         // the environment variable that set it before, when there was one

  // auto|off|on, default auto.
  static ParamDecl mode(std::string name, std::string help, std::string retired_env = "");
  // An integer in [lo, hi].
  static ParamDecl integer(std::string name, long def, long lo, long hi, std::string help, std::string retired_env = "");
  // One word of a list (numbers allowed: {"1", "2", "4"}).
  static ParamDecl choice(std::string name, std::string def, std::vector<std::string> words, std::string help,
                          std::string retired_env = "");
  // on|off.
  static ParamDecl flag(std::string name, bool def, std::string help, std::string retired_env = "");

  // "auto|off|on", "integer in [1, 8192]", "box|median".
  std::string allowed() const;
  // Empty when `value` is allowed, else what is wrong ("'x': expected an integer in [1, 8192]").
  std::string check(const std::string& value) const;
};

// The value of every declared parameter of one version for one call (defaults included), and which
// of them the user set. Read by the version's code; a name it did not declare is a programming error
// (std::logic_error).
class ParamValues {
 public:
  ParamValues() = default;
  // Every declaration's default, then `set` on top (each checked: ParamError naming `version`).
  ParamValues(const std::string& version, const std::vector<ParamDecl>& decls, const std::map<std::string, std::string>& set);

  const std::string& text(const std::string& name) const;
  Mode mode(const std::string& name) const;
  long integer(const std::string& name) const;
  bool on(const std::string& name) const;  // a flag (or a mode) that is "on"

  const std::map<std::string, std::string>& values() const { return values_; }
  // The parameters the user set, in declaration order (what a label shows).
  const std::vector<std::string>& set_names() const { return set_; }
  bool empty() const { return values_.empty(); }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> set_;
};

// "v16[test=median,sort=off]" from the parameters the user set; the id alone when none.
std::string variant_label(const std::string& version, const ParamValues& p);
std::string variant_label(const std::string& version, const std::map<std::string, std::string>& values,
                          const std::vector<std::string>& set_names);

// One `--param` argument (or one matrix "params" entry): "v16.test=box,median".
struct ParamRequest {
  std::string version, name;
  std::vector<std::string> values;  // two or more: a sweep
};
// Parses "VERSION.NAME=V1[,V2...]"; ParamError on a malformed one (`where` prefixes the message:
// "--param", "FILE: /params").
ParamRequest parse_param_request(const std::string& text, const std::string& where);

// Checks `requests` against the declarations of the version `version` (unknown parameter, values
// allowed, one request per parameter) and returns every combination of their values, each as the
// values of one call, in the order the user gave them (the last parameter varies fastest). One
// entry (the defaults, or the single values given) when nothing is swept.
std::vector<ParamValues> expand_params(const std::string& version, const std::vector<ParamDecl>& decls,
                                       const std::vector<ParamRequest>& requests, const std::string& where);

}  // namespace knn
