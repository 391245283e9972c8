#include "core/data/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kernels/common/error.h"

namespace trident {

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_runtime_error("cannot open '{}': {}", path.string(), std::strerror(errno));
  struct stat st {};
  int error = ::fstat(fd, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
  if (error) {
    ::close(fd);
    throw_runtime_error("cannot read '{}': {}", path.string(), std::strerror(error));
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {  // mmap rejects a length of 0; an empty file maps to an empty span
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      error = errno;
      ::close(fd);
      throw_runtime_error("cannot map '{}': {}", path.string(), std::strerror(error));
    }
    data_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);  // the mapping keeps the file open
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace trident
