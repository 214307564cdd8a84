#pragma once
// SIGINT/SIGTERM: the first one asks the run to stop after the call in flight (the results so far
// are saved); a second one exits at once.
namespace knn {

bool stop_requested();
void install_signal_handlers();

}  // namespace knn
