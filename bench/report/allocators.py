# SPDX-License-Identifier: Apache-2.0
"""The allocators a benchmark run compares, and how each one is selected.

Every program links libmanymalloc.so; each allocator is selected with
LD_PRELOAD, manymalloc included, so all of them go through the same loader
path. A run is trusted only if the program reports (allocator=PATH) that
malloc came from the preloaded file: see `check_label`.
"""
import os
import platform
import re
import subprocess
from dataclasses import dataclass

# name, shared object, Debian package that ships it
PEERS = [
    ("glibc", "libc.so.6", "libc6"),
    ("jemalloc", "libjemalloc.so.2", "libjemalloc2"),
    ("tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"),
    ("mimalloc", "libmimalloc.so.2", "libmimalloc2.0"),
    ("mimalloc3", "libmimalloc.so.3", None),   # PyPI's cmeel-mimalloc (scripts/install-deps)
]
# Where scripts/install-deps puts the cmeel-mimalloc wheel, under the build tree.
MIMALLOC3_DIR = os.path.join("peers", "mimalloc3")
MIMALLOC3_LIB = os.path.join("cmeel.prefix", "lib")
OURS = "manymalloc"


@dataclass
class Allocator:
    name: str
    path: str      # what LD_PRELOAD gets
    version: str   # package version, git commit, or where the file came from


def _system_lib_dirs():
    triple = f"{platform.machine()}-linux-gnu"
    return [f"/usr/lib/{triple}", f"/lib/{triple}", "/usr/lib64", "/lib64", "/usr/lib", "/usr/local/lib"]


def _system_libc(program):
    """The libc the benchmark programs really load: preloading any other
    libc.so.6 (say one from --peer-dir) would break the process, not select
    glibc's malloc."""
    out = subprocess.run(["ldd", program], capture_output=True, text=True).stdout
    m = re.search(r"libc\.so\.6 => (\S+)", out)
    return m.group(1) if m else None


def _dpkg_version(package):
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True)
    except FileNotFoundError:
        return ""
    return r.stdout.strip() if r.returncode == 0 else ""


def _git_commit(repo):
    """SOURCE_REV when given (a copy of the tree on another machine may carry a
    stale .git), else what git describes."""
    if os.environ.get("SOURCE_REV"):
        return os.environ["SOURCE_REV"]
    r = subprocess.run(["git", "-C", repo, "describe", "--always", "--dirty"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "unknown commit"


def _wheel_version(lib_dir):
    """The name and version in the METADATA of the wheel a peer's .so came in
    (cmeel wheels keep the .so two folders below their dist-info)."""
    root = os.path.dirname(os.path.dirname(lib_dir))
    for entry in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        meta = os.path.join(root, entry, "METADATA")
        if entry.endswith(".dist-info") and os.path.exists(meta):
            with open(meta) as f:
                fields = dict(re.findall(r"^(Name|Version): (\S+)$", f.read(), re.M))
            if "Name" in fields and "Version" in fields:
                return f"{fields['Name']} {fields['Version']} (PyPI wheel)"
    return ""


def _find_peer(soname, dirs):
    return next((os.path.join(d, soname) for d in dirs if os.path.exists(os.path.join(d, soname))), None)


def find(build_dir, peer_dir, probe_program, repo, only_ours=False):
    """Returns the allocators present, ours first, printing a line for each
    peer that is missing. Peers are looked for in --peer-dir, then in the
    system's library directories, then in the repository's .peers/ (where a
    machine without a package registry gets them); mimalloc3 in --peer-dir,
    then where scripts/install-deps puts it (BUILD/peers/mimalloc3)."""
    ours = os.path.join(build_dir, "libmanymalloc.so")
    if not os.path.exists(ours):
        raise SystemExit(f"run.py: {ours} not found; build first (make bench does)")
    found = [Allocator(OURS, os.path.abspath(ours), "git " + _git_commit(repo))]
    if only_ours:
        return found
    system_dirs = _system_lib_dirs()
    for name, soname, package in PEERS:
        if name == "glibc":
            dirs = ["the libc.so.6 that ldd names"]
            path = _system_libc(probe_program)
        elif package is None:   # a wheel's .so: no system copy to fall back on
            dirs = ([peer_dir] if peer_dir else []) + [os.path.join(build_dir, MIMALLOC3_DIR, MIMALLOC3_LIB)]
            path = _find_peer(soname, dirs)
        else:
            dirs = ([peer_dir] if peer_dir else []) + system_dirs + [os.path.join(repo, ".peers")]
            path = _find_peer(soname, dirs)
        if path is None:
            print(f"run.py: {name} not found ({soname}; looked in {', '.join(dirs)}); running without it")
            continue
        packaged = package is not None and (os.path.dirname(path) in system_dirs or name == "glibc")
        version = f"{package} {_dpkg_version(package) or 'version unknown'}" if packaged \
            else _wheel_version(os.path.dirname(path)) or f"copy in {os.path.dirname(path)}, version unknown"
        found.append(Allocator(name, os.path.abspath(path), version))
    return found


def check_label(alloc, reported, what):
    """A run whose malloc did not come from the allocator it is filed under
    would poison every figure; stop the whole run instead."""
    if reported is None or os.path.realpath(reported) != os.path.realpath(alloc.path):
        raise SystemExit(f"run.py: MISLABELLED RUN: {what} was meant to run on {alloc.name} ({alloc.path}) "
                         f"but malloc came from {reported}")
