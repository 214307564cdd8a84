#pragma once
// Host-side planning of v15's fused scan (pure C++, tested on the CPU): how one thread's queries
// and reference rows are laid out, how the references are cut into chunks that are copied while
// the previous chunk is searched, and into how many splits each chunk's rows are shared out so a
// few queries still fill every SM. Every count comes from the arguments (the device's resident
// blocks among them), never from a device constant.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/params.hpp"

namespace knn::gpu {

// Rows of a reference group: a thread reads 4 consecutive rows as dim 16-byte loads.
constexpr int kScanGroup = 4;
// Threads per block of the scan kernel.
constexpr int kScanBlock = 128;
// At most this many partial (distance, index) entries wait for the merge (about 24 bytes each
// with the sort's keys): the split count shrinks before the buffer grows past it.
constexpr long long kPartialBudget = 32LL << 20;
// A chunk carries at least this many bytes of references (smaller copies waste the link's
// latency), and there are at most kMaxChunks of them, not counting the ramp's and the taper's below.
constexpr std::size_t kChunkBytes = std::size_t(4) << 20;
constexpr int kMaxChunks = 8;
// The ramp: when there are several chunks, the first carries about kFirstChunkBytes and each next
// one twice the one before until they reach the equal chunks' size. The first kernel then starts
// after a short copy, and a search slower than the copy never waits for the next chunk (it takes
// twice as long as its own copy); a search faster than the copy is unaffected, since the last
// chunks are the equal ones. At most kMaxRampChunks such chunks.
constexpr std::size_t kFirstChunkBytes = std::size_t(512) << 10;
constexpr int kMaxRampChunks = 8;
// plan_scan ramps only from this many queries: with one query the search of a chunk is far shorter
// than its copy, and the ramp's extra chunks cost cases 8 and 9 1-2 % on an H100 (docs/v15.md);
// between 1 and 1024 queries nothing was measured.
constexpr int kRampMinQueries = 64;
// The taper: with few queries (below kRampMinQueries) and topk = 1, the search of a chunk is far
// shorter than its copy, and what the call adds to the copy is the last chunk's search (about
// 0.03 ms for case 8's 24 MiB, 0.12 ms for case 9's 128 MiB on an H100). The last chunk is cut
// into halves, quarters, ... while what is left is at least 2 × kLastChunkBytes, at most
// kMaxTaperChunks extra chunks (case 8: 12, 6, 3 and 3 MiB). Only topk = 1: its partial lists are
// merged by atomicMin, while more chunks would mean more partial lists to sort for longer ones.
constexpr std::size_t kLastChunkBytes = std::size_t(3) << 20;
constexpr int kMaxTaperChunks = 4;
// A thread scans at least this many row groups of its split (v15.min_groups overrides it).
// Fewer groups mean more splits, so more partial lists to merge: topk > 1 lost with fewer
// (docs/v15.md, "The merge for few queries"). The nearest neighbour's partial lists are one key
// per warp and query (atomicMin), so it takes kMinGroupsNearest: cases 3-5 and one to 32 queries
// against 2^14-2^18 rows 1.1-1.6x faster on an H100 than with 16 (results/h100/v15/splits-warp/).
constexpr int kMinGroupsPerThread = 16;
constexpr int kMinGroupsNearest = 4;
// Query slots per thread of the nearest neighbour's scan (topk 1; fused_scan.cuh asserts it).
constexpr int kNearestQueriesPerThread = 4;

struct ScanPlan {
  int queries_per_thread = 1;  // Q: query slots per thread (a template constant of the kernel)
  int query_threads = 1;       // QT: threads of a block along the queries (power of two)
  int ref_threads = 1;         // RT = kScanBlock / QT: threads of a block along the rows
  int query_groups = 1;        // blocks along the queries: ceil(m / (QT · Q))
  int splits = 1;              // blocks along one chunk's rows
  std::vector<int> chunk_rows;  // chunk c holds rows [chunk_rows[c], chunk_rows[c + 1])
  int chunks() const { return int(chunk_rows.size()) - 1; }
  int blocks_per_chunk() const { return query_groups * splits; }
  // Partial lists per query: one per (chunk, split, row thread).
  long long partials() const { return (long long)chunks() * splits * ref_threads; }
};

// Chunk boundaries for n rows of `row_bytes` each: interior boundaries are multiples of kScanGroup
// rows (a group never straddles two chunks); one chunk when `single` (self-joins: the kernel reads
// every row as a query, so all rows must be on the device before it starts). `ramp`: the first
// chunks grow from kFirstChunkBytes (above); without it every chunk has the same size.
inline std::vector<int> plan_chunks(int n, std::size_t row_bytes, bool single, bool ramp = true) {
  const std::size_t bytes = std::size_t(n) * row_bytes;
  const long long groups = ((long long)n + kScanGroup - 1) / kScanGroup;
  int equal = single ? 1 : int(std::min<std::size_t>(kMaxChunks, std::max<std::size_t>(1, bytes / kChunkBytes)));
  equal = int(std::max<long long>(1, std::min<long long>(equal, groups)));
  std::vector<int> rows{0};
  long long done = 0;  // groups in the ramp's chunks
  if (ramp && equal > 1) {
    const long long size = groups / equal;  // the equal chunks' groups
    long long c = std::max<long long>(1, (long long)(kFirstChunkBytes / (row_bytes * kScanGroup)));
    for (int r = 0; r < kMaxRampChunks && c < size; ++r, c *= 2) {
      done += c;
      rows.push_back(int(done * kScanGroup));
    }
    // The rest in chunks of about the equal size.
    equal = int(std::max<long long>(1, ((groups - done) * 2 + size) / (2 * size)));
  }
  for (int c = 1; c < equal; ++c) rows.push_back(int((done + (groups - done) * c / equal) * kScanGroup));
  rows.push_back(n);
  return rows;
}

// Cuts the last of several chunks (rows: boundaries as plan_chunks returns them) into halves,
// quarters, ... as above; one chunk stays one.
inline void taper_last_chunk(std::vector<int>& rows, std::size_t row_bytes) {
  if (rows.size() < 3) return;
  const int n = rows.back();
  rows.pop_back();
  int begin = rows.back();
  for (int r = 0; r < kMaxTaperChunks; ++r) {
    const long long left = (long long)n - begin;
    if (std::size_t(left) * row_bytes < 2 * kLastChunkBytes) break;
    begin += int(left / 2 / kScanGroup * kScanGroup);
    rows.push_back(begin);
  }
  rows.push_back(n);
}

// The most rows of any chunk.
inline int largest_chunk(const std::vector<int>& rows) {
  int most = 0;
  for (std::size_t c = 0; c + 1 < rows.size(); ++c) most = std::max(most, rows[c + 1] - rows[c]);
  return most;
}

// The plan for m queries against n references of dimension dim, topk neighbours, with Q query
// slots per thread, on a device that holds `resident_blocks` scan blocks at once (occupancy × SMs).
// `single_chunk` for self-joins and the heap lists (their scratch is sized for one kernel at a time).
inline ScanPlan plan_scan(int m, int n, int dim, int topk, int queries_per_thread, long long resident_blocks,
                          bool single_chunk, bool ramp = true, bool taper = true, int min_groups = kMinGroupsPerThread) {
  ScanPlan p;
  p.queries_per_thread = queries_per_thread;
  const long long query_slots = (m + queries_per_thread - 1) / queries_per_thread;
  while (p.query_threads < kScanBlock && p.query_threads < query_slots) p.query_threads *= 2;
  p.ref_threads = kScanBlock / p.query_threads;
  p.query_groups = int((query_slots + p.query_threads - 1) / p.query_threads);
  p.chunk_rows = plan_chunks(n, std::size_t(dim) * sizeof(float), single_chunk, ramp && m >= kRampMinQueries);
  // Many queries: the chunks' partial lists would outgrow the budget. First without the ramp's
  // extra chunks, then, when even the equal chunks' lists are too many (the search outlasts the copy
  // anyway), one chunk (the answers are then written in place, no merge).
  const auto over_budget = [&] { return p.chunks() > 1 && (long long)m * p.chunks() * p.ref_threads * topk > kPartialBudget; };
  if (over_budget()) p.chunk_rows = plan_chunks(n, std::size_t(dim) * sizeof(float), single_chunk, false);
  if (over_budget()) p.chunk_rows = plan_chunks(n, std::size_t(dim) * sizeof(float), true);
  if (taper && topk == 1 && m < kRampMinQueries) taper_last_chunk(p.chunk_rows, std::size_t(dim) * sizeof(float));
  // Enough blocks per chunk to fill the device once, but no thread with less than
  // min_groups groups and no more partial entries than the budget.
  const long long chunk_groups = ((long long)largest_chunk(p.chunk_rows) + kScanGroup - 1) / kScanGroup;
  long long splits = (resident_blocks + p.query_groups - 1) / p.query_groups;
  splits = std::min(splits, std::max(1LL, chunk_groups / (p.ref_threads * std::max(1, min_groups))));
  const long long per_split = (long long)m * p.chunks() * p.ref_threads * topk;
  splits = std::min(splits, std::max(1LL, kPartialBudget / std::max(1LL, per_split)));
  p.splits = int(std::max(1LL, splits));
  return p;
}

// The row groups per thread at which the largest chunk's splits give every SM one block: `base`'s
// query groups, each split over ceil(sms / query groups) blocks of base.ref_threads row threads.
inline long long groups_filling_sms(const ScanPlan& base, int sms) {
  const long long chunk_groups = ((long long)largest_chunk(base.chunk_rows) + kScanGroup - 1) / kScanGroup;
  const long long per_group_blocks = (sms + base.query_groups - 1) / base.query_groups;
  return chunk_groups / ((long long)base.ref_threads * per_group_blocks);
}

// Heaps (topk > 32) with fewer queries than SMs: a thread clears and writes out its whole heap of
// topk entries however few rows it scans, and every heap is a partial list to merge. So a thread
// gets up to topk groups (4 × topk rows), but never so many that fewer blocks than SMs are left,
// and never fewer than `base`'s min_groups. `base`: the plan at min_groups. (7 queries, 2^20 rows,
// topk 64: 2.67 ms at 16 groups, 1.07 at 64; docs/v15.md.)
inline int heap_min_groups(const ScanPlan& base, int m, int topk, int sms, int min_groups) {
  if (m >= sms || topk <= min_groups) return min_groups;
  return int(std::max<long long>(min_groups, std::min<long long>(groups_filling_sms(base, sms), topk)));
}

// The nearest neighbour's scan (partial lists merged by atomicMin, so more splits cost one atomic
// per warp each): where kMinGroupsNearest leaves fewer blocks per chunk than SMs, a thread gets fewer
// groups, down to 1, until every SM has a block. (Case 3, 1 query × 2^16 rows: 32 blocks at 4
// groups, 128 at 1; docs/v15.md.) `base`: the plan at `min_groups`.
inline int nearest_min_groups(const ScanPlan& base, int sms, int min_groups) {
  if (base.blocks_per_chunk() >= sms) return min_groups;
  return int(std::clamp<long long>(groups_filling_sms(base, sms), 1, min_groups));
}

// v15.host_keys for m queries against `reference_bytes` (topk 1's scan): on, off, or auto up to
// kHostKeysMaxQueries (a host loop of about a nanosecond a query against an unpack kernel's launch and
// a second download) and kHostKeysMaxReferenceBytes. Measured on an H100 (docs/v15.md): 3-7 µs faster
// with at most 12 KiB of references (cases 0, 1, 2, 5), 2-4 µs slower with 768 KiB and 4 MiB (cases 3, 4).
constexpr int kHostKeysMaxQueries = 4096;
constexpr std::size_t kHostKeysMaxReferenceBytes = std::size_t(256) << 10;
inline bool host_keys_taken(int m, std::size_t reference_bytes, Mode mode) {
  return mode == Mode::on ||
         (mode == Mode::automatic && m <= kHostKeysMaxQueries && reference_bytes <= kHostKeysMaxReferenceBytes);
}

// The merge of partial lists (topk_merge.cu) sorts each query's entries as one CUB segment, which
// one block sorts: with fewer queries than SMs, reduction passes first cut a query's entries into
// runs of merge_run_length(topk) entries, sort every run and keep its best topk, until a query's
// entries span at most kMergeRunsLeft runs.
constexpr long long kMergeMinRun = 2048;
constexpr long long kMergeRunsLeft = 4;
inline long long merge_run_length(int topk) { return std::max(kMergeMinRun, 16LL * topk); }
// The entries per query each reduction pass starts from, for m queries of per_query entries on a
// device of `sms` SMs (empty: the sort alone).
inline std::vector<long long> merge_passes(int m, long long per_query, int topk, int sms) {
  std::vector<long long> starts;
  const long long run = merge_run_length(topk);
  for (long long per = per_query; m < sms && per > kMergeRunsLeft * run; per = (per + run - 1) / run * topk)
    starts.push_back(per);
  return starts;
}

// "N chunks of a, b, ... MiB (copy on one stream, search on another)" for v15's path (`ramp`: the
// ramp was asked for; without it the text names ramp=off; `one_stream`: v15.one_stream took one chunk's
// search onto the copy stream).
inline std::string chunks_text(const std::vector<int>& rows, int dim, bool ramp, bool one_stream = false) {
  const int chunks = int(rows.size()) - 1;
  std::string sizes;
  for (int c = 0; c < chunks && chunks > 1; ++c)
    sizes += fmt::format("{}{:.3g}", c ? ", " : " of ", double(rows[c + 1] - rows[c]) * dim * 4 / (1 << 20));
  return fmt::format("{} chunk{}{} ({}{})", chunks, chunks == 1 ? "" : "s", sizes.empty() ? "" : sizes + " MiB",
                     one_stream ? "copy and search on one stream: one_stream=on" : "copy on one stream, search on another",
                     ramp ? "" : "; ramp=off");
}

}  // namespace knn::gpu
