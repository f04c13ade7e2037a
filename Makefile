# SPDX-License-Identifier: Apache-2.0
# The two commands of the README:
#   make bench   build everything, run the benchmarks this machine can run, write build/bench/
#   make test    build everything and run every test (normal build, then the ASan/UBSan build)
JOBS ?= $(shell nproc)

.PHONY: all build test test-release test-asan bench clean

all: build

build:
	scripts/install-deps test
	cmake --preset default
	cmake --build build -j $(JOBS)

test-release: build
	ctest --preset default -j $(JOBS)

test-asan:
	scripts/install-deps test
	cmake --preset asan
	cmake --build build-asan -j $(JOBS)
	ctest --preset asan -j $(JOBS)

test: test-release test-asan

bench:
	scripts/install-deps bench
	cmake --preset default
	cmake --build build -j $(JOBS)
	python3 bench/run.py

clean:
	rm -rf build build-asan
