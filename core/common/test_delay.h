#pragma once
// Pauses where a test must act mid-operation (kill a run while it writes a checkpoint, signal it while it starts):
// sleeps the milliseconds the environment variable `variable` holds, if set. Tests set it; runs never do.
namespace trident {

// A ConfigError naming the variable when its value is not a whole number of milliseconds.
void test_delay(const char* variable);

}  // namespace trident
