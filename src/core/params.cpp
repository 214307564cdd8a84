#include "core/params.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace knn {

const char* to_string(Mode m) {
  switch (m) {
    case Mode::automatic: return "auto";
    case Mode::off: return "off";
    case Mode::on: return "on";
  }
  return "?";
}

ParamDecl ParamDecl::mode(std::string name, std::string help, std::string retired_env) {
  ParamDecl d;
  d.name = std::move(name);
  d.kind = Kind::mode;
  d.default_value = "auto";
  d.words = {"auto", "off", "on"};
  d.help = std::move(help);
  d.retired_env = std::move(retired_env);
  return d;
}

ParamDecl ParamDecl::integer(std::string name, long def, long lo, long hi, std::string help, std::string retired_env) {
  ParamDecl d;
  d.name = std::move(name);
  d.kind = Kind::integer;
  d.default_value = std::to_string(def);
  d.lo = lo;
  d.hi = hi;
  d.help = std::move(help);
  d.retired_env = std::move(retired_env);
  return d;
}

ParamDecl ParamDecl::choice(std::string name, std::string def, std::vector<std::string> words, std::string help,
                            std::string retired_env) {
  ParamDecl d;
  d.name = std::move(name);
  d.kind = Kind::words;
  d.default_value = std::move(def);
  d.words = std::move(words);
  d.help = std::move(help);
  d.retired_env = std::move(retired_env);
  return d;
}

ParamDecl ParamDecl::flag(std::string name, bool def, std::string help, std::string retired_env) {
  return choice(std::move(name), def ? "on" : "off", {"on", "off"}, std::move(help), std::move(retired_env));
}

std::string ParamDecl::allowed() const {
  if (kind == Kind::integer) return fmt::format("an integer in [{}, {}]", lo, hi);
  return fmt::format("{}", fmt::join(words, "|"));
}

namespace {

// The whole of `text` as a decimal integer, or false.
bool parse_long(const std::string& text, long& out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) return false;
  out = v;
  return true;
}

bool valid_name(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_';
  });
}

const ParamDecl* find_decl(const std::vector<ParamDecl>& decls, const std::string& name) {
  for (const auto& d : decls)
    if (d.name == name) return &d;
  return nullptr;
}

std::string known_names(const std::string& version, const std::vector<ParamDecl>& decls) {
  if (decls.empty()) return fmt::format("{} declares no parameters", version);
  std::vector<std::string> names;
  for (const auto& d : decls) names.push_back(d.name);
  return fmt::format("{} declares {}", version, fmt::join(names, ", "));
}

}  // namespace

std::string ParamDecl::check(const std::string& value) const {
  if (kind == Kind::integer) {
    long v = 0;
    if (!parse_long(value, v) || v < lo || v > hi) return fmt::format("'{}': expected {}", value, allowed());
    return "";
  }
  if (std::find(words.begin(), words.end(), value) == words.end()) return fmt::format("'{}': expected {}", value, allowed());
  return "";
}

ParamValues::ParamValues(const std::string& version, const std::vector<ParamDecl>& decls,
                         const std::map<std::string, std::string>& set) {
  for (const auto& d : decls) values_[d.name] = d.default_value;
  for (const auto& [name, value] : set) {
    const ParamDecl* d = find_decl(decls, name);
    if (d == nullptr) throw ParamError(fmt::format("{}.{}: no such parameter ({})", version, name, known_names(version, decls)));
    if (const std::string why = d->check(value); !why.empty()) throw ParamError(fmt::format("{}.{} = {}", version, name, why));
    long v = 0;
    values_[name] = d->kind == ParamDecl::Kind::integer && parse_long(value, v) ? std::to_string(v) : value;  // "+8", "08": 8
  }
  for (const auto& d : decls)
    if (set.count(d.name) != 0) set_.push_back(d.name);
}

const std::string& ParamValues::text(const std::string& name) const {
  const auto it = values_.find(name);
  if (it == values_.end()) throw std::logic_error(fmt::format("parameter '{}' read but not declared", name));
  return it->second;
}

Mode ParamValues::mode(const std::string& name) const {
  const std::string& t = text(name);
  if (t == "auto") return Mode::automatic;
  if (t == "on") return Mode::on;
  if (t == "off") return Mode::off;
  throw std::logic_error(fmt::format("parameter '{}' = '{}' read as a mode", name, t));
}

long ParamValues::integer(const std::string& name) const {
  long v = 0;
  if (!parse_long(text(name), v)) throw std::logic_error(fmt::format("parameter '{}' = '{}' read as an integer", name, text(name)));
  return v;
}

bool ParamValues::on(const std::string& name) const { return text(name) == "on"; }

std::string variant_label(const std::string& version, const std::map<std::string, std::string>& values,
                          const std::vector<std::string>& set_names) {
  if (set_names.empty()) return version;
  std::vector<std::string> parts;
  for (const auto& n : set_names) {
    const auto it = values.find(n);
    parts.push_back(fmt::format("{}={}", n, it == values.end() ? std::string("?") : it->second));
  }
  return fmt::format("{}[{}]", version, fmt::join(parts, ","));
}

std::string variant_label(const std::string& version, const ParamValues& p) { return variant_label(version, p.values(), p.set_names()); }

ParamRequest parse_param_request(const std::string& text, const std::string& where) {
  const auto eq = text.find('=');
  const auto dot = text.find('.');
  if (eq == std::string::npos || dot == std::string::npos || dot > eq)
    throw ParamError(fmt::format("{} '{}': expected VERSION.NAME=VALUE[,VALUE...] (e.g. v16.leaf=128)", where, text));
  ParamRequest r;
  r.version = text.substr(0, dot);
  r.name = text.substr(dot + 1, eq - dot - 1);
  if (r.version.empty() || !valid_name(r.name))
    throw ParamError(fmt::format("{} '{}': expected VERSION.NAME=VALUE[,VALUE...] (e.g. v16.leaf=128)", where, text));
  const std::string values = text.substr(eq + 1);
  std::size_t start = 0;
  while (true) {
    const auto comma = values.find(',', start);
    std::string v = values.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (v.empty()) throw ParamError(fmt::format("{} '{}': an empty value", where, text));
    if (std::find(r.values.begin(), r.values.end(), v) != r.values.end())
      throw ParamError(fmt::format("{} '{}': the value '{}' is given twice", where, text, v));
    r.values.push_back(std::move(v));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return r;
}

std::vector<ParamValues> expand_params(const std::string& version, const std::vector<ParamDecl>& decls,
                                       const std::vector<ParamRequest>& requests, const std::string& where) {
  std::vector<const ParamRequest*> mine;
  std::set<std::string> seen;
  for (const auto& r : requests) {
    if (r.version != version) continue;
    const ParamDecl* d = find_decl(decls, r.name);
    if (d == nullptr) throw ParamError(fmt::format("{}: {}.{}: no such parameter ({})", where, version, r.name, known_names(version, decls)));
    if (!seen.insert(r.name).second) throw ParamError(fmt::format("{}: {}.{} is given twice", where, version, r.name));
    std::set<std::string> values;
    for (const auto& v : r.values) {
      if (const std::string why = d->check(v); !why.empty()) throw ParamError(fmt::format("{}: {}.{} = {}", where, version, r.name, why));
      long x = 0;
      if (!values.insert(d->kind == ParamDecl::Kind::integer && parse_long(v, x) ? std::to_string(x) : v).second)
        throw ParamError(fmt::format("{}: {}.{} = '{}': the same value twice", where, version, r.name, v));
    }
    mine.push_back(&r);
  }
  std::vector<ParamValues> out;
  std::vector<std::size_t> at(mine.size(), 0);
  while (true) {
    std::map<std::string, std::string> set;
    for (std::size_t i = 0; i < mine.size(); ++i) set[mine[i]->name] = mine[i]->values[at[i]];
    out.emplace_back(version, decls, set);
    std::size_t i = mine.size();
    while (i > 0) {
      --i;
      if (++at[i] < mine[i]->values.size()) break;
      at[i] = 0;
      if (i == 0) return out;
    }
    if (mine.empty()) return out;
  }
}

}  // namespace knn
