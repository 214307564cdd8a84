// The pieces the harness uses to shard a case under mpirun without MPI itself: generating any
// range of points, a checksum over pieces, the balanced shards, and the validation reference
// streamed piece by piece (rank 0 never holds every reference).
#include <gtest/gtest.h>

#include <vector>

#include "core/problem.hpp"
#include "data.hpp"
#include "results_schema.hpp"
#include "validate.hpp"

using namespace knn;

TEST(Sharding, AnyRangeOfPointsEqualsThoseRowsOfTheWholeSet) {
  for (Distribution dist : {Distribution::uniform, Distribution::clusters, Distribution::duplicates, Distribution::integers}) {
    const int dim = 5, n = 1001;
    std::vector<float> whole(std::size_t(n) * dim);
    generate_points(dist, 77, PointSet::references, dim, n, whole.data(), 1000);
    for (const auto& [first, count] : {std::pair{0, 1}, {1, 1}, {333, 250}, {1000, 1}, {17, 984}}) {
      std::vector<float> part(std::size_t(count) * dim, -1.f);
      generate_point_range(dist, 77, PointSet::references, dim, first, count, part.data(), 1000);
      EXPECT_EQ(part, std::vector<float>(whole.begin() + std::ptrdiff_t(first) * dim, whole.begin() + std::ptrdiff_t(first + count) * dim))
          << to_string(dist) << " rows " << first << "+" << count;
    }
  }
}

TEST(Sharding, ChecksumOverPiecesOfAnySizeEqualsTheWhole) {
  std::vector<float> v(3 * 301);
  generate_points(Distribution::uniform, 3, PointSet::references, 3, 301, v.data());
  const std::uint64_t whole = checksum(v.data(), v.size());
  for (std::size_t piece : {1, 3, 75, 76, 225, 903}) {  // 4-byte floats: pieces that split 8-byte words
    Checksum c;
    for (std::size_t at = 0; at < v.size(); at += piece) c.add(v.data() + at, std::min(piece, v.size() - at) * sizeof(float));
    EXPECT_EQ(c.value(), whole) << "pieces of " << piece << " floats";
  }
  Checksum odd;  // and pieces of odd byte counts
  const auto* bytes = reinterpret_cast<const unsigned char*>(v.data());
  odd.add(bytes, 5);
  odd.add(bytes + 5, 3 * 301 * 4 - 5);
  EXPECT_EQ(odd.value(), whole);
}

TEST(Sharding, ShardsAreBalancedContiguousAndCoverEveryRow) {
  for (int count : {0, 1, 3, 7, 1000, 1001}) {
    for (int ranks : {1, 2, 3, 4, 8}) {
      int next = 0;
      for (int r = 0; r < ranks; ++r) {
        const Shard s = shard_of(count, r, ranks);
        EXPECT_EQ(s.first, next);
        EXPECT_GE(s.size, count / ranks);
        EXPECT_LE(s.size, count / ranks + 1);
        next += s.size;
      }
      EXPECT_EQ(next, count) << count << " rows on " << ranks << " ranks";
    }
  }
}

TEST(Sharding, ChunkedReferenceEqualsTheReferenceAndValidatesFromFetchedPoints) {
  for (bool self_join : {false, true}) {
    for (int topk : {1, 4, 33}) {
      const int dim = 3, n = 257, m = self_join ? n : 40;
      std::vector<float> refs(std::size_t(n) * dim), queries(std::size_t(m) * dim);
      generate_points(Distribution::duplicates, 9, PointSet::references, dim, n, refs.data());  // many exact ties
      generate_points(Distribution::duplicates, 9, PointSet::queries, dim, m, queries.data());
      const Problem p{dim, m, n, topk, self_join ? refs.data() : queries.data(), refs.data(), self_join};
      const Reference whole = compute_reference(p, 0);
      Problem shape = p;  // the chunked reference never reads the problem's references
      shape.references = nullptr;
      if (self_join) shape.queries = nullptr;
      Checksum sum;
      const Reference chunked = compute_reference_chunked(
          shape, 0, 50, [&](int first, int count, float* out) { std::copy_n(refs.data() + std::size_t(first) * dim, std::size_t(count) * dim, out); },
          [&](const float* rows, std::size_t floats) { sum.add(rows, floats * sizeof(float)); },
          [&](std::int32_t index, float* out) { std::copy_n(refs.data() + std::size_t(index) * dim, dim, out); });
      EXPECT_EQ(chunked.rows, whole.rows);
      EXPECT_EQ(chunked.indices, whole.indices) << "self_join " << self_join << " topk " << topk;
      EXPECT_EQ(sum.value(), checksum(refs.data(), refs.size()));
      // Validation through the fetched points: the right answer passes, a wrong one fails.
      std::vector<std::int32_t> answer(p.result_slots());
      for (int q = 0; q < m; ++q) std::copy_n(whole.indices.data() + std::size_t(q) * topk, topk, answer.data() + std::size_t(q) * topk);
      EXPECT_TRUE(validate_neighbors(shape, chunked, answer.data()).pass);
      const int q = m / 2;  // its last neighbour becomes the farthest point: a wrong answer
      int far = 0;
      double far_d = -1;
      for (int j = 0; j < n; ++j)
        if (true_squared_distance(p, q, j) > far_d) far_d = true_squared_distance(p, q, j), far = j;
      answer[std::size_t(q) * topk + topk - 1] = far;
      EXPECT_FALSE(validate_neighbors(shape, chunked, answer.data()).pass) << "self_join " << self_join << " topk " << topk;
    }
  }
}

TEST(Sharding, ResultsRecordTheRanksWithTheirHostsAndGpus) {
  RunInfo info;
  info.mpi_ranks = 2;
  info.rank_places = {RankPlace{0, "node-a", "0 (NVIDIA H200)"}, RankPlace{1, "node-b", "none"}};
  const auto j = nlohmann::json::parse(results_to_json(info, {}).dump());
  EXPECT_EQ(j["mpi"]["ranks"], 2);
  const RunInfo back = run_info_from_json(j);
  ASSERT_EQ(back.rank_places.size(), 2u);
  EXPECT_EQ(back.mpi_ranks, 2);
  EXPECT_EQ(back.rank_places[1].host, "node-b");
  EXPECT_EQ(back.rank_places[0].gpu, "0 (NVIDIA H200)");
  RunInfo plain;  // not under mpirun: no "mpi" at all
  EXPECT_FALSE(nlohmann::json::parse(results_to_json(plain, {}).dump()).contains("mpi"));
}
