/* SPDX-License-Identifier: Apache-2.0 */
// LD_PRELOAD: real programs run with libmanymalloc.so preloaded give the same
// results as without it, and it is manymalloc that serves their malloc.
#include <manymalloc/manymalloc.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/subprocess.h"

using namespace mmtest;

namespace {

// Allocation-heavy Python with every object allocated through malloc
// (PYTHONMALLOC=malloc); stdout is a checksum of the work, stderr says
// whether manymalloc's counters saw Python's allocations.  Its argument is
// the size of mm_stats_t in words, so that mm_stats_get writes inside the
// buffer it is given (a buffer one field short, from before large_bytes,
// let it overwrite Python's heap: the interpreter crashed at exit in some
// environments).
const char kPythonWorkload[] = R"PY(
import ctypes, hashlib, random, sys
random.seed(12345)
h = hashlib.sha256()
table = {}
for i in range(150000):
    key = 'k%d' % random.randrange(40000)
    table[key] = [random.random() for _ in range(random.randrange(1, 10))]
    if i % 3 == 0:
        table.pop('k%d' % random.randrange(40000), None)
    if i % 5000 == 0:
        h.update(repr(sorted(table)[:50]).encode())
blobs = [bytes(random.randrange(256) for _ in range(random.randrange(1, 3000))) for _ in range(1500)]
big = [bytearray(random.randrange(100000, 2000000)) for _ in range(20)]
h.update(b''.join(blobs))
h.update(''.join(str(x) for x in range(100000)).encode())
h.update(str(sum(len(b) for b in big)).encode())
print(len(table), h.hexdigest())

class Stats(ctypes.Structure):  # mm_stats_t: its size comes from the test, its first word is bytes_in_use
    _fields_ = [('in_use', ctypes.c_size_t)] + [('word%d' % i, ctypes.c_size_t) for i in range(1, int(sys.argv[1]))]
process = ctypes.CDLL(None)
counted = False
if hasattr(process, 'mm_stats_get'):
    before, after = Stats(), Stats()
    process.mm_stats_get(ctypes.byref(before))
    block = bytearray(8 << 20)
    process.mm_stats_get(ctypes.byref(after))
    counted = after.in_use >= before.in_use + (8 << 20)
sys.stderr.write('mm_stats_get counted malloc: %s\n' % ('yes' if counted else 'no'))
)PY";

const std::string kStatsWords = std::to_string(sizeof(mm_stats_t) / sizeof(size_t));
const std::string kPreload = std::string("LD_PRELOAD=") + MM_LIBRARY;
const std::string kCounted = "mm_stats_get counted malloc: yes";

// Runs argv without and with the library preloaded; both must succeed with
// the same stdout, and only the preloaded run may be served by manymalloc.
void expect_same_with_preload(const std::vector<std::string> &argv, std::vector<std::string> env) {
  const ProgramResult plain = run_program(argv, env, 120);
  env.push_back(kPreload);
  const ProgramResult preloaded = run_program(argv, env, 120);
  ASSERT_TRUE(WIFEXITED(plain.status) && WEXITSTATUS(plain.status) == 0)
      << "without LD_PRELOAD: " << status_string(plain.status) << "\n"
      << plain.err;
  ASSERT_TRUE(WIFEXITED(preloaded.status) && WEXITSTATUS(preloaded.status) == 0)
      << "with LD_PRELOAD: " << status_string(preloaded.status) << "\n"
      << preloaded.err;
  EXPECT_FALSE(plain.out.empty());
  EXPECT_EQ(plain.out, preloaded.out);
  EXPECT_EQ(plain.err.find(kCounted), std::string::npos) << plain.err;
  EXPECT_NE(preloaded.err.find(kCounted), std::string::npos) << preloaded.err;
}

TEST(Preload, PythonGivesTheSameResult) {
  expect_same_with_preload({MM_PYTHON, "-c", kPythonWorkload, kStatsWords},
                           {"PYTHONMALLOC=malloc", "PYTHONHASHSEED=0"});
}

TEST(Preload, ThreadedCxxProgramGivesTheSameResult) {
  expect_same_with_preload({MM_PRELOAD_CHILD}, {});
}

// Checked mode raises no false alarm on real programs (the variable is
// inert in the run without the library).
TEST(Preload, CheckedModeFindsNothingWrongInRealPrograms) {
  expect_same_with_preload({MM_PYTHON, "-c", kPythonWorkload, kStatsWords},
                           {"PYTHONMALLOC=malloc", "PYTHONHASHSEED=0", "MANYMALLOC_CHECKED=1"});
  expect_same_with_preload({MM_PRELOAD_CHILD}, {"MANYMALLOC_CHECKED=1"});
}

// The preloaded library is the one that defines malloc for the program.
TEST(Preload, MallocResolvesToManymalloc) {
  const ProgramResult r = run_program({MM_PRELOAD_CHILD}, {kPreload}, 120);
  const std::string library = MM_LIBRARY;
  const std::string name = library.substr(library.rfind('/') + 1);
  EXPECT_NE(r.err.find("malloc from: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(name), std::string::npos) << "malloc not from " << name << ": " << r.err;
}

}  // namespace
