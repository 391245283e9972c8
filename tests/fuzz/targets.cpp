#include "tests/fuzz/targets.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/safetensors.h"
#include "core/config/config.h"
#include "core/data/indexed_dataset.h"
#include "kernels/common/error.h"
#include "parallel/cost/profile.h"

namespace trident::fuzz {

namespace fs = std::filesystem;

namespace {

// An accepted input that its own writer does not reproduce: a bug, never a user's error.
struct RoundTripFailure : std::logic_error {
  using std::logic_error::logic_error;
};

// One scratch directory per process for the readers that take paths; removed at exit.
class Scratch {
 public:
  Scratch() : dir_(fs::temp_directory_path() / fmt::format("trident_fuzz_{}", ::getpid())) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

const fs::path& scratch() {
  static const Scratch scratch;
  return scratch.dir();
}

void write_file(const fs::path& path, Bytes bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("fuzz: cannot write " + path.string());
}

std::string text_of(Bytes input) { return {reinterpret_cast<const char*>(input.data()), input.size()}; }

// The written-back text of an accepted input must read again, to the same text.
template <class Parse, class Write>
void check_text_round_trip(const std::string& what, const std::string& written, Parse parse, Write write) {
  std::string again;
  try {
    again = write(parse(written));
  } catch (const Error& e) {
    throw RoundTripFailure(fmt::format("{}: the written-back text is refused: {}\n{}", what, e.what(), written));
  }
  if (again != written)
    throw RoundTripFailure(fmt::format("{}: written back twice, the texts differ:\n{}\n---\n{}", what, written, again));
}

void fuzz_config(Bytes input) {
  auto parse = [](const std::string& text) { return parse_config(text, "fuzz.yaml"); };
  check_text_round_trip("config", to_yaml(parse(text_of(input))), parse, to_yaml);
}

void fuzz_profile(Bytes input) {
  auto parse = [](const std::string& text) { return cost::parse_profile(text, "fuzz_profile.yaml"); };
  check_text_round_trip("profile", cost::profile_yaml(parse(text_of(input))), parse, cost::profile_yaml);
}

std::span<const char> tensor_bytes(const StTensor& t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  return {static_cast<const char*>(t.data), static_cast<size_t>(n) * st_dtype_size(t.dtype)};
}

void fuzz_safetensors(Bytes input) {
  const fs::path path = scratch() / "fuzz.safetensors";
  write_file(path, input);
  const SafetensorsFile file(path);
  for (const StTensor& t : file.tensors())
    if (&file.get(t.name, t.dtype, t.shape) != &t) throw RoundTripFailure("safetensors: get() finds another tensor");
  const fs::path again_path = scratch() / "again.safetensors";
  try {
    write_safetensors(again_path, file.tensors(), file.metadata());
  } catch (const Error& e) {
    throw RoundTripFailure(fmt::format("safetensors: an accepted file cannot be written back: {}", e.what()));
  }
  const SafetensorsFile again(again_path);
  bool same = again.metadata() == file.metadata() && again.tensors().size() == file.tensors().size();
  for (size_t i = 0; same && i < file.tensors().size(); ++i) {
    const StTensor& a = file.tensors()[i];
    const StTensor& b = again.tensors()[i];
    same = a.name == b.name && a.dtype == b.dtype && a.shape == b.shape &&
           std::ranges::equal(tensor_bytes(a), tensor_bytes(b));
  }
  if (!same) throw RoundTripFailure("safetensors: written back and read again, the tensors differ");
}

// Every document of a source, read in chunks.
std::vector<std::vector<int32_t>> read_documents(const DocumentSource& source) {
  std::vector<std::vector<int32_t>> documents(static_cast<size_t>(source.num_documents()));
  for (int64_t d = 0; d < source.num_documents(); ++d) {
    std::vector<int32_t>& doc = documents[static_cast<size_t>(d)];
    doc.resize(static_cast<size_t>(source.document_length(d)));
    constexpr int64_t kChunk = 4096;
    for (int64_t start = 0; start < static_cast<int64_t>(doc.size()); start += kChunk) {
      const int64_t n = std::min<int64_t>(kChunk, static_cast<int64_t>(doc.size()) - start);
      source.read(d, start, std::span<int32_t>(doc).subspan(static_cast<size_t>(start), static_cast<size_t>(n)));
    }
  }
  return documents;
}

void fuzz_indexed_dataset(Bytes input) {
  uint32_t idx_size = static_cast<uint32_t>(input.size());
  if (input.size() >= 4) {
    std::memcpy(&idx_size, input.data(), 4);
    input = input.subspan(4);
  }
  idx_size = std::min<uint32_t>(idx_size, static_cast<uint32_t>(input.size()));
  const fs::path prefix = scratch() / "fuzz";
  write_file(fs::path(prefix).concat(".idx"), input.first(idx_size));
  write_file(fs::path(prefix).concat(".bin"), input.subspan(idx_size));
  constexpr int64_t kVocab = int64_t(1) << 20;
  const std::vector<std::vector<int32_t>> documents = read_documents(*open_indexed_dataset(prefix, kVocab));
  const fs::path again_prefix = scratch() / "again";
  try {
    write_indexed_dataset(again_prefix, documents, TokenType::int32);
    if (read_documents(*open_indexed_dataset(again_prefix, kVocab)) != documents)
      throw RoundTripFailure("indexed_dataset: written back and read again, the documents differ");
  } catch (const Error& e) {
    throw RoundTripFailure(fmt::format("indexed_dataset: an accepted dataset cannot be written back: {}", e.what()));
  }
}

void fuzz_trainer_state(Bytes input) {
  const fs::path dir = scratch() / "checkpoints" / checkpoint_dir_name(10);
  fs::create_directories(dir);
  write_file(dir / "trainer_state.json", input);
  verify_checkpoint(dir, /*read_data=*/false);  // lists problems (the data files are absent), never throws
  if (const TrainerState state = read_trainer_state(dir); state.step != 10)
    throw RoundTripFailure(fmt::format("trainer_state: accepted at step {} in step 10's directory", state.step));
}

constexpr std::array kTargets = {
    Target{"config", fuzz_config},
    Target{"safetensors", fuzz_safetensors},
    Target{"indexed_dataset", fuzz_indexed_dataset},
    Target{"trainer_state", fuzz_trainer_state},
    Target{"profile", fuzz_profile},
};

}  // namespace

std::span<const Target> targets() { return kTargets; }

const Target& target(std::string_view name) {
  for (const Target& t : kTargets)
    if (t.name == name) return t;
  throw std::invalid_argument(fmt::format("no fuzz target '{}'", name));
}

bool run_target(const Target& target, Bytes input) {
  try {
    target.run(input);
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace trident::fuzz
