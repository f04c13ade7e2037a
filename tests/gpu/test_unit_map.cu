/* SPDX-License-Identifier: Apache-2.0 */
// tests/gpu/test_unit_map.cu: the unit map's swizzled layout
// (src/gpu/unit_map.cuh). Every tile of 256 units keeps its entries to
// itself, each unit has an entry of its own, eight units from a multiple of
// 8 have neighbouring entries (the map is cleared eight at a time), and the
// lanes of a warp looking up 2 or 4 KiB blocks read at most half the 32-byte
// sectors that entries in unit order would take.
#include "gpu_test.cuh"
#include "unit_map.cuh"

namespace {

constexpr uint32_t kUnits = 4096;  // 16 tiles

__global__ void k_map_slots(uint32_t *slots, uint32_t first) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kUnits) slots[i] = xmc_map_slot(first + i);
}

std::vector<uint32_t> map_slots(uint32_t first) {
  DeviceArray<uint32_t> slots(kUnits);
  k_map_slots<<<kUnits / 256, 256>>>(slots.ptr, first);
  EXPECT_EQ(cudaSuccess, cudaDeviceSynchronize());
  return slots.host();
}

TEST(XmcUnitMap, EachTileIsAPermutationOfItsOwnEntries) {
  ASSERT_TRUE(gt_have_gpu());
  for (uint32_t first : {0u, 1u << 20, (1u << 28) - kUnits}) {
    const std::vector<uint32_t> slots = map_slots(first);
    std::vector<bool> seen(kUnits, false);
    for (uint32_t i = 0; i < kUnits; ++i) {
      const uint32_t unit = first + i, slot = slots[i];
      ASSERT_EQ(unit >> 8, slot >> 8) << "unit " << unit << " left its tile";
      ASSERT_FALSE(seen[slot - first]) << "two units share entry " << slot;
      seen[slot - first] = true;
    }
  }
}

TEST(XmcUnitMap, EightAlignedUnitsHaveNeighbouringEntries) {
  ASSERT_TRUE(gt_have_gpu());
  const std::vector<uint32_t> slots = map_slots(0);
  for (uint32_t u = 0; u < kUnits; u += 8) {
    ASSERT_EQ(0u, slots[u] % 8) << "unit " << u;
    for (uint32_t k = 1; k < 8; ++k) ASSERT_EQ(slots[u] + k, slots[u + k]) << "unit " << u + k;
  }
}

// 32 Basicblocks of 2 or 4 KiB in a row (each behind its chunk header): the
// lanes freeing them read one entry each, in at most 16 sectors, where
// entries in unit order would take 32.
TEST(XmcUnitMap, AWarpOfTwoOrFourKiBBlocksReadsAtMostHalfTheSectors) {
  ASSERT_TRUE(gt_have_gpu());
  const std::vector<uint32_t> slots = map_slots(0);
  for (uint32_t body : {2048u, 4096u}) {
    const uint32_t stride = body + xmc_chunk_header;
    for (uint32_t start = 0; start < 1024; start += 3) {  // the Superblock's first block, in units
      std::vector<uint32_t> sectors;
      for (uint32_t lane = 0; lane < 32; ++lane) {
        const uint32_t unit = start + (xmc_chunk_header + lane * stride) / xmc_unit;
        sectors.push_back(slots[unit] / 32);
      }
      std::sort(sectors.begin(), sectors.end());
      const size_t distinct = std::unique(sectors.begin(), sectors.end()) - sectors.begin();
      ASSERT_LE(distinct, 16u) << body << "-byte blocks from unit " << start;
    }
  }
}

}  // namespace
