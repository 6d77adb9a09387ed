// Streaming-read benchmark kernel (the bandwidth floor); plain C++ header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tileinfer {

// Reads `bytes` (a multiple of 16) at `data` (device) with `blocks` x `threads`; `sink` is a
// device array of `blocks` words. Returns a CUDA error string (empty on success) and the
// kernel's time in *ms (CUDA events).
std::string StreamRead(const void* data, size_t bytes, int blocks, int threads, uint32_t* sink, float* ms);

}  // namespace tileinfer
