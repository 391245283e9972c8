#pragma once
// `trident plan` for parallel.strategy auto, dp and sp: per batch, every candidate the selector would compare on a
// described cluster (feasible or why not, estimated time, bytes and peak memory per rank) and the one it would run.
#include <string>

#include "app/plan/batches.h"
#include "core/config/config.h"

namespace trident::app::plan {

// profile_file: the cluster profile (--cluster, else parallel.select.profile); its cluster sets the ranks, its
// network and compute sections the estimates. Estimates use mode `model` (no corrections: no step has run).
void print_selection_plan(const Config& config, const std::string& profile_file, const BatchSource& source,
                          bool json);

}  // namespace trident::app::plan
