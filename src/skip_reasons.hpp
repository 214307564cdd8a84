#pragma once
// The words of every skip the harness decides itself, in one place, so the screen, the JSON and
// the tests read the same sentence. (A version's own supports() reasons are its own.)
#include <cstddef>
#include <string>

namespace knn::skip_reason {

std::string gib(double bytes);  // "1.50 GiB"

// A GPU version on a machine with no (selected) CUDA device.
std::string no_device();
// A self-join case and a version that does not declare VersionDesc::self_join.
std::string no_self_join();
// A version's device_bytes estimate is over the free memory of a device it would use.
std::string device_memory(std::size_t need, int ordinal, std::size_t have);
// A case's inputs and answers are over 90 % of the host's available memory.
std::string host_memory(double need, double have);
// A version's host_bytes estimate (its working memory plus the answers) is over what the process
// can still allocate (usable_host_memory: MemAvailable, RLIMIT_AS, the cgroup's limit).
std::string working_memory(double need, double have);
// A host allocation failed (std::bad_alloc) while `doing` ("during the calls", "allocating the
// inputs"): the sizes the harness knew of, and what was available then.
std::string out_of_host_memory(const std::string& doing, double known_bytes, double have);
// SIGINT/SIGTERM arrived while a version was being sampled: no time is recorded.
std::string interrupted(std::size_t samples_taken);

}  // namespace knn::skip_reason
