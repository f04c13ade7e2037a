# SPDX-License-Identifier: Apache-2.0
"""bench/dist/mpi_env.py: the environment the dist benchmarks give mpirun.

As root in a container, mpirun must be allowed explicitly, and the
shared-memory transport must not use CMA (ptrace is not permitted there).
The environment wins over these defaults (say
OMPI_MCA_btl_vader_single_copy_mechanism=cma where CMA works).
"""
import os

DEFAULTS = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def mpi_env(extra=None):
    """os.environ over DEFAULTS, then extra on top (a value of None removes
    the variable)."""
    env = dict(DEFAULTS, **os.environ)
    for key, value in (extra or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env
