/* SPDX-License-Identifier: Apache-2.0 */
// The spare page a class keeps (src/cpu/page.c, _mm_page_retire): an empty
// second page stays with its class, a third goes back to its segment, and
// mm_collect and growth at the heap's peak (_mm_heap_release_spares) give
// the spare back.  A program of its own: the peak case needs a heap whose
// statistics only its own blocks moved (a thread that freed other threads'
// blocks counts them out of its heap, and a later thread may adopt that
// heap), which the other programs' cases do not leave.  Each case runs in a
// thread of its own beside main's, so CTest runs the program with
// MANYMALLOC_SHRINK_THREADS=2 (the heap is at its peak only while at most
// that many threads have heaps).
#include <manymalloc/manymalloc.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/tagged_block.h"

using namespace mmtest;

namespace {

// Pages of the class of `size`-byte blocks over all heaps: the last column
// of mm_stats_print's table.
long class_pages(size_t size) {
  char *text = nullptr;
  size_t length = 0;
  FILE *out = open_memstream(&text, &length);
  mm_stats_print(out);
  fclose(out);
  std::istringstream lines(text);
  free(text);
  long pages = 0;
  for (std::string line; std::getline(lines, line);) {
    unsigned long block_size;
    long live, count;
    if (std::sscanf(line.c_str(), " %lu %ld %ld", &block_size, &live, &count) == 3 && block_size == size) pages = count;
  }
  return pages;
}

// Checks that each block kept its content, and frees it.
void free_intact(const std::vector<Block> &blocks) {
  for (const Block &b : blocks) {
    EXPECT_TRUE(block_intact(b));
    mm_free(b.p);
  }
}

// In a thread of its own: four pages' worth of blocks of a class of 256
// KiB pages (the thread may adopt the heap of one that exited, with pages
// of the class, which then become the first of the four, and with empty
// pages of larger classes, which lend it blocks: those are set aside),
// then the blocks of the second page freed.  That page stays as the
// class's spare (page.c, _mm_page_retire).  Then `then(third_page)` runs,
// after which the class should hold `left` pages of those four.  The
// blocks still live keep their content.
constexpr size_t kSpareSize = 5120;  // about 50 blocks a page
void with_a_spare_page(const std::function<void(std::vector<Block> &)> &then, long left, const char *why) {
  std::thread([&] {
    std::map<uintptr_t, std::vector<Block>> pages;  // page slot (256 KiB) -> its blocks
    std::vector<uintptr_t> order;                   // page slots in the order they filled
    std::vector<Block> lent;                        // blocks of larger classes' pages
    uint32_t seq = 0;
    while (pages.size() < 4) {
      Block b = block_new(kSpareSize, tag_make(11, seq++));
      ASSERT_NE(b.p, nullptr);
      if (mm_malloc_usable_size(b.p) != kSpareSize) {
        lent.push_back(b);
        continue;
      }
      uintptr_t slot = reinterpret_cast<uintptr_t>(b.p) >> 18;
      if (pages.find(slot) == pages.end()) order.push_back(slot);
      pages[slot].push_back(b);
    }
    const long before = class_pages(kSpareSize) - 4;
    for (const Block &b : pages[order[1]]) mm_free(b.p);
    pages.erase(order[1]);
    EXPECT_EQ(class_pages(kSpareSize) - before, 4) << "the empty second page should stay as a spare";
    then(pages[order[2]]);
    EXPECT_EQ(class_pages(kSpareSize) - before, left) << why;
    for (const auto &[slot, blocks] : pages) free_intact(blocks);
    free_intact(lent);
  }).join();
}

TEST(SparePage, AClassKeepsOneEmptyPageAsASpare) {
  with_a_spare_page(
      [](std::vector<Block> &third) {
        for (const Block &b : third) mm_free(b.p);
        third.clear();
      },
      3, "an empty third page should go back to its segment, the spare stay");
}

TEST(SparePage, CollectGivesTheSparePageBack) {
  with_a_spare_page([](std::vector<Block> &) { mm_collect(); }, 3, "mm_collect should give the spare back");
}

// Growth at the heap's peak gives the spare back (_mm_heap_release_spares):
// the heap grows by 1 KiB blocks until its use passes the highest it had
// (an adopted heap may have had up to tens of MiB in use), 64 MiB at most.
TEST(SparePage, GrowthAtThePeakGivesTheSparePageBack) {
  std::vector<void *> growth;
  with_a_spare_page(
      [&growth](std::vector<Block> &) {
        const long pages = class_pages(kSpareSize);
        for (int mib = 0; mib < 64 && class_pages(kSpareSize) == pages; mib++)
          for (int i = 0; i < 1024; i++) growth.push_back(mm_malloc(1024));
      },
      3, "the heap grew past its peak and kept the spare");
  for (void *p : growth) mm_free(p);
}

}  // namespace
