#pragma once
// Logging: spdlog to RUN_DIR/trident.log (every rank, prefixed with its rank) and to stderr (rank 0, info and up;
// other ranks, warnings and up), so a multi-rank job's console stays readable and its log file complete.
#include <filesystem>

#include <spdlog/spdlog.h>

namespace trident {

void setup_logging(const std::filesystem::path& run_dir, int rank);

}  // namespace trident
