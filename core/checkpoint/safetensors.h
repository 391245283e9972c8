#pragma once
// safetensors (the Hugging Face weight format): an 8-byte little-endian header length, a JSON header mapping each
// tensor name to {dtype, shape, data_offsets} (offsets relative to the data section) plus optional string
// "__metadata__", then the raw little-endian tensor bytes. Files written here open with the `safetensors`
// Python package and PyTorch; files from elsewhere are validated before any byte is trusted.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace trident {

enum class StDType { F32, BF16, F16, F64, I64, I32, U16, U8 };
std::size_t st_dtype_size(StDType dtype);
const char* st_dtype_name(StDType dtype);  // "F32", "BF16", ...

struct StTensor {
  std::string name;
  StDType dtype = StDType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // nbytes = product(shape) * st_dtype_size(dtype)
  uint64_t offset = 0;         // where its bytes start in the data section (a file read: SafetensorsFile)
};

// The bytes before the data section of a file holding `tensors` (their data unread) back to back in order: the
// 8-byte length and the padded JSON header. Tensor names must be unique and non-empty (`path` names the file in the
// error).
std::string safetensors_header(const std::filesystem::path& path, const std::vector<StTensor>& tensors,
                               const std::map<std::string, std::string>& metadata = {});

// Writes atomically (temporary file, fsync, rename). Tensor names must be unique and non-empty.
void write_safetensors(const std::filesystem::path& path, const std::vector<StTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// A whole file read into memory and validated: header JSON, dtypes, shapes against byte ranges, ranges inside the
// data section, no overlaps, no gaps. Every problem is a RuntimeError naming the file and the tensor. With
// Contents::header only the header is read (validated against the file's size): the tensors' data is then nullptr,
// and read() copies parts of it from the file, so a large file's part costs only that part's memory.
class SafetensorsFile {
 public:
  enum class Contents { all, header };
  explicit SafetensorsFile(const std::filesystem::path& path, Contents contents = Contents::all);

  const std::vector<StTensor>& tensors() const { return tensors_; }  // sorted by name (the JSON header's key order)
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool contains(const std::string& name) const;
  // The tensor called `name`; throws if absent, or if dtype/shape differ from the expected ones when given.
  const StTensor& get(const std::string& name) const;
  const StTensor& get(const std::string& name, StDType dtype, const std::vector<int64_t>& shape) const;
  const std::filesystem::path& path() const { return path_; }
  // `bytes` bytes of tensor `t`'s data from its byte `from` into `out`, read from the file.
  void read(const StTensor& t, uint64_t from, uint64_t bytes, void* out) const;

 private:
  std::filesystem::path path_;
  std::vector<char> bytes_;  // the whole file, or (Contents::header) its length and header
  uint64_t data_start_ = 0;  // the data section's first byte in the file
  std::vector<StTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace trident
