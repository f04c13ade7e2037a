/* SPDX-License-Identifier: Apache-2.0 */
/* bench/dist/out.h: where the dist benchmarks write: the output folder,
 * made if missing, and its files; a failure ends the program with a line. */
#ifndef MMD_BENCH_OUT_H
#define MMD_BENCH_OUT_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static inline void bench_out_dir(const char *prog, const char *dir) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "%s: cannot create %s: %s\n", prog, dir, strerror(errno));
    exit(1);
  }
}

static inline FILE *bench_out_open(const char *prog, const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    fprintf(stderr, "%s: cannot write %s: %s\n", prog, path, strerror(errno));
    exit(1);
  }
  return f;
}

static inline void bench_out_close(const char *prog, FILE *f, const char *name) {
  if (ferror(f) | fclose(f)) {
    fprintf(stderr, "%s: writing %s failed\n", prog, name);
    exit(1);
  }
}

#endif
