#pragma once
// Reading a small text file a user names (a config, a cluster profile): refused by name, before a byte is read, when
// it is missing, a directory, not a regular file (a FIFO would block, /dev/zero never end) or larger than any such
// file should be.
#include <cstdint>
#include <filesystem>
#include <string>

namespace trident {

// The whole file. `what` names it in errors ("config file"); a ConfigError for each case above.
std::string read_text_file(const std::filesystem::path& path, const char* what, std::uintmax_t max_bytes = 16 << 20);

}  // namespace trident
