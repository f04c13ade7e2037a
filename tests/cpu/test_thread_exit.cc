/* SPDX-License-Identifier: Apache-2.0 */
// Thread exit: rounds of short-lived threads allocate and free most of what
// they made; the rest outlives them. Each thread leaves its survivors in a
// pool and frees some left there by the others, possibly while their makers
// are exiting; the main thread frees the remainder after they have exited.
// What the dead threads cached must be reused or returned: memory mapped
// after round 100 stays within a generous factor of round 10.
#include <manymalloc/manymalloc.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/tagged_block.h"
#include "support/test_sizes.h"

using namespace mmtest;

namespace {

constexpr int kRounds = 100;
constexpr int kThreadsPerRound = 8;
constexpr int kBlocksPerThread = 400;
constexpr int kLeftPerThread = 50;  // outlive their thread

size_t random_size(std::mt19937_64 &rng) {
  return rng() % 40 == 0 ? 64 * KiB + rng() % (512 * KiB) : 16 + rng() % 8000;
}

// Blocks that outlive their thread.
struct Pool {
  std::mutex mutex;
  std::vector<Block> blocks;
};

bool check_and_free(const Block &b) {
  const bool intact = block_intact(b);
  mm_free(b.p);
  return intact;
}

// One short-lived thread: allocates, frees all but kLeftPerThread, leaves
// those in the pool and frees as many others' from it. Returns how many
// blocks it found corrupted, or -1 when malloc failed.
int short_life(uint32_t id, uint32_t round, Pool &pool) {
  std::mt19937_64 rng(round * 131 + id);
  std::vector<Block> blocks;
  for (uint32_t i = 0; i < kBlocksPerThread; i++) {
    const size_t size = random_size(rng);
    const Block b = block_new(size, tag_make(id, round * kBlocksPerThread + i));
    if (b.p == nullptr) return -1;
    blocks.push_back(b);
  }
  std::shuffle(blocks.begin(), blocks.end(), rng);
  int corrupted = 0;
  for (size_t i = kLeftPerThread; i < blocks.size(); i++) corrupted += !check_and_free(blocks[i]);
  blocks.resize(kLeftPerThread);
  {
    std::lock_guard<std::mutex> lock(pool.mutex);
    pool.blocks.insert(pool.blocks.begin(), blocks.begin(), blocks.end());
    blocks.assign(pool.blocks.end() - kLeftPerThread, pool.blocks.end());
    pool.blocks.resize(pool.blocks.size() - kLeftPerThread);
  }
  for (const Block &b : blocks) corrupted += !check_and_free(b);  // mostly others'
  return corrupted;
}

void run_round(uint32_t round) {
  Pool pool;
  std::vector<int> corrupted(kThreadsPerRound);
  std::vector<std::thread> threads;
  for (uint32_t id = 0; id < kThreadsPerRound; id++)
    threads.emplace_back([&, id] { corrupted[id] = short_life(id, round, pool); });
  for (std::thread &t : threads) t.join();
  for (int c : corrupted) {
    ASSERT_NE(c, -1) << "malloc failed in round " << round;
    EXPECT_EQ(c, 0) << "blocks corrupted before their free in round " << round;
  }
  for (const Block &b : pool.blocks)
    EXPECT_TRUE(check_and_free(b)) << "block of an exited thread corrupted";
}

TEST(ThreadExit, MappedMemoryDoesNotGrowAcrossThreadGenerations) {
  mm_stats_t after10{}, after100{};
  for (uint32_t round = 1; round <= kRounds; round++) {
    run_round(round);
    if (round == 10) mm_stats_get(&after10);
  }
  mm_stats_get(&after100);
  RecordProperty("bytes_mapped_after_round_10", std::to_string(after10.bytes_mapped));
  RecordProperty("bytes_mapped_after_round_100", std::to_string(after100.bytes_mapped));
  // A leak check: a heap per dead thread left behind grows without bound.
  EXPECT_LE(after100.bytes_mapped, 2 * after10.bytes_mapped + 64 * MiB)
      << "mapped after round 10: " << after10.bytes_mapped
      << ", after round 100: " << after100.bytes_mapped;
  EXPECT_LE(after100.bytes_in_use, after10.bytes_in_use + MiB)
      << "in use after round 10: " << after10.bytes_in_use
      << ", after round 100: " << after100.bytes_in_use;
}

}  // namespace
