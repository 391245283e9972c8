#pragma once
// Files a user relies on (resolved configs, checkpoints, weights) are never left half-written: the content goes to
// PATH.tmp, is fsynced, renamed over PATH, and the directory is fsynced so the rename itself survives a crash.
// A crash therefore leaves either the previous file or the complete new one.
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

namespace trident {

// Writes the pieces back to back. Creates the parent directory. Throws RuntimeError naming the path and the cause.
void write_file_atomically(const std::filesystem::path& path, const std::vector<std::span<const char>>& pieces);
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

// fsync a directory (after creating, renaming or removing entries in it).
void fsync_directory(const std::filesystem::path& dir);

}  // namespace trident
