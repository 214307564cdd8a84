#include "run_report.hpp"

#include <exception>
#include <string>
#include <utility>

#include "core/errors.hpp"
#include "rates.hpp"

namespace knn {

RunReport::RunReport(RunInfo info, std::vector<std::unique_ptr<Reporter>> reporters, int total, bool keeps_results)
    : info_(std::move(info)), reporters_(std::move(reporters)), total_(total), keeps_(keeps_results) {}

RunReport::~RunReport() {
  if (!begun_ || ended_ || std::uncaught_exceptions() <= exceptions_) return;
  info_.complete = false;
  try {
    for (auto& rep : reporters_) rep->end(info_, results_);
  } catch (const std::exception&) {  // the error in flight is the one to report
  }
}

void RunReport::begin() {
  for (auto& rep : reporters_) rep->begin(info_);
  begun_ = true;
  exceptions_ = std::uncaught_exceptions();
}

void RunReport::step(const Case& c, const std::string& what) {
  for (auto& rep : reporters_) rep->step(c, what);
}

void RunReport::start(const Case& c, const std::string& label) {
  for (auto& rep : reporters_) rep->start(info_, c, label, index_, total_);
  ++index_;
}

void RunReport::finish(Result r) {
  if (!keeps_) return;
  any_fail_ = any_fail_ || r.status == Status::fail;
  if (!r.floor.decided) r.floor = floor_of(info_, r);  // an --isolate child's result comes with its own
  results_.push_back(std::move(r));
  for (auto& rep : reporters_) rep->result(info_, results_);
}

void RunReport::end(bool complete) {
  info_.complete = complete;
  ended_ = true;
  std::string errors;
  for (auto& rep : reporters_) try {
      rep->end(info_, results_);
    } catch (const std::exception& e) {
      errors += (errors.empty() ? "" : "; ") + std::string(e.what());
    }
  if (!errors.empty()) throw ConfigError(errors);
}

}  // namespace knn
