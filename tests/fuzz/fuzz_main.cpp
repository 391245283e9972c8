// libFuzzer's entry point for one target of targets.h, chosen at build time (TRIDENT_FUZZ_TARGET, a string).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const trident::fuzz::Target& target = trident::fuzz::target(TRIDENT_FUZZ_TARGET);
  trident::fuzz::run_target(target, {data, size});
  return 0;
}
