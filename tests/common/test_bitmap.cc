/* SPDX-License-Identifier: Apache-2.0 */
// Atomic bitmaps (bitmap.h): set/clear report the previous state, bits in
// different words are independent, and concurrent updates are never lost.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "common/bitmap.h"

namespace {

constexpr size_t kBits = 4 * MM_BITMAP_WORD_BITS;

TEST(Bitmap, SetAndClearReportThePreviousState) {
  uintptr_t map[kBits / MM_BITMAP_WORD_BITS] = {0};
  for (size_t bit :
       {size_t(0), size_t(1), MM_BITMAP_WORD_BITS - 1, MM_BITMAP_WORD_BITS, kBits - 1}) {
    EXPECT_FALSE(mm_bitmap_test(map, bit)) << bit;
    EXPECT_FALSE(mm_bitmap_set(map, bit)) << bit;
    EXPECT_TRUE(mm_bitmap_test(map, bit)) << bit;
    EXPECT_TRUE(mm_bitmap_set(map, bit)) << bit;
    EXPECT_TRUE(mm_bitmap_clear(map, bit)) << bit;
    EXPECT_FALSE(mm_bitmap_test(map, bit)) << bit;
    EXPECT_FALSE(mm_bitmap_clear(map, bit)) << bit;
  }
}

TEST(Bitmap, BitsAreIndependent) {
  uintptr_t map[kBits / MM_BITMAP_WORD_BITS] = {0};
  for (size_t bit = 0; bit < kBits; bit += 3) mm_bitmap_set(map, bit);
  for (size_t bit = 0; bit < kBits; bit++) EXPECT_EQ(mm_bitmap_test(map, bit), bit % 3 == 0) << bit;
  for (size_t bit = 0; bit < kBits; bit += 6) mm_bitmap_clear(map, bit);
  for (size_t bit = 0; bit < kBits; bit++)
    EXPECT_EQ(mm_bitmap_test(map, bit), bit % 3 == 0 && bit % 6 != 0) << bit;
}

// Threads own interleaved bits of the same words and flip them: each must
// always read back its own last write, which a lost update would undo.
TEST(Bitmap, ConcurrentUpdatesOfOneWordAreNotLost) {
  constexpr int kThreads = 4, kRounds = 20000;
  uintptr_t map[kBits / MM_BITMAP_WORD_BITS] = {0};
  std::atomic<long> lost{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++)
    threads.emplace_back([&map, &lost, t] {
      for (int round = 0; round < kRounds; round++)
        for (size_t bit = size_t(t); bit < kBits; bit += kThreads) {
          const bool set = round % 2 == 0;
          if (set)
            mm_bitmap_set(map, bit);
          else
            mm_bitmap_clear(map, bit);
          if (mm_bitmap_test(map, bit) != set) lost++;
        }
    });
  for (std::thread &t : threads) t.join();
  EXPECT_EQ(lost.load(), 0);
  for (size_t bit = 0; bit < kBits; bit++) EXPECT_FALSE(mm_bitmap_test(map, bit)) << bit;
}

// Many threads race to set the same bit: exactly one sees it unset.
TEST(Bitmap, ExactlyOneSetterWinsABit) {
  constexpr int kThreads = 4;
  uintptr_t map[kBits / MM_BITMAP_WORD_BITS] = {0};
  std::atomic<int> winners[kBits] = {};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++)
    threads.emplace_back([&] {
      for (size_t bit = 0; bit < kBits; bit++)
        if (!mm_bitmap_set(map, bit)) winners[bit]++;
    });
  for (std::thread &t : threads) t.join();
  for (size_t bit = 0; bit < kBits; bit++) EXPECT_EQ(winners[bit].load(), 1) << bit;
}

}  // namespace
