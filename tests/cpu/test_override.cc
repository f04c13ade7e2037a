/* SPDX-License-Identifier: Apache-2.0 */
// The standard names (malloc, free, ...) exported by libmanymalloc when
// MANYMALLOC_OVERRIDE is on: linked into a program they are manymalloc for
// the program, for the C library's own allocations and for operator new, and
// blocks may be freed through either name of the API. glibc's own entry
// points (__libc_malloc, ..., malloc_trim, mallinfo2, malloc_stats) answer
// for manymalloc too.
#include <malloc.h>
#include <manymalloc/manymalloc.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "support/test_sizes.h"

// glibc's aliases of its allocator, exported but not declared by its headers.
extern "C" {
void *__libc_malloc(size_t size);
void __libc_free(void *p);
void *__libc_calloc(size_t count, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t alignment, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);
}

using namespace mmtest;

namespace {

size_t in_use() {
  mm_stats_t s;
  mm_stats_get(&s);
  return s.bytes_in_use;
}

// The block that `allocate` returns is counted by manymalloc, and `release`
// (free(), the standard name, unless said otherwise) gives it back. volatile
// keeps the compiler from dropping an allocation whose block is never read.
void expect_served(const char *name, size_t size, const std::function<void *()> &allocate,
                   const std::function<void(void *)> &release = free) {
  const size_t before = in_use();
  void *volatile p = allocate();
  ASSERT_NE(p, nullptr) << name;
  const size_t during = in_use();
  EXPECT_GE(during, before + size) << name << " was not served by manymalloc";
  EXPECT_EQ(malloc_usable_size(p), mm_malloc_usable_size(p)) << name;
  release(p);
  EXPECT_LE(in_use() + size, during) << "release of a block from " << name;
}

constexpr size_t kSize = 300 * KiB;

TEST(Override, EveryStandardNameIsManymalloc) {
  expect_served("malloc", kSize, [] { return malloc(kSize); });
  expect_served("calloc", kSize, [] { return calloc(kSize / 4, 4); });
  expect_served("realloc", kSize, [] { return realloc(nullptr, kSize); });
  expect_served("reallocarray", kSize, [] { return reallocarray(nullptr, kSize / 4, 4); });
  expect_served("posix_memalign", kSize, [] {
    void *p = nullptr;
    return posix_memalign(&p, 4096, kSize) == 0 ? p : nullptr;
  });
  expect_served("aligned_alloc", kSize, [] { return aligned_alloc(4096, kSize); });
  expect_served("memalign", kSize, [] { return memalign(4096, kSize); });
  expect_served("valloc", kSize, [] { return valloc(kSize); });
  expect_served("pvalloc", kSize, [] { return pvalloc(kSize); });
}

TEST(Override, GlibcAliasesAreManymalloc) {
  expect_served("__libc_malloc", kSize, [] { return __libc_malloc(kSize); });
  expect_served("__libc_calloc", kSize, [] { return __libc_calloc(kSize / 4, 4); });
  expect_served("__libc_realloc", kSize, [] { return __libc_realloc(nullptr, kSize); });
  expect_served("__libc_memalign", kSize, [] { return __libc_memalign(4096, kSize); });
  expect_served("__libc_valloc", kSize, [] { return __libc_valloc(kSize); });
  expect_served("__libc_pvalloc", kSize, [] { return __libc_pvalloc(kSize); });
  expect_served("malloc, then __libc_free", kSize, [] { return malloc(kSize); }, __libc_free);
}

// mallinfo2 counts manymalloc's blocks: small ones in uordblks (within the
// arena), large ones in hblks/hblkhd.
TEST(Override, MallinfoCountsManymallocsBlocks) {
  const struct mallinfo2 before = mallinfo2();
  std::vector<void *> small;
  for (int i = 0; i < 1000; i++) small.push_back(malloc(1000));
  void *large = malloc(8 * MiB);
  ASSERT_NE(large, nullptr);
  const struct mallinfo2 during = mallinfo2();
  EXPECT_GE(during.uordblks, before.uordblks + 1000 * 1000);
  EXPECT_GE(during.arena, during.uordblks);
  EXPECT_EQ(during.hblks, before.hblks + 1);
  EXPECT_GE(during.hblkhd, before.hblkhd + 8 * MiB);
  for (void *p : small) free(p);
  free(large);
  const struct mallinfo2 after = mallinfo2();
  EXPECT_LE(after.uordblks + 1000 * 1000, during.uordblks);
  EXPECT_EQ(after.hblks, before.hblks);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // mallinfo is the old name, still called
  const struct mallinfo narrow = mallinfo();
#pragma GCC diagnostic pop
  EXPECT_EQ(static_cast<size_t>(narrow.uordblks), std::min<size_t>(after.uordblks, INT_MAX));
}

// malloc_trim gives freed memory back and says so; with nothing left to
// give, it says that too.
TEST(Override, MallocTrimGivesFreedMemoryBack) {
  std::vector<void *> blocks;
  for (int i = 0; i < 4096; i++) {
    blocks.push_back(malloc(4000));
    std::memset(blocks.back(), 1, 4000);
  }
  for (void *p : blocks) free(p);
  EXPECT_EQ(malloc_trim(0), 1);
  EXPECT_EQ(malloc_trim(0), 0);
  void *p = malloc(4000);  // and the allocator goes on
  ASSERT_NE(p, nullptr);
  std::memset(p, 2, 4000);
  free(p);
}

TEST(Override, MallocStatsPrintsManymallocsReport) {
  testing::internal::CaptureStderr();
  malloc_stats();
  const std::string report = testing::internal::GetCapturedStderr();
  EXPECT_NE(report.find("manymalloc statistics"), std::string::npos) << report;
}

TEST(Override, CxxNewIsManymalloc) {
  expect_served(
      "operator new[]", kSize, [] { return static_cast<void *>(new char[kSize]); },
      [](void *p) { delete[] static_cast<char *>(p); });
}

// The C library allocates for its callers (strdup, getdelim, open_memstream):
// those blocks must be ours too, or free() would be handed a foreign pointer.
TEST(Override, CLibraryAllocationsAreManymalloc) {
  const std::string text(kSize, 'm');
  expect_served("strdup", kSize, [&text] { return static_cast<void *>(strdup(text.c_str())); });
  char *buffer = nullptr;
  size_t length = 0;
  FILE *stream = open_memstream(&buffer, &length);
  ASSERT_NE(stream, nullptr);
  fwrite(text.data(), 1, text.size(), stream);
  fclose(stream);
  ASSERT_EQ(length, text.size());
  EXPECT_GE(mm_malloc_usable_size(buffer), length);
  free(buffer);
}

TEST(Override, BlocksCrossBetweenTheTwoNames) {
  void *a = mm_malloc(1000);
  void *b = malloc(1000);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::memset(a, 1, 1000);
  std::memset(b, 2, 1000);
  void *c = realloc(a, 200 * KiB);  // an mm_malloc block through realloc
  void *d = mm_realloc(b, 200 * KiB);
  ASSERT_NE(c, nullptr);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(static_cast<unsigned char *>(c)[999], 1);
  EXPECT_EQ(static_cast<unsigned char *>(d)[999], 2);
  free(d);
  mm_free(c);
}

TEST(Override, StandardNamesReportENOMEM) {
  volatile size_t huge = SIZE_MAX;  // not a constant the compiler reasons about
  errno = 0;
  EXPECT_EQ(malloc(huge), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_EQ(calloc(huge / 2, 3), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  void *p = nullptr;
  EXPECT_EQ(posix_memalign(&p, 3, 64), EINVAL);
}

}  // namespace
