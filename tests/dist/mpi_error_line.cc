/* SPDX-License-Identifier: Apache-2.0 */
// mpi_error_line.cc: the one line on stderr that each failed call prints,
// and its absence under MANYMALLOC_DIST_QUIET=1 (CTest runs this program
// both ways). The worker's own stderr is captured around each call.
#include <gtest/gtest.h>
#include <manymalloc/myrmics.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

bool quiet() {
  const char *q = getenv("MANYMALLOC_DIST_QUIET");
  return q && strcmp(q, "1") == 0;
}

// What the process writes on file descriptor 2 while it lives.
class StderrCapture {
 public:
  StderrCapture() {
    fflush(stderr);
    file_ = tmpfile();
    saved_ = dup(2);
    dup2(fileno(file_), 2);
  }
  ~StderrCapture() {
    restore();
    fclose(file_);
  }
  std::string text() {
    restore();
    std::string out;
    rewind(file_);
    char buf[512];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, file_)) > 0) out.append(buf, n);
    return out;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    saved_ = -1;
  }
  FILE *file_;
  int saved_;
};

// One line naming the call, or nothing when quiet.
testing::AssertionResult one_line_naming(const std::string &text, const char *call) {
  if (quiet()) {
    if (text.empty()) return testing::AssertionSuccess();
    return testing::AssertionFailure() << "printed under MANYMALLOC_DIST_QUIET=1: \"" << text << "\"";
  }
  const size_t newlines = size_t(std::count(text.begin(), text.end(), '\n'));
  if (newlines != 1 || text.back() != '\n')
    return testing::AssertionFailure() << "not exactly one line: \"" << text << "\"";
  if (text.find(call) == std::string::npos)
    return testing::AssertionFailure() << "does not name " << call << ": \"" << text << "\"";
  return testing::AssertionSuccess();
}

// Runs first, before any call of this worker has failed.
TEST(ErrorLine, LastErrorIsOkBeforeAnyFailure) { EXPECT_EQ(sys_last_error(), SYS_OK); }

TEST(ErrorLine, FreeOfAStackPointerPrintsOneLineNamingSysFree) {
  int on_stack = 0;
  StderrCapture cap;
  const int rc = sys_free(&on_stack);
  const std::string text = cap.text();
  EXPECT_EQ(rc, SYS_ERR_NOTGLOBAL);
  EXPECT_TRUE(one_line_naming(text, "sys_free"));
}

TEST(ErrorLine, DoubleFreePrintsOneLineNamingSysFree) {
  void *p = sys_alloc(64, 0);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(sys_free(p), SYS_OK);
  StderrCapture cap;
  const int rc = sys_free(p);
  const std::string text = cap.text();
  EXPECT_EQ(rc, SYS_ERR_FREED);
  EXPECT_TRUE(one_line_naming(text, "sys_free"));
}

TEST(ErrorLine, AllocInANonexistentRegionPrintsOneLineNamingSysAlloc) {
  StderrCapture cap;
  void *p = sys_alloc(64, rid_t(1) << 40);
  const std::string text = cap.text();
  EXPECT_EQ(p, nullptr);
  EXPECT_TRUE(one_line_naming(text, "sys_alloc"));
}

TEST(ErrorLine, SuccessfulCallsPrintNothing) {
  StderrCapture cap;
  const rid_t r = sys_ralloc(0, 0);
  void *p = sys_alloc(100, r);
  const int freed = sys_free(p);
  const int rfreed = sys_rfree(r);
  const std::string text = cap.text();
  EXPECT_GT(r, 0);
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(freed, SYS_OK);
  EXPECT_EQ(rfreed, SYS_OK);
  EXPECT_EQ(text, "");
}

}  // namespace
