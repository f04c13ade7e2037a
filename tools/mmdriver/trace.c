/* SPDX-License-Identifier: Apache-2.0 */
/* mmdriver: reading and checking malloc-lab traces (see trace.h).
 *
 * The file is mapped and parsed in place with a hand-written scanner: traces
 * run to millions of lines, and stdio would allocate through the allocator
 * under test. */
#define _GNU_SOURCE
#include "trace.h"
#include "mapping.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct scan_s {
  const char *p, *end;
  const char *path;
  size_t      line;
} scan_t;

/* Per-id liveness while reading, to reject traces that free a dead id. */
typedef struct liveness_s {
  uint8_t *live;
  size_t   cap;
} liveness_t;

static int trace_error(const scan_t *s, const char *why) {
  fprintf(stderr, "%s:%zu: %s\n", s->path, s->line, why);
  return 0;
}

static void scan_blanks(scan_t *s) {
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\r')) s->p++;
}

/* Skips blank lines; returns 0 at the end of the file. */
static int scan_next_line(scan_t *s) {
  for (;;) {
    scan_blanks(s);
    if (s->p >= s->end) return 0;
    if (*s->p != '\n') return 1;
    s->p++;
    s->line++;
  }
}

static int scan_uint(scan_t *s, uint64_t *out) {
  scan_blanks(s);
  if (s->p >= s->end || !isdigit((unsigned char)*s->p)) return 0;
  uint64_t v = 0;
  while (s->p < s->end && isdigit((unsigned char)*s->p)) {
    uint64_t d = (uint64_t)(*s->p++ - '0');
    if (v > (UINT64_MAX - d) / 10) return 0;
    v = v * 10 + d;
  }
  *out = v;
  return 1;
}

static int scan_end_of_line(scan_t *s) {
  scan_blanks(s);
  if (s->p < s->end && *s->p != '\n') return 0;
  if (s->p < s->end) s->p++;
  s->line++;
  return 1;
}

/* The header's num_ops only sizes the first ops array: the counts are taken
 * from the requests themselves, so a wrong header costs nothing. */
static int trace_read_header(scan_t *s, size_t *ops_hint) {
  uint64_t h[4];
  for (int i = 0; i < 4; i++) {
    if (!scan_next_line(s) || !scan_uint(s, &h[i]) || !scan_end_of_line(s))
      return trace_error(s, "expected 4 integer header lines");
  }
  *ops_hint = h[2] < (1u << 20) ? (size_t)h[2] : (1u << 20);
  return 1;
}

static void liveness_reserve(liveness_t *l, size_t id) {
  if (id < l->cap) return;
  size_t cap = l->cap ? l->cap : 1024;
  while (cap <= id) cap *= 2;
  l->live = mapping_resize(l->live, l->cap, cap);
  l->cap  = cap;
}

/* Parses one request line into `op`, checking it against the ids' liveness. */
static int trace_read_op(scan_t *s, liveness_t *l, trace_op_t *op) {
  char k = *s->p++;
  uint64_t id, size = 0;
  if (k != 'a' && k != 'r' && k != 'f') return trace_error(s, "unknown request (expected a, r or f)");
  if (!scan_uint(s, &id) || id >= UINT32_MAX) return trace_error(s, "bad id");
  if (k != 'f' && !scan_uint(s, &size)) return trace_error(s, "bad size");
  liveness_reserve(l, (size_t)id);
  if (k == 'a' && l->live[id]) return trace_error(s, "allocation of an id that is still live");
  if (k == 'f' && !l->live[id]) return trace_error(s, "free of an id that is not live");
  if (!scan_end_of_line(s)) return trace_error(s, "trailing characters");
  l->live[id] = (k != 'f');
  op->kind = k == 'a' ? TRACE_ALLOC : k == 'r' ? TRACE_REALLOC : TRACE_FREE;
  op->id   = (uint32_t)id;
  op->size = size;
  return 1;
}

static int trace_parse(trace_t *t, scan_t *s) {
  size_t cap;
  if (!trace_read_header(s, &cap)) return 0;
  cap = cap ? cap : 1024;
  t->ops = mapping_alloc(cap * sizeof(trace_op_t));
  liveness_t l = {0};
  int ok = 1;
  while (ok && scan_next_line(s)) {
    if (t->num_ops == cap) {
      t->ops = mapping_resize(t->ops, cap * sizeof(trace_op_t), 2 * cap * sizeof(trace_op_t));
      cap *= 2;
    }
    trace_op_t *op = &t->ops[t->num_ops];
    ok = trace_read_op(s, &l, op);
    if (ok) t->num_ops++;
    if (ok && op->id >= t->num_ids) t->num_ids = (size_t)op->id + 1;
  }
  mapping_free(l.live, l.cap);
  /* Keep the mapping's real size recoverable by trace_unload. */
  t->ops = mapping_resize(t->ops, cap * sizeof(trace_op_t), (t->num_ops ? t->num_ops : 1) * sizeof(trace_op_t));
  return ok;
}

int trace_load(trace_t *t, const char *path) {
  memset(t, 0, sizeof(*t));
  t->path = path;
  int fd = open(path, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    perror(path);
    if (fd >= 0) close(fd);
    return 0;
  }
  size_t len = (size_t)st.st_size;
  const char *text = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : "";
  close(fd);
  if (text == MAP_FAILED) {
    perror(path);
    return 0;
  }
  scan_t s = {.p = text, .end = text + len, .path = path, .line = 1};
  int ok = trace_parse(t, &s);
  if (len) munmap((void *)text, len);
  if (!ok) trace_unload(t);
  return ok;
}

void trace_unload(trace_t *t) {
  mapping_free(t->ops, (t->num_ops ? t->num_ops : 1) * sizeof(trace_op_t));
  t->ops = NULL;
  t->num_ops = 0;
}
