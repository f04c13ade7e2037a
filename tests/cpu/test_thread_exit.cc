// Thread exit: rounds of short-lived threads allocate, free most of what they
// made and leave the rest to the main thread, which frees it after they have
// exited. What the dead threads cached must be reused or returned: memory
// mapped after round 100 stays within a generous factor of round 10.
#include <manymalloc/manymalloc.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "block_tag.h"
#include "test_sizes.h"

using namespace mmtest;

namespace {

constexpr int kRounds = 100;
constexpr int kThreadsPerRound = 8;
constexpr int kBlocksPerThread = 400;
constexpr int kLeftPerThread = 50;  // outlive their thread

struct Block {
  void *p;
  size_t size;
  uint64_t tag;
};

size_t random_size(std::mt19937_64 &rng) {
  return rng() % 40 == 0 ? 64 * KiB + rng() % (512 * KiB) : 16 + rng() % 8000;
}

// One short-lived thread: allocates, frees all but `left`, which it returns.
std::vector<Block> short_life(uint32_t id, uint32_t round) {
  std::mt19937_64 rng(round * 131 + id);
  std::vector<Block> blocks;
  for (uint32_t i = 0; i < kBlocksPerThread; i++) {
    const size_t size = random_size(rng);
    Block b{mm_malloc(size), size, tag_make(id, round * kBlocksPerThread + i)};
    if (b.p == nullptr) break;
    tag_fill(b.p, b.size, b.tag);
    blocks.push_back(b);
  }
  std::shuffle(blocks.begin(), blocks.end(), rng);
  while (blocks.size() > kLeftPerThread) {
    const Block &b = blocks.back();
    EXPECT_TRUE(tag_check(b.p, b.size, b.tag));
    mm_free(b.p);
    blocks.pop_back();
  }
  return blocks;
}

void run_round(uint32_t round) {
  std::vector<std::vector<Block>> left(kThreadsPerRound);
  std::vector<std::thread> threads;
  for (uint32_t id = 0; id < kThreadsPerRound; id++)
    threads.emplace_back([&left, id, round] { left[id] = short_life(id, round); });
  for (std::thread &t : threads) t.join();
  for (const std::vector<Block> &blocks : left) {
    ASSERT_EQ(blocks.size(), size_t(kLeftPerThread)) << "malloc failed in round " << round;
    for (const Block &b : blocks) {
      EXPECT_TRUE(tag_check(b.p, b.size, b.tag)) << "block of an exited thread corrupted";
      mm_free(b.p);
    }
  }
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
