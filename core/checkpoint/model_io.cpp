#include "core/checkpoint/model_io.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/checkpoint/safetensors.h"
#include "kernels/common/error.h"

namespace trident {

void save_model(const std::filesystem::path& path, const GPT& model, const std::map<std::string, std::string>& metadata) {
  const HostFloats params(model.store_backend(), model.params(), model.num_params());
  std::vector<StTensor> tensors;
  for (const ParamEntry& e : model.layout().params)
    tensors.push_back({e.name, StDType::F32, e.shape, params.data() + e.offset});
  std::map<std::string, std::string> meta = metadata;
  meta.emplace("format", "pt");
  write_safetensors(path, tensors, meta);
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
  SafetensorsFile file(path);
  check_model_file(path, file, layout);
  std::vector<float> out(static_cast<std::size_t>(range.numel));
  for (const ParamEntry& e : layout.params) {
    const int64_t begin = std::max(e.offset, range.offset), end = std::min(e.offset + e.numel, range.offset + range.numel);
    if (begin >= end) continue;
    const auto* data = static_cast<const float*>(file.get(e.name, StDType::F32, e.shape).data);
    std::copy(data + (begin - e.offset), data + (end - e.offset), out.begin() + (begin - range.offset));
  }
  return out;
}

}  // namespace trident
