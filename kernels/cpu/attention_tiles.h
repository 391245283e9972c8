#pragma once
// The tile sizes of the CPU attention kernels (attention_softmax.cpp, attention_block.cpp): query rows (kBr) and
// keys (kBc). A 64 x 64 fp32 score tile is 16 KB, as is a 64-row slice of Q, K, V or dO at D = 64, so a tile's
// operands stay in L2; and 64 is large enough for the OpenBLAS tile GEMMs to run near peak. The kernels' masking and
// loop bounds hold for any kBr, kBc.

namespace trident::cpu {

constexpr int kBr = 64;
constexpr int kBc = 64;

}  // namespace trident::cpu
