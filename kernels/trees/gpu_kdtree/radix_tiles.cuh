// CUB's onesweep radix sort with smaller tiles, for sorts too small to fill the device.
//
// CUB's tuning for sm_90 gives a onesweep pass of 64-bit keys 384 threads x 15 keys (5 760 keys) a
// block: at 171 075 keys (case 510's tree levels and wave keys) a pass runs on 30 blocks of an H100's
// 132 SMs and takes about 12 us whatever its bytes (docs/v16.md). `small` takes 256 threads x 5 keys
// (1 280; 134 blocks there). Everything else (histograms, the exclusive sum, the onesweep kernel, its
// stability) is CUB's: only the onesweep policy differs, through DispatchRadixSort's policy hub.
// That hub is CUB's implementation detail (pinned to the toolkit this builds with); a toolkit that
// changes it fails to compile here, not at run time.
#pragma once

#include <cuda_runtime.h>

#include <cub/cub.cuh>

#include <cstddef>
#include <type_traits>

namespace knn::gpu {

template <typename KeyT, typename ValueT, typename OffsetT>
struct SmallTileRadixHub {
  using Base = cub::detail::radix::policy_hub<KeyT, ValueT, OffsetT>;
  using Tuned = typename Base::template OnesweepSmallKeyTunedPolicy<cub::detail::radix::sm90_small_key_tuning<
      sizeof(KeyT), std::is_same_v<ValueT, cub::NullType> ? 0 : sizeof(ValueT), sizeof(OffsetT)>>;
  // One policy for every architecture (the end of its own chain): CUB's sm_90 policy, smaller onesweep tiles.
  struct Policy : cub::ChainedPolicy<500, Policy, Policy>, Tuned {
    using OnesweepPolicy =
        cub::AgentRadixSortOnesweepPolicy<256, 10, typename Base::DominantT, 1, cub::RADIX_RANK_MATCH_EARLY_COUNTS_ANY,
                                          cub::BLOCK_SCAN_RAKING_MEMOIZE, cub::RADIX_SORT_STORE_DIRECT, Tuned::ONESWEEP_RADIX_BITS>;
  };
  using MaxPolicy = Policy;
};

// Keys per onesweep block of CUB's own sm_90 tuning for 64-bit keys (384 threads x 15).
inline constexpr long long kCubTile64 = 5760;

// Ascending, stable sort of (key, value) pairs on bits [begin, end): CUB's tuning, or `small` tiles.
// As cub::DeviceRadixSort::SortPairs, a null `temp` asks for the temporary bytes; values may be
// cub::NullType (keys only, with an empty DoubleBuffer).
template <typename KeyT, typename ValueT>
cudaError_t radix_sort(bool small, void* temp, std::size_t& bytes, cub::DoubleBuffer<KeyT>& keys, cub::DoubleBuffer<ValueT>& values,
                       int items, int begin, int end, cudaStream_t stream) {
  using Offset = cub::detail::choose_offset_t<int>;
  if (small)
    return cub::DispatchRadixSort<cub::SortOrder::Ascending, KeyT, ValueT, Offset, cub::detail::identity_decomposer_t,
                                  SmallTileRadixHub<KeyT, ValueT, Offset>>::Dispatch(temp, bytes, keys, values, Offset(items), begin,
                                                                                      end, true, stream);
  return cub::DispatchRadixSort<cub::SortOrder::Ascending, KeyT, ValueT, Offset>::Dispatch(temp, bytes, keys, values, Offset(items),
                                                                                             begin, end, true, stream);
}

}  // namespace knn::gpu
