#pragma once
// `trident plan --replay RUN_DIR`: how well the FlexSP cost model estimated the groups of a training run. Reads
// RUN_DIR/metrics.jsonl (the `group_times` FlexSP steps record: [degree, estimated ms, measured ms, ...] per group;
// those whose time carries the gradient reduction left out where the step had others, as FlexSP's corrections
// leave them) and prints, per group degree, the groups seen, the median estimate and measurement, the median
// relative error and the median measured / estimated ratio (what to scale the profile's compute by for this run);
// --refit FILE applies it.
#include <string>

namespace trident::app::plan {

// With `refit` (a profile file): its compute coefficients are scaled by the median measured / estimated ratio of the
// single-rank groups (pure compute; of all groups when the run had none) and merged back into the file.
void print_replay(const std::string& run_dir, bool json, const std::string& refit = {});

}  // namespace trident::app::plan
