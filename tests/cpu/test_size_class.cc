/* SPDX-License-Identifier: Apache-2.0 */
// Size classes (src/cpu/size_class.h): every request fits its class, the class wastes
// at most 12.5% of the 16-rounded request, and the mapping is monotonic and
// round-trips, over every size up to the largest class.
#include <gtest/gtest.h>

#include "size_class.h"

namespace {

size_t round16(size_t size) { return (size + MM_ALIGNMENT - 1) / MM_ALIGNMENT * MM_ALIGNMENT; }

TEST(SizeClass, EveryRequestFitsItsClass) {
  for (size_t size = 1; size <= MM_SIZE_CLASS_MAX; size++) {
    const unsigned c = mm_size_class_of(size);
    ASSERT_LT(c, unsigned(MM_SIZE_CLASS_COUNT)) << "size " << size;
    ASSERT_GE(mm_size_class_size(c), size) << "size " << size << " class " << c;
  }
}

TEST(SizeClass, WasteIsAtMostAnEighthOfTheRoundedRequest) {
  for (size_t size = 1; size <= MM_SIZE_CLASS_MAX; size++) {
    const size_t block = mm_size_class_size(mm_size_class_of(size));
    ASSERT_LE((block - round16(size)) * 8, round16(size)) << "size " << size << " block " << block;
  }
}

TEST(SizeClass, ClassOfIsMonotonic) {
  for (size_t size = 2; size <= MM_SIZE_CLASS_MAX; size++)
    ASSERT_LE(mm_size_class_of(size - 1), mm_size_class_of(size)) << "size " << size;
}

TEST(SizeClass, ClassSizesGrowAndStayAligned) {
  for (unsigned c = 0; c < MM_SIZE_CLASS_COUNT; c++) {
    EXPECT_EQ(mm_size_class_size(c) % MM_ALIGNMENT, 0u) << "class " << c;
    if (c > 0) EXPECT_LT(mm_size_class_size(c - 1), mm_size_class_size(c)) << "class " << c;
  }
}

TEST(SizeClass, RoundTrip) {
  for (unsigned c = 0; c < MM_SIZE_CLASS_COUNT; c++) {
    const size_t block = mm_size_class_size(c);
    EXPECT_EQ(mm_size_class_of(block), c) << "block size " << block;
    if (c + 1 < MM_SIZE_CLASS_COUNT) EXPECT_EQ(mm_size_class_of(block + 1), c + 1);
  }
}

TEST(SizeClass, EdgesOfTheTable) {
  EXPECT_EQ(mm_size_class_of(0), 0u);
  EXPECT_EQ(mm_size_class_size(0), size_t(MM_ALIGNMENT));
  EXPECT_EQ(mm_size_class_of(MM_SIZE_CLASS_MAX), unsigned(MM_SIZE_CLASS_COUNT - 1));
  EXPECT_EQ(mm_size_class_size(MM_SIZE_CLASS_COUNT - 1), MM_SIZE_CLASS_MAX);
}

}  // namespace
