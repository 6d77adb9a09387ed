// `_tileinfer`: the Python binding of the host library. Errors raise RuntimeError with the
// library's message.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "cuda/device_query.h"
#include "host/cpu_executor.h"
#include "host/error.h"
#include "host/package.h"
#include "host/tokenizer.h"
#include "host/validate.h"

namespace py = pybind11;
using namespace tileinfer;

namespace {

// A package with its CPU executor: the executor holds a reference, so they live together.
class CpuSession {
 public:
  CpuSession(const std::string& path, int threads)
      : pkg_(Package::Open(path)), validated_((ValidatePlan(*pkg_), true)), exec_(*pkg_, threads),
        tokenizer_(Tokenizer::FromJson(pkg_->tokenizer_json())) {}
  void Step(int token, int pos, bool logits) { exec_.Step(token, pos, logits); }
  int Select() { return exec_.Select(); }
  py::array_t<float> Logits() {
    const std::vector<float> l = exec_.Logits();
    py::array_t<float> out(static_cast<py::ssize_t>(l.size()));
    std::copy(l.begin(), l.end(), out.mutable_data());
    return out;
  }
  std::vector<int> Generate(const std::vector<int>& prompt, int max_new_tokens, bool stop_at_eos) {
    GenerateOptions options;
    options.max_new_tokens = max_new_tokens;
    options.stop_at_eos = stop_at_eos;
    return exec_.Generate(prompt, options).tokens;
  }
  std::string Decode(const std::vector<int>& ids) const { return tokenizer_.Decode(ids); }
  const Package& package() const { return *pkg_; }

 private:
  std::unique_ptr<Package> pkg_;
  bool validated_;
  CpuExecutor exec_;
  Tokenizer tokenizer_;
};

}  // namespace

PYBIND11_MODULE(_tileinfer, m) {
  m.doc() = "TileInfer host runtime (C++), bound with pybind11.";
  py::register_exception<Error>(m, "Error", PyExc_RuntimeError);
  m.def(
      "gpu_count", []() { return QueryDevices().count; },
      "Number of usable CUDA devices; 0 when there is no GPU or no driver.");
  m.def(
      "validate_package", [](const std::string& path) { ValidatePlan(*Package::Open(path)); },
      py::arg("path"), "Opens and validates a package; raises Error naming the failed check.");
  py::class_<CpuSession>(m, "CpuSession", "A package loaded, validated and run by the CPU executor.")
      .def(py::init<const std::string&, int>(), py::arg("path"), py::arg("threads") = 0)
      .def("step", &CpuSession::Step, py::arg("token"), py::arg("pos"), py::arg("logits") = true,
           "Runs input `token` at position `pos` (appends to the K/V cache).")
      .def("select", &CpuSession::Select, "Greedy token after a step with logits (-1: non-finite).")
      .def("logits", &CpuSession::Logits, "FP32 logits (vocab,) of the last step with logits.")
      .def("generate", &CpuSession::Generate, py::arg("prompt"), py::arg("max_new_tokens"),
           py::arg("stop_at_eos") = true, "Greedy generation from position 0; returns new ids.")
      .def("decode", &CpuSession::Decode, py::arg("ids"), "Text of token ids.")
      .def_property_readonly("vocab_size", [](const CpuSession& s) { return s.package().model().vocab; })
      .def_property_readonly("max_context", [](const CpuSession& s) { return s.package().plan().max_context; });
}
