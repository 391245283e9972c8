#include "core/metrics/log.h"

#include <memory>
#include <string>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace trident {

void setup_logging(const std::filesystem::path& run_dir, int rank) {
  const std::string pattern = "[%Y-%m-%d %H:%M:%S.%e] [rank " + std::to_string(rank) + "] [%l] %v";
  auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>((run_dir / "trident.log").string(), false);
  file->set_level(spdlog::level::info);
  auto console = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  console->set_level(rank == 0 ? spdlog::level::info : spdlog::level::warn);
  auto logger = std::make_shared<spdlog::logger>("trident", spdlog::sinks_init_list{file, console});
  logger->set_pattern(pattern);
  logger->set_level(spdlog::level::info);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace trident
