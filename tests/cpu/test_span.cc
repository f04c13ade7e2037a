/* SPDX-License-Identifier: Apache-2.0 */
// Spans (src/cpu/span.c): blocks above 32 KiB are runs of 4 KiB units that
// split on malloc and merge with their free neighbours on free, resize in
// place on realloc, keep any alignment up to 128 KiB, and come back to their
// owner when other threads free them.  Each case that predicts addresses runs
// in a process started afresh for it (in_fresh_thread), whose heap starts
// with no span segment, whichever cases ran before it.
#include <manymalloc/manymalloc.h>

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "support/block_tag.h"
#include "support/fresh_process.h"
#include "support/resident.h"
#include "support/test_sizes.h"

using namespace mmtest;

namespace {

constexpr size_t kUnit = 4096;

char *at(void *p, size_t offset) { return static_cast<char *>(p) + offset; }

// Two freed neighbours merge into one run that serves a size neither could.
TEST(Span, FreedNeighboursMergeAndSplit) {
  in_fresh_thread([] {
    void *a = mm_malloc(64 * KiB), *b = mm_malloc(64 * KiB), *pin = mm_malloc(64 * KiB);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(b, at(a, 64 * KiB)) << "runs are carved in address order";
    EXPECT_EQ(pin, at(a, 128 * KiB));
    mm_free(b);
    mm_free(a);
    void *c = mm_malloc(90 * KiB);
    EXPECT_EQ(c, a) << "the merged 128 KiB run should serve 90 KiB before untouched memory";
    EXPECT_EQ(mm_malloc_usable_size(c), size_t(92 * KiB));
    void *d = mm_malloc(28 * KiB + 1);  // a class of pages: not from the rest of the run
    void *e = mm_malloc(33 * KiB);
    EXPECT_EQ(e, at(a, 92 * KiB)) << "the 36 KiB left of the split run should serve 33 KiB";
    EXPECT_EQ(mm_malloc_usable_size(e), size_t(36 * KiB));
    for (void *p : {c, d, e, pin}) mm_free(p);
  });
}

// realloc grows a run into the free run after it and shrinks it in place,
// keeping its content; the freed tail serves the next block.
TEST(Span, ReallocResizesInPlace) {
  in_fresh_thread([] {
    void *a = mm_malloc(40 * KiB);
    ASSERT_NE(a, nullptr);
    tag_fill(a, 40 * KiB, tag_make(1, 1), TagSpan::all);
    void *grown = mm_realloc(a, 300 * KiB);
    EXPECT_EQ(grown, a) << "the free run after it should take the growth";
    EXPECT_TRUE(tag_check(grown, 40 * KiB, tag_make(1, 1), TagSpan::all));
    tag_fill(grown, 300 * KiB, tag_make(1, 2), TagSpan::all);
    void *shrunk = mm_realloc(grown, 50 * KiB);
    EXPECT_EQ(shrunk, a);
    EXPECT_EQ(mm_malloc_usable_size(shrunk), size_t(52 * KiB));
    EXPECT_TRUE(tag_check(shrunk, 50 * KiB, tag_make(1, 2), TagSpan::all));
    void *next = mm_malloc(200 * KiB);
    EXPECT_EQ(next, at(a, 52 * KiB)) << "the freed tail should merge with the free memory after it";
    void *blocked = mm_realloc(shrunk, 60 * KiB);  // its neighbour is in use: it moves
    EXPECT_NE(blocked, a);
    EXPECT_TRUE(tag_check(blocked, 50 * KiB, tag_make(1, 2), TagSpan::all));
    mm_free(blocked);
    mm_free(next);
  });
}

// A block that realloc grows past 4 KiB moves into a span, and from then
// on grows in place, a few bytes at a time, with small blocks coming
// and going beside it (the malloc-lab realloc traces' pattern); shrinking
// it back under 4 KiB moves it to a class again.
TEST(Span, GrowingReallocMovesOnceThenGrowsInPlace) {
  in_fresh_thread([] {
    size_t size = 3000;
    char *p = static_cast<char *>(mm_malloc(size));
    ASSERT_NE(p, nullptr);
    tag_fill(p, size, tag_make(2, 0), TagSpan::all);
    int moves = 0;  // once in a span
    for (unsigned step = 1; size < 200 * KiB; step++) {
      void *small = mm_malloc(16);
      size_t grown = size + 997;
      char *q = static_cast<char *>(mm_realloc(p, grown));
      ASSERT_NE(q, nullptr);
      if (q != p && size >= 4 * KiB) moves++;
      ASSERT_TRUE(tag_check(q, size, tag_make(2, step - 1), TagSpan::all)) << "content lost at " << grown;
      size = grown;
      tag_fill(q, size, tag_make(2, step), TagSpan::all);
      mm_free(small);
      p = q;
    }
    EXPECT_EQ(moves, 0) << "past 4 KiB, the block should grow in place";
    EXPECT_EQ(mm_malloc_usable_size(p), (size + kUnit - 1) / kUnit * kUnit);
    char *shrunk = static_cast<char *>(mm_realloc(p, 2000));
    EXPECT_NE(shrunk, p) << "a block under 4 KiB belongs to a class";
    EXPECT_LT(mm_malloc_usable_size(shrunk), kUnit);
    mm_free(shrunk);
  });
}

// A span segment's header holds a descriptor for each of its 992 units, but
// a small heap touches only its first pages: the segment's fields and the
// descriptors of the runs in use.  The free run that ends the segment needs
// no last descriptor (no run after it merges backwards), so its last OS page
// stays untouched.
TEST(Span, FreshSegmentTouchesFewHeaderPages) {
  in_fresh_thread([] {
    char *p = static_cast<char *>(mm_malloc(64 * KiB));
    ASSERT_NE(p, nullptr);
    p[0] = 1;
    const uintptr_t segment = (reinterpret_cast<uintptr_t>(p) - 1) & ~(4 * MiB - 1);
    constexpr size_t kHeaderPages = 128 * KiB / kUnit;
    unsigned char resident[kHeaderPages];
    ASSERT_EQ(mincore(reinterpret_cast<void *>(segment), 128 * KiB, resident), 0);
    size_t pages = 0;
    for (unsigned char r : resident) pages += r & 1;
    EXPECT_LE(pages, 2u) << "header pages resident for one block";
    mm_free(p);
  });
}

// A retired span segment is resident: a block that untouched memory would
// serve comes from it instead.  Segments A, B and C each hold six blocks of
// 600 KiB (150 of their 992 units) and keep 92 units never touched.  C
// empties first and is kept as the heap's empty segment; B empties next and
// is retired; six new blocks fill C again.  A block of 300 KiB then fits only
// in the untouched ends of A and C, or in B.
TEST(Span, RetiredSegmentServesBeforeUntouchedMemory) {
  in_fresh_thread([] {
    constexpr size_t kBlock = 600 * KiB, kSmall = 300 * KiB;
    auto segment_of = [](void *p) { return (reinterpret_cast<uintptr_t>(p) - 1) & ~(4 * MiB - 1); };
    std::vector<void *> a, b, c;
    for (auto *segment : {&a, &b, &c}) {
      for (int i = 0; i < 6; i++) {
        void *p = mm_malloc(kBlock);
        ASSERT_NE(p, nullptr);
        memset(p, 1, kBlock);
        segment->push_back(p);
      }
    }
    const uintptr_t segment_b = segment_of(b[0]);
    for (void *p : c) mm_free(p);
    for (void *p : b) mm_free(p);
    for (void *&p : c) p = mm_malloc(kBlock);
    void *p = mm_malloc(kSmall);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(segment_of(p), segment_b) << "the block should come from the retired segment";
    EXPECT_EQ(resident_pages(p, kSmall), kSmall / kUnit) << "its memory should be resident before it is written";
    mm_free(p);
    for (auto *segment : {&a, &c})
      for (void *q : *segment) mm_free(q);
  });
}

// Every alignment up to 128 KiB, over free runs left by blocks of other sizes.
TEST(Span, AlignedBlocksAmongFreeRuns) {
  std::thread([] {
    std::vector<void *> holes, pins;
    for (size_t size = 36 * KiB; size < 400 * KiB; size += 20 * KiB + kUnit) {
      holes.push_back(mm_malloc(size));
      pins.push_back(mm_malloc(33 * KiB));
    }
    for (void *p : holes) mm_free(p);
    std::vector<void *> aligned;
    uint32_t seq = 0;
    for (size_t alignment = 32; alignment <= 128 * KiB; alignment *= 2) {
      for (size_t size : {size_t(100), 33 * KiB, 70 * KiB + 5, 260 * KiB, MiB}) {
        void *p = mm_aligned_alloc(alignment, size);
        ASSERT_NE(p, nullptr) << size << " at " << alignment;
        EXPECT_EQ(uintptr_t(p) % alignment, 0u) << size << " at " << alignment;
        EXPECT_GE(mm_malloc_usable_size(p), size);
        tag_fill(p, size, tag_make(2, seq++));
        aligned.push_back(p);
      }
    }
    seq = 0;
    for (size_t alignment = 32; alignment <= 128 * KiB; alignment *= 2) {
      for (size_t size : {size_t(100), 33 * KiB, 70 * KiB + 5, 260 * KiB, MiB}) {
        EXPECT_TRUE(tag_check(aligned[seq], size, tag_make(2, seq))) << size << " at " << alignment;
        seq++;
      }
    }
    for (void *p : aligned) mm_free(p);
    for (void *p : pins) mm_free(p);
  }).join();
}

// Threads allocate, grow and free big blocks of every size, and hand half of
// them to the next thread to free: every block keeps its content, and the
// runs freed remotely serve their owner again (its heap does not grow without
// bound).
TEST(Span, ManyThreadsWithRemoteFrees) {
  constexpr int kThreads = 6, kRounds = 3000;
  std::mutex mutex;
  std::vector<std::vector<std::pair<void *, uint64_t>>> inbox(kThreads);
  std::atomic<long> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      struct Live { void *p; size_t size; uint64_t tag; };
      std::vector<Live> live;
      for (int round = 0; round < kRounds; round++) {
        size_t size = 32 * KiB + 1 + rng() % (MiB - 32 * KiB);
        if (rng() % 4 == 0) size = 1 + rng() % (32 * KiB);
        uint64_t tag = tag_make(uint32_t(t), uint32_t(round));
        void *p = mm_malloc(size);
        if (p == nullptr) { bad++; continue; }
        tag_fill(p, size, tag);
        if (rng() % 3 == 0) {  // grow or shrink it, in place or not
          size_t resized = 32 * KiB + 1 + rng() % (MiB - 32 * KiB);
          void *q = mm_realloc(p, resized);
          // a sampled tag lies at the same offsets in a longer block; a
          // shorter one still holds its head
          if (q == nullptr || !tag_check(q, resized >= size ? size : kTagEdge, tag)) bad++;
          p = q, size = resized;
          tag_fill(p, size, tag);
        }
        live.push_back({p, size, tag});
        if (live.size() > 24) {
          size_t i = rng() % live.size();
          Live b = live[i];
          live[i] = live.back();
          live.pop_back();
          if (!tag_check(b.p, b.size, b.tag)) bad++;
          if (rng() % 2 == 0) {
            mm_free(b.p);
          } else {  // the next thread frees it
            std::lock_guard<std::mutex> lock(mutex);
            inbox[(t + 1) % kThreads].push_back({b.p, b.size});
          }
        }
        if (round % 64 == 0) {
          std::vector<std::pair<void *, uint64_t>> mine;
          {
            std::lock_guard<std::mutex> lock(mutex);
            mine.swap(inbox[t]);
          }
          for (auto &m : mine) mm_free(m.first);
        }
      }
      for (const Live &b : live) {
        if (!tag_check(b.p, b.size, b.tag)) bad++;
        mm_free(b.p);
      }
    });
  }
  for (auto &th : threads) th.join();
  for (auto &box : inbox)
    for (auto &m : box) mm_free(m.first);
  EXPECT_EQ(bad.load(), 0);
  mm_stats_t s;
  mm_stats_get(&s);
  EXPECT_LT(s.bytes_in_use, size_t(64) * MiB) << "blocks freed remotely should have been counted out";
}

}  // namespace
