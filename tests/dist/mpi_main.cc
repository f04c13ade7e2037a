/* SPDX-License-Identifier: Apache-2.0 */
// mpi_main.cc: main() of every dist/ MPI test program. Schedulers serve;
// every worker runs the same GoogleTest cases in the same order, so a case
// may pair sys_send/sys_recv or call sys_barrier between workers.
//
// Output: worker 0 prints GoogleTest's report; the other workers print only
// their failures, each line prefixed with "[worker N]". The exit status is
// the same on every worker: nonzero when any worker failed a case.
#include <gtest/gtest.h>
#include <manymalloc/myrmics.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// A case that waits for a peer that failed (or for a hung library) would
// otherwise block until CTest's timeout, naming nothing: the watchdog names
// the case and ends the process, and mpiexec then ends the job.
char g_watchdog_msg[512];
size_t g_watchdog_len;

void on_watchdog(int) {
  ssize_t r = write(2, g_watchdog_msg, g_watchdog_len);
  (void)r;
  _exit(3);
}

unsigned watchdog_seconds() {
  const char *s = getenv("MMD_TEST_WATCHDOG");
  return s && atoi(s) > 0 ? unsigned(atoi(s)) : 100;
}

// Arms the watchdog around each case and keeps the workers in step: no
// worker starts a case while another is still in the previous one, so the
// messages of two cases never meet.
class StepListener : public testing::EmptyTestEventListener {
 public:
  void OnTestStart(const testing::TestInfo &t) override {
    g_watchdog_len = size_t(snprintf(g_watchdog_msg, sizeof g_watchdog_msg,
                                     "[worker %d] %s.%s did not finish within %u s "
                                     "(a peer failed before its matching call, or a hang)\n",
                                     sys_worker_id(), t.test_suite_name(), t.name(), watchdog_seconds()));
    if (g_watchdog_len >= sizeof g_watchdog_msg) g_watchdog_len = sizeof g_watchdog_msg - 1;
    alarm(watchdog_seconds());
  }
  void OnTestEnd(const testing::TestInfo &) override {
    MPI_Barrier(sys_worker_comm());
    alarm(0);
  }
};

// The report of workers other than 0: failures only, prefixed.
class FailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int worker) : worker_(worker) {}
  void OnTestPartResult(const testing::TestPartResult &r) override {
    if (!r.failed()) return;
    std::string msg = r.message();
    std::string out;
    out += "[worker " + std::to_string(worker_) + "] " + (r.file_name() ? r.file_name() : "?") + ":" +
           std::to_string(r.line_number()) + ": Failure\n";
    size_t at = 0;
    while (at <= msg.size()) {
      size_t nl = msg.find('\n', at);
      if (nl == std::string::npos) nl = msg.size();
      out += "[worker " + std::to_string(worker_) + "]   " + msg.substr(at, nl - at) + "\n";
      at = nl + 1;
    }
    fputs(out.c_str(), stdout);
    fflush(stdout);
  }
  void OnTestEnd(const testing::TestInfo &t) override {
    if (t.result()->Failed()) {
      printf("[worker %d] FAILED %s.%s\n", worker_, t.test_suite_name(), t.name());
      fflush(stdout);
    }
  }

 private:
  int worker_;
};

}  // namespace

int main(int argc, char **argv) {
  // Lines from different ranks reach mpiexec whole.
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const int role = sys_init(&argc, &argv);
  if (role < 0) {
    fprintf(stderr, "sys_init: %s\n", sys_strerror(role));
    return 1;
  }
  if (role == 1) {
    // A scheduler has served every worker; the workers' status is the
    // test's result.
    sys_finalize();
    return 0;
  }

  testing::InitGoogleTest(&argc, argv);
  const int worker = sys_worker_id();
  testing::TestEventListeners &listeners = testing::UnitTest::GetInstance()->listeners();
  if (worker != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(worker));
  }
  listeners.Append(new StepListener);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_watchdog;
  sigaction(SIGALRM, &sa, nullptr);

  int failed = RUN_ALL_TESTS() != 0;
  int any_failed = 1;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, sys_worker_comm());
  const int fin = sys_finalize();
  if (fin != 0) fprintf(stderr, "[worker %d] sys_finalize: %s\n", worker, sys_strerror(fin));
  return any_failed || fin != 0 ? 1 : 0;
}
