/* SPDX-License-Identifier: Apache-2.0 */
/* manymalloc cpu: process and thread start and exit.
 *
 * Nothing here allocates through malloc, so the first malloc of the process
 * (possibly from the dynamic loader or libc itself, under LD_PRELOAD) can
 * initialise everything.  A thread starts on _mm_heap_empty, whose direct
 * entries all name an empty page: its first malloc falls to the slow path,
 * which gives it a heap; its frees take the remote path until then.  When
 * the thread exits, a pthread key destructor collects the heap (keeping the
 * one warm page per class that a running heap keeps, for the thread that
 * adopts it next), puts the thread back on _mm_heap_empty (so frees from
 * later TLS destructors still work) and orphans the heap.
 *
 * It also counts the threads that have a heap (pages shrink only while few
 * do, purge.c).
 *
 * fork: the allocator holds no lock, so its atfork handler only sets that
 * count in the child, where the forking thread alone runs; it keeps its
 * heap, and blocks of the parent's other threads are freed through the
 * remote path of their (now ownerless) heaps. */
#include <pthread.h>

#include "internal.h"

const mm_page_t _mm_page_empty;

mm_heap_t _mm_heap_empty = {
  .direct = {[0 ... MM_DIRECT_COUNT - 1] = (mm_page_t *)&_mm_page_empty},
  .direct_wide = {[0 ... MM_DIRECT_WIDE_COUNT - 1] = (mm_page_t *)&_mm_page_empty},
};

__thread mm_heap_t *_mm_heap_tls __attribute__((tls_model("initial-exec"))) = &_mm_heap_empty;

/* Set once the thread's heap was torn down, so that frees from later TLS
 * destructors do not give the dying thread a new heap. */
static __thread bool mm_thread_exited __attribute__((tls_model("initial-exec")));

/* Threads that have a heap now (purge.c shrinks pages only while few do). */
static uintptr_t mm_threads;

static pthread_once_t mm_process_once = PTHREAD_ONCE_INIT;
static pthread_key_t mm_thread_key;

static void mm_thread_done(void *value) {
  mm_heap_t *heap = value;
  mm_thread_exited = true;
  _mm_heap_collect(heap, false);
  _mm_heap_tls = &_mm_heap_empty;
  _mm_heap_release(heap);
  mm_atomic_fetch_add(&mm_threads, (uintptr_t)-1);
}

/* In a child only the forking thread runs. */
static void mm_fork_child(void) {
  mm_atomic_store_relaxed(&mm_threads, _mm_heap_tls != &_mm_heap_empty);
}

static void mm_process_init(void) {
  _mm_options_init();
  _mm_checked_init();
  _mm_segment_cache_init();
  _mm_heaps_init();
  pthread_key_create(&mm_thread_key, mm_thread_done);
}

/* Gives the calling thread a heap; NULL (errno ENOMEM) when there is no
 * memory for one, in which case the thread stays on _mm_heap_empty. */
mm_heap_t *_mm_thread_init(void) {
  pthread_once(&mm_process_once, mm_process_init);
  mm_heap_t *heap = _mm_heap_acquire();
  if (heap == NULL) return NULL;
  _mm_heap_tls = heap;
  pthread_setspecific(mm_thread_key, heap);
  mm_atomic_fetch_add(&mm_threads, 1);
  return heap;
}

/* Whether at most MANYMALLOC_SHRINK_THREADS threads have a heap now: only
 * then do pages shrink (purge.c). */
bool _mm_few_threads(void) {
  return mm_atomic_load_relaxed(&mm_threads) <= _mm_options.shrink_threads;
}

/* A heap for a thread whose first call is a free; NULL after its exit.
 * It adopts like any other: threads that free first and then malloc (a
 * generation taking over its predecessor's blocks) must find the
 * orphans' memory. */
mm_heap_t *_mm_thread_init_on_free(void) {
  return mm_thread_exited ? NULL : _mm_thread_init();
}

/* Also at load time, so that options (checked mode) hold even for a free
 * that comes before the first malloc. The atfork handler is registered
 * here, not in mm_process_init: glibc may allocate for it, and a malloc
 * from inside the first malloc's pthread_once would wait for itself. */
__attribute__((constructor)) static void mm_process_start(void) {
  pthread_once(&mm_process_once, mm_process_init);
  pthread_atfork(NULL, NULL, mm_fork_child);
}

__attribute__((destructor)) static void mm_process_done(void) {
  if (_mm_options.verbose) mm_stats_print(stderr);
}

/* Everything free that the OS can take: the calling thread's empty pages
 * and segments, the resident memory of its free page slots and free span
 * runs (of 64 KiB and more), and the process's cached segments and
 * mappings.  Free blocks inside pages in use stay (the heap's shrinking at
 * its peak gives those back). */
MM_EXPORT size_t mm_collect(void) {
  size_t before = _mm_os_released_by_thread;
  mm_heap_t *heap = _mm_heap_tls;
  if (heap != &_mm_heap_empty) _mm_heap_collect(heap, true);
  _mm_purge_caches();
  return _mm_os_released_by_thread - before;
}
