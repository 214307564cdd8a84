#include "results_journal.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <utility>

#include "output_file.hpp"
#include "results_schema.hpp"

namespace knn {
namespace {

[[noreturn]] void fail(const std::string& path, const char* what, int err) {
  throw ConfigError(fmt::format("{}: {} ({})", path, what, std::strerror(err)));
}

void write_line(int fd, const std::string& line, const std::string& path) {
  write_all(fd, line, path);
  if (::fdatasync(fd) != 0 && errno != EINVAL) fail(path, "fdatasync failed", errno);
}

}  // namespace

std::string journal_path(const std::string& results_path) { return results_path + ".journal"; }

Journal::Journal(std::string results_path, const std::string& date_utc) : path_(journal_path(results_path)), results_path_(std::move(results_path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(path_, "cannot create the journal", errno);
  write_line(fd_, nlohmann::ordered_json{{"journal_of", "knnbench"}, {"date_utc", date_utc}}.dump() + "\n", path_);
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

void Journal::append(const nlohmann::ordered_json& result) {
  try {
    write_line(fd_, result.dump() + "\n", path_);
  } catch (const ConfigError& e) {  // a full disk mid-run: name the results file and where the results are
    throw ConfigError(fmt::format("--json {}: result {} could not be booked in its journal ({}); the run stops here. Its finished "
                                  "results are saved whole in {} when it can still be written (the journal is then removed), else the {} booked before "
                                  "it are kept in "
                                  "the journal {} beside {}: keep both files; `knnbench report {} --md FILE` reads them either way",
                                  results_path_, booked_ + 1, e.what(), results_path_, booked_, path_, results_path_, results_path_));
  }
  ++booked_;
}

void Journal::remove() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(path_.c_str());
}

int merge_journal(const std::string& results_path, nlohmann::json& doc, std::vector<std::size_t>* lines_out) {
  const std::string path = journal_path(results_path);
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return 0;  // no journal: the run finished (or never began one)
  // Anything else is read as an input: a regular file, never a FIFO (it would block), a device or a
  // directory; each of those is refused, naming the journal, rather than passed over.
  const std::string text = read_input_file(path, "a regular file (the journal of a killed run) or none");
  std::istringstream in(text);
  std::string line;
  if (!doc.is_object() || !std::getline(in, line)) return 0;
  const nlohmann::json head = nlohmann::json::parse(line, nullptr, false);
  const auto meta = doc.find("meta");
  const auto text_of = [](const nlohmann::json& obj, const char* key) {
    const auto it = obj.find(key);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (!head.is_object() || text_of(head, "journal_of") != "knnbench" || meta == doc.end() || !meta->is_object() ||
      text_of(head, "date_utc").empty() || text_of(head, "date_utc") != text_of(*meta, "date_utc"))
    return 0;  // another run's journal (or not one): the file stands alone
  auto& results = doc["results"];
  // The final write holds every result: a journal left by a kill between that write and its
  // removal adds nothing.
  if (!results.is_array() || !results.empty()) return 0;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  int merged = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    nlohmann::json r = nlohmann::json::parse(lines[i], nullptr, false);
    if (r.is_discarded()) {
      if (i + 1 == lines.size()) break;  // the write the process died in
      throw SchemaError(fmt::format("{}: line {}: not valid JSON", path, i + 2));
    }
    results.push_back(std::move(r));
    if (lines_out) lines_out->push_back(i + 2);  // the header is line 1
    ++merged;
  }
  (*meta)["complete"] = false;
  return merged;
}

}  // namespace knn
