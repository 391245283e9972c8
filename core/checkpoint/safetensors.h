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
};

// Writes atomically (temporary file, fsync, rename). Tensor names must be unique and non-empty.
void write_safetensors(const std::filesystem::path& path, const std::vector<StTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// A whole file read into memory and validated: header JSON, dtypes, shapes against byte ranges, ranges inside the
// data section, no overlaps, no gaps. Every problem is a RuntimeError naming the file and the tensor.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::filesystem::path& path);

  const std::vector<StTensor>& tensors() const { return tensors_; }  // sorted by name (the JSON header's key order)
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool contains(const std::string& name) const;
  // The tensor called `name`; throws if absent, or if dtype/shape differ from the expected ones when given.
  const StTensor& get(const std::string& name) const;
  const StTensor& get(const std::string& name, StDType dtype, const std::vector<int64_t>& shape) const;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::vector<char> bytes_;
  std::vector<StTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace trident
