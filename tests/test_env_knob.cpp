// knn::env::int_knob (kernels/device/env_knob.hpp), the integer knobs of v16 and v17: unset or empty
// gives nullopt, a whole integer in range its value, anything else an error naming the owner, the
// variable, the value, the range and the caller's note.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/device/env_knob.hpp"
#include "test_support.hpp"

namespace {

constexpr const char* kVariable = "KNN_TEST_ENV_KNOB";

std::optional<int> knob_with(const std::string& value, int lo, int hi) {
  const knn::testing::ScopedEnv set(kVariable, value);
  return knn::env::int_knob(kVariable, lo, hi, "vX");
}

std::string error_with(const std::string& value, int lo, int hi, const char* note) {
  const knn::testing::ScopedEnv set(kVariable, value);
  try {
    const std::optional<int> v = knn::env::int_knob(kVariable, lo, hi, "vX", note);
    return "accepted: " + (v ? std::to_string(*v) : std::string("nullopt"));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

TEST(EnvKnob, UnsetOrEmptyLeavesTheDefaultToTheCaller) {
  {
    const knn::testing::ScopedEnv unset(kVariable, "");  // ScopedEnv unsets on an empty value
    ASSERT_EQ(std::getenv(kVariable), nullptr);
    EXPECT_EQ(knn::env::int_knob(kVariable, 1, 10, "vX"), std::nullopt);
  }
  setenv(kVariable, "", 1);  // set, but empty
  ASSERT_NE(std::getenv(kVariable), nullptr);
  EXPECT_EQ(knn::env::int_knob(kVariable, 1, 10, "vX"), std::nullopt);
  unsetenv(kVariable);
}

TEST(EnvKnob, WholeIntegersInRangeAreTaken) {
  EXPECT_EQ(knob_with("1", 1, 8192), 1);
  EXPECT_EQ(knob_with("8192", 1, 8192), 8192);
  EXPECT_EQ(knob_with("23", 16, 64), 23);
  EXPECT_EQ(knob_with("0", 0, 1), 0);
  EXPECT_EQ(knob_with("-3", -5, 5), -3);
  EXPECT_EQ(knob_with("+7", 0, 10), 7);      // std::stoi's syntax
  EXPECT_EQ(knob_with(" 12", 0, 100), 12);   // leading blanks too, as std::stoi skips them
  EXPECT_EQ(knob_with("007", 0, 100), 7);
}

TEST(EnvKnob, AnythingElseIsAnErrorThatSaysWhy) {
  for (const auto& [value, lo, hi] : std::vector<std::tuple<std::string, int, int>>{
           {"0", 1, 8192}, {"8193", 1, 8192}, {"15", 16, 64}, {"65", 16, 64}, {"x", 0, 1}, {"2", 0, 1},
           {"yes", 0, 1}, {"32 ", 16, 64}, {"3.5", 0, 10}, {"4x", 0, 10}, {"-", 0, 10},
           {"99999999999999999999", 0, 10}}) {
    const std::string want = "vX: KNN_TEST_ENV_KNOB = '" + value + "': must be an integer in [" + std::to_string(lo) + ", " +
                             std::to_string(hi) + "]";
    EXPECT_EQ(error_with(value, lo, hi, ""), want) << value;
    EXPECT_EQ(error_with(value, lo, hi, " (the fan-out)"), want + " (the fan-out)") << value;
  }
}

}  // namespace
