/* SPDX-License-Identifier: Apache-2.0 */
// Spare pages (spare.c): a discard parks the runs of at least 16 resident
// pages (up to the cap), never a page that has none, and leaves the range
// reading zeros; a fill gives parked pages to
// the runs of 16 or more pages that have none and never touches a page
// that has one; a fill with populate leaves the whole range resident;
// parked pages unused for a second go back. The
// stress runs random discards and fills over a test space beside live data
// and checks every live byte after every step, against a model.
extern "C" {
#include "spare.h"
}

#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace {

const uint64_t kPage = uint64_t(sysconf(_SC_PAGESIZE));

// A private test space, unmapped at the end.
struct Space {
  uint64_t size;
  uintptr_t base;
  explicit Space(uint64_t bytes) : size(bytes) {
    void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    base = p == MAP_FAILED ? 0 : uintptr_t(p);
  }
  ~Space() {
    if (base) munmap(reinterpret_cast<void *>(base), size);
  }
  unsigned char *at(uint64_t off) const { return reinterpret_cast<unsigned char *>(base + off); }
};

struct Spare {
  mmd_spare_t s;
  Spare() { mmd_spare_init(&s); }
  ~Spare() { mmd_spare_destroy(&s); }
};

// Pages of [p, p + len) that are resident.
uint64_t resident_pages(const unsigned char *p, uint64_t len) {
  std::vector<unsigned char> vec(len / kPage);
  if (mincore(const_cast<unsigned char *>(p), len, vec.data()) != 0) return ~0ull;
  uint64_t n = 0;
  for (unsigned char v : vec) n += v & 1;
  return n;
}

bool all_zero(const unsigned char *p, uint64_t len) {
  for (uint64_t i = 0; i < len; i++)
    if (p[i]) return false;
  return true;
}

unsigned char pattern(uint64_t off, unsigned seed) { return static_cast<unsigned char>((off * 131 + seed) | 1); }

void write_pattern(const Space &sp, uint64_t off, uint64_t len, unsigned seed) {
  for (uint64_t i = off; i < off + len; i++) *sp.at(i) = pattern(i, seed);
}

TEST(Spare, DiscardParksAndFillPlaces) {
  Space sp(64 << 20);
  ASSERT_NE(sp.base, 0u);
  Spare s;
  const uint64_t len = 1 << 20;
  write_pattern(sp, 0, len, 1);
  mmd_spare_discard(&s.s, sp.base, 0, len);
  if (s.s.off) GTEST_SKIP() << "this kernel cannot move pages with MREMAP_DONTUNMAP";
  EXPECT_EQ(s.s.used, len);
  EXPECT_EQ(resident_pages(sp.at(0), len), 0u);
  EXPECT_TRUE(all_zero(sp.at(0), len)) << "a discarded range reads zeros";

  mmd_spare_fill(&s.s, sp.base, 8 << 20, len, false);
  EXPECT_EQ(s.s.used, 0u);
  EXPECT_EQ(resident_pages(sp.at(8 << 20), len), len / kPage) << "the parked pages moved in";
  write_pattern(sp, 8 << 20, len, 2);
  for (uint64_t i = 8 << 20; i < (8 << 20) + len; i++) ASSERT_EQ(*sp.at(i), pattern(i, 2));
}

TEST(Spare, FillLeavesResidentPagesAlone) {
  Space sp(64 << 20);
  ASSERT_NE(sp.base, 0u);
  Spare s;
  write_pattern(sp, 0, 4 << 20, 3);
  mmd_spare_discard(&s.s, sp.base, 0, 4 << 20);
  if (s.s.off) GTEST_SKIP() << "this kernel cannot move pages with MREMAP_DONTUNMAP";
  // [16 MiB, +1 MiB): pages 0-39 and 200-209 hold data; 40-199 and 210-255 have none.
  const uint64_t at = 16 << 20, len = 1 << 20;
  write_pattern(sp, at, 40 * kPage, 4);
  write_pattern(sp, at + 200 * kPage, 10 * kPage, 5);
  uint64_t before = s.s.used;
  mmd_spare_fill(&s.s, sp.base, at, len, false);
  EXPECT_EQ(before - s.s.used, (160 + 46) * kPage) << "only the runs without pages got parked ones";
  for (uint64_t i = at; i < at + 40 * kPage; i++) ASSERT_EQ(*sp.at(i), pattern(i, 4));
  for (uint64_t i = at + 200 * kPage; i < at + 210 * kPage; i++) ASSERT_EQ(*sp.at(i), pattern(i, 5));
}

TEST(Spare, PagesNeverWrittenAreNotParked) {
  Space sp(16 << 20);
  ASSERT_NE(sp.base, 0u);
  Spare s;
  write_pattern(sp, 1 << 20, 128 << 10, 8);   // 32 pages written inside 4 MiB never touched
  mmd_spare_discard(&s.s, sp.base, 0, 4 << 20);
  if (s.s.off) GTEST_SKIP() << "this kernel cannot move pages with MREMAP_DONTUNMAP";
  EXPECT_EQ(s.s.used, 128u << 10);
  EXPECT_TRUE(all_zero(sp.at(0), 4 << 20));
}

TEST(Spare, SmallRangesGoBackAndTheCapHolds) {
  Space sp(64 << 20);
  ASSERT_NE(sp.base, 0u);
  Spare s;
  s.s.cap = 8 << 20;   // a smaller stack than the worker's, before its first use
  write_pattern(sp, 0, 8 * kPage, 6);
  mmd_spare_discard(&s.s, sp.base, 0, 8 * kPage);
  EXPECT_EQ(s.s.used, 0u) << "fewer than 16 pages are not parked";
  EXPECT_TRUE(all_zero(sp.at(0), 8 * kPage));

  const uint64_t big = s.s.cap + (4 << 20);
  memset(sp.at(16 << 20), 7, big);
  mmd_spare_discard(&s.s, sp.base, 16 << 20, big);
  if (s.s.off) GTEST_SKIP() << "this kernel cannot move pages with MREMAP_DONTUNMAP";
  EXPECT_EQ(s.s.used, s.s.cap);
  EXPECT_EQ(resident_pages(sp.at(16 << 20), big), 0u) << "what did not fit went back";
  EXPECT_TRUE(all_zero(sp.at(16 << 20), big));
}

TEST(Spare, UnusedParkedPagesGoBackAfterASecond) {
  Space sp(16 << 20);
  ASSERT_NE(sp.base, 0u);
  Spare s;
  write_pattern(sp, 0, 1 << 20, 9);
  mmd_spare_discard(&s.s, sp.base, 0, 1 << 20);
  if (s.s.off) GTEST_SKIP() << "this kernel cannot move pages with MREMAP_DONTUNMAP";
  ASSERT_EQ(s.s.used, 1u << 20);
  usleep(1200 * 1000);
  mmd_spare_discard(&s.s, sp.base, 4 << 20, kPage);   // any call looks at the clock
  EXPECT_EQ(s.s.used, 0u);
  mmd_spare_fill(&s.s, sp.base, 8 << 20, 1 << 20, false);
  EXPECT_EQ(resident_pages(sp.at(8 << 20), 1 << 20), 0u) << "nothing was left to place";
}

TEST(Spare, PopulateMakesTheWholeRangeResident) {
  Space sp(16 << 20);
  ASSERT_NE(sp.base, 0u);
  Spare s;
  mmd_spare_discard(&s.s, sp.base, 0, 256 << 10);
  // Not page aligned: the pages it touches in part are populated too.
  mmd_spare_fill(&s.s, sp.base, (4 << 20) + 100, (1 << 20) - 200, true);
  EXPECT_EQ(resident_pages(sp.at(4 << 20), 1 << 20), (1 << 20) / kPage);
}

// Random discards and fills among live ranges: every live byte stays as
// written, and every range discarded reads zeros until written again.
TEST(Spare, StressKeepsLiveBytes) {
  const uint64_t pages = 2048;   // 8 MiB of 4 KiB pages in 64 blocks of 32
  const uint64_t block = 32 * kPage, nblocks = pages * kPage / block;
  Space sp(pages * kPage);
  ASSERT_NE(sp.base, 0u);
  Spare s;
  std::mt19937_64 rng(20261128);
  std::vector<int> seed(nblocks, -1);   // -1: discarded (reads zeros); otherwise its pattern's seed
  int fills_placed = 0;
  for (int step = 0; step < 3000; step++) {
    uint64_t b = rng() % nblocks, n = 1 + rng() % 4;
    if (b + n > nblocks) n = nblocks - b;
    bool any_live = false;
    for (uint64_t k = b; k < b + n; k++) any_live |= seed[k] >= 0;
    if (rng() % 2 && any_live) {
      mmd_spare_discard(&s.s, sp.base, b * block, n * block);
      for (uint64_t k = b; k < b + n; k++) seed[k] = -1;
    } else if (!any_live) {
      uint64_t parked = s.s.used;
      mmd_spare_fill(&s.s, sp.base, b * block, n * block, rng() % 2);
      fills_placed += s.s.used < parked;
      for (uint64_t k = b; k < b + n; k++) {
        seed[k] = int(rng() % 1000);
        write_pattern(sp, k * block, block, unsigned(seed[k]));
      }
    }
    if (step % 100 == 0 || step == 2999) {
      for (uint64_t k = 0; k < nblocks; k++) {
        const unsigned char *p = sp.at(k * block);
        if (seed[k] < 0) {
          ASSERT_TRUE(all_zero(p, block)) << "block " << k << " at step " << step;
        } else {
          for (uint64_t i = 0; i < block; i++)
            ASSERT_EQ(p[i], pattern(k * block + i, unsigned(seed[k]))) << "block " << k << " at step " << step;
        }
      }
    }
  }
  EXPECT_LE(s.s.used, s.s.cap);
  if (!s.s.off) EXPECT_GT(fills_placed, 100) << "the stress moved parked pages in";
}

}  // namespace
