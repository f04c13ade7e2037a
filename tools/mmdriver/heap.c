/* mmdriver: probing the allocator serving this run (see heap.h). */
#define _GNU_SOURCE
#include "heap.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

/* Same layout as mm_stats_t in include/manymalloc/manymalloc.h; the driver
 * does not include it so that it builds and runs without manymalloc. */
typedef struct heap_mm_stats_s {
  size_t bytes_in_use, bytes_in_use_peak, bytes_mapped, bytes_mapped_peak, segments, large_blocks;
} heap_mm_stats_t;

static struct {
  const char *allocator;
  void (*mm_stats_get)(heap_mm_stats_t *);
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
  return heap.mm_stats_get ? "mm_stats bytes_mapped" : "RSS";
}

/* Resident bytes from /proc/self/statm, read without stdio so that sampling
 * does not allocate through the allocator being measured. */
static size_t heap_rss(void) {
  char buf[128];
  int fd = open("/proc/self/statm", O_RDONLY);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  char *p = buf;
  strtoull(p, &p, 10);                   /* total program size */
  return (size_t)strtoull(p, NULL, 10) * (size_t)sysconf(_SC_PAGESIZE);
}

size_t heap_footprint(void) {
  if (heap.mm_stats_get == NULL) return heap_rss();
  heap_mm_stats_t s;
  heap.mm_stats_get(&s);
  return s.bytes_mapped;
}

size_t heap_footprint_base(void) {
  if (heap.mm_stats_get == NULL) return heap_rss();
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
