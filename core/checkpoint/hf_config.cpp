#include "core/checkpoint/hf_config.h"

#include "kernels/common/error.h"

namespace trident {

nlohmann::json hf_config(const ModelConfig& model) {
  // What every Trident model shares with GPT-2: the shapes, the MLP (4C wide, gelu_new), the LayerNorms and the
  // tied LM head. Dropout is off (Trident has none); no bos/eos ids, as Trident's vocabularies have no fixed ones.
  nlohmann::json j = {
      {"vocab_size", model.vocab_size},
      {"n_positions", model.max_seq_len},
      {"n_embd", model.n_embd},
      {"n_layer", model.n_layer},
      {"n_head", model.n_head},
      {"n_inner", nullptr},
      {"activation_function", "gelu_new"},
      {"layer_norm_epsilon", 1e-5},
      {"initializer_range", 0.02},
      {"resid_pdrop", 0.0},
      {"embd_pdrop", 0.0},
      {"attn_pdrop", 0.0},
      {"tie_word_embeddings", true},
      {"bos_token_id", nullptr},
      {"eos_token_id", nullptr},
      {"use_cache", true},
      {"torch_dtype", "float32"},
  };
  if (model.attention == "softmax") {
    j["architectures"] = {"GPT2LMHeadModel"};
    j["model_type"] = "gpt2";
    // GPT2Config's defaults, spelled out: attention scores scaled by 1/sqrt(D) only, in the input's precision.
    j["scale_attn_weights"] = true;
    j["scale_attn_by_inverse_layer_idx"] = false;
    j["reorder_and_upcast_attn"] = false;
    return j;
  }
  TRIDENT_CHECK(model.attention == "linear" || model.attention == "hybrid", "model.attention '{}'", model.attention);
  if (model.attention == "linear") {
    j["architectures"] = {"TridentLinearLMHeadModel"};
    j["model_type"] = "trident_linear";
    j["description"] =
        "GPT-2 with TransNormerLLM's linear-attention block in place of softmax attention and no position embeddings "
        "(wpe): Trident's core/model/README.md defines it; transformers has no class for it";
  } else {
    j["architectures"] = {"TridentHybridLMHeadModel"};
    j["model_type"] = "trident_hybrid";
    j["description"] =
        "GPT-2 whose layers run GPT-2's softmax attention or TransNormerLLM's linear-attention block, as `layers` "
        "says (L linear, S softmax, the pattern repeated to n_layer), with GPT-2's position embeddings (wpe): "
        "Trident's core/model/README.md defines it; transformers has no class for it";
    j["layers"] = model.layers;
  }
  j["attention"] = model.attention;
  j["qk_activation"] = model.linear_qk_activation;
  j["output_gate"] = model.linear_output_gate;
  j["output_norm"] = model.linear_output_norm;
  j["output_norm_epsilon"] = 1e-5;
  j["decay"] = "alibi";
  j["decay_layer_scaling"] = model.decay_layer_scaling;
  j["linear_chunk"] = model.linear_chunk;
  return j;
}

}  // namespace trident
