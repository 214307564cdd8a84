#include "compare_params.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace knn {

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// The same case id and case parameters (the inputs), whatever the versions' parameters.
bool same_case(const Result& a, const Result& b) {
  const Case &x = a.problem_case, &y = b.problem_case;
  return x.id == y.id && x.dim == y.dim && x.m == y.m && x.n == y.n && x.topk == y.topk && x.self_join == y.self_join &&
         x.distribution == y.distribution && x.integer_max == y.integer_max && x.seed == y.seed;
}

}  // namespace

// "leaf=64 test=box": every parameter value the result records.
std::string param_key(const Result& r) {
  std::string s;
  for (const auto& [name, value] : r.params) s += (s.empty() ? "" : " ") + name + "=" + value;
  return s;
}

// The parameters recorded on both sides with different values ("test: box vs median"); one recorded
// on one side only (an older file, a parameter added since) is not a difference.
std::vector<std::string> param_differences(const Result& a, const Result& b) {
  std::vector<std::string> out;
  for (const auto& [name, value] : a.params)
    if (const auto it = b.params.find(name); it != b.params.end() && it->second != value)
      out.push_back(fmt::format("{}: {} vs {}", name, value, it->second));
  return out;
}

void pair_other_parameter_values(std::vector<const Result*>& left_a, std::vector<const Result*>& left_b,
                                 std::vector<std::pair<const Result*, const Result*>>& pairs, CompareReport& rep) {
  // Same case and version, other parameter values: paired when the only difference is a parameter that
  // one side does not record (an older file), refused when values differ (another variant).
  for (auto ia = left_a.begin(); ia != left_a.end();) {
    const Result& ra = **ia;
    const auto ib = std::find_if(left_b.begin(), left_b.end(), [&](const Result* rb) {
      return rb->version == ra.version && rb->problem_case.id == ra.problem_case.id && same_case(*rb, ra);
    });
    if (ib == left_b.end()) {
      ++ia;
      continue;
    }
    const std::vector<std::string> diff = param_differences(ra, **ib);
    if (diff.empty()) {
      rep.notes.push_back(fmt::format("{} case {}: paired although {} records no value for some of the parameters the other side records "
                                      "(A: {}; B: {})",
                                      ra.version, ra.problem_case.id, ra.params.size() < (*ib)->params.size() ? "A" : "B",
                                      ra.params.empty() ? "none" : param_key(ra), (*ib)->params.empty() ? "none" : param_key(**ib)));
      pairs.emplace_back(&ra, *ib);
    } else {
      rep.uncompared.push_back({NotCompared::refused, ra.problem_case.id, ra.label(),
                                fmt::format("not paired: other parameters ({}); --ignore-params pairs them", join(diff))});
    }
    left_b.erase(ib);
    ia = left_a.erase(ia);
  }
}

std::pair<ResultsDocument, ResultsDocument> split_by_params(const ResultsDocument& doc, const std::string& a, const std::string& b) {
  ParamRequest ra, rb;
  try {
    ra = parse_param_request(a, "--params A");
    rb = parse_param_request(b, "--params B");
  } catch (const ParamError& e) {
    throw CompareError(e.what());
  }
  for (const ParamRequest* r : {&ra, &rb})
    if (r->values.size() != 1) throw CompareError(fmt::format("--params {}.{}: one value per side (a side is one setting)", r->version, r->name));
  if (a == b) throw CompareError(fmt::format("--params {} {}: the two settings are the same", a, b));
  const auto side = [&doc](const ParamRequest& r, const std::string& text) {
    ResultsDocument out;
    out.info = doc.info;
    out.file = fmt::format("{} [{}]", doc.file, text);
    for (Result x : doc.results) {
      const auto it = x.params.find(r.name);
      if (x.version != r.version || it == x.params.end() || it->second != r.values[0]) continue;
      x.params.erase(r.name);  // the compared parameter: the rest must agree for a pair
      x.params_set.erase(std::remove(x.params_set.begin(), x.params_set.end(), r.name), x.params_set.end());
      out.results.push_back(std::move(x));
    }
    if (out.results.empty())
      throw CompareError(fmt::format("--params {}: no result in {} has {}.{} = {}", text, doc.file, r.version, r.name, r.values[0]));
    return out;
  };
  return {side(ra, a), side(rb, b)};
}

}  // namespace knn
