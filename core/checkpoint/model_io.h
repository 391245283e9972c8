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

// model.safetensors written by ranges, where no process holds the whole weights (parallel.zero.stage 3): its data
// section is the flat buffer in layout order, so begin_model_file writes the header (save_model's, for `layout`) and
// gives the file its whole size, then each range's bytes go to their place (write_model_range: any process that sees
// the file, in any order, each fsynced). The file is save_model's once every range is written. RuntimeErrors name the
// path.
void begin_model_file(const std::filesystem::path& path, const ModelLayout& layout,
                      const std::map<std::string, std::string>& metadata = {});
void write_model_range(const std::filesystem::path& path, FlatRange range, const float* host);

// Loads every tensor of the layout; a missing, extra or mis-shaped tensor is a RuntimeError naming it.
void load_model(const std::filesystem::path& path, GPT& model);
// The same file's weights of one range of the flat layout only (checked as load_model checks the whole), on the host:
// what a rank keeps of them at parallel.zero.stage 3.
std::vector<float> load_model_range(const std::filesystem::path& path, const ModelLayout& layout, FlatRange range);

}  // namespace trident
