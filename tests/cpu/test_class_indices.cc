/* SPDX-License-Identifier: Apache-2.0 */
// The class indices that src/cpu/types.h hard-codes for its fast paths and
// borrowing, pinned to the size-class table (src/common/size_class.h) they
// are derived from: a change of the table that moves a class boundary fails
// here instead of silently sending sizes to the wrong page.
#include <gtest/gtest.h>

#include "types.h"

namespace {

TEST(ClassIndices, DirectWideStartsAboveTheDirectRange) {
  EXPECT_EQ(unsigned(MM_DIRECT_CLASS_FIRST), mm_size_class_of(MM_DIRECT_MAX + 1));
  EXPECT_EQ(mm_size_class_size(MM_DIRECT_CLASS_FIRST - 1), MM_DIRECT_MAX);
}

TEST(ClassIndices, LendingClassesEndAtTheSmallBlockMax) {
  EXPECT_EQ(unsigned(MM_DIRECT_CLASS_FIRST + MM_DIRECT_CLASS_LENDING - 1), mm_size_class_of(MM_SMALL_BLOCK_MAX));
  EXPECT_EQ(mm_size_class_size(MM_DIRECT_CLASS_FIRST + MM_DIRECT_CLASS_LENDING - 1), MM_SMALL_BLOCK_MAX);
}

TEST(ClassIndices, MediumClassesSpanSmallMaxToMediumMax) {
  EXPECT_EQ(unsigned(MM_MEDIUM_CLASS_FIRST), mm_size_class_of(MM_SMALL_BLOCK_MAX + 1));
  EXPECT_EQ(unsigned(MM_MEDIUM_CLASS_LAST), mm_size_class_of(MM_MEDIUM_BLOCK_MAX));
  EXPECT_EQ(mm_size_class_size(MM_MEDIUM_CLASS_LAST), MM_MEDIUM_BLOCK_MAX);
}

TEST(ClassIndices, BorrowingStartsAtTheFirstPaddedClass) {
  EXPECT_EQ(unsigned(MM_BORROW_CLASS_FIRST), mm_size_class_of(MM_COLOR_MIN));
  EXPECT_EQ(mm_size_class_size(MM_BORROW_CLASS_FIRST), MM_COLOR_MIN);
}

// heap->direct_wide indexes by the size rounded up to 1 << MM_DIRECT_WIDE_SHIFT:
// every class boundary it covers must be a multiple of that step.
TEST(ClassIndices, DirectWideBoundariesAreMultiplesOfItsStep) {
  for (unsigned c = MM_DIRECT_CLASS_FIRST - 1; c <= MM_MEDIUM_CLASS_LAST; c++)
    EXPECT_EQ(mm_size_class_size(c) % (size_t(1) << MM_DIRECT_WIDE_SHIFT), 0u) << "class " << c;
  EXPECT_EQ(MM_DIRECT_WIDE_COUNT, (MM_MEDIUM_BLOCK_MAX >> MM_DIRECT_WIDE_SHIFT) + 1);
}

// types.h: "the class of 2^n bytes is 8n - 49".
TEST(ClassIndices, PowersOfTwoFollowTheFormula) {
  for (unsigned n = 7; (size_t(1) << n) <= MM_SIZE_CLASS_MAX; n++)
    EXPECT_EQ(mm_size_class_of(size_t(1) << n), 8 * n - 49) << "2^" << n;
}

// Span bins follow the classes on units: the longest run falls in the last bin.
TEST(ClassIndices, SpanBinsHoldTheLongestRun) {
  EXPECT_EQ(mm_size_class_of(MM_SPAN_UNITS * MM_ALIGNMENT), unsigned(MM_SPAN_BINS - 1));
}

}  // namespace
