/* SPDX-License-Identifier: Apache-2.0 */
// Giving freed memory back to the OS: an emptied segment stays resident for
// MANYMALLOC_PURGE_DELAY ms (so a program that frees everything and starts
// over does not fault it all in again), then goes back at the next slow
// path; mm_collect gives everything back at once. That holds for the
// segments of a thread that exits too, which the next threads take over.
// Each case runs purge_child under one setting and reads the resident KiB
// of 24 MiB of freed blocks: after the frees, after 200 ms and a malloc,
// after mm_collect.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "support/subprocess.h"

using namespace mmtest;

namespace {

struct Resident {
  size_t after_free = 0, after_delay = 0, after_collect = 0;
};

ProgramResult run_checked(const std::vector<std::string> &argv, const std::vector<std::string> &env) {
  const ProgramResult r = run_program(argv, env);
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << status_string(r.status) << "\n" << r.err;
  return r;
}

Resident run_child(const std::vector<std::string> &env, const char *mode = nullptr,
                   const std::vector<std::string> &args = {}) {
  std::vector<std::string> argv{MM_PURGE_CHILD};
  if (mode != nullptr) argv.push_back(mode);
  argv.insert(argv.end(), args.begin(), args.end());
  const ProgramResult r = run_checked(argv, env);
  Resident kib;
  EXPECT_EQ(sscanf(r.out.c_str(), "%zu %zu %zu", &kib.after_free, &kib.after_delay, &kib.after_collect), 3)
      << r.out;
  return kib;
}

// Freed memory stays resident for an hour: a test reads what the allocator
// keeps, not what a delay gave back meanwhile.
constexpr const char *kKeepFreed = "MANYMALLOC_PURGE_DELAY=3600000";

// `purge_child ARGS...` with freed memory kept.
ProgramResult run_kept(std::vector<std::string> args) {
  args.insert(args.begin(), MM_PURGE_CHILD);
  return run_checked(args, {kKeepFreed});
}

// The page faults that `purge_child MODE` prints, its freed memory kept;
// -1 when it printed none.
long faults_of_child(const char *mode) {
  const ProgramResult r = run_kept({mode});
  long faults = -1;
  EXPECT_EQ(sscanf(r.out.c_str(), "%ld", &faults), 1) << r.out;
  return faults;
}

constexpr size_t kFreedKib = 24 * 1024;
// What a heap keeps however long it waits: its newest emptied segment (under
// 4 MiB of blocks) and the first MiB of its empty span segment.
constexpr size_t kKeptKib = 5 * 1024;

TEST(Purge, LongDelayKeepsFreedMemoryUntilCollect) {
  const Resident kib = run_child({kKeepFreed});
  EXPECT_GE(kib.after_free, kFreedKib - 64);
  EXPECT_GE(kib.after_delay, kFreedKib - 64) << "given back before its delay";
  EXPECT_LE(kib.after_collect, 64u);
}

TEST(Purge, DefaultDelayGivesFreedMemoryBackAfterIt) {
  const Resident kib = run_child({});
  EXPECT_LE(kib.after_delay, kKeptKib);
  EXPECT_LE(kib.after_collect, 64u);
}

TEST(Purge, ZeroDelayGivesFreedMemoryBackAtOnce) {
  const Resident kib = run_child({"MANYMALLOC_PURGE_DELAY=0"});
  EXPECT_LE(kib.after_free, kKeptKib);
  EXPECT_LE(kib.after_collect, 64u);
}

// A thread's exit hands its emptied segments over as they are, for the
// threads after it; they go back like any others once their delay is over.
TEST(Purge, ExitedThreadsMemoryWaitsForItsDelay) {
  const Resident kib = run_child({kKeepFreed}, "thread");
  EXPECT_GE(kib.after_free, kFreedKib - 64) << "given back at the thread's exit";
  EXPECT_GE(kib.after_delay, kFreedKib - 64) << "given back before its delay";
  EXPECT_LE(kib.after_collect, 64u);
}

TEST(Purge, ExitedThreadsMemoryGoesBackAfterTheDelay) {
  const Resident kib = run_child({}, "thread");
  EXPECT_LE(kib.after_delay, kKeptKib);
  EXPECT_LE(kib.after_collect, 64u);
}

// A thread started after another exited takes over its resident memory:
// writing 24 MiB of blocks again faults in almost none of it (6144 pages
// when it was given back at the exit).
TEST(Purge, NextThreadReusesAnExitedThreadsMemory) {
  const long faults = faults_of_child("reuse");
  EXPECT_GE(faults, 0);
  EXPECT_LT(faults, 600) << "the exited thread's memory was faulted in again";
}

// A heap that grows gives back as much free memory as it grew: with few
// threads whole free runs (the largest first), at once; with more threads
// than MANYMALLOC_SHRINK_THREADS, each madvise then interrupting the other
// threads, only the part that matches the growth, once the purge delay is
// over (runs cut again meanwhile stay).
size_t resident_after_growth(const std::vector<std::string> &env, const char *wait = nullptr) {
  std::vector<std::string> argv{MM_PURGE_CHILD, "growth"};
  if (wait != nullptr) argv.push_back(wait);
  const ProgramResult r = run_checked(argv, env);
  size_t kib = 0;
  EXPECT_EQ(sscanf(r.out.c_str(), "%zu", &kib), 1) << r.out;
  return kib;
}

TEST(Purge, GrowthGivesBackWholeFreeRunsWithFewThreads) {
  EXPECT_LE(resident_after_growth({kKeepFreed}), 64u);
}

TEST(Purge, GrowthWaitsForTheDelayWithManyThreads) {
  EXPECT_GE(resident_after_growth({kKeepFreed, "MANYMALLOC_SHRINK_THREADS=0"}), 3072u - 64)
      << "gave back before the delay";
}

TEST(Purge, GrowthGivesBackOnlyItsOwnSizeAfterTheDelayWithManyThreads) {
  // 640 KiB of growth against 3072 KiB of free memory
  const size_t kib = resident_after_growth({"MANYMALLOC_SHRINK_THREADS=0"}, "wait");
  EXPECT_GE(kib, 3072u - 640 - 256) << "gave back more than it grew";
  EXPECT_LE(kib, 3072u - 640 + 64) << "gave back less than it grew";
}

// A freed block of 6 MiB waits in the cache of large mappings for the next
// large block, resident; once the delay is over it goes back to the OS.
constexpr size_t kLargeKib = 6 * 1024;

TEST(Purge, CachedLargeBlockGoesBackAfterTheDelay) {
  const Resident kib = run_child({}, "large");
  EXPECT_GE(kib.after_free, kLargeKib - 64) << "the cache should keep the freed mapping";
  EXPECT_EQ(kib.after_delay, 0u) << "the cached mapping should go back after the delay";
  EXPECT_EQ(kib.after_collect, 0u);
}

TEST(Purge, LongDelayKeepsACachedLargeBlockUntilCollect) {
  const Resident kib = run_child({kKeepFreed}, "large");
  EXPECT_GE(kib.after_delay, kLargeKib - 64) << "given back before its delay";
  EXPECT_EQ(kib.after_collect, 0u);
}

// A freed mapping above 8 MiB is cached while the bytes in use and cached
// stay within an eighth above the recent peak of large bytes in use
// (src/cpu/large.c, decision 0091): alone, one of 20 MiB waits for the next
// large block, and goes back to the OS once the delay is over.
TEST(Purge, LoneLargeMappingAboveTheCacheFloorWaitsForItsDelay) {
  constexpr size_t kBlockKib = 20 * 1024;
  const Resident kib = run_child({}, "large", {"20", "1", "0"});
  EXPECT_GE(kib.after_free, kBlockKib - 64) << "a lone 20 MiB mapping should wait for the next block";
  EXPECT_EQ(kib.after_delay, 0u) << "the cached mapping should go back after the delay";
  EXPECT_EQ(kib.after_collect, 0u);
}

// Blocks of 20 MiB calloc'd (never from the cache), written and freed one
// after another, never more than one in use: the peak (20 MiB) leaves room
// for one, the cache's floor of 64 MiB for three, and the others go back at
// their free.
TEST(Purge, CachedLargeMappingsStayWithinTheirBound) {
  constexpr size_t kBlockKib = 20 * 1024, kBoundKib = 64 * 1024;
  const Resident kib = run_child({kKeepFreed}, "large-fresh", {"20", "8", "0"});
  EXPECT_GE(kib.after_free, 3 * kBlockKib - 64) << "the cache should keep three freed mappings";
  EXPECT_LE(kib.after_free, kBoundKib) << "the cache kept more than its bound";
  EXPECT_EQ(kib.after_collect, 0u);
}

// Blocks freed in bulk while several threads have heaps (at a phase's or the
// threads' end) stay cached, up to an eighth above the peak of large bytes
// in use, until the delay sends them back: each munmap would stall every
// other thread's page faults. 80 freed blocks of 1.25 MiB, 100 MiB, stay
// resident: more than the cache's floor of 64 MiB, and more mappings than
// the cache had places for until 3dc8ad0.
constexpr size_t kBulkKib = 80 * 1280, kLoneFloorKib = 64 * 1024;

TEST(Purge, LargeBlocksFreedInBulkStayCachedWhileManyThreadsHaveHeaps) {
  const Resident kib = run_child({}, "large-bulk", {"2"});
  EXPECT_GE(kib.after_free, kBulkKib - 64) << "the cache should keep every freed mapping";
  EXPECT_EQ(kib.after_delay, 0u) << "the cached mappings should go back after the delay";
  EXPECT_EQ(kib.after_collect, 0u);
}

// A freed mapping of up to 512 MiB is held so, beside the second thread's
// heap as well: a lone 80 MiB block waits for its delay, then goes back
// (decision 0093).
TEST(Purge, LargeMappingOf80MiBWaitsForItsDelayWhileManyThreadsHaveHeaps) {
  constexpr size_t kBlockKib = 80 * 1024;
  const Resident kib = run_child({}, "large-bulk", {"2", "81920", "1"});
  EXPECT_GE(kib.after_free, kBlockKib - 64) << "a lone 80 MiB mapping should wait for the next block";
  EXPECT_EQ(kib.after_delay, 0u) << "the cached mapping should go back after the delay";
  EXPECT_EQ(kib.after_collect, 0u);
}

// A bigger one is not: once its delay is over, unmapping its written pages
// would stall whichever thread expires it for as long. A lone block of
// 520 MiB (never written, so it takes no memory) is unmapped at its free.
size_t mapped_kib_given_back_at_free(const char *mib) {
  const ProgramResult r = run_kept({"large-mapped", mib});
  size_t kib = 0;
  EXPECT_EQ(sscanf(r.out.c_str(), "%zu", &kib), 1) << r.out;
  return kib;
}

TEST(Purge, LargeMappingAbove512MiBIsNotHeldPastItsFree) {
  EXPECT_GE(mapped_kib_given_back_at_free("520"), 520u * 1024) << "a lone 520 MiB mapping should not be cached";
  EXPECT_EQ(mapped_kib_given_back_at_free("500"), 0u) << "a lone 500 MiB mapping should wait for its delay";
}

// A lone thread's blocks freed in bulk stay cached as well, beyond the floor
// of 64 MiB: in use and cached stay within an eighth above the peak in use
// (the 100 MiB of blocks freed), until the delay sends them back.
TEST(Purge, LargeBlocksFreedInBulkByALoneThreadWaitForTheirDelay) {
  const Resident kib = run_child({}, "large-bulk", {"1"});
  EXPECT_GE(kib.after_free, kBulkKib - 64) << "the cache should keep every freed mapping";
  EXPECT_GT(kib.after_free, kLoneFloorKib) << "the cache kept no more than its floor";
  EXPECT_LE(kib.after_free, kBulkKib + kBulkKib / 8) << "the cache kept more than an eighth above the peak";
  EXPECT_EQ(kib.after_delay, 0u) << "the cached mappings should go back after the delay";
  EXPECT_EQ(kib.after_collect, 0u);
}

// purge_child large-reuse: six blocks of 24 MiB in use, a seventh written
// and freed, then (MID MiB, unless 0) another written and freed, then an
// eighth of 24 MiB written: the faults that took, and the MID block's size.
struct LargeReuse {
  long faults = -1;
  size_t mid_usable_kib = 0;
};

LargeReuse run_large_reuse(const char *mid_mib) {
  const ProgramResult r = run_kept({"large-reuse", "24", mid_mib});
  LargeReuse out;
  EXPECT_EQ(sscanf(r.out.c_str(), "%ld %zu", &out.faults, &out.mid_usable_kib), 2) << r.out;
  return out;
}

// The next large block takes the cached mapping with its pages: writing a
// block of 24 MiB (6144 OS pages) after freeing another, beside six in use,
// faults in almost none of them.
TEST(Purge, CachedLargeMappingIsReusedWithItsPages) {
  const LargeReuse r = run_large_reuse("0");
  EXPECT_GE(r.faults, 0);
  EXPECT_LT(r.faults, 512) << "the second block faulted its pages in afresh";
}

// A cached mapping is taken whole by a block that fills half of it or more,
// so that a bigger block after it finds the pages still there: 24 MiB, then
// 16 MiB in its mapping, then 24 MiB again faults in almost nothing.
TEST(Purge, CachedLargeMappingIsTakenWholeByABlockOfHalfOrMore) {
  const LargeReuse r = run_large_reuse("16");
  EXPECT_GE(r.mid_usable_kib, 24u * 1024 - 64) << "the 16 MiB block should keep the 24 MiB mapping whole";
  EXPECT_GE(r.faults, 0);
  EXPECT_LT(r.faults, 512) << "the pages of the whole mapping should still be there";
}

// The front of a split mapping joins the cached rest again when its block is
// freed: 24 MiB freed, 8 MiB taken from its front and freed, then 24 MiB
// written faults in almost nothing (grown from the front alone, 12 MiB).
TEST(Purge, SplitMappingIsJoinedAgainWhenItsFrontIsFreed) {
  const LargeReuse r = run_large_reuse("8");
  EXPECT_LT(r.mid_usable_kib, 12u * 1024) << "the 8 MiB block should have split the 24 MiB mapping";
  EXPECT_GE(r.faults, 0);
  EXPECT_LT(r.faults, 512) << "the front and the rest should have been joined";
}

// A block of less than half a cached mapping takes its front up to the next
// segment boundary (8 MiB of a freed 24 MiB: 12 MiB), and the rest stays
// cached with its pages: a block of 11 MiB written next faults in almost
// none of its 2,816 OS pages (the rest went back to the OS before).
TEST(Purge, CachedLargeMappingIsSplitForABlockOfLessThanHalf) {
  const ProgramResult r = run_kept({"large-split"});
  size_t small_usable_kib = 0;
  long faults = -1;
  ASSERT_EQ(sscanf(r.out.c_str(), "%zu %ld", &small_usable_kib, &faults), 2) << r.out;
  EXPECT_GE(small_usable_kib, 8u * 1024);
  EXPECT_LT(small_usable_kib, 12u * 1024) << "an 8 MiB block should not hold the 24 MiB mapping";
  EXPECT_GE(faults, 0);
  EXPECT_LT(faults, 512) << "the rest of the split mapping should have kept its pages";
}

// The rest of a split mapping begins with a header of its own, written over
// the freed block's bytes; a block taken from it is freed as a large block
// whatever those bytes were, even the thread's heap, which the free fast
// path compares with the header's first word.
TEST(Purge, BlockFromASplitMappingIsFreedAsALargeBlock) {
  const ProgramResult r = run_kept({"large-split-header"});
  size_t before = 0, after = 0;
  ASSERT_EQ(sscanf(r.out.c_str(), "%zu %zu", &before, &after), 2) << r.out;
  EXPECT_EQ(after + 1, before) << "the block from the split mapping was not freed as a large block";
}

// A freed mapping that the bound leaves no room for takes the room of
// smaller cached ones: beside 192 MiB in use (a bound of 64 MiB), six freed
// blocks of 10 MiB fill 60 MiB of it; a freed 30 MiB block sends three of
// them back to the OS and stays cached, so the next 30 MiB block faults in
// almost none of its 7,680 OS pages.
TEST(Purge, FreedLargeMappingTakesTheRoomOfSmallerCachedOnes) {
  const long faults = faults_of_child("large-evict");
  EXPECT_GE(faults, 0);
  EXPECT_LT(faults, 512) << "the freed 30 MiB mapping should have been cached";
}

// Of the cached mappings, the next large block takes the one that fits best:
// after freeing blocks of 9, 20 and 12 MiB, one of 11 MiB takes the 12 MiB
// mapping whole (not the oldest, grown; nor the 20 MiB one, cut).
TEST(Purge, LargeBlockTakesTheBestFittingCachedMapping) {
  const ProgramResult r = run_kept({"large-best"});
  size_t usable_kib = 0;
  ASSERT_EQ(sscanf(r.out.c_str(), "%zu", &usable_kib), 1) << r.out;
  EXPECT_GE(usable_kib, 12u * 1024 - 64) << "the 12 MiB mapping should have been taken whole";
  EXPECT_LE(usable_kib, 12u * 1024) << "another mapping than the 12 MiB one was taken";
}

// Large blocks from malloc get mappings advised for transparent huge pages
// (a fault per 2 MiB instead of per 4 KiB where the kernel has them), from
// 4 MiB on, also when realloc grows them to that; calloc's do not (big
// zeroed arrays are often written sparsely), nor any with
// MANYMALLOC_LARGE_HUGEPAGES=0.
void expect_hugepage_advice(const std::vector<std::string> &env, int plain, int zeroed, int grown) {
  if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0)
    GTEST_SKIP() << "this kernel has no transparent huge pages";
  const ProgramResult r = run_checked({MM_PURGE_CHILD, "hugepages"}, env);
  int got_plain = -1, got_zeroed = -1, got_small = -1, got_grown = -1;
  ASSERT_EQ(sscanf(r.out.c_str(), "%d %d %d %d", &got_plain, &got_zeroed, &got_small, &got_grown), 4) << r.out;
  EXPECT_EQ(got_plain, plain) << "malloc'd 8 MiB block";
  EXPECT_EQ(got_zeroed, zeroed) << "calloc'd 8 MiB block";
  EXPECT_EQ(got_small, 0) << "malloc'd 2 MiB block";
  EXPECT_EQ(got_grown, grown) << "2 MiB block grown to 8 MiB by realloc";
}

TEST(Purge, LargeMallocMappingIsAdvisedForHugePagesByDefault) { expect_hugepage_advice({}, 1, 0, 1); }

TEST(Purge, LargeMappingsAreNotAdvisedForHugePagesWhenTurnedOff) {
  expect_hugepage_advice({"MANYMALLOC_LARGE_HUGEPAGES=0"}, 0, 0, 0);
}

TEST(Purge, PurgeOffKeepsFreedMemory) {
  const Resident kib = run_child({"MANYMALLOC_PURGE=0", "MANYMALLOC_PURGE_DELAY=0"});
  EXPECT_GE(kib.after_delay, kFreedKib - 64);
}

}  // namespace
