/* mmdriver: probing the allocator serving this run (see heap.h). */
#define _GNU_SOURCE
#include "heap.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Same layout as mm_stats_t in include/manymalloc/manymalloc.h; the driver
 * does not include it so that it builds and runs without manymalloc. */
typedef struct heap_mm_stats_s {
  size_t bytes_in_use, bytes_in_use_peak, bytes_mapped, bytes_mapped_peak, segments, large_blocks;
} heap_mm_stats_t;

static struct {
  const char *allocator;
  void (*mm_stats_get)(heap_mm_stats_t *);
  long faults;   /* page faults at the last heap_footprint_moved */
} heap;

static const void *heap_object_of(const void *sym) {
  Dl_info info;
  return (sym != NULL && dladdr(sym, &info) != 0) ? info.dli_fbase : NULL;
}

void heap_probe(int force_rss) {
  void *malloc_sym = dlsym(RTLD_DEFAULT, "malloc");
  Dl_info info;
  heap.allocator = (malloc_sym && dladdr(malloc_sym, &info) && info.dli_fname) ? info.dli_fname : "unknown";
  /* Trust manymalloc's counters only when manymalloc also serves malloc:
   * under a preloaded allocator they would count nothing. */
  void *stats = dlsym(RTLD_DEFAULT, "mm_stats_get");
  if (!force_rss && stats != NULL && heap_object_of(stats) == heap_object_of(malloc_sym))
    heap.mm_stats_get = (void (*)(heap_mm_stats_t *))stats;
}

const char *heap_allocator(void) { return heap.allocator; }

const char *heap_footprint_method(void) {
  return heap.mm_stats_get ? "mm_stats bytes_mapped" : "anonymous RSS";
}

/* Resident anonymous bytes, exact: /proc/self/smaps_rollup walks the page
 * tables. statm and status read the kernel's RSS counters, kept per CPU and
 * folded in batches, so they were off by up to tens of pages; and they
 * count file pages too, of which each first call into a shared library
 * maps up to 16 (fault-around), differently with each run's load address.
 * Every allocator's heap is anonymous memory. Read without stdio, so that
 * sampling does not allocate through the allocator measured. */
static size_t heap_rss(void) {
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
static long heap_faults(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt + u.ru_majflt;
}

bool heap_footprint_moved(void) {
  if (heap.mm_stats_get != NULL) return true;
  long faults = heap_faults();
  if (faults == heap.faults) return false;
  heap.faults = faults;
  return true;
}

size_t heap_footprint(void) {
  if (heap.mm_stats_get == NULL) return heap_rss();
  heap_mm_stats_t s;
  heap.mm_stats_get(&s);
  return s.bytes_mapped;
}

size_t heap_footprint_base(void) {
  if (heap.mm_stats_get == NULL) {
    heap.faults = heap_faults();
    return heap_rss();
  }
  heap_mm_stats_t s;
  heap.mm_stats_get(&s);
  return s.bytes_in_use;
}

void heap_release(void) {
  void (*mm_collect)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "mm_collect");
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
