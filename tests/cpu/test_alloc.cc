/* SPDX-License-Identifier: Apache-2.0 */
// Behaviour specific to manymalloc beyond the C contracts: every size in turn
// with content checks, aligned blocks freed by other threads, realloc that
// stays in place within the usable size, mm_collect with live blocks and
// giving back the freed memory of segments still in use, a retired segment
// serving a new page before a slot never touched, free
// blocks of a larger class serving a smaller one, and aligned blocks among
// free blocks of other sizes.
#include <manymalloc/manymalloc.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "support/resident.h"
#include "support/tagged_block.h"
#include "support/test_sizes.h"

using namespace mmtest;

namespace {

// Every size up to 16 KiB, then the class edges beyond: a few blocks of each
// at once, checked against each other, freed in an order that varies.
TEST(Alloc, EverySizeKeepsItsContent) {
  std::vector<size_t> sizes;
  for (size_t s = 1; s <= 16 * KiB; s++) sizes.push_back(s);
  for (size_t s : boundary_sizes(8 * MiB))
    if (s > 16 * KiB) sizes.push_back(s);
  for (size_t size : sizes) {
    Block blocks[4];
    for (uint32_t i = 0; i < 4; i++) {
      blocks[i] = block_new(size, tag_make(i, uint32_t(size)));
      ASSERT_NE(blocks[i].p, nullptr) << "size " << size;
    }
    for (uint32_t i = 0; i < 4; i++) {
      const Block &b = blocks[(i + size) % 4];
      ASSERT_TRUE(block_intact(b)) << "size " << size << " block " << b.p;
      mm_free(b.p);
    }
  }
}

// Aligned blocks made by one thread, freed by another while the first keeps
// allocating: remote frees must find the block's start from an aligned pointer.
TEST(Alloc, AlignedBlocksFreedByOtherThreads) {
  std::mutex mutex;
  std::vector<Block> handed;
  bool done = false;
  long bad = 0;
  std::thread freer([&] {
    for (bool last = false; !last;) {
      std::vector<Block> batch;
      {
        std::lock_guard<std::mutex> lock(mutex);
        batch.swap(handed);
        last = done;
      }
      for (const Block &b : batch) {
        bad += !block_intact(b);
        mm_free(b.p);
      }
    }
  });
  std::vector<Block> kept;
  for (uint32_t i = 0; i < 4000; i++) {
    const size_t alignment = size_t(16) << (i % 13);  // 16 B .. 64 KiB
    const size_t size = 1 + (i * 7919) % (alignment < 4096 ? 3000 : 3 * alignment);
    Block b{mm_aligned_alloc(alignment, size), size, tag_make(1, i)};
    ASSERT_NE(b.p, nullptr);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(b.p) % alignment, 0u);
    tag_fill(b.p, b.size, b.tag);
    if (i % 5 == 0) {
      kept.push_back(b);
    } else {
      std::lock_guard<std::mutex> lock(mutex);
      handed.push_back(b);
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
  }
  freer.join();
  EXPECT_EQ(bad, 0) << "aligned blocks corrupted before their remote free";
  for (const Block &b : kept) {
    EXPECT_TRUE(block_intact(b));
    mm_free(b.p);
  }
}

TEST(Alloc, ReallocWithinUsableSizeStaysInPlace) {
  for (size_t size : boundary_sizes()) {
    void *p = mm_malloc(size);
    ASSERT_NE(p, nullptr);
    const size_t usable = mm_malloc_usable_size(p);
    tag_fill(p, size, tag_make(5, uint32_t(size)), TagSpan::all);
    void *q = mm_realloc(p, usable);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q, p) << "growing " << size << " to its usable size " << usable << " moved it";
    EXPECT_TRUE(tag_check(q, size, tag_make(5, uint32_t(size)), TagSpan::all));
    EXPECT_GE(mm_malloc_usable_size(q), usable);
    mm_free(q);
  }
}

TEST(Alloc, CollectKeepsLiveBlocks) {
  std::vector<Block> live;
  uint32_t seq = 0;
  for (size_t size : boundary_sizes(2 * MiB))
    for (int i = 0; i < 8; i++) live.push_back(block_new(size, tag_make(9, seq++)));
  // Free every other block so that pages are partly empty when collected.
  std::vector<Block> kept;
  for (size_t i = 0; i < live.size(); i++) {
    ASSERT_NE(live[i].p, nullptr);
    if (i % 2) {
      mm_free(live[i].p);
    } else {
      kept.push_back(live[i]);
    }
  }
  mm_collect();
  std::thread([] { mm_collect(); }).join();
  for (const Block &b : kept) EXPECT_TRUE(block_intact(b)) << "size " << b.size;
  // Allocation after a collect must not hand out live memory.
  std::vector<Block> fresh;
  for (const Block &b : kept) fresh.push_back(block_new(b.size, tag_make(10, seq++)));
  for (const Block &b : kept) EXPECT_TRUE(block_intact(b)) << "size " << b.size;
  for (const Block &b : fresh) {
    EXPECT_TRUE(block_intact(b)) << "size " << b.size;
    mm_free(b.p);
  }
  for (const Block &b : kept) mm_free(b.p);
}

// The resident OS pages that blocks of `size` bytes at the addresses in
// `sorted` (ascending) cover, each counted once.  It allocates nothing: a
// malloc while counting could give back (or fault in) the pages it counts.
size_t resident_pages_of(const std::vector<void *> &sorted, size_t size) {
  uintptr_t next = 0;  // the first OS page not counted yet
  size_t n = 0;
  for (void *p : sorted) {
    const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + size - 1) / MM_TEST_OS_PAGE + 1;
    const uintptr_t first = std::max(reinterpret_cast<uintptr_t>(p) / MM_TEST_OS_PAGE, next);
    if (first < end) n += resident_pages(reinterpret_cast<void *>(first * MM_TEST_OS_PAGE), (end - first) * MM_TEST_OS_PAGE);
    next = std::max(next, end);
  }
  return n;
}

// mm_collect gives back what is free in segments that still hold a live
// block: pages of a class emptied (page slots) and freed span runs; it
// returns at least as many bytes as were still resident.  (Where this
// thread is the only one with a heap, the page its class keeps went back
// when it emptied, before the collect: shrink.c.)
TEST(Alloc, CollectGivesBackFreedMemoryOfSegmentsInUse) {
  std::thread([] {
    void *live_small = mm_malloc(48);  // keeps the small segment in use, in a page of its own class
    void *live_span = mm_malloc(100 * KiB);  // and the span segment
    std::vector<void *> small, spans;
    small.reserve(600);  // the vectors' own buffers stay out of the 4000-byte class
    spans.reserve(8);
    for (int i = 0; i < 600; i++) small.push_back(mm_malloc(4000));
    for (int i = 0; i < 8; i++) spans.push_back(mm_malloc(256 * KiB));
    for (void *p : small) memset(p, 1, 4000);
    for (void *p : spans) memset(p, 1, 256 * KiB);
    size_t freed_resident = 0;
    for (void *p : small) freed_resident += resident_pages(p, 4000);
    for (void *p : spans) freed_resident += resident_pages(p, 256 * KiB);
    ASSERT_GE(freed_resident, 600u + 8 * 64);  // each 4000-byte block touches one or two OS pages
    std::sort(small.begin(), small.end());  // in place, for resident_pages_of
    std::sort(spans.begin(), spans.end());
    for (void *p : small) mm_free(p);
    for (void *p : spans) mm_free(p);
    const size_t before = resident_pages_of(small, 4000) + resident_pages_of(spans, 256 * KiB);
    ASSERT_GE(before, 8u * 64) << "the freed span runs went back before the collect";
    const size_t given = mm_collect();
    size_t left = 0;
    for (void *p : small) left += resident_pages(p, 4000);
    for (void *p : spans) left += resident_pages(p, 256 * KiB);
    EXPECT_EQ(left, 0u) << "of " << freed_resident << " OS pages";
    EXPECT_GE(given, before * MM_TEST_OS_PAGE);
    mm_free(live_small);
    mm_free(live_span);
  }).join();
}

// A retired segment is resident: a new page takes it before a slot of a
// segment in use that was never touched.  16 KiB blocks fill the thread's
// first segment (which also holds what the thread allocated before), a
// second one and five pages of a third; the third's pages each lose a block,
// so that the class has pages enough and keeps none of the second's as a
// spare; freeing the second segment's blocks retires it.  A page of 1792 B
// blocks (a class that borrows no block of a larger one) then comes from the
// retired segment, not from the third's sixth slot.  The test's own arrays
// are allocated first, so that they lie in the first segment.
TEST(Alloc, RetiredSegmentServesBeforeUntouchedSlot) {
  std::thread([] {
    constexpr size_t kBlock = 16 * KiB, kOther = 1792, kMax = 1024;
    mm_collect();  // segments left by earlier cases go back: the ones below are fresh
    auto segment_of = [](void *p) { return (reinterpret_cast<uintptr_t>(p) - 1) & ~(4 * MiB - 1); };
    std::vector<void *> blocks(kMax, nullptr);
    std::vector<size_t> segment_start;  // index in `blocks` where each segment's blocks start
    segment_start.reserve(8);
    for (size_t n = 0; segment_start.size() < 3 || n - segment_start[2] < 60; n++) {
      ASSERT_LT(n, kMax);
      blocks[n] = mm_malloc(kBlock);
      ASSERT_NE(blocks[n], nullptr);
      memset(blocks[n], 1, kBlock);
      if (n == 0 || segment_of(blocks[n]) != segment_of(blocks[n - 1])) segment_start.push_back(n);
    }
    ASSERT_EQ(segment_start.size(), 3u) << "blocks of one class fill one segment after the other";
    for (size_t i = segment_start[2]; i < kMax && blocks[i] != nullptr; i += 15) {
      mm_free(blocks[i]);
      blocks[i] = nullptr;
    }
    const uintptr_t retired = segment_of(blocks[segment_start[1]]);
    for (size_t i = segment_start[1]; i < segment_start[2]; i++) {
      mm_free(blocks[i]);
      blocks[i] = nullptr;
    }
    void *p = mm_malloc(kOther);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(segment_of(p), retired) << "the new page should come from the retired segment";
    mm_free(p);
    for (void *q : blocks) mm_free(q);
  }).join();
}

// Before a class of 18-32 KiB blocks grows the heap, a free block of a
// larger class of pages serves it (heap.c, mm_heap_borrow).  In a thread of
// its own, whose heap starts empty, that block is predictable; it must stay
// as aligned as the smaller class's blocks, and go back to its own page on
// free.
TEST(Alloc, LargerFreeBlockServesASmallerClass) {
  std::thread([] {
    void *big = mm_malloc(32 * 1024), *pin = mm_malloc(32 * 1024);
    ASSERT_NE(big, nullptr);
    ASSERT_NE(pin, nullptr);
    mm_free(big);
    void *p = mm_malloc(28 * 1024);
    EXPECT_EQ(p, big) << "a free 32 KiB block should serve 28 KiB before the heap grows";
    EXPECT_GE(mm_malloc_usable_size(p), size_t(32 * 1024));
    tag_fill(p, 28 * 1024, tag_make(11, 1));
    mm_free(p);
    EXPECT_EQ(mm_malloc(32 * 1024), big) << "the lent block went back to its own page";
    mm_free(big);
    mm_free(pin);
    // Aligned requests among free blocks of other sizes (spans, above
    // 32 KiB, which any size may split) keep their alignment.
    for (size_t alignment = 4096; alignment <= 128 * 1024; alignment *= 2) {
      const size_t first = alignment < 32 * 1024 ? 32 * 1024 : alignment;
      std::vector<void *> lenders, pins;
      for (size_t size = first; size <= 2 * first + 64 * 1024; size += 4096) {
        lenders.push_back(mm_malloc(size));
        pins.push_back(mm_malloc(size));
      }
      for (void *q : lenders) mm_free(q);
      void *a = mm_aligned_alloc(alignment, first);
      ASSERT_NE(a, nullptr);
      EXPECT_EQ(uintptr_t(a) % alignment, 0u) << "alignment " << alignment;
      mm_free(a);
      for (void *q : pins) mm_free(q);
    }
  }).join();
}

}  // namespace
