#pragma once
// Model weights as safetensors, one tensor per layout entry under its Hugging Face GPT-2 name (lm_head is tied to
// wte and not stored, as Hugging Face does), so the file opens with `safetensors.torch.load_file` and maps onto
// GPT2LMHeadModel's state dict.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/model/gpt.h"

namespace trident {

void save_model(const std::filesystem::path& path, const GPT& model,
                const std::map<std::string, std::string>& metadata = {});

// Loads every tensor of the layout; a missing, extra or mis-shaped tensor is a RuntimeError naming it.
void load_model(const std::filesystem::path& path, GPT& model);
// The same file's weights of one range of the flat layout only (checked as load_model checks the whole), on the host:
// what a rank keeps of them at parallel.zero.stage 3.
std::vector<float> load_model_range(const std::filesystem::path& path, const ModelLayout& layout, FlatRange range);

}  // namespace trident
