#pragma once
// config.json for Hugging Face transformers, written beside model.safetensors in every checkpoint directory.
//
// model.attention: softmax is GPT-2 exactly (pre-norm, learned positions, gelu_new, LayerNorm eps 1e-5, tied LM
// head, scale 1/sqrt(D)), so the directory opens with GPT2LMHeadModel.from_pretrained(dir) and computes Trident's
// logits. model.attention: linear has no transformers class: its config.json names the block
// (TridentLinearLMHeadModel, model_type trident_linear) and its options, for code that implements it.
#include <nlohmann/json.hpp>

#include "core/config/config.h"

namespace trident {

nlohmann::json hf_config(const ModelConfig& model);

}  // namespace trident
