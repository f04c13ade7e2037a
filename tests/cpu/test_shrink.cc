/* SPDX-License-Identifier: Apache-2.0 */
// Shrinking live pages (src/cpu/shrink.c): when the heap grows while a page
// holds OS pages of free blocks only, those go back to the OS, the page
// holds their blocks out of its free list, and links them again before it
// carves further.  The blocks still in use keep their bytes, and no block
// is handed out twice.  Each case that counts what went back runs in a
// process started afresh for it (fresh_process.h): a heap adopted from an
// earlier case would keep that case's highest use, and pages shrink only at
// a heap's peak.  Pages shrink only while few threads have heaps; CTest runs
// this program with MANYMALLOC_SHRINK_THREADS=9, the threads of the stress
// case and main, and with MANYMALLOC_SHRINK_RATE=0, so that what pages give
// back does not depend on how fast the machine runs (test_shrink_rate.cc has
// the bound).
#include <manymalloc/manymalloc.h>

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstdint>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "support/fresh_process.h"
#include "support/resident.h"
#include "support/tagged_block.h"

using namespace mmtest;

namespace {

constexpr size_t kOsPage = 4096;
constexpr size_t kSmall = 48;  // a class of 48-byte blocks: they straddle OS pages

uintptr_t os_page_of(const void *p) { return reinterpret_cast<uintptr_t>(p) / kOsPage; }

bool resident(uintptr_t os_page) { return resident_pages(reinterpret_cast<void *>(os_page * kOsPage), kOsPage) != 0; }

// No two blocks of `blocks` (each `size` bytes) overlap.
bool disjoint(std::vector<std::pair<uintptr_t, size_t>> blocks) {
  std::sort(blocks.begin(), blocks.end());
  for (size_t i = 1; i < blocks.size(); i++)
    if (blocks[i - 1].first + blocks[i - 1].second > blocks[i].first) return false;
  return true;
}

// The first half of the cases below: allocates 768 KiB of small blocks,
// frees the blocks of three OS pages in four, and lets another class grow
// the heap by more than that (1 MiB of 1 KiB blocks). Counts how many of
// the emptied OS pages are resident before and after the growth.
struct GrowthAfterFrees {
  static constexpr size_t kBlocks = 16384;
  std::vector<void *> small, big;
  std::vector<size_t> kept;        // small blocks still live
  std::vector<uintptr_t> emptied;  // OS pages whose every block (and neighbour's) is freed
  size_t before = 0, after = 0;
};

void grow_after_frees(GrowthAfterFrees &g) {
  g.small.resize(g.kBlocks);
  for (size_t i = 0; i < g.kBlocks; i++) {
    g.small[i] = mm_malloc(kSmall);
    ASSERT_NE(g.small[i], nullptr);
    tag_fill(g.small[i], kSmall, tag_make(1, uint32_t(i)), TagSpan::all);
  }
  // Reserved up front: no malloc between the frees and the first count
  // (one that grew the heap would already give the freed pages back).
  g.kept.reserve(g.kBlocks);
  g.emptied.reserve(g.kBlocks);
  g.big.reserve(1024);
  for (size_t i = 0; i < g.kBlocks; i++) {
    if (os_page_of(g.small[i]) % 4 == 0) {
      g.kept.push_back(i);
      continue;
    }
    if (os_page_of(g.small[i]) % 4 == 2) g.emptied.push_back(os_page_of(g.small[i]));
    mm_free(g.small[i]);
    g.small[i] = nullptr;
  }
  g.emptied.erase(std::unique(g.emptied.begin(), g.emptied.end()), g.emptied.end());
  ASSERT_GT(g.emptied.size(), 20u);
  for (uintptr_t p : g.emptied) g.before += resident(p);
  EXPECT_GE(g.before, g.emptied.size() * 9 / 10) << "freed blocks stay resident until the heap grows";
  for (size_t i = 0; i < 1024; i++) {
    g.big.push_back(mm_malloc(1024));
    ASSERT_NE(g.big.back(), nullptr);
    tag_fill(g.big.back(), 1024, tag_make(2, uint32_t(i)), TagSpan::all);
  }
  for (uintptr_t p : g.emptied) g.after += resident(p);
}

// Then expects most of those OS pages to have gone back; allocates the
// small class again and expects the held-out blocks to serve it before new
// memory, with every byte intact.
TEST(Shrink, FreeOsPagesGoBackWhenAnotherClassGrows) {
  in_fresh_thread([] {
    GrowthAfterFrees g;
    grow_after_frees(g);
    if (::testing::Test::HasFatalFailure()) return;
    constexpr size_t kBlocks = GrowthAfterFrees::kBlocks;
    std::vector<void *> &small = g.small, &big = g.big;
    const std::vector<size_t> &kept = g.kept;
    EXPECT_LE(g.after, g.emptied.size() / 4) << "the emptied OS pages should have gone back as the heap grew";

    for (size_t i : kept) EXPECT_TRUE(tag_check(small[i], kSmall, tag_make(1, uint32_t(i)), TagSpan::all)) << i;

    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (size_t i : kept) {
      lo = std::min(lo, reinterpret_cast<uintptr_t>(small[i]));
      hi = std::max(hi, reinterpret_cast<uintptr_t>(small[i]));
    }
    size_t inside = 0, again = 0;
    for (size_t i = 0; i < kBlocks; i++) {
      if (small[i] != nullptr) continue;
      small[i] = mm_malloc(kSmall);
      ASSERT_NE(small[i], nullptr);
      tag_fill(small[i], kSmall, tag_make(3, uint32_t(i)), TagSpan::all);
      uintptr_t a = reinterpret_cast<uintptr_t>(small[i]);
      inside += a >= lo - kOsPage && a <= hi + kOsPage;
      again++;
    }
    EXPECT_GE(inside, again * 9 / 10) << "held-out blocks should serve the class before new memory";

    std::vector<std::pair<uintptr_t, size_t>> live;
    for (void *p : small) live.emplace_back(reinterpret_cast<uintptr_t>(p), kSmall);
    for (void *p : big) live.emplace_back(reinterpret_cast<uintptr_t>(p), 1024);
    EXPECT_TRUE(disjoint(live)) << "a block was handed out twice";
    std::set<size_t> kept_set(kept.begin(), kept.end());
    for (size_t i = 0; i < kBlocks; i++) {
      uint64_t tag = kept_set.count(i) ? tag_make(1, uint32_t(i)) : tag_make(3, uint32_t(i));
      EXPECT_TRUE(tag_check(small[i], kSmall, tag, TagSpan::all)) << i;
      mm_free(small[i]);
    }
    for (size_t i = 0; i < big.size(); i++) {
      EXPECT_TRUE(tag_check(big[i], 1024, tag_make(2, uint32_t(i)), TagSpan::all)) << i;
      mm_free(big[i]);
    }
  });
}

constexpr size_t kClassBlock = 1000;  // the blocks of the emptied-page cases: one class, 1 KiB

// A block of kClassBlock bytes written with the tag (round, i); the OS pages
// it covers join `pages` (sorted, once each).  NULL when malloc fails.
void *class_block(uint32_t round, uint32_t i, std::vector<uintptr_t> *pages) {
  void *p = mm_malloc(kClassBlock);
  if (p == nullptr) return nullptr;
  tag_fill(p, kClassBlock, tag_make(round, i), TagSpan::all);
  for (uintptr_t q = os_page_of(p); q <= os_page_of(static_cast<char *>(p) + kClassBlock - 1); q++) pages->push_back(q);
  std::sort(pages->begin(), pages->end());
  pages->erase(std::unique(pages->begin(), pages->end()), pages->end());
  return p;
}

// `count` blocks of the class, block i tagged (round, i); the OS pages they
// cover go to `pages`.
std::vector<void *> fill_class(size_t count, uint32_t round, std::vector<uintptr_t> *pages) {
  std::vector<void *> blocks;
  for (size_t i = 0; i < count; i++) {
    void *p = class_block(round, uint32_t(i), pages);
    if (p == nullptr) break;
    blocks.push_back(p);
  }
  return blocks;
}

size_t resident_of(const std::vector<uintptr_t> &pages) {
  size_t n = 0;
  for (uintptr_t p : pages) n += resident(p);
  return n;
}

// Checks the tags of `blocks` and frees them.
void check_and_free(const std::vector<void *> &blocks, uint32_t round) {
  for (size_t i = 0; i < blocks.size(); i++) {
    EXPECT_TRUE(tag_check(blocks[i], kClassBlock, tag_make(round, uint32_t(i)), TagSpan::all)) << i;
    mm_free(blocks[i]);
  }
}

// A class's only page, emptied, gives back every OS page it carved at once,
// with no growth elsewhere; the class then carves it again from its start,
// and nothing of the blocks of another class in use is lost.
TEST(Shrink, EmptiedPageGivesBackItsMemoryAtOnce) {
  in_fresh_thread([] {
    std::vector<uintptr_t> pages, again_pages;
    std::vector<void *> other;
    for (size_t i = 0; i < 200; i++) {
      other.push_back(mm_malloc(200));
      ASSERT_NE(other.back(), nullptr);
      tag_fill(other.back(), 200, tag_make(9, uint32_t(i)), TagSpan::all);
    }
    std::vector<void *> blocks = fill_class(64, 1, &pages);
    ASSERT_EQ(blocks.size(), 64u);
    ASSERT_GE(pages.size(), 16u);
    EXPECT_EQ(resident_of(pages), pages.size());
    check_and_free(blocks, 1);
    EXPECT_EQ(resident_of(pages), 0u) << "the emptied page kept its memory";

    std::vector<void *> again = fill_class(64, 2, &again_pages);
    ASSERT_EQ(again.size(), 64u);
    EXPECT_EQ(again_pages, pages) << "the class did not carve its page again from the start";
    std::vector<std::pair<uintptr_t, size_t>> live;
    for (void *p : again) live.emplace_back(reinterpret_cast<uintptr_t>(p), kClassBlock);
    for (void *p : other) live.emplace_back(reinterpret_cast<uintptr_t>(p), 200);
    EXPECT_TRUE(disjoint(live)) << "a block was handed out twice";
    check_and_free(again, 2);
    for (size_t i = 0; i < other.size(); i++) {
      EXPECT_TRUE(tag_check(other[i], 200, tag_make(9, uint32_t(i)), TagSpan::all)) << i;
      mm_free(other[i]);
    }
  });
}

// A page that carved one or two OS pages keeps them when it empties: a
// class whose few blocks come and go would otherwise give them back and
// fault them in at each turn.
TEST(Shrink, EmptiedPageOfTwoOsPagesKeepsThem) {
  in_fresh_thread([] {
    std::vector<uintptr_t> pages;
    std::vector<void *> blocks;
    for (uint32_t i = 0; pages.size() < 2; i++) {
      blocks.push_back(class_block(1, i, &pages));
      ASSERT_NE(blocks.back(), nullptr);
    }
    ASSERT_EQ(pages.size(), 2u);
    check_and_free(blocks, 1);
    EXPECT_EQ(resident_of(pages), 2u) << "a page of two OS pages gave them back";
  });
}

// The most threads with heaps for which pages shrink: MANYMALLOC_SHRINK_THREADS
// (CTest sets it for this program), else the default.
size_t shrink_thread_limit() {
  const char *env = std::getenv("MANYMALLOC_SHRINK_THREADS");
  return env != nullptr ? std::strtoul(env, nullptr, 10) : 1;
}

// `n` threads that take a heap and wait until this object goes.
class IdleThreadsWithHeaps {
 public:
  explicit IdleThreadsWithHeaps(size_t n) {
    for (size_t i = 0; i < n; i++)
      threads_.emplace_back([this] {
        mm_free(mm_malloc(16));
        ready_++;
        while (!done_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      });
    while (ready_ < n) std::this_thread::yield();
  }
  ~IdleThreadsWithHeaps() {
    done_ = true;
    for (std::thread &t : threads_) t.join();
  }

 private:
  std::atomic<size_t> ready_{0};
  std::atomic<bool> done_{false};
  std::vector<std::thread> threads_;
};

// grow_after_frees run in a thread of its own (a fresh heap, or an adopted
// one that holds nothing live), its blocks freed afterwards: how many OS
// pages it emptied and how many of them stayed resident as the heap grew.
struct ShrinkProbe {
  size_t emptied = 0, after = 0;
  bool fatal = false;  // an assertion stopped it before the counts
};

ShrinkProbe shrink_probe_in_new_thread() {
  ShrinkProbe r;
  std::thread([&r] {
    GrowthAfterFrees g;
    grow_after_frees(g);
    r = {g.emptied.size(), g.after, ::testing::Test::HasFatalFailure()};
    for (void *p : g.small) mm_free(p);
    for (void *p : g.big) mm_free(p);
  }).join();
  return r;
}

// With more threads holding heaps than the limit, pages do not shrink: the
// emptied OS pages stay resident as the heap grows.
TEST(Shrink, PagesDoNotShrinkWhileManyThreadsHaveHeaps) {
  in_fresh_process([] {
    IdleThreadsWithHeaps idle(shrink_thread_limit());
    ShrinkProbe r = shrink_probe_in_new_thread();
    if (r.fatal) return;
    EXPECT_GE(r.after, r.emptied * 9 / 10) << "pages shrank while more threads than the limit had heaps";
  });
}

// Threads that exited no longer count: once the idle threads are gone,
// pages shrink again.
TEST(Shrink, PagesShrinkAgainOnceThreadsExit) {
  in_fresh_process([] {
    { IdleThreadsWithHeaps idle(2 * shrink_thread_limit()); }
    ShrinkProbe r = shrink_probe_in_new_thread();
    if (r.fatal) return;
    EXPECT_LE(r.after, r.emptied / 4) << "exited threads still counted: pages did not shrink";
  });
}

// A child forked while more threads than the limit have heaps runs the
// forking thread alone: its threads' pages shrink again.
TEST(Shrink, PagesShrinkInAForkChildOfManyThreads) {
  in_fresh_process([] {
    IdleThreadsWithHeaps idle(shrink_thread_limit());
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ShrinkProbe r = shrink_probe_in_new_thread();
      _exit(!::testing::Test::HasFailure() && r.after <= r.emptied / 4 ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "the child counted its parent's threads: its pages did not shrink";
  });
}

// Nor do emptied pages give their memory back then.
TEST(Shrink, EmptiedPagesKeepTheirMemoryWhileManyThreadsHaveHeaps) {
  in_fresh_process([] {
    IdleThreadsWithHeaps idle(shrink_thread_limit());
    std::thread([] {
      std::vector<uintptr_t> pages;
      std::vector<void *> blocks = fill_class(64, 1, &pages);
      ASSERT_EQ(blocks.size(), 64u);
      check_and_free(blocks, 1);
      EXPECT_EQ(resident_of(pages), pages.size()) << "an emptied page gave back while more threads than the limit had heaps";
    }).join();
  });
}

// Owners grow and shrink their heaps through changing sizes while other
// threads free half of the owners' blocks (remote frees land in pages that
// shrink meanwhile); every block keeps its tag to the end and no two live
// blocks overlap.
TEST(Shrink, RemoteFreesWhilePagesShrinkLoseNothing) {
  constexpr int kPairs = 4, kRounds = 40, kBatch = 2000;
  std::mutex lock;
  std::vector<Block> handed;  // blocks for the freeing threads
  std::atomic<int> owners_left{kPairs};
  std::atomic<bool> failed{false};

  auto owner = [&](int id) {
    std::mt19937 rng(id);
    std::vector<Block> mine;
    for (int round = 0; round < kRounds; round++) {
      // Each round favours other sizes, so that classes empty and others grow.
      size_t lo = 16 + size_t(round % 8) * 96, hi = lo + 96 + size_t(round % 3) * 2048;
      std::uniform_int_distribution<size_t> size_of(lo, hi);
      std::vector<Block> to_hand;
      for (int i = 0; i < kBatch; i++) {
        size_t size = size_of(rng);
        void *p = mm_malloc(size);
        if (p == nullptr) {
          failed = true;
          return;
        }
        uint64_t tag = tag_make(uint32_t(id), uint32_t(round * kBatch + i));
        tag_fill(p, size, tag, TagSpan::all);
        (i % 2 ? to_hand : mine).push_back({p, size, tag});
      }
      {
        std::lock_guard<std::mutex> g(lock);
        handed.insert(handed.end(), to_hand.begin(), to_hand.end());
      }
      // Free most of what this thread kept, oldest first.
      size_t keep = mine.size() / 8;
      for (size_t i = 0; i + keep < mine.size(); i++) {
        if (!tag_check(mine[i].p, mine[i].size, mine[i].tag, TagSpan::all)) failed = true;
        mm_free(mine[i].p);
      }
      mine.erase(mine.begin(), mine.end() - std::ptrdiff_t(keep));
    }
    for (const Block &b : mine) {
      if (!tag_check(b.p, b.size, b.tag, TagSpan::all)) failed = true;
      mm_free(b.p);
    }
    owners_left--;
  };
  auto freer = [&] {
    for (;;) {
      std::vector<Block> batch;
      {
        std::lock_guard<std::mutex> g(lock);
        batch.swap(handed);
      }
      if (batch.empty()) {
        if (owners_left.load() == 0) {
          std::lock_guard<std::mutex> g(lock);
          if (handed.empty()) return;
        }
        std::this_thread::yield();
        continue;
      }
      std::vector<std::pair<uintptr_t, size_t>> spans;
      for (const Block &b : batch) spans.emplace_back(reinterpret_cast<uintptr_t>(b.p), b.size);
      if (!disjoint(spans)) failed = true;
      for (const Block &b : batch) {
        if (!tag_check(b.p, b.size, b.tag, TagSpan::all)) failed = true;
        mm_free(b.p);
      }
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < kPairs; i++) threads.emplace_back(owner, i + 1);
  for (int i = 0; i < kPairs; i++) threads.emplace_back(freer);
  for (std::thread &t : threads) t.join();
  EXPECT_FALSE(failed.load()) << "a block lost its tag, overlapped another or could not be allocated";
}

}  // namespace
