#include "mpi_env.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "interrupt.hpp"

#if KNN_HAVE_MPI
#include <mpi.h>
#endif

namespace knn {
namespace {
MpiWorld g_world;

#if KNN_HAVE_MPI
// The harness's own communicator: its collective calls never meet a version's messages.
MPI_Comm g_comm = MPI_COMM_NULL;
#endif

}  // namespace

bool started_by_mpi_launcher() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (std::getenv(var) != nullptr) return true;
  return false;
}

bool mpi_built() { return KNN_HAVE_MPI != 0; }
const MpiWorld& mpi_world() { return g_world; }

std::optional<std::string> mpi_timeout_problem() {
  const char* value = std::getenv("KNN_MPI_TIMEOUT_S");
  if (value == nullptr || *value == '\0') return std::nullopt;
  const std::string text(value);
  const auto digits = [](const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; };
  const std::size_t point = text.find('.');  // digits, or digits '.' digits: no sign, exponent, blank, inf or nan
  const bool number = digits(text.substr(0, point)) && (point == std::string::npos || digits(text.substr(point + 1)));
  const double seconds = number ? std::strtod(text.c_str(), nullptr) : -1;
  if (seconds > 0 && seconds <= kMaxMpiTimeoutS) return std::nullopt;
  return fmt::format("environment variable KNN_MPI_TIMEOUT_S = '{}': expected a number of seconds greater than 0 and at most {} "
                     "(such as 300 or 2.5), or leave it unset for 300",
                     text, kMaxMpiTimeoutS);
}

#if KNN_HAVE_MPI
MpiSession::MpiSession(int* argc, char*** argv) {
  if (!started_by_mpi_launcher()) return;
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);  // OpenMP threads never call MPI
  MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
  g_world.active = true;
  MPI_Comm_rank(g_comm, &g_world.rank);
  MPI_Comm_size(g_comm, &g_world.size);
  MPI_Comm host;
  MPI_Comm_split_type(g_comm, MPI_COMM_TYPE_SHARED, g_world.rank, MPI_INFO_NULL, &host);
  MPI_Comm_rank(host, &g_world.local_rank);
  MPI_Comm_free(&host);
}

MpiSession::~MpiSession() {
  if (!g_world.active) return;
  MPI_Comm_free(&g_comm);
  MPI_Finalize();
}

void mpi_abort_all(int code) {
  if (g_world.active && g_world.many()) MPI_Abort(MPI_COMM_WORLD, code);
}

int mpi_exit_code(int code) {
  if (!g_world.many()) return code;
  int mine = stop_signal() != 0 ? g_world.rank : g_world.size, first = mine;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, g_comm);
  if (first == g_world.size) return code;
  int sig = stop_signal();
  MPI_Bcast(&sig, 1, MPI_INT, first, g_comm);
  if (g_world.root() && first != 0)
    fmt::print(stderr, "knnbench: rank {} received {}: the run stopped early, finished results are saved (exit {})\n", first,
               signal_name(sig), 128 + sig);
  return 128 + sig;
}

double mpi_root_value(double value) {
  if (g_world.many()) MPI_Bcast(&value, 1, MPI_DOUBLE, 0, g_comm);
  return value;
}

bool mpi_any(bool flag) {
  int v = flag ? 1 : 0, any = v;
  if (g_world.many()) MPI_Allreduce(&v, &any, 1, MPI_INT, MPI_MAX, g_comm);
  return any != 0;
}

std::optional<std::string> mpi_first_reason(const std::optional<std::string>& mine) {
  if (!g_world.many()) return mine;
  int first = mine ? g_world.rank : g_world.size, lowest = first;
  MPI_Allreduce(&first, &lowest, 1, MPI_INT, MPI_MIN, g_comm);
  if (lowest == g_world.size) return std::nullopt;
  int length = lowest == g_world.rank ? int(mine->size()) : 0;
  MPI_Bcast(&length, 1, MPI_INT, lowest, g_comm);
  std::string text = lowest == g_world.rank ? *mine : std::string(std::size_t(length), ' ');
  MPI_Bcast(text.data(), length, MPI_CHAR, lowest, g_comm);
  return fmt::format("rank {}: {}", lowest, text);
}

ValueTraits mpi_combined_values(const ValueTraits& mine, bool none) {
  if (!g_world.many()) return mine;
  // MIN over: the lowest, minus the highest, and the flags as 0 (true) or 1; MAX of "some value here".
  float lows[2] = {none ? INFINITY : mine.lowest, none ? INFINITY : -mine.highest}, all_lows[2];
  int flags[3] = {none || mine.whole ? 0 : 1, none || mine.finite ? 0 : 1, none ? 0 : 1}, all_flags[3];
  MPI_Allreduce(lows, all_lows, 2, MPI_FLOAT, MPI_MIN, g_comm);
  MPI_Allreduce(flags, all_flags, 3, MPI_INT, MPI_MAX, g_comm);
  if (all_flags[2] == 0) return examine_values(nullptr, 0, nullptr, 0);
  ValueTraits t;
  t.known = true;
  t.finite = all_flags[1] == 0;
  t.whole = t.finite && all_flags[0] == 0;
  t.lowest = t.finite ? all_lows[0] : 0.f;
  t.highest = t.finite ? -all_lows[1] : 0.f;
  return t;
}

std::vector<std::uint64_t> mpi_gather_u64(std::uint64_t value) {
  if (!g_world.many()) return {value};
  std::vector<std::uint64_t> all(g_world.root() ? std::size_t(g_world.size) : 0);
  MPI_Gather(&value, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, 0, g_comm);
  return all;
}

void mpi_wait_all() {
  if (!g_world.many()) return;
  MPI_Request request;
  MPI_Ibarrier(g_comm, &request);
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::vector<RankPlace> mpi_gather_places(const std::string& host, const std::string& gpu) {
  if (!g_world.active) return {};
  const std::string mine = host + '\n' + gpu;
  int length = int(mine.size());
  std::vector<int> lengths(g_world.size), offsets(g_world.size);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, g_comm);
  int total = 0;
  for (int r = 0; r < g_world.size; ++r) offsets[r] = total, total += lengths[r];
  std::string all(g_world.root() ? std::size_t(total) : 0, ' ');
  MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, g_comm);
  std::vector<RankPlace> places;
  if (!g_world.root()) return places;
  for (int r = 0; r < g_world.size; ++r) {
    const std::string one = all.substr(std::size_t(offsets[r]), std::size_t(lengths[r]));
    const std::size_t cut = one.find('\n');
    places.push_back(RankPlace{r, one.substr(0, cut), one.substr(cut + 1)});
  }
  return places;
}
#else
MpiSession::MpiSession(int*, char***) {
  if (started_by_mpi_launcher())
    fmt::print(stderr, "knnbench: warning: started by an MPI launcher, but built without MPI: every process runs alone\n");
}
MpiSession::~MpiSession() = default;
void mpi_abort_all(int) {}
int mpi_exit_code(int code) { return code; }
double mpi_root_value(double value) { return value; }
bool mpi_any(bool flag) { return flag; }
std::optional<std::string> mpi_first_reason(const std::optional<std::string>& mine) { return mine; }
ValueTraits mpi_combined_values(const ValueTraits& mine, bool) { return mine; }
std::vector<std::uint64_t> mpi_gather_u64(std::uint64_t value) { return {value}; }
void mpi_wait_all() {}
std::vector<RankPlace> mpi_gather_places(const std::string&, const std::string&) { return {}; }
#endif

}  // namespace knn
