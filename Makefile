# Top-level entry points. `make demo` builds and runs the main job; `make check`
# installs missing build tools (as root, with apt-get), then builds and runs every
# test twice: optimised, and under AddressSanitizer + UndefinedBehaviorSanitizer.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all demo check deps release asan test test-asan install clean

PREFIX ?= /usr/local

all: release

deps:
	@bash scripts/install-deps.sh

$(BUILD)/release/Makefile:
	cmake -S . -B $(BUILD)/release -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

$(BUILD)/asan/Makefile:
	cmake -S . -B $(BUILD)/asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSBN_SANITIZE=ON $(CMAKE_FLAGS)

release: $(BUILD)/release/Makefile
	cmake --build $(BUILD)/release -j $(JOBS)

asan: $(BUILD)/asan/Makefile
	cmake --build $(BUILD)/asan -j $(JOBS)

demo: deps release
	./$(BUILD)/release/syncbn demo --ranks 4

test: release
	cd $(BUILD)/release && ctest --output-on-failure -j $(JOBS)

test-asan: asan
	cd $(BUILD)/asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS)

check: deps
	$(MAKE) test
	$(MAKE) test-asan

install: release
	cmake --install $(BUILD)/release --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
