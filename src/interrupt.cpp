#include "interrupt.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <string>

#include "mpi_env.hpp"

namespace knn {
namespace {

std::atomic<int> g_signals{0};
std::atomic<int> g_first_signal{0};

// The handlers' messages, written before the handlers are installed: a handler only calls write().
struct Messages {
  std::string first_int, first_term, again_int, again_term, grace_over;
};
Messages g_messages;

void say(const std::string& text) { (void)!::write(STDERR_FILENO, text.data(), text.size()); }

// SIGTERM's grace period is over: the call in flight did not finish. Every finished result is on
// disk already; leave as a terminated process does.
extern "C" void on_grace_over(int) {
  say(g_messages.grace_over);
  std::_Exit(128 + SIGTERM);
}

extern "C" void on_signal(int sig) {
  int none = 0;
  g_first_signal.compare_exchange_strong(none, sig);
  if (g_signals.fetch_add(1) >= 1) {
    // Second signal: leave at once. The results file on disk is already valid JSON.
    say(sig == SIGTERM ? g_messages.again_term : g_messages.again_int);
    std::_Exit(128 + sig);
  }
  if (sig == SIGTERM) {
    // `timeout`, schedulers and mpirun send SIGTERM and expect an end: the call in flight gets a
    // grace period, then the process exits 143 (on_grace_over).
    struct sigaction sa {};
    sa.sa_handler = on_grace_over;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, nullptr);
    alarm(kTermGraceSeconds);
  }
  say(sig == SIGTERM ? g_messages.first_term : g_messages.first_int);
}

}  // namespace

bool stop_requested() { return g_signals.load() > 0; }

int stop_signal() { return g_first_signal.load(); }

std::string signal_name(int sig) {
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  return fmt::format("signal {}", sig);
}

void install_signal_handlers() {
  const MpiWorld& world = mpi_world();
  const std::string who = world.many() ? fmt::format("\nknnbench (rank {})", world.rank) : std::string("\nknnbench");
  g_messages.first_int = who + ": interrupted (SIGINT, Ctrl-C); finishing the call in flight and saving results (Ctrl-C again to quit now)\n";
  // mpirun, sent SIGTERM or SIGINT, passes SIGTERM to every rank and kills them 1 s later (Open
  // MPI's odls_base_sigkill_timeout): the grace period may be cut short, and the message says so.
  const char* mpirun = started_by_mpi_launcher() ? "; mpirun may end the job sooner" : "";
  g_messages.first_term = who + fmt::format(": terminated (SIGTERM); finishing the call in flight (a grace period of {} s{}) and saving "
                                            "results (a second SIGTERM or Ctrl-C quits now)\n", kTermGraceSeconds, mpirun);
  g_messages.again_int = who + ": interrupted again (SIGINT), exiting now (exit 130)\n";
  g_messages.again_term = who + ": terminated again (SIGTERM), exiting now (exit 143)\n";
  g_messages.grace_over = who + fmt::format(": terminated (SIGTERM): the call in flight did not finish within the grace period ({} s); "
                                            "finished results are saved (exit 143)\n", kTermGraceSeconds);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace knn
