/* SPDX-License-Identifier: Apache-2.0 */
/* mmdriver: probing the allocator serving this run (see allocator.h). */
#define _GNU_SOURCE
#include "allocator.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static struct {
  const char *allocator;
  long faults;   /* page faults at the last allocator_footprint_moved */
} probed;

void allocator_probe(void) {
  void *malloc_sym = dlsym(RTLD_DEFAULT, "malloc");
  Dl_info info;
  probed.allocator = (malloc_sym && dladdr(malloc_sym, &info) && info.dli_fname) ? info.dli_fname : "unknown";
}

const char *allocator_path(void) { return probed.allocator; }

const char *allocator_footprint_method(void) { return "anonymous RSS"; }

/* Resident anonymous bytes, exact: /proc/self/smaps_rollup walks the page
 * tables. statm and status read the kernel's RSS counters, kept per CPU and
 * folded in batches, so they were off by up to tens of pages; and they
 * count file pages too, of which each first call into a shared library
 * maps up to 16 (fault-around), differently with each run's load address.
 * Every allocator's heap is anonymous memory. Read without stdio, so that
 * sampling does not allocate through the allocator measured. */
size_t allocator_footprint(void) {
  char buf[4096];
  int fd = open("/proc/self/smaps_rollup", O_RDONLY);
  if (fd < 0) return 0;
  size_t len = 0;
  ssize_t n;
  while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0) len += (size_t)n;
  close(fd);
  buf[len] = '\0';
  const char *anon = strstr(buf, "\nAnonymous:");
  return anon ? (size_t)strtoull(anon + 11, NULL, 10) * 1024 : 0;
}

/* Page faults of the process so far: the resident set grows only by them. */
static long allocator_faults(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt + u.ru_majflt;
}

bool allocator_footprint_moved(void) {
  long faults = allocator_faults();
  if (faults == probed.faults) return false;
  probed.faults = faults;
  return true;
}

size_t allocator_footprint_base(void) {
  probed.faults = allocator_faults();
  return allocator_footprint();
}

void allocator_release(void) {
  size_t (*mm_collect)(void) = (size_t (*)(void))dlsym(RTLD_DEFAULT, "mm_collect");
  int (*trim)(size_t) = (int (*)(size_t))dlsym(RTLD_DEFAULT, "malloc_trim");
  int (*mallctl)(const char *, void *, size_t *, void *, size_t) =
      (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "mallctl");
  void (*mi_collect)(bool) = (void (*)(bool))dlsym(RTLD_DEFAULT, "mi_collect");
  void (*tc_release)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "MallocExtension_ReleaseFreeMemory");
  if (mm_collect) mm_collect();
  if (trim) trim(0);
  if (mallctl) mallctl("arena.4096.purge", NULL, NULL, NULL, 0);   /* 4096 = MALLCTL_ARENAS_ALL */
  if (mi_collect) mi_collect(true);
  if (tc_release) tc_release();
}
