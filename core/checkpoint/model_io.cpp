#include "core/checkpoint/model_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/checkpoint/safetensors.h"
#include "kernels/common/error.h"

namespace trident {

namespace {

// The layout's tensors under their names, in layout order (data from `params`, or none), and the file's metadata.
std::vector<StTensor> model_tensors(const ModelLayout& layout, const float* params) {
  std::vector<StTensor> tensors;
  for (const ParamEntry& e : layout.params)
    tensors.push_back({e.name, StDType::F32, e.shape, params ? params + e.offset : nullptr});
  return tensors;
}
std::map<std::string, std::string> model_metadata(std::map<std::string, std::string> metadata) {
  metadata.emplace("format", "pt");
  return metadata;
}

}  // namespace

void save_model(const std::filesystem::path& path, const GPT& model, const std::map<std::string, std::string>& metadata) {
  const HostFloats params(model.store_backend(), model.params(), model.num_params());
  std::vector<StTensor> tensors = model_tensors(model.layout(), params.data());
  write_safetensors(path, tensors, model_metadata(metadata));
}

void begin_model_file(const std::filesystem::path& path, const ModelLayout& layout,
                      const std::map<std::string, std::string>& metadata) {
  int64_t next = 0;  // the data section is the flat buffer only where the entries follow one another from 0
  for (const ParamEntry& e : layout.params) {
    TRIDENT_CHECK(e.offset == next, "layout entry '{}' at {} does not follow the one before (ending at {})", e.name,
                  e.offset, next);
    next += e.numel;
  }
  const std::string header = safetensors_header(path, model_tensors(layout, nullptr), model_metadata(metadata));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !out.write(header.data(), static_cast<std::streamsize>(header.size())))
    throw_runtime_error("cannot write '{}': {}", path.string(), std::strerror(errno));
  out.close();
  std::error_code ec;
  std::filesystem::resize_file(path, header.size() + sizeof(float) * static_cast<std::size_t>(layout.num_params), ec);
  if (ec) throw_runtime_error("cannot size '{}': {}", path.string(), ec.message());
}

void write_model_range(const std::filesystem::path& path, FlatRange range, const float* host) {
  const int fd = ::open(path.c_str(), O_RDWR);
  if (fd < 0) throw_runtime_error("cannot open '{}': {}", path.string(), std::strerror(errno));
  uint64_t header_size = 0;  // the data section starts after the 8-byte length and the header
  unsigned char length[8];
  bool ok = ::pread(fd, length, 8, 0) == 8;
  for (int i = 0; i < 8; ++i) header_size |= static_cast<uint64_t>(length[i]) << (8 * i);
  const char* bytes = reinterpret_cast<const char*>(host);
  std::size_t left = sizeof(float) * static_cast<std::size_t>(range.numel);
  auto at = static_cast<off_t>(8 + header_size + sizeof(float) * static_cast<uint64_t>(range.offset));
  while (ok && left > 0) {
    const ssize_t n = ::pwrite(fd, bytes, left, at);
    ok = n > 0;
    if (ok) bytes += n, left -= static_cast<std::size_t>(n), at += n;
  }
  ok = ok && ::fsync(fd) == 0;
  const int error = errno;
  ::close(fd);
  if (!ok) throw_runtime_error("cannot write parameters [{}, {}) into '{}': {}", range.offset,
                               range.offset + range.numel, path.string(), std::strerror(error));
}

namespace {

// What a missing or extra tensor says about the file: the linear-attention block changed its tensors once.
std::string hint(const std::string& name) {
  if (name.find(".attn.c_gate.") == std::string::npos) return "";
  return " (attn.c_gate is the output gate of the linear-attention block, model.linear.output_gate; Trident's first "
         "linear block had none, and this version does not train that block: core/model/README.md)";
}

// Every tensor of the layout, F32 and of its shape, and no other: a RuntimeError naming the first that is not.
void check_model_file(const std::filesystem::path& path, const SafetensorsFile& file, const ModelLayout& layout) {
  for (const ParamEntry& e : layout.params)
    if (!file.contains(e.name))
      throw_runtime_error("'{}' has no tensor '{}', which this model has{}", path.string(), e.name, hint(e.name));
  for (const StTensor& t : file.tensors())
    if (std::none_of(layout.params.begin(), layout.params.end(), [&](const ParamEntry& e) { return e.name == t.name; }))
      throw_runtime_error("'{}' holds a tensor '{}' that this model does not have{}", path.string(), t.name,
                          hint(t.name));
  for (const ParamEntry& e : layout.params) file.get(e.name, StDType::F32, e.shape);
}

}  // namespace

void load_model(const std::filesystem::path& path, GPT& model) {
  TRIDENT_CHECK(model.holds_weights(), "a model whose weights its runner's source keeps loads a range of them");
  SafetensorsFile file(path);
  check_model_file(path, file, model.layout());
  for (const ParamEntry& e : model.layout().params) {
    const StTensor& t = file.get(e.name, StDType::F32, e.shape);
    model.store_backend().upload(model.params() + e.offset, t.data, sizeof(float) * static_cast<std::size_t>(e.numel));
  }
}

std::vector<float> load_model_range(const std::filesystem::path& path, const ModelLayout& layout, FlatRange range) {
  SafetensorsFile file(path, SafetensorsFile::Contents::header);  // the range's bytes alone are read
  check_model_file(path, file, layout);
  std::vector<float> out(static_cast<std::size_t>(range.numel));
  for (const ParamEntry& e : layout.params) {
    const int64_t begin = std::max(e.offset, range.offset);
    const int64_t end = std::min(e.offset + e.numel, range.offset + range.numel);
    if (begin >= end) continue;
    file.read(file.get(e.name, StDType::F32, e.shape), sizeof(float) * static_cast<uint64_t>(begin - e.offset),
              sizeof(float) * static_cast<uint64_t>(end - begin), out.data() + (begin - range.offset));
  }
  return out;
}

}  // namespace trident
