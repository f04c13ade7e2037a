/* SPDX-License-Identifier: Apache-2.0 */
// Child processes for the tests: see subprocess.h.
#include "subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>

#include <cerrno>
#include <string>
#include <vector>

extern char **environ;

namespace mmtest {

// The variables a test decides for its child, never inherited from the caller.
static bool env_is_controlled(const char *entry) {
  return strncmp(entry, "MANYMALLOC_", 11) == 0 || strncmp(entry, "LD_PRELOAD=", 11) == 0;
}

static std::vector<std::string> child_environment(const std::vector<std::string> &extra) {
  std::vector<std::string> env;
  for (char **e = environ; *e != nullptr; e++)
    if (!env_is_controlled(*e)) env.emplace_back(*e);
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

static std::vector<char *> c_strings(std::vector<std::string> &strings) {
  std::vector<char *> out;
  for (std::string &s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Reads both pipes to their end, whichever the child fills first.
static void drain(int out_fd, int err_fd, std::string &out, std::string &err) {
  struct pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string *sinks[2] = {&out, &err};
  int open_fds = 2;
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (int i = 0; i < 2; i++) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, size_t(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        open_fds--;
      }
    }
  }
}

ProgramResult run_program(const std::vector<std::string> &argv_in,
                          const std::vector<std::string> &env_extra, unsigned timeout_s) {
  std::vector<std::string> argv_strings = argv_in;
  std::vector<std::string> env_strings = child_environment(env_extra);
  std::vector<char *> argv = c_strings(argv_strings);
  std::vector<char *> envp = c_strings(env_strings);
  ProgramResult result;
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) return result;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    alarm(timeout_s);  // survives exec: a hung program dies by SIGALRM
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  drain(out_pipe[0], err_pipe[0], result.out, result.err);
  if (pid > 0) waitpid(pid, &result.status, 0);
  return result;
}

std::string status_string(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + strsignal(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

}  // namespace mmtest
