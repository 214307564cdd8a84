#pragma once
// SIGINT/SIGTERM: the first one asks the run to stop after the call in flight (the results so far
// are saved); a second one (either signal) exits at once, 128 + that signal. After SIGTERM the call
// in flight has kTermGraceSeconds to finish, then the process exits 143 (128 + SIGTERM) with every
// finished result on disk. Each message names the signal received and what a second one does.
// Exit codes: 130 after SIGINT (Ctrl-C), 143 after SIGTERM, as shells report a process they
// killed; under mpirun every rank returns the same (mpi_exit_code, mpi_env.hpp).
#include <string>

namespace knn {

inline constexpr unsigned kTermGraceSeconds = 10;

bool stop_requested();
// The first signal received (SIGINT or SIGTERM), 0 when none: the exit code is 128 + it.
int stop_signal();
// "SIGINT", "SIGTERM", else "signal N".
std::string signal_name(int sig);
// Installs the handlers; under mpirun their messages start "knnbench (rank R)".
void install_signal_handlers();

}  // namespace knn
