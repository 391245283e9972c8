#include "core/common/text_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

#include "kernels/common/error.h"

namespace trident {

namespace fs = std::filesystem;

std::string read_text_file(const fs::path& path, const char* what, std::uintmax_t max_bytes) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (status.type() == fs::file_type::not_found) throw_config_error("{} '{}' not found", what, path.string());
  if (error) throw_config_error("cannot read {} '{}': {}", what, path.string(), error.message());
  if (fs::is_directory(status)) throw_config_error("cannot read {} '{}': it is a directory", what, path.string());
  if (!fs::is_regular_file(status))
    throw_config_error("cannot read {} '{}': not a regular file (a FIFO, socket or device)", what, path.string());
  const std::uintmax_t size = fs::file_size(path, error);
  if (error) throw_config_error("cannot read {} '{}': {}", what, path.string(), error.message());
  if (size > max_bytes)
    throw_config_error("{} '{}' is {} bytes, more than the {} bytes one may have", what, path.string(), size,
                       max_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_config_error("cannot read {} '{}': {}", what, path.string(), std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace trident
