/* SPDX-License-Identifier: Apache-2.0 */
// API conformance of the mm_* entry points: one test per behaviour of the
// C/POSIX contracts (alignment, size 0, huge sizes, realloc, calloc, usable
// size) and of the introspection calls.
#include <manymalloc/manymalloc.h>

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "support/block_tag.h"
#include "support/test_sizes.h"

using namespace mmtest;

namespace {

// Sizes for the aligned entry points: a few of each kind, small to large.
const std::vector<size_t> kAlignedSizes = {0, 1, 7, 17, 100, 1000, 4097, 65537, MiB + 1, 3 * MiB};

std::vector<size_t> valid_alignments() {
  std::vector<size_t> out;
  for (size_t a = sizeof(void *); a <= MiB; a *= 2) out.push_back(a);
  return out;
}

// Requests that no allocator can satisfy, including ones where rounding the
// size up (to a class, a page or an alignment) overflows.
const std::vector<size_t> kHugeSizes = {SIZE_MAX,     SIZE_MAX - 1,           SIZE_MAX - 4095,
                                        SIZE_MAX / 2, SIZE_MAX / 2 + 1,       size_t(1) << 62,
                                        PTRDIFF_MAX,  size_t(PTRDIFF_MAX) + 1};

size_t page_size() { return size_t(sysconf(_SC_PAGESIZE)); }

bool aligned_to(const void *p, size_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

// A fresh block: aligned, at least as large as asked, and all of it ours.
void expect_usable_block(void *p, size_t size, size_t alignment) {
  ASSERT_NE(p, nullptr) << "size " << size << " alignment " << alignment;
  EXPECT_TRUE(aligned_to(p, alignment)) << p << " alignment " << alignment;
  EXPECT_GE(mm_malloc_usable_size(p), size);
  tag_fill(p, size, tag_make(uint32_t(alignment), uint32_t(size)));
  EXPECT_TRUE(tag_check(p, size, tag_make(uint32_t(alignment), uint32_t(size))));
}

// ---------------------------------------------------------------------------
// The aligned entry points

TEST(Api, PosixMemalignHonoursEveryAlignment) {
  for (size_t alignment : valid_alignments())
    for (size_t size : kAlignedSizes) {
      void *p = nullptr;
      ASSERT_EQ(mm_posix_memalign(&p, alignment, size), 0) << alignment << " " << size;
      expect_usable_block(p, size, alignment);
      mm_free(p);
    }
}

TEST(Api, PosixMemalignRejectsBadAlignment) {
  for (size_t alignment : {size_t(0), size_t(1), size_t(2), size_t(4), size_t(3), size_t(12),
                           size_t(24), size_t(48), size_t(100), 4 * KiB + 8, MiB + 16}) {
    void *p = nullptr;
    EXPECT_EQ(mm_posix_memalign(&p, alignment, 64), EINVAL) << "alignment " << alignment;
  }
}

TEST(Api, AlignedAllocHonoursEveryAlignment) {
  for (size_t alignment : valid_alignments())
    for (size_t size : kAlignedSizes) {
      void *p = mm_aligned_alloc(alignment, size);
      expect_usable_block(p, size, alignment);
      mm_free(p);
    }
}

TEST(Api, AlignedAllocRejectsBadAlignment) {
  for (size_t alignment :
       {size_t(3), size_t(12), size_t(24), size_t(48), size_t(100), 4 * KiB + 8, MiB + 16}) {
    errno = 0;
    EXPECT_EQ(mm_aligned_alloc(alignment, 4 * alignment), nullptr) << "alignment " << alignment;
    EXPECT_EQ(errno, EINVAL) << "alignment " << alignment;
  }
}

// Blocks of 2 KiB and more are only 64-aligned (cache coloring), so larger
// alignments there are addresses inside a block: realloc, usable size and
// free must work from them like from any block.
TEST(Api, ReallocOfAlignedBlockKeepsItsContents) {
  for (size_t alignment = 128; alignment <= 64 * 1024; alignment *= 2)
    for (size_t size : {size_t(100), size_t(3000), size_t(5000), size_t(20000), size_t(70000)}) {
      void *p = mm_aligned_alloc(alignment, size);
      expect_usable_block(p, size, alignment);
      const size_t usable = mm_malloc_usable_size(p);
      memset(p, 0x5a, usable);  // all of the usable size is ours
      void *q = mm_realloc(p, 3 * size);
      ASSERT_NE(q, nullptr);
      for (size_t i = 0; i < size; i++) ASSERT_EQ(static_cast<unsigned char *>(q)[i], 0x5a) << alignment << " " << size;
      mm_free(q);
    }
}

TEST(Api, MemalignHonoursEveryAlignment) {
  for (size_t alignment : valid_alignments())
    for (size_t size : kAlignedSizes) {
      void *p = mm_memalign(alignment, size);
      expect_usable_block(p, size, alignment);
      mm_free(p);
    }
}

TEST(Api, VallocIsPageAligned) {
  for (size_t size : kAlignedSizes) {
    void *p = mm_valloc(size);
    expect_usable_block(p, size, page_size());
    mm_free(p);
  }
}

TEST(Api, PvallocRoundsUpToWholePages) {
  for (size_t size : kAlignedSizes) {
    void *p = mm_pvalloc(size);
    const size_t pages = (size + page_size() - 1) / page_size() * page_size();
    expect_usable_block(p, pages, page_size());
    mm_free(p);
  }
}

// ---------------------------------------------------------------------------
// Size 0 and impossible sizes

TEST(Api, SizeZeroGivesUniqueFreeablePointers) {
  std::set<void *> seen;
  std::vector<void *> blocks;
  for (int i = 0; i < 64; i++) {
    void *aligned = nullptr;
    ASSERT_EQ(mm_posix_memalign(&aligned, 64, 0), 0);
    for (void *p : {mm_malloc(0), mm_calloc(0, 16), mm_calloc(16, 0), mm_aligned_alloc(256, 0),
                    mm_memalign(32, 0), aligned}) {
      ASSERT_NE(p, nullptr);
      EXPECT_TRUE(seen.insert(p).second) << "size-0 block handed out twice: " << p;
      blocks.push_back(p);
    }
  }
  for (void *p : blocks) mm_free(p);
}

// Alignments beyond the spans give a mapping of its own: a block of 0 bytes
// there still lies inside it, with a usable byte.
TEST(Api, SizeZeroAtLargeAlignmentsIsUsable) {
  std::vector<void *> blocks;
  for (size_t alignment : {256 * KiB, 1 * MiB, 4 * MiB, 8 * MiB}) {
    void *p = nullptr;
    ASSERT_EQ(mm_posix_memalign(&p, alignment, 0), 0);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % alignment, 0u);
    ASSERT_GE(mm_malloc_usable_size(p), size_t(1));
    static_cast<volatile char *>(p)[0] = 1;
    blocks.push_back(p);
  }
  for (void *p : blocks) mm_free(p);
}

TEST(Api, HugeSizesFailWithENOMEM) {
  for (size_t size : kHugeSizes) {
    SCOPED_TRACE("size " + std::to_string(size));
    errno = 0;
    EXPECT_EQ(mm_malloc(size), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    errno = 0;
    EXPECT_EQ(mm_calloc(1, size), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    errno = 0;
    EXPECT_EQ(mm_aligned_alloc(4096, size), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    errno = 0;
    EXPECT_EQ(mm_memalign(64, size), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    errno = 0;
    EXPECT_EQ(mm_valloc(size), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    errno = 0;
    EXPECT_EQ(mm_pvalloc(size), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    void *p = nullptr;
    EXPECT_EQ(mm_posix_memalign(&p, 64, size), ENOMEM);
  }
}

// Valid powers of two that no address space can honour: the arithmetic that
// over-allocates to align must not overflow into a small block.
TEST(Api, HugeAlignmentsFailWithENOMEM) {
  for (size_t alignment : {size_t(1) << 62, size_t(1) << 63}) {
    SCOPED_TRACE("alignment " + std::to_string(alignment));
    void *p = nullptr;
    EXPECT_EQ(mm_posix_memalign(&p, alignment, 16), ENOMEM);
    errno = 0;
    EXPECT_EQ(mm_aligned_alloc(alignment, 16), nullptr);
    EXPECT_EQ(errno, ENOMEM);
  }
  // memalign is not POSIX; glibc and manymalloc agree up to 2^62.
  errno = 0;
  EXPECT_EQ(mm_memalign(size_t(1) << 62, 16), nullptr);
  EXPECT_EQ(errno, ENOMEM);
}

// ---------------------------------------------------------------------------
// realloc

TEST(Api, ReallocPreservesContentAcrossClasses) {
  // Grows and shrinks through small classes, into the large path and back.
  const size_t steps[] = {1,       16,      17,     100,      1000, 4000, 70000, MiB + 5,
                          5 * MiB, 3 * MiB, 300000, 64 * KiB, 2000, 24,   8,     3 * MiB};
  const uint64_t tag = tag_make(7, 7);
  size_t size = 1;
  void *p = mm_malloc(size);
  ASSERT_NE(p, nullptr);
  tag_fill(p, size, tag, TagSpan::all);
  for (size_t next : steps) {
    void *q = mm_realloc(p, next);
    ASSERT_NE(q, nullptr) << size << " -> " << next;
    EXPECT_TRUE(tag_check(q, std::min(size, next), tag, TagSpan::all)) << size << " -> " << next;
    EXPECT_GE(mm_malloc_usable_size(q), next);
    tag_fill(q, next, tag, TagSpan::all);
    p = q;
    size = next;
  }
  mm_free(p);
}

// A tagged block of 8 MiB whose mapping a madvise of the MiB at `offset`
// splits in the kernel; NULL when malloc or madvise fails.
void *block_with_split_mapping(size_t offset, uint64_t tag) {
  void *p = mm_malloc(8 * MiB);
  if (p == nullptr) return nullptr;
  tag_fill(p, 8 * MiB, tag, TagSpan::all);
  const uintptr_t os_page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t at = (reinterpret_cast<uintptr_t>(p) + offset) & ~(os_page - 1);
  if (madvise(reinterpret_cast<void *>(at), MiB, MADV_NOHUGEPAGE) != 0) {
    mm_free(p);
    return nullptr;
  }
  return p;
}

// A program may give part of a large block other flags (madvise, mprotect),
// which splits its mapping in the kernel: mremap then fails on the whole
// (EFAULT), and realloc must still grow and shrink it, by copying.
TEST(Api, ReallocOfLargeBlockWithASplitMappingKeepsItsContents) {
  const uint64_t tag = tag_make(3, 9);
  void *p = block_with_split_mapping(4 * MiB, tag);
  ASSERT_NE(p, nullptr);
  void *grown = mm_realloc(p, 64 * MiB);
  ASSERT_NE(grown, nullptr) << "realloc failed on a block whose mapping is split";
  EXPECT_TRUE(tag_check(grown, 8 * MiB, tag, TagSpan::all));
  void *q = block_with_split_mapping(2 * MiB, tag);
  ASSERT_NE(q, nullptr);
  void *shrunk = mm_realloc(q, 3 * MiB);
  ASSERT_NE(shrunk, nullptr);
  EXPECT_TRUE(tag_check(shrunk, 3 * MiB, tag, TagSpan::all));
  mm_free(grown);
  mm_free(shrunk);
}

// A freed mapping of 7 MiB is always cached; a block of 3 MiB (less than
// half of it, 4 MiB less) takes it whole with its pages, rather than its
// front up to the next segment boundary (src/cpu/large.c,
// mm_large_excess_small): the 4 MiB cut off would stay cached anyway.
TEST(Api, CachedLargeMappingLittleBiggerThanTheBlockIsTakenWhole) {
  void *big = mm_malloc(7 * MiB);
  ASSERT_NE(big, nullptr);
  memset(big, 1, 7 * MiB);
  mm_free(big);
  void *p = mm_malloc(3 * MiB);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p, big) << "the cached mapping was not reused";
  EXPECT_GE(mm_malloc_usable_size(p), 7 * MiB) << "the cached mapping was cut";
  const uint64_t tag = tag_make(5, 11);
  tag_fill(p, 3 * MiB, tag, TagSpan::all);
  EXPECT_TRUE(tag_check(p, 3 * MiB, tag, TagSpan::all));
  mm_free(p);
}

TEST(Api, ReallocOfNullActsAsMalloc) {
  for (size_t size : {size_t(0), size_t(1), size_t(100), 70 * KiB, 2 * MiB}) {
    void *p = mm_realloc(nullptr, size);
    expect_usable_block(p, size, 16);
    mm_free(p);
  }
}

// manymalloc documents glibc's choice: realloc(p, 0) frees p and returns NULL.
TEST(Api, ReallocToZeroFreesTheBlock) {
  for (size_t size : {size_t(100), 100 * KiB, 2 * MiB}) {
    void *p = mm_malloc(size);
    ASSERT_NE(p, nullptr);
    const size_t usable = mm_malloc_usable_size(p);
    mm_stats_t before, after;
    mm_stats_get(&before);
    EXPECT_EQ(mm_realloc(p, 0), nullptr) << "size " << size;
    mm_stats_get(&after);
    EXPECT_LE(after.bytes_in_use + usable, before.bytes_in_use) << "size " << size << " not freed";
  }
}

TEST(Api, ReallocFailureKeepsTheBlock) {
  const uint64_t tag = tag_make(1, 2);
  for (size_t size : {size_t(40), 100 * KiB, 2 * MiB}) {
    void *p = mm_malloc(size);
    ASSERT_NE(p, nullptr);
    tag_fill(p, size, tag);
    for (size_t huge : kHugeSizes) {
      errno = 0;
      EXPECT_EQ(mm_realloc(p, huge), nullptr) << size << " -> " << huge;
      EXPECT_EQ(errno, ENOMEM);
    }
    EXPECT_TRUE(tag_check(p, size, tag));
    mm_free(p);
  }
}

// ---------------------------------------------------------------------------
// calloc and reallocarray

bool all_zero(const void *p, size_t size) {
  const unsigned char *c = static_cast<const unsigned char *>(p);
  for (size_t i = 0; i < size; i++)
    if (c[i] != 0) return false;
  return true;
}

TEST(Api, CallocZeroes) {
  for (size_t size : boundary_sizes()) {
    void *p = mm_calloc(1, size);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(all_zero(p, size)) << "size " << size;
    mm_free(p);
    void *q = mm_calloc(size, 3);
    ASSERT_NE(q, nullptr);
    EXPECT_TRUE(all_zero(q, size * 3)) << "size " << size << " x 3";
    mm_free(q);
  }
}

TEST(Api, CallocZeroesRecycledMemory) {
  constexpr int kBlocks = 32;
  for (size_t size : {size_t(16), size_t(24), size_t(100), size_t(512), size_t(3000), 20 * KiB,
                      200 * KiB, MiB, 4 * MiB + 8}) {
    void *blocks[kBlocks];
    for (void *&p : blocks) {
      p = mm_malloc(size);
      ASSERT_NE(p, nullptr);
      std::memset(p, 0xA5, mm_malloc_usable_size(p));
    }
    for (void *p : blocks) mm_free(p);
    for (void *&p : blocks) {
      p = mm_calloc(1, size);
      ASSERT_NE(p, nullptr);
      EXPECT_TRUE(all_zero(p, size)) << "recycled block of size " << size;
    }
    for (void *p : blocks) mm_free(p);
  }
}

TEST(Api, CallocOverflowFailsWithENOMEM) {
  const size_t pairs[][2] = {{SIZE_MAX / 2, 3},       {3, SIZE_MAX / 2},
                             {SIZE_MAX, SIZE_MAX},    {size_t(1) << 33, size_t(1) << 33},
                             {SIZE_MAX / 16 + 1, 16}, {2, SIZE_MAX / 2 + 1}};
  for (const auto &pair : pairs) {
    errno = 0;
    EXPECT_EQ(mm_calloc(pair[0], pair[1]), nullptr) << pair[0] << " x " << pair[1];
    EXPECT_EQ(errno, ENOMEM);
  }
}

TEST(Api, ReallocarrayChecksOverflow) {
  const uint64_t tag = tag_make(3, 4);
  void *p = mm_reallocarray(nullptr, 10, 8);
  ASSERT_NE(p, nullptr);
  tag_fill(p, 80, tag, TagSpan::all);
  errno = 0;
  EXPECT_EQ(mm_reallocarray(p, SIZE_MAX / 2, 3), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_EQ(mm_reallocarray(p, size_t(1) << 33, size_t(1) << 33), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_TRUE(tag_check(p, 80, tag, TagSpan::all)) << "a failed reallocarray touched the block";
  void *q = mm_reallocarray(p, 1000, 8);
  ASSERT_NE(q, nullptr);
  EXPECT_TRUE(tag_check(q, 80, tag, TagSpan::all));
  EXPECT_GE(mm_malloc_usable_size(q), 8000u);
  mm_free(q);
}

// ---------------------------------------------------------------------------
// Usable size, alignment of plain malloc, free(NULL)

TEST(Api, UsableSizeCoversRequestAndIsWritable) {
  EXPECT_EQ(mm_malloc_usable_size(nullptr), 0u);
  for (size_t size : boundary_sizes()) {
    // Two neighbours written over their full usable length must not overlap.
    void *a = mm_malloc(size);
    void *b = mm_malloc(size);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    const size_t ua = mm_malloc_usable_size(a), ub = mm_malloc_usable_size(b);
    EXPECT_GE(ua, size);
    EXPECT_GE(ub, size);
    tag_fill(a, ua, tag_make(1, uint32_t(size)), TagSpan::all);
    tag_fill(b, ub, tag_make(2, uint32_t(size)), TagSpan::all);
    EXPECT_TRUE(tag_check(a, ua, tag_make(1, uint32_t(size)), TagSpan::all)) << "size " << size;
    EXPECT_TRUE(tag_check(b, ub, tag_make(2, uint32_t(size)), TagSpan::all)) << "size " << size;
    mm_free(a);
    mm_free(b);
  }
}

// Aligned blocks may start inside a larger block: their usable size must
// count from the pointer returned, or filling it would overrun a neighbour.
TEST(Api, UsableSizeOfAlignedBlocksIsWritable) {
  struct Block {
    void *p;
    size_t usable;
  };
  std::vector<Block> blocks;
  for (size_t alignment = 32; alignment <= 64 * KiB; alignment *= 2)
    for (size_t size : {size_t(1), size_t(24), size_t(100), size_t(1000), size_t(5000)})
      for (int i = 0; i < 4; i++) {
        void *p = mm_aligned_alloc(alignment, size);
        ASSERT_NE(p, nullptr);
        blocks.push_back({p, mm_malloc_usable_size(p)});
        EXPECT_GE(blocks.back().usable, size);
        tag_fill(p, blocks.back().usable, tag_make(4, uint32_t(blocks.size())), TagSpan::all);
      }
  for (size_t i = 0; i < blocks.size(); i++) {
    const Block &b = blocks[i];
    EXPECT_TRUE(tag_check(b.p, b.usable, tag_make(4, uint32_t(i + 1)), TagSpan::all))
        << "aligned block " << b.p << " with usable size " << b.usable << " was overwritten";
  }
  for (const Block &b : blocks) mm_free(b.p);
}

TEST(Api, MallocResultsAre16ByteAligned) {
  std::vector<void *> live;
  for (size_t size = 1; size <= 2048; size++) live.push_back(mm_malloc(size));
  for (size_t size : boundary_sizes()) live.push_back(mm_malloc(size));
  for (void *p : live) {
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(aligned_to(p, 16)) << p;
  }
  for (void *p : live) mm_free(p);
}

TEST(Api, FreeOfNullIsANoop) {
  mm_stats_t before, after;
  mm_stats_get(&before);
  for (int i = 0; i < 100; i++) mm_free(nullptr);
  mm_stats_get(&after);
  EXPECT_EQ(before.bytes_in_use, after.bytes_in_use);
}

// ---------------------------------------------------------------------------
// Statistics

TEST(Api, StatsFollowAllocationsAndFrees) {
  constexpr size_t kSmall = 1000, kCount = 200, kLarge = 8 * MiB;
  void *blocks[kCount];
  mm_stats_t before, allocated, freed;
  mm_stats_get(&before);
  for (void *&p : blocks) p = mm_malloc(kSmall);
  void *large = mm_malloc(kLarge);
  mm_stats_get(&allocated);
  for (void *p : blocks) mm_free(p);
  mm_free(large);
  mm_stats_get(&freed);

  const size_t asked = kSmall * kCount + kLarge;
  EXPECT_GE(allocated.bytes_in_use, before.bytes_in_use + asked);
  EXPECT_LE(freed.bytes_in_use + asked, allocated.bytes_in_use);
  EXPECT_GE(allocated.bytes_in_use_peak, allocated.bytes_in_use);
  EXPECT_GE(allocated.bytes_mapped, allocated.bytes_in_use);
  EXPECT_GE(allocated.bytes_mapped_peak, allocated.bytes_mapped);
  EXPECT_GE(allocated.large_blocks, before.large_blocks + 1);
  EXPECT_GE(allocated.segments, 1u);
  EXPECT_LT(freed.large_blocks, allocated.large_blocks);
}

// The report carries the totals that mm_stats_get gives at the same moment.
// The stream has its own buffer, so printing allocates nothing in between.
TEST(Api, StatsPrintReportsTheTotals) {
  void *large = mm_malloc(3 * MiB);
  FILE *f = tmpfile();
  ASSERT_NE(f, nullptr);
  static char buffer[1 << 16];
  setvbuf(f, buffer, _IOFBF, sizeof buffer);
  mm_stats_t s;
  mm_stats_get(&s);
  mm_stats_print(f);
  const long length = ftell(f);
  std::string report(size_t(length > 0 ? length : 0), '\0');
  rewind(f);
  report.resize(fread(&report[0], 1, report.size(), f));
  fclose(f);
  mm_free(large);
  for (size_t total : {s.bytes_in_use, s.bytes_mapped, s.large_blocks, s.segments})
    EXPECT_NE(report.find(std::to_string(total)), std::string::npos)
        << "total " << total << " missing from:\n"
        << report;
}

}  // namespace
