#pragma once
// SIGINT/SIGTERM: the first one asks the run to stop after the call in flight (the results so far
// are saved); a second one exits at once. After SIGTERM the call in flight has kTermGraceSeconds to
// finish, then the process exits 143 (128 + SIGTERM) with every finished result on disk.
namespace knn {

inline constexpr unsigned kTermGraceSeconds = 10;

bool stop_requested();
// The first signal received (SIGINT or SIGTERM), 0 when none: the exit code is 128 + it.
int stop_signal();
void install_signal_handlers();

}  // namespace knn
