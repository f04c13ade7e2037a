/* SPDX-License-Identifier: Apache-2.0 */
/* mmtrace: an LD_PRELOAD tracer that records a program's malloc, calloc,
 * realloc, reallocarray, free and aligned allocations as a malloc-lab trace
 * (.rep) that build/mmdriver replays.
 *
 *   MMTRACE_OUT=/tmp/prog.%p.rep LD_PRELOAD=build/mmtrace.so prog args...
 *
 * Every call is forwarded to the next allocator (dlsym RTLD_NEXT). Live
 * pointers get small ids, reused through a free list so num_ids stays near
 * the peak number of live blocks. A lock covers the forwarded call and its
 * record together, so the trace is a sequential order that really happened.
 * Each process writes its own file (`%p` in MMTRACE_OUT is its pid, default
 * `mmtrace.%p.rep`; a taken name gets `.1`, `.2`, ... before `.rep`); a
 * forked child starts an empty trace; _exit and the exec family flush first.
 * The header (peak live bytes, num_ids, num_ops, weight 1) is rewritten at
 * every flush, so the file is a valid trace even when the process dies. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define TR_EXPORT   __attribute__((visibility("default")))
#define TR_BUF_SIZE (64 * 1024)
#define TR_HEADER_FIELD 21   /* 20 digits and a newline */

/* ---------------------------------------------------------------------------
 * State
 * ------------------------------------------------------------------------- */

typedef struct tr_real_s {
  void *(*malloc)(size_t);
  void  (*free)(void *);
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  void *(*reallocarray)(void *, size_t, size_t);
  int   (*posix_memalign)(void **, size_t, size_t);
  void *(*aligned_alloc)(size_t, size_t);
  void *(*memalign)(size_t, size_t);
  void *(*valloc)(size_t);
  void *(*pvalloc)(size_t);
  int   (*execve)(const char *, char *const[], char *const[]);
  int   (*execv)(const char *, char *const[]);
  int   (*execvp)(const char *, char *const[]);
  int   (*execvpe)(const char *, char *const[], char *const[]);
  void  (*_exit)(int);
} tr_real_t;

typedef struct tr_slot_s {
  uintptr_t ptr;          /* 0 marks an empty slot */
  uint32_t  id;
} tr_slot_t;

static tr_real_t real;

static struct {
  pthread_mutex_t lock;
  int        fd;                 /* -1 until the first record */
  int        off;                /* the file could not be created: run untraced */
  int        flush_always;       /* after the exit flush, write each record at once */
  char       buf[TR_BUF_SIZE];
  size_t     len;
  uint64_t   num_ops, live_bytes, peak_live;
  tr_slot_t *map;                /* pointer -> id, open addressing, linear probing */
  size_t     map_cap, map_count;
  uint64_t  *sizes;              /* requested size of each live id */
  uint32_t  *free_ids;           /* ids to reuse, a stack */
  size_t     ids_cap, num_ids, num_free;
} tr = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

/* Set while this thread is inside the tracer, so that an allocation made by
 * the next allocator or by dlsym on our behalf is forwarded, not recorded. */
static __thread int tr_busy __attribute__((tls_model("initial-exec")));

/* ---------------------------------------------------------------------------
 * Bootstrap: dlsym itself may calloc before the real functions are known
 * ------------------------------------------------------------------------- */

static char   tr_boot_heap[64 * 1024] __attribute__((aligned(64)));
static size_t tr_boot_used;
static int    tr_resolving;

static void *tr_boot_alloc(size_t size) {
  size_t at = (tr_boot_used + 15) & ~(size_t)15;
  if (size > sizeof(tr_boot_heap) - at) return NULL;
  tr_boot_used = at + size;
  return tr_boot_heap + at;   /* static storage: already zero for calloc */
}

static int tr_is_boot(const void *p) {
  return (const char *)p >= tr_boot_heap && (const char *)p < tr_boot_heap + sizeof(tr_boot_heap);
}

#define TR_RESOLVE(name) real.name = (__typeof__(real.name))dlsym(RTLD_NEXT, #name)

/* Returns 0 while the real functions are being looked up (the caller then
 * serves from the boot heap). */
static int tr_resolve(void) {
  if (real.malloc != NULL) return 1;
  if (tr_resolving) return 0;
  tr_resolving = 1;
  TR_RESOLVE(free); TR_RESOLVE(calloc); TR_RESOLVE(realloc); TR_RESOLVE(reallocarray);
  TR_RESOLVE(posix_memalign); TR_RESOLVE(aligned_alloc); TR_RESOLVE(memalign);
  TR_RESOLVE(valloc); TR_RESOLVE(pvalloc);
  TR_RESOLVE(execve); TR_RESOLVE(execv); TR_RESOLVE(execvp); TR_RESOLVE(execvpe);
  TR_RESOLVE(_exit);
  TR_RESOLVE(malloc);   /* last: its presence means the rest is ready */
  tr_resolving = 0;
  return 1;
}

/* ---------------------------------------------------------------------------
 * The tracer's own memory, mapped so it never recurses into malloc
 * ------------------------------------------------------------------------- */

static void *tr_os_resize(void *p, size_t old_size, size_t new_size) {
  void *q = p ? mremap(p, old_size, new_size, MREMAP_MAYMOVE)
              : mmap(NULL, new_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (q == MAP_FAILED) abort();
  return q;
}

/* ---------------------------------------------------------------------------
 * Pointer map and ids
 * ------------------------------------------------------------------------- */

static size_t tr_map_home(uintptr_t ptr) {
  return (size_t)((ptr >> 4) * 0x9e3779b97f4a7c15ULL) & (tr.map_cap - 1);
}

/* The slot holding `ptr`, or the empty slot where it would go. */
static tr_slot_t *tr_map_slot(uintptr_t ptr) {
  size_t i = tr_map_home(ptr);
  while (tr.map[i].ptr != 0 && tr.map[i].ptr != ptr) i = (i + 1) & (tr.map_cap - 1);
  return &tr.map[i];
}

static void tr_map_grow(void) {
  tr_slot_t *old = tr.map;
  size_t old_cap = tr.map_cap;
  tr.map_cap = old_cap ? 2 * old_cap : 4096;
  tr.map = tr_os_resize(NULL, 0, tr.map_cap * sizeof(tr_slot_t));
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].ptr != 0) *tr_map_slot(old[i].ptr) = old[i];
  if (old != NULL) munmap(old, old_cap * sizeof(tr_slot_t));
}

static void tr_map_put(uintptr_t ptr, uint32_t id) {
  if (2 * (tr.map_count + 1) > tr.map_cap) tr_map_grow();
  *tr_map_slot(ptr) = (tr_slot_t){.ptr = ptr, .id = id};
  tr.map_count++;
}

/* Removes a present slot, shifting later entries of its probe run back so
 * that lookups never need tombstones. */
static void tr_map_remove(tr_slot_t *hole) {
  size_t mask = tr.map_cap - 1, i = (size_t)(hole - tr.map), j = i;
  for (;;) {
    j = (j + 1) & mask;
    if (tr.map[j].ptr == 0) break;
    size_t home = tr_map_home(tr.map[j].ptr);
    /* Move j into the hole unless its home lies cyclically in (i, j]. */
    if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
      tr.map[i] = tr.map[j];
      i = j;
    }
  }
  tr.map[i].ptr = 0;
  tr.map_count--;
}

static uint32_t tr_id_take(uint64_t size) {
  uint32_t id;
  if (tr.num_free > 0) {
    id = tr.free_ids[--tr.num_free];
  } else {
    if (tr.num_ids == tr.ids_cap) {
      size_t cap = tr.ids_cap ? 2 * tr.ids_cap : 4096;
      tr.sizes    = tr_os_resize(tr.sizes, tr.ids_cap * sizeof(uint64_t), cap * sizeof(uint64_t));
      tr.free_ids = tr_os_resize(tr.free_ids, tr.ids_cap * sizeof(uint32_t), cap * sizeof(uint32_t));
      tr.ids_cap  = cap;
    }
    id = (uint32_t)tr.num_ids++;
  }
  tr.sizes[id] = size;
  return id;
}

static void tr_id_release(uint32_t id) {
  tr.free_ids[tr.num_free++] = id;
}

/* ---------------------------------------------------------------------------
 * Output
 * ------------------------------------------------------------------------- */

static char *tr_utoa(char *out, uint64_t v) {
  char tmp[20];
  int n = 0;
  do tmp[n++] = (char)('0' + v % 10); while ((v /= 10) != 0);
  while (n > 0) *out++ = tmp[--n];
  return out;
}

/* Returns 0 when the bytes could not all be written. */
static int tr_write_all(const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(tr.fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return 0;
    p += w;
    n -= (size_t)w;
  }
  return 1;
}

/* The 4 header lines, each padded to a fixed width so it can be rewritten in place. */
static void tr_write_header(void) {
  uint64_t fields[4] = {tr.peak_live, tr.num_ids, tr.num_ops, 1};
  char head[4 * TR_HEADER_FIELD];
  memset(head, ' ', sizeof(head));
  for (int i = 0; i < 4; i++) {
    tr_utoa(head + i * TR_HEADER_FIELD, fields[i]);
    head[i * TR_HEADER_FIELD + TR_HEADER_FIELD - 1] = '\n';
  }
  if (pwrite(tr.fd, head, sizeof(head), 0) != (ssize_t)sizeof(head)) return;
}

/* Builds the output name: `%p` replaced by the pid, `.k` before a final
 * `.rep` when k > 0. */
static void tr_path(char *out, size_t cap, unsigned k) {
  const char *pat = getenv("MMTRACE_OUT");
  if (pat == NULL || *pat == '\0') pat = "mmtrace.%p.rep";
  char *o = out, *end = out + cap - 32;
  for (; *pat && o < end; pat++) {
    if (pat[0] == '%' && pat[1] == 'p') {
      o = tr_utoa(o, (uint64_t)getpid());
      pat++;
    } else {
      *o++ = *pat;
    }
  }
  *o = '\0';
  if (k == 0) return;
  size_t n = (size_t)(o - out);
  int rep = n >= 4 && strcmp(o - 4, ".rep") == 0;
  o -= rep ? 4 : 0;
  *o++ = '.';
  o = tr_utoa(o, k);
  strcpy(o, rep ? ".rep" : "");
}

/* Creates this process's trace file; a program whose trace cannot be
 * written still runs, untraced, after one line on stderr. */
static int tr_open(void) {
  static const char why[] = "mmtrace: cannot create the trace file (MMTRACE_OUT); not tracing\n";
  char path[4096];
  for (unsigned k = 0; !tr.off && tr.fd < 0 && k < 1000; k++) {
    tr_path(path, sizeof(path), k);
    tr.fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (tr.fd < 0 && errno != EEXIST) break;
  }
  if (tr.fd < 0) {
    ssize_t told = tr.off ? 0 : write(2, why, sizeof(why) - 1);
    (void)told;   /* nothing more to do if even stderr fails */
    tr.off = 1;
    return 0;
  }
  tr_write_header();
  lseek(tr.fd, 4 * TR_HEADER_FIELD, SEEK_SET);
  return 1;
}

/* A failed write keeps the buffer: a vfork child (which shares our memory
 * but may have closed our descriptor) flushes in the exec wrappers, and the
 * parent must still own what it recorded. */
static void tr_flush(void) {
  if (tr.fd < 0 || !tr_write_all(tr.buf, tr.len)) return;
  tr.len = 0;
  tr_write_header();
}

/* Appends one request line: `k id` or `k id size`. */
static void tr_emit(char kind, uint32_t id, uint64_t size, int has_size) {
  if (tr.fd < 0 && !tr_open()) return;
  if (tr.len + 48 > sizeof(tr.buf)) tr_flush();
  char *o = tr.buf + tr.len;
  *o++ = kind;
  *o++ = ' ';
  o = tr_utoa(o, id);
  if (has_size) {
    *o++ = ' ';
    o = tr_utoa(o, size);
  }
  *o++ = '\n';
  tr.len = (size_t)(o - tr.buf);
  tr.num_ops++;
  if (tr.flush_always) tr_flush();
}

/* ---------------------------------------------------------------------------
 * Recording (lock held)
 * ------------------------------------------------------------------------- */

static void tr_record_free(void *p) {
  if (p == NULL || tr.map_cap == 0) return;
  tr_slot_t *s = tr_map_slot((uintptr_t)p);
  if (s->ptr == 0) return;   /* never seen: allocated before tracing or by another route */
  uint32_t id = s->id;
  tr_emit('f', id, 0, 0);
  tr.live_bytes -= tr.sizes[id];
  tr_map_remove(s);
  tr_id_release(id);
}

static void tr_record_alloc(void *p, uint64_t size) {
  if (p == NULL) return;
  /* A pointer we still think live was freed behind our back (inside libc);
   * retire it so the trace stays consistent. */
  tr_record_free(p);
  uint32_t id = tr_id_take(size);
  tr_map_put((uintptr_t)p, id);
  tr_emit('a', id, size, 1);
  tr.live_bytes += size;
  if (tr.live_bytes > tr.peak_live) tr.peak_live = tr.live_bytes;
}

static void tr_record_realloc(void *old, void *p, uint64_t size) {
  tr_slot_t *s = (old && tr.map_cap) ? tr_map_slot((uintptr_t)old) : NULL;
  if (s == NULL || s->ptr == 0) {
    tr_record_alloc(p, size);
  } else if (p == NULL) {
    if (size == 0) tr_record_free(old);   /* realloc(p, 0) freed p; a failed realloc kept it */
  } else {
    uint32_t id = s->id;
    if (p != old) {
      tr_map_remove(s);
      tr_record_free(p);
      tr_map_put((uintptr_t)p, id);
    }
    tr_emit('r', id, size, 1);
    tr.live_bytes += size - tr.sizes[id];
    tr.sizes[id] = size;
    if (tr.live_bytes > tr.peak_live) tr.peak_live = tr.live_bytes;
  }
}

/* Brackets a forwarded call: returns 0 when the call must not be recorded
 * (inside the tracer already, or before the real functions are known). */
static int tr_enter(void) {
  if (tr_busy || !tr_resolve()) return 0;
  tr_busy = 1;
  pthread_mutex_lock(&tr.lock);
  return 1;
}

static void tr_leave(void) {
  pthread_mutex_unlock(&tr.lock);
  tr_busy = 0;
}

/* ---------------------------------------------------------------------------
 * The interposed allocation functions
 * ------------------------------------------------------------------------- */

TR_EXPORT void *malloc(size_t size) {
  if (!tr_enter()) return real.malloc ? real.malloc(size) : tr_boot_alloc(size);
  void *p = real.malloc(size);
  tr_record_alloc(p, size);
  tr_leave();
  return p;
}

TR_EXPORT void *calloc(size_t count, size_t size) {
  if (!tr_enter()) return real.calloc ? real.calloc(count, size) : tr_boot_alloc(count * size);
  void *p = real.calloc(count, size);
  tr_record_alloc(p, (uint64_t)count * size);
  tr_leave();
  return p;
}

TR_EXPORT void free(void *p) {
  if (p == NULL || tr_is_boot(p)) return;
  if (!tr_enter()) {
    real.free(p);
    return;
  }
  tr_record_free(p);   /* before the real free: once freed, another thread may get p */
  real.free(p);
  tr_leave();
}

/* A boot-heap block moves to the real heap; its size is unknown, so copy
 * what the boot heap can hold from it. */
static void *tr_realloc_boot(void *old, size_t size) {
  void *p = malloc(size);
  size_t room = (size_t)(tr_boot_heap + sizeof(tr_boot_heap) - (char *)old);
  if (p != NULL) memcpy(p, old, size < room ? size : room);
  return p;
}

TR_EXPORT void *realloc(void *old, size_t size) {
  if (tr_is_boot(old)) return tr_realloc_boot(old, size);
  if (!tr_enter()) return real.realloc ? real.realloc(old, size) : tr_boot_alloc(size);
  void *p = real.realloc(old, size);
  tr_record_realloc(old, p, size);
  tr_leave();
  return p;
}

TR_EXPORT void *reallocarray(void *old, size_t count, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc(old, bytes);
}

TR_EXPORT int posix_memalign(void **out, size_t align, size_t size) {
  if (!tr_enter()) return real.posix_memalign(out, align, size);
  int err = real.posix_memalign(out, align, size);
  if (err == 0) tr_record_alloc(*out, size);
  tr_leave();
  return err;
}

/* aligned_alloc, memalign, valloc and pvalloc: recorded as plain `a`, since
 * the trace format has no alignment. */
#define TR_ALIGNED(name, params, args, size)         \
  TR_EXPORT void *name params {                      \
    if (!tr_enter()) return real.name args;          \
    void *p = real.name args;                        \
    tr_record_alloc(p, size);                        \
    tr_leave();                                      \
    return p;                                        \
  }
TR_ALIGNED(aligned_alloc, (size_t align, size_t size), (align, size), size)
TR_ALIGNED(memalign, (size_t align, size_t size), (align, size), size)
TR_ALIGNED(valloc, (size_t size), (size), size)
TR_ALIGNED(pvalloc, (size_t size), (size), size)

/* ---------------------------------------------------------------------------
 * Process life: exit, fork, exec
 * ------------------------------------------------------------------------- */

static void tr_fork_prepare(void) {
  pthread_mutex_lock(&tr.lock);
  tr_flush();
}

static void tr_fork_parent(void) {
  pthread_mutex_unlock(&tr.lock);
}

/* The child starts an empty trace in its own file: blocks it inherited are
 * unknown to it, so their frees are skipped and their reallocs become `a`. */
static void tr_fork_child(void) {
  if (tr.fd >= 0) close(tr.fd);
  tr.fd = -1;
  tr.len = 0;
  tr.num_ops = tr.live_bytes = tr.peak_live = 0;
  tr.num_ids = tr.num_free = 0;
  if (tr.map != NULL) memset(tr.map, 0, tr.map_cap * sizeof(tr_slot_t));
  tr.map_count = 0;
  pthread_mutex_init(&tr.lock, NULL);
}

__attribute__((constructor)) static void tr_init(void) {
  tr_resolve();
  pthread_atfork(tr_fork_prepare, tr_fork_parent, tr_fork_child);
}

__attribute__((destructor)) static void tr_fini(void) {
  pthread_mutex_lock(&tr.lock);
  tr_flush();
  tr.flush_always = 1;   /* later destructors and exit handlers may still allocate */
  pthread_mutex_unlock(&tr.lock);
}

/* _exit and the exec family end the image without running destructors. */
static void tr_flush_locked(void) {
  pthread_mutex_lock(&tr.lock);
  tr_flush();
  pthread_mutex_unlock(&tr.lock);
}

TR_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
  tr_resolve();
  tr_flush_locked();
  return real.execve(path, argv, envp);
}

TR_EXPORT int execv(const char *path, char *const argv[]) {
  tr_resolve();
  tr_flush_locked();
  return real.execv(path, argv);
}

TR_EXPORT int execvp(const char *file, char *const argv[]) {
  tr_resolve();
  tr_flush_locked();
  return real.execvp(file, argv);
}

TR_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
  tr_resolve();
  tr_flush_locked();
  return real.execvpe(file, argv, envp);
}

TR_EXPORT void _exit(int status) {
  tr_resolve();
  tr_flush_locked();
  real._exit(status);
  __builtin_unreachable();
}
