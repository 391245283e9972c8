#include "core/checkpoint/model_io.h"

#include <vector>

#include "core/checkpoint/safetensors.h"
#include "core/common/error.h"

namespace trident {

void save_model(const std::filesystem::path& path, const GPT& model, const std::map<std::string, std::string>& metadata) {
  const HostFloats params(model.backend(), model.params(), model.num_params());
  std::vector<StTensor> tensors;
  for (const ParamEntry& e : model.layout().params)
    tensors.push_back({e.name, StDType::F32, e.shape, params.data() + e.offset});
  std::map<std::string, std::string> meta = metadata;
  meta.emplace("format", "pt");
  write_safetensors(path, tensors, meta);
}

void load_model(const std::filesystem::path& path, GPT& model) {
  SafetensorsFile file(path);
  for (const ParamEntry& e : model.layout().params) {
    const StTensor& t = file.get(e.name, StDType::F32, e.shape);
    model.backend().upload(model.params() + e.offset, t.data, sizeof(float) * static_cast<std::size_t>(e.numel));
  }
  if (file.tensors().size() != model.layout().params.size())
    throw_runtime_error("'{}' holds {} tensors but the model has {}: it was written for another model shape",
                        path.string(), file.tensors().size(), model.layout().params.size());
}

}  // namespace trident
