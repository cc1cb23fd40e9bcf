# zinc: the two commands that matter are `make run` and `make test` (see README.md).
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build test run fuzz bench clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: $(BUILD_DIR)/build.ninja

build: deps configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 900

# The main job: `zinc serve` on ZINC_MODEL, or the first model in ZINC_MODELS_DIR (default ./models);
# prints the URL of the web chat and the API.
run: build
	@bash scripts/run-main.sh

# Fuzz the GGUF reader for FUZZ_SECONDS (libFuzzer, clang, ASan + UBSan). New inputs collect in
# build-fuzz/corpus; a crash leaves crash-* in build-fuzz/ (add it to tests/gguf/make_malformed.py
# when the reader must reject it, else to fuzz/corpus/gguf). Parallel: FUZZ_FLAGS="-jobs=8 -workers=8".
FUZZ_SECONDS ?= 60
FUZZ_FLAGS ?=
fuzz: deps
	cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_C_COMPILER=clang -DZINC_FUZZ=ON -DZINC_TESTS=OFF -DZINC_BENCH=OFF
	cmake --build build-fuzz -j $(JOBS) --target gguf_fuzz
	mkdir -p build-fuzz/corpus
	cd build-fuzz && fuzz/gguf_fuzz -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=10 \
	  -max_len=65536 -dict=../fuzz/gguf.dict $(FUZZ_FLAGS) corpus ../fuzz/corpus/gguf ../tests/gguf/malformed

bench: build
	@ls $(BUILD_DIR)/bench/*_bench 2>/dev/null | while read b; do echo "== $$b"; $$b; done

clean:
	rm -rf $(BUILD_DIR) build-fuzz
