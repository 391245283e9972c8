#include "parallel/pipeline/stage_pass.h"

#include "kernels/common/error.h"

namespace trident {

namespace {

template <class T>
double run_stage(GPT& model, const PipelineStage& stage, const TokenBatch& host_batch, bool train,
                 float loss_weight, const StageIO& io) {
  const bool first = stage.first(), last = stage.end_layer == model.config().n_layer;
  model.check_batch(host_batch, last);
  TRIDENT_CHECK(model.activation_layers() >= stage.layers(),
                "pipeline stage of layers [{}, {}): its model holds the activations of {} layers", stage.first_layer,
                stage.end_layer, model.activation_layers());
  TRIDENT_CHECK(first || io.input, "a pipeline stage after the first needs its input");
  TRIDENT_CHECK(last || (train ? io.output_grad != nullptr : io.output != nullptr),
                "a pipeline stage before the last needs {}",
                train ? "the gradient at its output" : "its output buffer");
  TRIDENT_CHECK(!train || first || io.input_grad, "a pipeline stage after the first returns its input's gradient");
  const TokenBatch b = model.on_backend({host_batch})[0];
  const ParamWindow w = model.resident_weights();
  Activations<T>& acts = model.activations<T>();
  Backend& backend = model.backend();
  const int64_t N = b.num_tokens, C = model.config().n_embd;
  // layer l's activations and input: the stage's layers from slot 0
  auto saved = [&](int l) -> LayerActivations<T>& {
    return acts.layers[static_cast<std::size_t>(l - stage.first_layer)];
  };
  auto input = [&](int l) { return l == stage.first_layer ? acts.encoded : saved(l - 1).res3; };
  if (first)
    model.embed<T>(b, w);
  else
    backend.copy_rows(acts.encoded, C, static_cast<const T*>(io.input), C, N, C);
  for (int l = stage.first_layer; l < stage.end_layer; ++l) model.forward_layer<T>(l, w, b, input(l), saved(l));
  const T* output = input(stage.end_layer);
  if (io.output) backend.copy_rows(static_cast<T*>(io.output), C, output, C, N, C);
  const double loss_sum = last ? model.head<T>(b, train ? PassKind::train : PassKind::loss, loss_weight, nullptr,
                                               {w, w}, output)
                               : 0.0;
  if (!train) return loss_sum;
  // the gradient at the stage's output: from the head (ln_f's backward into dnarrow) or from the next stage
  T* dres = acts.dnarrow;
  T* dnarrow = acts.dres;
  if (last)
    model.final_norm_backward<T>({w, w}, output, N);
  else
    backend.copy_rows(dres, C, static_cast<const T*>(io.output_grad), C, N, C);
  for (int l = stage.end_layer - 1; l >= stage.first_layer; --l)
    model.backward_layer<T>(l, w, b, input(l), saved(l), dres, dnarrow);
  if (first)
    model.embed_backward<T>(b, w, dres);
  else
    backend.copy_rows(static_cast<T*>(io.input_grad), C, dres, C, N, C);
  return loss_sum;
}

}  // namespace

double stage_pass(GPT& model, const PipelineStage& stage, const TokenBatch& batch, bool train, float loss_weight,
                  const StageIO& io) {
  return model.precision() == Precision::bf16 ? run_stage<bf16>(model, stage, batch, train, loss_weight, io)
                                              : run_stage<float>(model, stage, batch, train, loss_weight, io);
}

}  // namespace trident
