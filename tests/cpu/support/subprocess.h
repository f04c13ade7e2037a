/* SPDX-License-Identifier: Apache-2.0 */
// Child processes for the tests: a forked copy of the test running a function
// (for what must not touch the test process: resource limits, fork from a
// threaded program) and an exec'd program with its output captured (for what
// is decided when a process starts: environment options, LD_PRELOAD).
#ifndef MM_TEST_SUBPROCESS_H
#define MM_TEST_SUBPROCESS_H

#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace mmtest {

// Runs body() in a forked child that exits with its result; a child still
// running after `timeout_s` seconds is killed by SIGALRM, so a deadlock fails
// the test instead of hanging it. Returns the wait status.
template <typename Body>
int run_forked(Body body, unsigned timeout_s = 60) {
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(timeout_s);
    _exit(body());  // _exit: the child must not run the test's exit handlers
  }
  int status = -1;
  if (pid > 0) waitpid(pid, &status, 0);
  return status;
}

struct ProgramResult {
  int status = -1;  // the wait status
  std::string out;  // what it wrote to stdout
  std::string err;  // what it wrote to stderr
};

// Runs argv[0] with the test's environment, less the allocator's variables
// and LD_PRELOAD, plus `env` ("NAME=value" entries).
ProgramResult run_program(const std::vector<std::string> &argv,
                          const std::vector<std::string> &env = {}, unsigned timeout_s = 60);

// A wait status in words, for failure messages.
std::string status_string(int status);

}  // namespace mmtest

#endif  // MM_TEST_SUBPROCESS_H
