/* SPDX-License-Identifier: Apache-2.0 */
/* errors.c: sys_strerror, the last error and the one-line error report. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "errors.h"

static char who_am_i[32] = "dist";
static bool quiet_errors;
static int last_error;

static const char *const error_names[] = {
    [0] = "success",
    [-SYS_ERR_ARG] = "invalid argument",
    [-SYS_ERR_NOMEM] = "out of memory: the global address space is exhausted",
    [-SYS_ERR_NOREGION] = "no such region (never allocated, or freed)",
    [-SYS_ERR_NOTGLOBAL] = "pointer outside the global address space",
    [-SYS_ERR_NOTOBJECT] = "pointer is not the start of an object",
    [-SYS_ERR_FREED] = "object is not live (already freed, or never allocated)",
    [-SYS_ERR_TRUNCATE] = "receive arrays too small for what arrived",
    [-SYS_ERR_PEER] = "no such worker, or the peer's matching call failed",
    [-SYS_ERR_NOIDS] = "region IDs exhausted",
    [-SYS_ERR_STATE] = "not initialized, finalized, or called on a scheduler",
    [-SYS_ERR_MPI] = "an MPI call failed",
    [-SYS_ERR_ROOT] = "the root region cannot be freed",
};

const char *sys_strerror(int code) {
  if (code > 0 || -code >= (int)(sizeof error_names / sizeof *error_names)) return "unknown error code";
  return error_names[-code];
}

int sys_last_error(void) { return last_error; }

void mmd_errors_init(const char *who, bool quiet) {
  snprintf(who_am_i, sizeof who_am_i, "%s", who);
  quiet_errors = quiet;
}

int mmd_set_error(int code) {
  last_error = code;
  return code;
}

int mmd_fail(int code, const char *call, const char *argfmt, ...) {
  last_error = code;
  if (quiet_errors) return code;
  char arg[160];
  va_list ap;
  va_start(ap, argfmt);
  vsnprintf(arg, sizeof arg, argfmt, ap);
  va_end(ap);
  fprintf(stderr, "manymalloc: %s: %s(%s): %s\n", who_am_i, call, arg, sys_strerror(code));
  return code;
}
