# Top-level entry points. `make demo` builds and runs the main job; `make check`
# installs missing build tools (as root, with apt-get), then builds and runs every
# test twice: optimised, and under AddressSanitizer + UndefinedBehaviorSanitizer.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all demo check deps release asan test test-asan test-tsan test-python demo-python fuzz install \
	clean bench

PREFIX ?= /usr/local

all: release

deps:
	@bash scripts/install-deps.sh

$(BUILD)/release/Makefile:
	cmake -S . -B $(BUILD)/release -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

$(BUILD)/fuzz/Makefile:
	CC=clang cmake -S . -B $(BUILD)/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSBN_SANITIZE=ON \
	  -DSBN_FUZZ=ON -DSBN_BUILD_TESTS=OFF -DSBN_WITH_MPI=OFF $(CMAKE_FLAGS)

$(BUILD)/asan/Makefile:
	cmake -S . -B $(BUILD)/asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSBN_SANITIZE=ON $(CMAKE_FLAGS)

release: $(BUILD)/release/Makefile
	cmake --build $(BUILD)/release -j $(JOBS)

asan: $(BUILD)/asan/Makefile
	cmake --build $(BUILD)/asan -j $(JOBS)

# The demo: 4 in-process ranks, rank 1 given no samples on purpose (--empty) to show an empty
# rank taking part; across processes: mpirun -np 2 build/release/syncbn demo --backend mpi.
demo: deps release
	./$(BUILD)/release/syncbn demo --ranks 4 --empty

test: release
	cd $(BUILD)/release && ctest --output-on-failure -j $(JOBS)

# Twice: with the kernels the CPU picks, then with SBN_FORCE_SCALAR=1 (ASan does not
# see accesses made inside the AVX-512 kernels, so out-of-bounds views only show there).
SAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
test-asan: asan
	cd $(BUILD)/asan && $(SAN_ENV) ctest --output-on-failure -j $(JOBS)
	cd $(BUILD)/asan && $(SAN_ENV) SBN_FORCE_SCALAR=1 ctest --output-on-failure -j $(JOBS)

# ThreadSanitizer, on demand (not in `check`: a build and about four minutes on 2 cores):
# every test but install and aclnn_samples, which link programs built without it against
# the instrumented library. MPI is off (Open MPI's own threads are not ours to check), and
# so are the target_clones loops (SBN_NO_CLONES): their resolvers run before TSan starts.
# -Wno-tsan: GCC warns that TSan does not model atomic_thread_fence (src/core/pool.c's
# sleeper handshake), so an ordering made by those fences alone could show as a false race.
$(BUILD)/tsan/Makefile:
	cmake -S . -B $(BUILD)/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSBN_WITH_MPI=OFF \
	  -DCMAKE_C_FLAGS="-fsanitize=thread -fno-omit-frame-pointer -Wno-tsan -DSBN_NO_CLONES" \
	  -DCMAKE_CXX_FLAGS="-fsanitize=thread" $(CMAKE_FLAGS)

test-tsan: $(BUILD)/tsan/Makefile
	cmake --build $(BUILD)/tsan -j $(JOBS)
	cd $(BUILD)/tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j $(JOBS) \
	  -E '^(install|aclnn_samples)$$'

# The libFuzzer targets (tests/fuzz/fuzz_*.c, clang, ASan+UBSan), each FUZZ_SECONDS
# long, one after the other; FUZZ_TARGETS picks some ("fuzz_native_ops fuzz_layer").
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
CHECK_FUZZ_SECONDS ?= 30
fuzz: $(BUILD)/fuzz/Makefile
	cmake --build $(BUILD)/fuzz -j $(JOBS)
	bash scripts/run-fuzzers.sh $(BUILD)/fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The side-by-side benchmark (bench/run_bench.py): this project, the plain reference
# kernels, oneDNN and PyTorch on the same shapes, plus the SyncBN layer (threads, and
# mpirun -np 2 when mpirun exists); it prints the table, writes build/bench/results.csv
# and draws build/bench/summary.png. BENCH_SHAPES picks the shape files, e.g.
# make bench BENCH_SHAPES="bench/shapes/resnet50.txt bench/shapes/extra.txt"
# bench-deps (scripts/install-bench-deps.sh) installs the peers first as root when missing
# (python3-torch, libdnnl-dev, python3-matplotlib; not root: it names them), re-configures
# the release build when oneDNN was not built in, and never fails: a peer it cannot install
# is reported as missing, a missing matplotlib only skips the picture.
BENCH_SHAPES ?= bench/shapes/quick.txt bench/shapes/small_batch.txt
BENCH_ARGS ?=
.PHONY: bench-deps
bench-deps: release
	@PYTHON=$(PYTHON) bash scripts/install-bench-deps.sh $(BUILD)/release $(JOBS)

bench: release bench-deps
	$(PYTHON) bench/run_bench.py --build $(BUILD)/release --shapes $(BENCH_SHAPES) $(BENCH_ARGS)

# The Python package (python/syncbn) and its tests (tests/python), with Debian's python3
# (python3-torch, -numpy, -pytest, -torchvision; `make deps` installs them) on the
# library just built. demo-python trains torchvision's resnet18 with DDP on 2 processes.
PYTHON ?= /usr/bin/python3
PY_ENV = SBN_LIBRARY=$(CURDIR)/$(BUILD)/release/libsyncbn.so PYTHONPATH=$(CURDIR)/python
test-python: release
	$(PY_ENV) $(PYTHON) -m pytest -q tests/python

demo-python: deps release
	$(PY_ENV) $(PYTHON) examples/ddp_resnet.py

check: deps
	$(MAKE) test
	$(MAKE) test-asan
	$(MAKE) test-python
	$(MAKE) fuzz FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS)

install: release
	cmake --install $(BUILD)/release --prefix $(PREFIX)

# CANN's toolkit layout (the CMake component `ascend`): PREFIX/lib64 (libsyncbn, libsyncbn_acl and,
# as symlinks to libsyncbn_acl, the names CANN build lines link: libascendcl, libnnopbase, libopapi,
# libopapi_nn, libopapi_math, libacl_rt),
# include/ (acl/, aclnn/, aclnnop/, syncbn/), bin/syncbn, and PREFIX/set_env.sh exporting
# ASCEND_TOOLKIT_HOME, ASCEND_HOME_PATH, LD_LIBRARY_PATH, ... as CANN's does. Without PREFIX on the
# command line it goes to CANN's own place, /usr/local/Ascend/ascend-toolkit/latest.
.PHONY: install-ascend
ASCEND_PREFIX = $(if $(filter file,$(origin PREFIX)),/usr/local/Ascend/ascend-toolkit/latest,$(PREFIX))
install-ascend: release
	cmake --install $(BUILD)/release --prefix $(ASCEND_PREFIX) --component ascend

clean:
	rm -rf $(BUILD)
