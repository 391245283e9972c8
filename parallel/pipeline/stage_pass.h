#pragma once
// One stage's pass over a micro-batch, built from the model's steps (core/model/gpt.h): the first stage embeds the
// tokens, the others take their input from the previous stage; the last computes the final norm, the tied LM head and
// the loss, the others hand their output to the next stage and, training, take the gradient there from it.
#include "core/model/gpt.h"
#include "parallel/pipeline/stages.h"

namespace trident {

// The boundary buffers of a stage's pass: (N, C) values of the activations' type (train.precision) in host memory,
// N the batch's tokens.
struct StageIO {
  const void* input = nullptr;        // its input, from the previous stage (every stage but the first)
  void* output = nullptr;             // forward: its output, for the next stage (optional in training)
  const void* output_grad = nullptr;  // training: the gradient at its output (every stage but the last)
  void* input_grad = nullptr;         // training: the gradient at its input, for the previous stage
};

// Layers [stage.first_layer, stage.end_layer) of `model` (whose activations hold at least stage.layers() layers)
// over `batch`: forward and backward (gradients accumulate into model.grads()) or forward only. Returns the sum of
// the losses of the tokens with a target on the last stage, 0 on the others.
double stage_pass(GPT& model, const PipelineStage& stage, const TokenBatch& batch, bool train, float loss_weight,
                  const StageIO& io);

}  // namespace trident
