/* SPDX-License-Identifier: Apache-2.0 */
// Test cases that depend on what the process's allocator holds (addresses
// of fresh segments, a heap's highest use, the threads that have heaps)
// run in a process started afresh for them, so that they pass alone, run
// together and in any order (--gtest_shuffle): a thread would otherwise
// adopt the heap, segments or cached mappings an earlier case left.
#ifndef MM_TEST_FRESH_PROCESS_H
#define MM_TEST_FRESH_PROCESS_H

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

namespace mmtest {

// Writes the running case's failures to stderr and returns how many: a
// death test's child prints no results of its own, and its parent shows
// what the child wrote there.
inline int report_failures() {
  const ::testing::TestResult &result = *::testing::UnitTest::GetInstance()->current_test_info()->result();
  int failures = 0;
  for (int i = 0; i < result.total_part_count(); i++) {
    const ::testing::TestPartResult &part = result.GetTestPartResult(i);
    if (!part.failed()) continue;
    std::fprintf(stderr, "%s:%d: %s\n", part.file_name(), part.line_number(), part.message());
    failures++;
  }
  return failures;
}

// Runs body() in a child that GoogleTest's "threadsafe" death-test style
// starts by executing the test program again, for this case alone (a fork,
// as run_forked in subprocess.h, would copy what the allocator holds).
template <typename Body>
void in_fresh_process(Body body) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        body();
        std::_Exit(report_failures() > 0 ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "")
      << "the case failed in its own process: its failures are under \"Actual msg\"";
}

// The same, body() in a thread of that process: a thread that mallocs has
// a heap of its own, which it leaves to the next thread when it exits.
template <typename Body>
void in_fresh_thread(Body body) {
  in_fresh_process([&] { std::thread(body).join(); });
}

}  // namespace mmtest

#endif  // MM_TEST_FRESH_PROCESS_H
