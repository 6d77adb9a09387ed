// `_tileinfer`: the Python binding of the host library (grows with the embedding API).
#include <pybind11/pybind11.h>

#include "cuda/device_query.h"

namespace py = pybind11;

PYBIND11_MODULE(_tileinfer, m) {
  m.doc() = "TileInfer host runtime (C++), bound with pybind11.";
  m.def(
      "gpu_count",
      []() { return tileinfer::QueryDevices().count; },
      "Number of usable CUDA devices; 0 when there is no GPU or no driver.");
}
