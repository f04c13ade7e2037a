// SPDX-License-Identifier: Apache-2.0
// The page a class keeps when it empties (src/cpu/purge.c,
// _mm_purge_page_emptied): it gives back what it carved as it empties, but
// at most once per MANYMALLOC_PURGE_DELAY; emptied again sooner, it keeps
// its memory until the delay is over, then gives it back at the next slow
// path if it is still empty.  CTest runs this program with a delay of 300 ms
// (so that two emptyings fall within it on any machine) and no time budget;
// every case runs on the main thread, the only one with a heap, and each
// uses a class of its own, so no case sees another's give-back time.
#include <manymalloc/manymalloc.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "support/resident.h"
#include "support/tagged_block.h"

using namespace mmtest;

namespace {

constexpr auto kPastTheDelay = std::chrono::milliseconds(600);  // twice CTest's MANYMALLOC_PURGE_DELAY

// `count` blocks of `size` bytes, tagged (round, i).
std::vector<Block> fill(size_t count, size_t size, uint32_t round) {
  std::vector<Block> blocks;
  for (uint32_t i = 0; i < count; i++) {
    blocks.push_back(block_new(size, tag_make(round, i)));
    EXPECT_NE(blocks.back().p, nullptr);
  }
  return blocks;
}

// Resident OS pages under the blocks' span (from the lowest to the highest).
size_t resident_under(const std::vector<Block> &blocks) {
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (const Block &b : blocks) {
    lo = std::min(lo, reinterpret_cast<uintptr_t>(b.p));
    hi = std::max(hi, reinterpret_cast<uintptr_t>(b.p) + b.size);
  }
  return resident_pages(reinterpret_cast<void *>(lo), hi - lo);
}

void check_and_free(const std::vector<Block> &blocks) {
  for (const Block &b : blocks) {
    EXPECT_TRUE(block_intact(b)) << b.p;
    mm_free(b.p);
  }
}

// A malloc that takes the slow path (a span block), where what is due goes back.
void slow_path_malloc() { mm_free(mm_malloc(100000)); }

// The first emptying gives back at once; the second, within the delay, keeps
// the memory; past the delay the next slow path gives it back.
TEST(KeptPage, EmptiedAgainWithinTheDelayWaitsForIt) {
  const size_t size = 1000;
  std::vector<Block> blocks = fill(64, size, 1);
  const size_t carved = resident_under(blocks);
  ASSERT_GE(carved, 16u);
  check_and_free(blocks);
  EXPECT_EQ(resident_under(blocks), 0u) << "the first emptying kept the page's memory";

  std::vector<Block> again = fill(64, size, 2);
  ASSERT_EQ(resident_under(again), carved);
  check_and_free(again);
  EXPECT_EQ(resident_under(again), carved) << "emptied again within the delay, the page gave back at once";

  std::this_thread::sleep_for(kPastTheDelay);
  slow_path_malloc();
  EXPECT_EQ(resident_under(again), 0u) << "past the delay the empty page kept its memory";
}

// A page in use again when its delay is over keeps its memory and blocks.
TEST(KeptPage, PageInUseAgainPastTheDelayKeepsItsBlocks) {
  const size_t size = 1500;
  check_and_free(fill(48, size, 1));  // gives back: the slot's time is now
  check_and_free(fill(48, size, 2));  // waits
  std::vector<Block> live = fill(48, size, 3);
  const size_t carved = resident_under(live);
  ASSERT_GE(carved, 16u);
  std::this_thread::sleep_for(kPastTheDelay);
  slow_path_malloc();
  EXPECT_EQ(resident_under(live), carved) << "a page in use gave back memory when the delay expired";
  check_and_free(live);
}

// Stress: classes whose blocks come and go around none, thousands of times,
// beside live blocks of other classes, with the delay expiring midway: no
// block changes or is handed out twice.
TEST(KeptPage, ClassesEmptiedOverAndOverKeepEveryBlock) {
  const size_t sizes[] = {2048, 3072, 4096, 640};
  std::mt19937 rng(15213);
  std::vector<Block> keep = fill(300, 200, 7);
  for (uint32_t round = 0; round < 3000; round++) {
    const size_t size = sizes[rng() % 4];
    std::vector<Block> churn = fill(1 + rng() % 40, size, 100 + round);
    std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
    for (const Block &b : churn) ranges.emplace_back(uintptr_t(b.p), uintptr_t(b.p) + b.size);
    for (const Block &b : keep) ranges.emplace_back(uintptr_t(b.p), uintptr_t(b.p) + b.size);
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); i++)
      ASSERT_LE(ranges[i - 1].second, ranges[i].first) << "a block was handed out twice in round " << round;
    check_and_free(churn);
    if (round == 1500) {
      std::this_thread::sleep_for(kPastTheDelay);
      slow_path_malloc();
    }
  }
  check_and_free(keep);
}

}  // namespace
