#pragma once
// The readers Trident points at files a user hands it, as fuzz targets. Each takes arbitrary bytes and must either
// accept them or throw one of Trident's errors (trident::Error: a message naming the file and the problem). Any
// other outcome is a bug: a crash, a sanitizer report, another exception type, or an accepted input that does not
// survive its own writer (written back and read again, it must give the same thing).
//
// libFuzzer drives them (fuzz_main.cpp, one executable per target, scripts/dev/sanitize.sh); test_fuzz_corpus.cpp
// replays every seed and every input a fuzzer once found (tests/fuzz/<target>/) through them in the normal suite.
#include <cstdint>
#include <span>
#include <string_view>

namespace trident::fuzz {

using Bytes = std::span<const uint8_t>;

struct Target {
  std::string_view name;  // also the folder of its seeds: tests/fuzz/<name>/
  void (*run)(Bytes input);
};

// config (the YAML experiment config), safetensors, indexed_dataset (a Megatron .idx/.bin pair: the input is a
// little-endian u32 length of the .idx, the .idx, then the .bin), trainer_state (a checkpoint's
// trainer_state.json), profile (the cluster profile).
std::span<const Target> targets();
const Target& target(std::string_view name);  // throws std::invalid_argument for an unknown name

// Runs `target` on `input`: returns whether the reader accepted it, false when it refused it with a Trident error.
// Anything else propagates (or aborts, for a broken round trip).
bool run_target(const Target& target, Bytes input);

}  // namespace trident::fuzz
