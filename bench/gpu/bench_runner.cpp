/* SPDX-License-Identifier: Apache-2.0 */
// bench/gpu: the parent side of a benchmark binary. Every case runs in a child
// process (this same binary, re-executed with --child), so that a sticky CUDA
// error, a crash or a hang of one allocator costs one case, reported as
// "failed" or "timeout", and not the run.
//
//   <binary> [--alloc a,b] [--bench x,y] [--config c,d] [--timeout S] [--out results.csv]
//   <binary> --child ALLOC BENCH CONFIG PARAM      (one case, rows on stdout)
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <cstring>
#include <ctime>
#include <sstream>
#include <vector>
#include <cuda_runtime.h>
#include "bench_case.h"

// ---- the plan -------------------------------------------------------------------

static void bench_plan_add(std::vector<BenchCase> &plan, const char *bench, const char *config,
                           std::initializer_list<long> params) {
  for (long p : params) plan.push_back({bench, config, p});
}

// Every case of the list; an allocator runs those whose configuration
// it supports. Sizes of 0 mean mixed sizes.
static std::vector<BenchCase> bench_plan() {
  std::vector<BenchCase> plan;
  const auto lanes = {1l, 2l, 4l, 8l, 16l, 32l};
  const auto sizes = {16l, 32l, 64l, 128l, 256l, 512l, 1024l, 2048l, 4096l, 0l};
  const auto threads = {1l, 4l, 16l, 64l, 256l, 1024l, 4096l, 16384l, 65536l, 262144l, 1048576l};
  bench_plan_add(plan, "milthreads", "default", lanes);
  bench_plan_add(plan, "milthreads", "nocoal", lanes);
  for (const char *buf : {"buf1", "buf2", "buf4", "buf8", "buf16", "buf32"})
    bench_plan_add(plan, "milthreads", buf, {32});
  bench_plan_add(plan, "scaling", "default", threads);
  bench_plan_add(plan, "scaling", "nosuper", threads);
  bench_plan_add(plan, "alloc_all", "default", sizes);
  bench_plan_add(plan, "warp_alloc", "default", {64});
  bench_plan_add(plan, "churn", "default", {0});
  bench_plan_add(plan, "fill", "default", sizes);
  bench_plan_add(plan, "graph", "default", {0});
  return plan;
}

// The graph case builds its workload and model on the host (seconds) and
// makes millions of allocations a repetition: it gets this many time caps.
static double bench_case_weight(const BenchCase &c) { return c.bench == "graph" ? 8 : 1; }

// ---- CSV --------------------------------------------------------------------------

static const char bench_csv_header[] = "bench,alloc,config,param,metric,value,unit,reps,nulls,bad,status,note";

void bench_print_row(FILE *out, const char *allocator, const BenchCase &c, const BenchRow &row) {
  fprintf(out, "%s,%s,%s,%ld,%s,%.6g,%s,%d,%llu,%llu,%s,\n", c.bench.c_str(), allocator,
          c.config.c_str(), c.param, row.metric, row.value, row.unit, row.reps, row.nulls, row.bad,
          row.status);
  fflush(out);
}

// The device and the date, as comment lines ahead of the header, so that
// results.csv alone says where it was measured.
static void bench_print_meta(FILE *out, double timeout_s) {
  cudaDeviceProp prop{};
  int runtime = 0, driver = 0;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) strcpy(prop.name, "no CUDA device");
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  char date[32];
  time_t now = time(nullptr);
  strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
  fprintf(out, "# device: %s, %d SMs, CUDA runtime %d, driver API %d\n# date: %s\n"
          "# time cap per case: %g s (graph: 8 caps)\n%s\n", prop.name, prop.multiProcessorCount, runtime, driver,
          date, timeout_s, bench_csv_header);
  fflush(out);
}

// ---- one child ----------------------------------------------------------------------

struct BenchChildResult {
  std::string rows;      // what it printed on stdout
  std::string error;     // its last line on stderr
  int status;            // waitpid status; meaningless when timed_out
  bool timed_out;
};

// Reads the child's stdout and stderr until both close or the deadline passes;
// stderr is echoed to ours as it comes.
static void bench_child_drain(int out_fd, int err_fd, double timeout_s, BenchChildResult &r) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string err;
  int open = 2;
  while (open > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) { r.timed_out = true; return; }
    if (poll(fds, 2, int(left.count())) < 0) continue;
    for (pollfd &f : fds) {
      if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP))) continue;
      char buf[4096];
      ssize_t n = read(f.fd, buf, sizeof buf);
      if (n <= 0) { f.fd = -1; --open; continue; }
      if (f.fd == out_fd) r.rows.append(buf, n);
      else { fwrite(buf, 1, n, stderr); err.append(buf, n); }
    }
  }
  while (!err.empty() && err.back() == '\n') err.pop_back();
  r.error = err.substr(err.find_last_of('\n') + 1);
}

static BenchChildResult bench_child_run(const char *allocator, const BenchCase &c, double timeout_s) {
  std::string param = std::to_string(c.param), budget = std::to_string(timeout_s);
  const char *argv[] = {"bench", "--child", allocator, c.bench.c_str(), c.config.c_str(), param.c_str(), nullptr};
  int out[2], err[2];
  BenchChildResult r{"", "", 0, false};
  if (pipe(out) != 0 || pipe(err) != 0) { r.error = "pipe failed"; return r; }
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]); close(err[0]); close(out[1]); close(err[1]);
    setenv("BENCH_BUDGET_S", budget.c_str(), 1);
    execv("/proc/self/exe", const_cast<char **>(argv));
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  bench_child_drain(out[0], err[0], timeout_s, r);
  if (r.timed_out) kill(pid, SIGKILL);
  waitpid(pid, &r.status, 0);
  close(out[0]);
  close(err[0]);
  return r;
}

// A child that did not finish leaves one row with the reason in its note.
static void bench_report_child(FILE *out, const char *allocator, const BenchCase &c,
                               const BenchChildResult &r) {
  bool ok = !r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0;
  if (ok) { fputs(r.rows.c_str(), out); fflush(out); return; }
  std::string note = r.timed_out ? "no result in time" : r.error;
  for (char &ch : note) if (ch == ',' || ch == '\n') ch = ';';
  fprintf(out, "%s,%s,%s,%ld,-,nan,,0,0,0,%s,%s\n", c.bench.c_str(), allocator, c.config.c_str(),
          c.param, r.timed_out ? "timeout" : "failed", note.c_str());
  fflush(out);
}

// ---- main ---------------------------------------------------------------------------

static bool bench_listed(const std::string &list, const std::string &name) {
  if (list.empty()) return true;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) if (item == name) return true;
  return false;
}

static int bench_child_main(char **argv, const BenchAllocator *allocators, int count) {
  BenchCase c{argv[1], argv[2], atol(argv[3])};
  for (int i = 0; i < count; ++i)
    if (strcmp(allocators[i].name, argv[0]) == 0) return allocators[i].run_case(allocators[i].name, c);
  fprintf(stderr, "no allocator %s\n", argv[0]);
  return 2;
}

static int bench_usage(const char *self) {
  fprintf(stderr, "usage: %s [--alloc a,b] [--bench x,y] [--config c,d] [--timeout S] [--out FILE]\n", self);
  return 2;
}

int bench_main(int argc, char **argv, const BenchAllocator *allocators, int count) {
  if (argc == 6 && strcmp(argv[1], "--child") == 0) return bench_child_main(argv + 2, allocators, count);
  std::string only_alloc, only_bench, only_config;
  double timeout_s = 10;
  FILE *out = stdout;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 == argc) return bench_usage(argv[0]);
    if (strcmp(argv[i], "--alloc") == 0) only_alloc = argv[i + 1];
    else if (strcmp(argv[i], "--bench") == 0) only_bench = argv[i + 1];
    else if (strcmp(argv[i], "--config") == 0) only_config = argv[i + 1];
    else if (strcmp(argv[i], "--timeout") == 0) timeout_s = atof(argv[i + 1]);
    else if (strcmp(argv[i], "--out") != 0) return bench_usage(argv[0]);
    else if (!(out = fopen(argv[i + 1], "w"))) { perror(argv[i + 1]); return 2; }
  }
  bench_print_meta(out, timeout_s);
  for (const BenchCase &c : bench_plan()) {
    if (!bench_listed(only_bench, c.bench) || !bench_listed(only_config, c.config)) continue;
    for (int i = 0; i < count; ++i) {
      const BenchAllocator &a = allocators[i];
      if (!bench_listed(only_alloc, a.name) || !a.supports(c)) continue;
      auto t0 = std::chrono::steady_clock::now();
      BenchChildResult r = bench_child_run(a.name, c, timeout_s * bench_case_weight(c));
      bench_report_child(out, a.name, c, r);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      fprintf(stderr, "%-6s %-10s %-7s %8ld  %.1f s%s\n", a.name, c.bench.c_str(), c.config.c_str(),
              c.param, s, r.timed_out ? "  TIMEOUT" : "");
    }
  }
  if (out != stdout) fclose(out);
  return 0;
}
