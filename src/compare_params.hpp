#pragma once
// compare and the versions' parameters: results pair on (case, version, parameter values); a result
// recorded before parameters were (schema 1) pairs with one that records them; `--params A B` draws
// its two sides from one file.
#include <string>
#include <utility>
#include <vector>

#include "compare.hpp"

namespace knn {

// "leaf=64 test=box": every parameter value the result records.
std::string param_key(const Result& r);
// The parameters both sides record with different values ("test: box vs median").
std::vector<std::string> param_differences(const Result& a, const Result& b);
// Of the results left unpaired, those of the same case and version whose parameter values differ:
// paired when a side does not record some parameter (an older file; said in a note), listed as not
// paired ("other parameters ...") when values differ. Both are removed from left_a and left_b.
void pair_other_parameter_values(std::vector<const Result*>& left_a, std::vector<const Result*>& left_b,
                                 std::vector<std::pair<const Result*, const Result*>>& pairs, CompareReport& rep);

}  // namespace knn
