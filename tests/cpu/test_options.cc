/* SPDX-License-Identifier: Apache-2.0 */
// The environment options, read when the allocator starts, so every case
// runs checked_child in a fresh process. Checked mode (MANYMALLOC_CHECKED=1):
// a double free or a free of a pointer the allocator never handed out ends
// the process with SIGABRT and a message on stderr that names the pointer.
// Verbose (MANYMALLOC_VERBOSE=1): statistics on stderr at exit.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <string>

#include "support/subprocess.h"

using namespace mmtest;

namespace {

const char kChecked[] = "MANYMALLOC_CHECKED=1";

// The pointer the child printed on its first line of stdout.
uintptr_t announced_pointer(const std::string &out) { return strtoull(out.c_str(), nullptr, 16); }

// The pointer named after `message` ("manymalloc: <message> 0x...") on
// stderr, or 0 when there is no such message.
uintptr_t reported_pointer(const std::string &err, const std::string &message) {
  const std::string prefix = "manymalloc: " + message + " 0x";
  const size_t at = err.find(prefix);
  return at == std::string::npos ? 0 : strtoull(err.c_str() + at + prefix.size() - 2, nullptr, 16);
}

// A correct program's run: it exits 0 and the allocator reports nothing.
void expect_clean(const ProgramResult &r, const std::string &label) {
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << label << status_string(r.status) << "\n" << r.err;
  EXPECT_EQ(r.err.find("manymalloc: "), std::string::npos) << label << r.err;
}

// Runs a misuse under checked mode: it must abort and name the pointer with
// one of the `messages`.
void expect_caught(const char *mode, std::initializer_list<const char *> messages) {
  const ProgramResult r = run_program({MM_CHECKED_CHILD, mode}, {kChecked});
  EXPECT_TRUE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT)
      << mode << ": " << status_string(r.status) << "\nstderr: " << r.err;
  const uintptr_t pointer = announced_pointer(r.out);
  ASSERT_NE(pointer, 0u) << mode << ": the child printed no pointer: " << r.out;
  bool named = false;
  for (const char *message : messages) named |= reported_pointer(r.err, message) == pointer;
  EXPECT_TRUE(named) << mode << ": no message naming " << r.out << "on stderr: " << r.err;
}

TEST(Checked, DoubleFreeAborts) { expect_caught("double-free", {"double free of pointer"}); }

TEST(Checked, DoubleFreeAfterOtherAllocationsAborts) {
  expect_caught("double-free-later", {"double free of pointer"});
}

TEST(Checked, DoubleFreeAcrossThreadsAborts) {
  expect_caught("double-free-remote", {"double free of pointer"});
}

TEST(Checked, DoubleFreeOfAlignedBlockAborts) {
  expect_caught("double-free-aligned", {"double free of pointer"});
}

// Once a large block is returned to the OS the allocator may no longer know
// it was ever its own: either message is right, silence is not.
TEST(Checked, DoubleFreeOfLargeBlockAborts) {
  expect_caught("double-free-large", {"double free of pointer", "free of invalid pointer"});
}

TEST(Checked, FreeOfStackPointerAborts) {
  expect_caught("free-stack", {"free of invalid pointer"});
}

TEST(Checked, FreeOfInteriorPointerAborts) {
  expect_caught("free-interior", {"free of invalid pointer"});
}

TEST(Checked, FreeOfNeverAllocatedPointerAborts) {
  expect_caught("free-never-allocated", {"free of invalid pointer"});
}

TEST(Checked, CorrectProgramRunsCleanly) {
  for (bool checked : {false, true}) {
    const ProgramResult r =
        run_program({MM_CHECKED_CHILD, "normal"},
                    checked ? std::vector<std::string>{kChecked} : std::vector<std::string>{});
    expect_clean(r, checked ? "checked: " : "unchecked: ");
  }
}

// Large blocks grown, shrunk and moved by eight threads at once: a mapping
// that moves frees its address for another thread's new one, and checked
// mode must not take that one for a wild pointer.
TEST(Checked, ThreadsMovingLargeBlocksRunCleanly) {
  expect_clean(run_program({MM_CHECKED_CHILD, "large-threads"}, {kChecked}), "");
}

TEST(Verbose, StatisticsAtExitOnlyWhenAsked) {
  const ProgramResult quiet = run_program({MM_CHECKED_CHILD, "normal"});
  const ProgramResult verbose = run_program({MM_CHECKED_CHILD, "normal"}, {"MANYMALLOC_VERBOSE=1"});
  EXPECT_TRUE(WIFEXITED(verbose.status) && WEXITSTATUS(verbose.status) == 0)
      << status_string(verbose.status);
  EXPECT_EQ(quiet.err, "");
  EXPECT_NE(verbose.err.find("manymalloc"), std::string::npos) << verbose.err;
}

}  // namespace
