#include "core/checkpoint/safetensors.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/common/atomic_file.h"
#include "kernels/common/error.h"

namespace trident {

namespace {

constexpr StDType kAllDTypes[] = {StDType::F32, StDType::BF16, StDType::F16, StDType::F64,
                                  StDType::I64, StDType::I32,  StDType::U16, StDType::U8};

uint64_t element_count(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

}  // namespace

std::size_t st_dtype_size(StDType dtype) {
  switch (dtype) {
    case StDType::F64:
    case StDType::I64: return 8;
    case StDType::F32:
    case StDType::I32: return 4;
    case StDType::BF16:
    case StDType::F16:
    case StDType::U16: return 2;
    case StDType::U8: return 1;
  }
  return 0;
}

const char* st_dtype_name(StDType dtype) {
  switch (dtype) {
    case StDType::F32: return "F32";
    case StDType::BF16: return "BF16";
    case StDType::F16: return "F16";
    case StDType::F64: return "F64";
    case StDType::I64: return "I64";
    case StDType::I32: return "I32";
    case StDType::U16: return "U16";
    case StDType::U8: return "U8";
  }
  return "?";
}

std::string safetensors_header(const std::filesystem::path& path, const std::vector<StTensor>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const StTensor& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__" || !names.insert(t.name).second)
      throw_runtime_error("safetensors '{}': tensor name '{}' is empty, reserved or repeated", path.string(), t.name);
    uint64_t nbytes = element_count(t.shape) * st_dtype_size(t.dtype);
    header[t.name] = {{"dtype", st_dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // pad so the data section starts 8-byte aligned
  const uint64_t header_size = json.size();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((header_size >> (8 * i)) & 0xff);
  return out + json;
}

void write_safetensors(const std::filesystem::path& path, const std::vector<StTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::string header = safetensors_header(path, tensors, metadata);
  std::vector<std::span<const char>> pieces = {{header.data(), header.size()}};
  for (const StTensor& t : tensors)
    pieces.emplace_back(static_cast<const char*>(t.data), element_count(t.shape) * st_dtype_size(t.dtype));
  write_file_atomically(path, pieces);
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path, Contents contents) : path_(path) {
  const std::string where = "safetensors '" + path.string() + "'";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_runtime_error("{}: cannot open: {}", where, std::strerror(errno));
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) throw_runtime_error("{}: cannot stat: {}", where, ec.message());
  if (contents == Contents::all) bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  else bytes_.resize(std::min<uint64_t>(8, file_size));
  if (contents == Contents::header) in.read(bytes_.data(), static_cast<std::streamsize>(bytes_.size()));
  if (bytes_.size() < 8) throw_runtime_error("{}: truncated ({} bytes; no header length)", where, bytes_.size());
  uint64_t header_size = 0;
  for (int i = 0; i < 8; ++i) header_size |= static_cast<uint64_t>(static_cast<unsigned char>(bytes_[i])) << (8 * i);
  if (header_size > file_size - 8)
    throw_runtime_error("{}: header length {} runs past the end of the {}-byte file", where, header_size, file_size);
  if (contents == Contents::header) {
    bytes_.resize(8 + header_size);
    if (!in.read(bytes_.data() + 8, static_cast<std::streamsize>(header_size)))
      throw_runtime_error("{}: cannot read its {}-byte header", where, header_size);
  }
  data_start_ = 8 + header_size;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes_.begin() + 8, bytes_.begin() + 8 + static_cast<std::ptrdiff_t>(header_size));
  } catch (const nlohmann::json::exception& e) {
    throw_runtime_error("{}: header is not valid JSON: {}", where, e.what());
  }
  if (!header.is_object()) throw_runtime_error("{}: header is not a JSON object", where);

  const char* data = contents == Contents::all ? bytes_.data() + 8 + header_size : nullptr;
  const uint64_t data_size = file_size - 8 - header_size;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& entry = it.value();
    if (name == "__metadata__") {
      if (!entry.is_object()) throw_runtime_error("{}: __metadata__ is not an object", where);
      for (auto m = entry.begin(); m != entry.end(); ++m) {
        if (!m.value().is_string()) throw_runtime_error("{}: __metadata__ value '{}' is not a string", where, m.key());
        metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    try {
      StTensor t;
      t.name = name;
      std::string dtype = entry.at("dtype").get<std::string>();
      auto found = std::find_if(std::begin(kAllDTypes), std::end(kAllDTypes),
                                [&](StDType d) { return dtype == st_dtype_name(d); });
      if (found == std::end(kAllDTypes))
        throw_runtime_error("{}: tensor '{}' has unsupported dtype '{}'", where, name, dtype);
      t.dtype = *found;
      t.shape = entry.at("shape").get<std::vector<int64_t>>();
      if (std::any_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d < 0; }))
        throw_runtime_error("{}: tensor '{}' has a negative extent in its shape", where, name);
      auto offsets = entry.at("data_offsets").get<std::vector<uint64_t>>();
      if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > data_size)
        throw_runtime_error("{}: tensor '{}' has data_offsets outside the {}-byte data section", where, name,
                            data_size);
      if (offsets[1] - offsets[0] != element_count(t.shape) * st_dtype_size(t.dtype))
        throw_runtime_error("{}: tensor '{}' of shape [{}] {} needs {} bytes but its data_offsets span {}", where,
                            name, fmt::join(t.shape, ", "), dtype, element_count(t.shape) * st_dtype_size(t.dtype),
                            offsets[1] - offsets[0]);
      t.data = data ? data + offsets[0] : nullptr;
      t.offset = offsets[0];
      ranges.emplace_back(offsets[0], offsets[1]);
      tensors_.push_back(std::move(t));
    } catch (const nlohmann::json::exception& e) {
      throw_runtime_error("{}: tensor '{}' has a malformed entry: {}", where, name, e.what());
    }
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t end = 0;
  for (auto [begin, stop] : ranges) {
    if (begin != end) throw_runtime_error("{}: tensor data overlaps or leaves a gap at byte {}", where, begin);
    end = stop;
  }
  if (end != data_size) throw_runtime_error("{}: {} trailing bytes after the last tensor", where, data_size - end);
}

void SafetensorsFile::read(const StTensor& t, uint64_t from, uint64_t bytes, void* out) const {
  const uint64_t size = element_count(t.shape) * st_dtype_size(t.dtype);
  if (from > size || bytes > size - from)
    throw_runtime_error("safetensors '{}': bytes [{}, {}) of tensor '{}' lie outside its {}", path_.string(), from,
                        from + bytes, t.name, size);
  std::ifstream in(path_, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(data_start_ + t.offset + from));
  if (!in || !in.read(static_cast<char*>(out), static_cast<std::streamsize>(bytes)))
    throw_runtime_error("safetensors '{}': cannot read tensor '{}': {}", path_.string(), t.name, std::strerror(errno));
}

bool SafetensorsFile::contains(const std::string& name) const {
  return std::any_of(tensors_.begin(), tensors_.end(), [&](const StTensor& t) { return t.name == name; });
}

const StTensor& SafetensorsFile::get(const std::string& name) const {
  for (const StTensor& t : tensors_)
    if (t.name == name) return t;
  throw_runtime_error("safetensors '{}': no tensor named '{}'", path_.string(), name);
}

const StTensor& SafetensorsFile::get(const std::string& name, StDType dtype, const std::vector<int64_t>& shape) const {
  const StTensor& t = get(name);
  if (t.dtype != dtype || t.shape != shape)
    throw_runtime_error("safetensors '{}': tensor '{}' is {}[{}], expected {}[{}]", path_.string(), name,
                        st_dtype_name(t.dtype), fmt::join(t.shape, ", "), st_dtype_name(dtype),
                        fmt::join(shape, ", "));
  return t;
}

}  // namespace trident
