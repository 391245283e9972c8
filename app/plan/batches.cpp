#include "app/plan/batches.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "kernels/common/error.h"
#include "core/data/batcher.h"
#include "core/data/document_source.h"

namespace trident::app::plan {

namespace {

std::vector<int64_t> read_lengths_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw_config_error("--lengths: cannot read '{}': {}", path, std::strerror(errno));
  std::vector<int64_t> lengths;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      if (word.starts_with('#')) break;  // a comment to the end of the line
      int64_t s = 0;
      auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), s);
      if (error != std::errc() || end != word.data() + word.size() || s < 1)
        throw_config_error("{}:{}: expected a sequence length (an integer >= 1), got '{}'", path, number, word);
      lengths.push_back(s);
    }
  }
  if (lengths.empty()) throw_config_error("{}: no sequence lengths in the file", path);
  return lengths;
}

}  // namespace

std::vector<PlanBatch> draw_batches(const Config& config, const BatchSource& source) {
  std::vector<PlanBatch> out;
  if (!source.lengths_file.empty()) {
    const std::vector<int64_t> all = read_lengths_file(source.lengths_file);
    const size_t per = source.batch_sequences > 0 ? static_cast<size_t>(source.batch_sequences) : all.size();
    for (size_t begin = 0; begin < all.size() && static_cast<int64_t>(out.size()) < source.batches; begin += per)
      out.push_back({std::vector<int64_t>(all.begin() + begin, all.begin() + std::min(all.size(), begin + per)), 0});
    return out;
  }
  const std::unique_ptr<DocumentSource> documents = open_documents(config);
  if (source.batch_sequences > 0) {
    const int64_t n = documents->num_documents();
    for (int64_t b = 0; b < source.batches; ++b) {
      PlanBatch batch;
      for (int64_t i = 0; i < source.batch_sequences; ++i) {
        const int64_t s = documents->document_length((b * source.batch_sequences + i) % n);
        if (s > config.model.max_seq_len) ++batch.over_max_seq_len; else batch.lengths.push_back(s);
      }
      out.push_back(std::move(batch));
    }
    return out;
  }
  const Batcher batcher(*documents, config, Split::train);
  for (int64_t step = 0; step < source.batches; ++step) {
    const Batch batch = batcher.batch(step);
    PlanBatch drawn;
    for (int s = 0; s < batch.num_sequences(); ++s) drawn.lengths.push_back(batch.cu_seqlens[s + 1] - batch.cu_seqlens[s]);
    out.push_back(std::move(drawn));
  }
  return out;
}

}  // namespace trident::app::plan
