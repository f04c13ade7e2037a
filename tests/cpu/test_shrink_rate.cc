/* SPDX-License-Identifier: Apache-2.0 */
// The time budget of page shrinking (src/cpu/shrink.c): at the heap's peak
// its pages give back at most MM_SHRINK_BURST OS pages at once and then
// MANYMALLOC_SHRINK_RATE MiB a second.  CTest runs this program with a rate
// of 1 MiB a second, and pages shrinking with two threads (main's and the
// case's; MANYMALLOC_SHRINK_THREADS=2): a heap that grows fast after freeing
// many OS pages' worth of blocks gives back the burst, then little more,
// however much it grows; what stays resident keeps its blocks, and nothing
// is handed out twice.
#include <manymalloc/manymalloc.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdint>
#include <thread>
#include <vector>

#include "support/block_tag.h"
#include "support/resident.h"

using namespace mmtest;

namespace {

constexpr size_t kOsPage = 4096;
constexpr size_t kSmall = 48;         // blocks that straddle OS pages
constexpr size_t kBurst = 64;         // MM_SHRINK_BURST
constexpr double kUnitsPerMs = 0.256; // 1 MiB a second, in OS pages

bool resident(uintptr_t os_page) { return resident_pages(reinterpret_cast<void *>(os_page * kOsPage), kOsPage) != 0; }

TEST(ShrinkRate, GrowthFasterThanTheRateGivesBackTheBurstOnly) {
  std::thread([] {
    constexpr size_t kBlocks = 4 * 1024 * 1024 / kSmall;  // 4 MiB of small blocks
    std::vector<void *> small(kBlocks);
    for (size_t i = 0; i < kBlocks; i++) {
      small[i] = mm_malloc(kSmall);
      ASSERT_NE(small[i], nullptr);
      tag_fill(small[i], kSmall, tag_make(1, uint32_t(i)), TagSpan::all);
    }
    // Keeps the blocks that start in one OS page in four, frees the rest:
    // the OS pages two after a kept one hold free blocks only.
    std::vector<uintptr_t> emptied;
    for (size_t i = 0; i < kBlocks; i++) {
      uintptr_t os_page = reinterpret_cast<uintptr_t>(small[i]) / kOsPage;
      if (os_page % 4 == 0) continue;
      if (os_page % 4 == 2 && (emptied.empty() || emptied.back() != os_page)) emptied.push_back(os_page);
      mm_free(small[i]);
      small[i] = nullptr;
    }
    ASSERT_GT(emptied.size(), 3 * kBurst);

    auto start = std::chrono::steady_clock::now();
    // 5 MiB more: past the first two, bytes in use are near their highest,
    // and the heap gives back as much as it grows.
    std::vector<void *> big(5120);
    for (size_t i = 0; i < big.size(); i++) {
      big[i] = mm_malloc(1024);
      ASSERT_NE(big[i], nullptr);
      tag_fill(big[i], 1024, tag_make(2, uint32_t(i)), TagSpan::all);
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

    size_t gone = 0;
    for (uintptr_t p : emptied) gone += !resident(p);
    std::printf("%zu of %zu emptied OS pages went back in %.2f ms\n", gone, emptied.size(), ms);
    EXPECT_GT(gone, 0u) << "pages should still shrink, within the budget";
    EXPECT_LE(gone, kBurst + size_t(ms * kUnitsPerMs) + 2)
        << "gave back more than the burst and the rate allow in " << ms << " ms";

    for (size_t i = 0; i < kBlocks; i++) {
      if (small[i] == nullptr) continue;
      EXPECT_TRUE(tag_check(small[i], kSmall, tag_make(1, uint32_t(i)), TagSpan::all)) << i;
      mm_free(small[i]);
    }
    for (size_t i = 0; i < big.size(); i++) {
      EXPECT_TRUE(tag_check(big[i], 1024, tag_make(2, uint32_t(i)), TagSpan::all)) << i;
      mm_free(big[i]);
    }
  }).join();
}

}  // namespace
