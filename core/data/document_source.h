#pragma once
// A corpus as the trainer sees it: numbered documents of token ids. Batches are cut from documents and never span
// two (attention never crosses a document boundary), so a source only says how many documents it has, how long each
// is, and copies a range of one. Sources are immutable once open: every method is const and safe to call from
// several threads.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "core/config/config.h"

namespace trident {

class DocumentSource {
 public:
  virtual ~DocumentSource() = default;

  virtual int64_t num_documents() const = 0;
  virtual int64_t document_length(int64_t doc) const = 0;

  // Copies tokens [start, start + out.size()) of document `doc` into `out`; the range must lie in the document.
  void read(int64_t doc, int64_t start, std::span<int32_t> out) const;

  // One line for logs and messages: the kind, the file and the number of documents.
  virtual std::string describe() const = 0;
  // What changed in the source's files since they were opened (a file truncated, rewritten or replaced under a
  // running job), or nothing. The training loop asks after every step and stops with a checkpoint.
  virtual std::optional<std::string> changed() const { return std::nullopt; }

 private:
  virtual void read_tokens(int64_t doc, int64_t start, std::span<int32_t> out) const = 0;
};

// Opens the corpus config.data describes (data.kind picks the format) and checks that every token id it can
// produce is below model.vocab_size. A missing file, a vocabulary too small for the data or an inconsistent key is
// a ConfigError naming the keys; a malformed file is a RuntimeError naming the file and what is wrong.
std::unique_ptr<DocumentSource> open_documents(const Config& config);

}  // namespace trident
