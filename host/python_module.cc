// `_tileinfer`: the Python binding of the host library. Errors raise RuntimeError with the
// library's message.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/typing.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <limits>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "cuda/device_query.h"
#include "host/cpu_executor.h"
#include "host/api.h"
#include "host/error.h"
#include "host/package.h"
#include "host/sampler.h"
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
  void Step(int token, int pos, bool logits) {
    exec_.Step(token, pos, logits);
    have_logits_ |= logits;
  }
  int Select() {
    CheckHaveLogits("select");
    return exec_.Select();
  }
  py::array_t<float> Logits() {
    CheckHaveLogits("logits");
    const std::vector<float> l = exec_.Logits();
    py::array_t<float> out(static_cast<py::ssize_t>(l.size()));
    std::copy(l.begin(), l.end(), out.mutable_data());
    return out;
  }
  std::vector<int> Generate(const std::vector<int>& prompt, int max_new_tokens, bool stop_at_eos) {
    GenerateOptions options;
    options.max_new_tokens = max_new_tokens;
    options.stop_at_eos = stop_at_eos;
    std::vector<int> tokens = exec_.Generate(prompt, options).tokens;
    have_logits_ = true;  // its last step's logits, as after step()
    return tokens;
  }
  std::string Decode(const std::vector<int>& ids) const { return tokenizer_.Decode(ids); }
  std::vector<int> Encode(const std::string& text, bool parse_special) const {
    return tokenizer_.Encode(text, parse_special);
  }
  const Package& package() const { return *pkg_; }

 private:
  // Before any step with logits the buffer holds no logits (NaN): an error, not a row of NaN.
  void CheckHaveLogits(const char* what) const {
    if (!have_logits_) throw Error(std::string(what) + "(): no step with logits has run yet: call step(token, pos) first");
  }
  bool have_logits_ = false;
  std::unique_ptr<Package> pkg_;
  bool validated_;
  CpuExecutor exec_;
  Tokenizer tokenizer_;
};

void Check(const api::Status& s) {
  if (!s.ok()) throw Error(s.message());
}

std::string TypeName(const py::handle& h) { return py::str(py::type::handle_of(h).attr("__name__")); }

// `h` for an error message: its repr (80 characters at most) and its type, e.g. "5 (int)".
std::string Shown(const py::handle& h) {
  return std::string(py::repr(h)).substr(0, 80) + " (" + TypeName(h) + ")";
}

// Token bytes as a str: a piece may hold part of a UTF-8 character, which becomes U+FFFD, as in
// HF's decode (pybind11's own conversion raised UnicodeDecodeError).
py::str Utf8Text(const std::string& bytes) { return py::bytes(bytes).attr("decode")("utf-8", "replace"); }

// True once the interpreter has begun to shut down (any thread may ask, without the GIL).
bool Finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// `h` as a bool in *out when it is True or False (numpy's too); false for anything else.
bool LoadBool(const py::handle& h, bool* out) {
  py::detail::make_caster<bool> caster;
  if (!caster.load(h, /*convert=*/false)) return false;
  *out = py::detail::cast_op<bool>(caster);
  return true;
}

// `h` as a bool when it is True or False (numpy's too, as .noconvert() arguments take them),
// else a TypeError naming `what`: pybind11's converting bool takes None and numbers, so
// check_target=None would have turned the target check off without a word.
bool StrictBool(const py::handle& h, const std::string& what) {
  bool value = false;
  if (!LoadBool(h, &value)) throw py::type_error(what + " must be True or False, not " + Shown(h));
  return value;
}

// `h` as UTF-8 when it is a str, else a TypeError naming `what`: pybind11's std::string also
// takes bytes, as raw bytes that no one checked, which for text is another value, not another
// spelling of it (HF tokenizers refuses bytes too). A str holding a surrogate code point (which
// UTF-8 cannot encode) is a ValueError naming the first one, where pybind11 said only "Unable
// to cast"; any other failure of the encoding is raised as it is.
std::string StrictStr(const py::handle& h, const std::string& what) {
  if (!py::isinstance<py::str>(h)) {
    throw py::type_error(what + " must be a str, not " + Shown(h) +
                         (py::isinstance<py::bytes>(h) ? "; decode bytes first, e.g. b.decode('utf-8')" : ""));
  }
  const py::object utf8 = py::reinterpret_steal<py::object>(PyUnicode_AsUTF8String(h.ptr()));
  if (!utf8) {
    if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) throw py::error_already_set();
    const py::error_already_set error;  // takes the pending UnicodeEncodeError
    Py_ssize_t at = 0;
    if (PyUnicodeEncodeError_GetStart(error.value().ptr(), &at) != 0) throw py::error_already_set();
    char code[16];
    std::snprintf(code, sizeof(code), "U+%04X", static_cast<unsigned>(PyUnicode_ReadChar(h.ptr(), at)));
    throw py::value_error(what + " holds a surrogate code point (" + code + " at index " + std::to_string(at) +
                          "), which UTF-8 cannot encode: remove it, or decode the source bytes with "
                          "errors='replace'");
  }
  return std::string(PyBytes_AS_STRING(utf8.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(utf8.ptr())));
}

// `h` as a number when it is a float, an int or a numpy scalar, but not True or False (numpy's
// neither); else a TypeError naming `what`: pybind11's double took True as 1.0 without a word.
// The C++ side then checks the value (OptionFloat).
double StrictFloat(const py::handle& h, const std::string& what) {
  bool flag = false;
  if (LoadBool(h, &flag) || py::hasattr(h, "__len__") ||  // a numpy array has __index__ and __float__
      !(PyFloat_Check(h.ptr()) || PyIndex_Check(h.ptr()) || py::hasattr(h, "__float__"))) {
    throw py::type_error(what + " must be a float (or an int), not " + Shown(h));
  }
  const double value = PyFloat_AsDouble(h.ptr());
  if (value == -1.0 && PyErr_Occurred()) throw py::error_already_set();  // e.g. an int beyond a double
  return value;
}

// "a 32-bit int" and the like, for StrictInt's range error.
template <typename T>
std::string IntTypeName() {
  return std::string("a ") + std::to_string(8 * sizeof(T)) + "-bit " + (std::is_signed_v<T> ? "" : "unsigned ") + "int";
}

// `h` as an integer of type T when it is one (int, or anything with __index__ such as numpy's
// integers, but not True or False) within T's range; else a TypeError or a ValueError naming
// `what` and the range (pybind11's own error named only the function's signatures). The C++
// side then checks the value itself (e.g. max_new_tokens at least 1).
template <typename T>
T StrictInt(const py::handle& h, const std::string& what) {
  if (py::isinstance<py::bool_>(h) || !PyIndex_Check(h.ptr())) {
    throw py::type_error(what + " must be an int, not " + Shown(h));
  }
  const py::int_ value = py::reinterpret_steal<py::int_>(PyNumber_Index(h.ptr()));
  if (!value) {  // e.g. a numpy array of more than one element, whose __index__ refuses
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw py::error_already_set();
    PyErr_Clear();
    throw py::type_error(what + " must be an int, not " + Shown(h));
  }
  const py::int_ lo(std::numeric_limits<T>::min()), hi(std::numeric_limits<T>::max());
  if (value < lo || value > hi) {
    throw py::value_error(what + " = " + std::string(py::repr(value)).substr(0, 80) + " does not fit " +
                          IntTypeName<T>() + " (" + std::to_string(std::numeric_limits<T>::min()) + ".." +
                          std::to_string(std::numeric_limits<T>::max()) + ")");
  }
  return value.cast<T>();
}

// `h` as token ids: an iterable of ints (StrictInt, 32-bit: a list, a tuple, a numpy array, a
// generator, as pybind11's list caster took), but not a str, bytes, bytearray, set or dict
// (text, or no order); else a TypeError or ValueError naming `what` and the item.
std::vector<int> StrictIds(const py::handle& h, const std::string& what) {
  if (py::isinstance<py::str>(h) || py::isinstance<py::bytes>(h) || PyByteArray_Check(h.ptr()) ||
      PyAnySet_Check(h.ptr()) || PyDict_Check(h.ptr()) || !py::isinstance<py::iterable>(h)) {
    throw py::type_error(what + " must be a list of int token ids, e.g. [1, 504], not " + Shown(h));
  }
  std::vector<int> ids;
  for (const py::handle id : h) ids.push_back(StrictInt<int>(id, what + "[" + std::to_string(ids.size()) + "]"));
  return ids;
}

// A package path: a str, bytes (an os path as the OS spells it), or an os.PathLike
// (pathlib.Path) whose os.fspath() is either; else a TypeError naming `what`.
std::string PathStr(const py::handle& h, const std::string& what) {
  const py::object path = py::isinstance<py::str>(h) || py::isinstance<py::bytes>(h) || !py::hasattr(h, "__fspath__")
                              ? py::reinterpret_borrow<py::object>(h)
                              : py::module_::import("os").attr("fspath")(h);
  if (py::isinstance<py::bytes>(path)) return path.cast<std::string>();
  if (!py::isinstance<py::str>(path)) {
    throw py::type_error(what + " must be a str, bytes or an os.PathLike such as pathlib.Path, not " + Shown(h));
  }
  return StrictStr(path, what);
}

// Argument types for the signatures help() shows; each takes any object, which the
// function then checks itself, with a message naming the argument.
using BoolArg = py::typing::Union<py::bool_>;  // shown as bool; checked by StrictBool
using StrArg = py::typing::Union<py::str>;     // shown as str; checked by StrictStr
// Any object, shown as str | bytes | os.PathLike; checked by PathStr.
class PathArg : public py::object {
  PYBIND11_OBJECT_DEFAULT(PathArg, object, PyObject_Type)
};
using IntArg = py::typing::Union<py::int_>;    // shown as int; checked by StrictInt
using FloatArg = py::typing::Union<py::float_>;  // shown as float; checked by StrictFloat
using IdsArg = py::typing::Union<py::typing::List<int>>;  // shown as list[int]; checked by StrictIds
using OptionalStr = py::typing::Optional<py::str>;
using OptionalIds = py::typing::Optional<py::typing::List<int>>;
using OptionalChat = py::typing::Optional<py::typing::List<py::typing::Dict<py::str, py::str>>>;
using OptionalOnToken = py::typing::Optional<py::typing::Callable<py::typing::Optional<bool>(int, py::bytes)>>;

// The public API (host/api.h) for Python: the same Engine, Request and Result.
class PyEngine {
 public:
  PyEngine(const PathArg& path, const StrArg& device, const IntArg& cpu_threads, const BoolArg& check_target) {
    api::EngineOptions o;
    o.device = StrictStr(device, "device");
    o.cpu_threads = StrictInt<int>(cpu_threads, "cpu_threads");
    o.check_target = StrictBool(check_target, "check_target");
    Check(api::Engine::Open(PathStr(path, "path"), o, &engine_));
  }

  py::dict Generate(const OptionalStr& prompt, const OptionalIds& prompt_ids, const OptionalChat& chat,
                    const IntArg& max_new_tokens, const FloatArg& temperature, const IntArg& top_k, const FloatArg& top_p,
                    const IntArg& seed, const StrArg& stop, const BoolArg& stop_at_eos,
                    const BoolArg& reuse_kv_cache, const OptionalOnToken& on_token) {
    api::Request r;
    if (!prompt.is_none()) r.prompt = StrictStr(prompt, "prompt");
    if (!prompt_ids.is_none()) r.prompt_ids = StrictIds(prompt_ids, "prompt_ids");
    if (!chat.is_none()) {
      if (py::isinstance<py::str>(chat)) throw py::type_error("chat must be a list of {'role': ..., 'content': ...} dicts");
      for (const py::handle m : chat) {
        if (!py::isinstance<py::dict>(m) || !m.contains("role") || !m.contains("content")) {
          throw py::type_error("each chat message must be a dict with 'role' and 'content', not " +
                               std::string(py::repr(m)));
        }
        r.chat.push_back({StrictStr(m["role"], "a chat message's role"),
                          StrictStr(m["content"], "a chat message's content")});
      }
    }
    r.max_new_tokens = StrictInt<int>(max_new_tokens, "max_new_tokens");
    r.temperature = OptionFloat(StrictFloat(temperature, "temperature"), "temperature", /*zero_allowed=*/true);
    r.top_k = StrictInt<int>(top_k, "top_k");
    r.top_p = OptionFloat(StrictFloat(top_p, "top_p"), "top_p", /*zero_allowed=*/false);
    r.seed = StrictInt<uint64_t>(seed, "seed");
    r.stop = StrictStr(stop, "stop");
    r.stop_at_eos = StrictBool(stop_at_eos, "stop_at_eos");
    r.reuse_kv_cache = StrictBool(reuse_kv_cache, "reuse_kv_cache");
    api::TokenCallback callback;
    std::exception_ptr callback_error;  // what on_token raised: it stops the request, then re-raised as it is
    if (!on_token.is_none()) {
      if (!PyCallable_Check(on_token.ptr())) {
        throw py::type_error("on_token must be callable as on_token(id, piece), not " + Shown(on_token));
      }
      callback = [&](int id, const std::string& piece) {
        // A daemon thread still generating while the interpreter exits: taking the GIL then ends
        // the thread inside this C++ frame (CPython's take_gil), which aborts the process; stop
        // the request instead (the interpreter is going away, so nobody waits for its tokens).
        if (Finalizing()) return false;
        py::gil_scoped_acquire gil;
        try {
          const py::object go_on = on_token(id, py::bytes(piece));
          bool value = true;
          if (!go_on.is_none() && !LoadBool(go_on, &value)) {
            throw py::type_error("on_token must return True (go on), False (stop) or None, not " + Shown(go_on));
          }
          return value;
        } catch (...) {
          callback_error = std::current_exception();
          return false;
        }
      };
    }
    api::Result result;
    api::Status status;
    // Other Python threads run while this one generates; the callback takes the GIL back. Not
    // py::gil_scoped_release: its destructor takes the GIL back, and in a daemon thread whose
    // interpreter has begun to exit CPython ends the thread there, inside a noexcept destructor,
    // which aborts the process. Such a thread waits here for the process to end instead.
    PyThreadState* const thread_state = PyEval_SaveThread();
    status = engine_->Generate(r, callback, &result);  // returns a Status; the callback catches what it raises
    while (Finalizing()) std::this_thread::sleep_for(std::chrono::seconds(1));
    PyEval_RestoreThread(thread_state);
    if (callback_error) std::rethrow_exception(callback_error);  // KeyboardInterrupt stays one
    Check(status);
    py::dict d;
    d["prompt_ids"] = result.prompt_ids;
    d["prompt_reused"] = result.prompt_reused;
    d["tokens"] = result.tokens;
    d["text"] = Utf8Text(result.text);
    d["stopped"] = result.stopped;
    d["prompt_ms"] = result.prompt_ms;
    d["decode_ms"] = result.decode_ms;
    return d;
  }

  std::vector<int> Encode(const StrArg& text) const {
    std::vector<int> ids;
    Check(engine_->Encode(StrictStr(text, "text"), &ids));
    return ids;
  }

  py::str Decode(const IdsArg& ids) const {
    std::string text;
    Check(engine_->Decode(StrictIds(ids, "ids"), &text));
    return Utf8Text(text);
  }

  std::string executor_name() const { return engine_->executor_name(); }
  int vocab_size() const { return engine_->vocab_size(); }
  int max_context() const { return engine_->max_context(); }  // prompt + new tokens, at most

 private:
  std::unique_ptr<api::Engine> engine_;
};

// pybind11 (3.0; its issue 6153) lets `T.__new__(T, ...)` make an object whose C++ part was
// never constructed, and any method of it then reads unconstructed memory: a segfault. This
// __new__ constructs the object itself, with the arguments it was given, by pybind11's own
// __init__; the second __init__ that `T(...)` then makes is ignored by pybind11 (a registered
// instance is not constructed twice: pybind11.h, "ignore the second __init__"). A call without
// arguments is refused with a message of its own (every constructor here takes a path or more).
// The classes are final (py::is_final), so no subclass makes its own way around this. An
// explicit obj.__init__(...) on a constructed object is ignored, as pybind11 ignores it.
template <typename Class>
void ConstructInNew(Class& cls) {
  const py::object base_new = cls.attr("__new__");
  const py::object self_type = cls;
  cls.def_static("__new__", [base_new, self_type](const py::object& type, const py::args& args,
                                                   const py::kwargs& kwargs) {
    if (!type.is(self_type)) return base_new(type);
    if (args.empty() && kwargs.empty()) {
      const std::string name = py::str(self_type.attr("__name__"));
      throw py::type_error(name + "() takes its constructor's arguments (see help(" + name + ")); " + name +
                           ".__new__ alone would make an object without them");
    }
    py::object self = base_new(type);
    self_type.attr("__init__")(self, *args, **kwargs);  // raises the constructor's error, if any
    return self;
  });
}

}  // namespace

namespace pybind11::detail {
template <>
struct handle_type_name<PathArg> {
  static constexpr auto name = const_name("str | bytes | os.PathLike");
};
}  // namespace pybind11::detail

PYBIND11_MODULE(_tileinfer, m) {
  m.doc() = "TileInfer host runtime (C++), bound with pybind11.";
  py::register_exception<Error>(m, "Error", PyExc_RuntimeError);
  m.def(
      "gpu_count", []() { return QueryDevices().count; },
      "Number of usable CUDA devices; 0 when there is no GPU or no driver.");
  m.def(
      "with_unicode_delta", [](const StrArg& pattern) { return WithUnicodeDelta(StrictStr(pattern, "pattern")); },
      py::arg("pattern"), "A pre-tokenizer pattern as the tokenizer compiles it in ICU (host/tokenizer.h), for tests.");
  m.def(
      "validate_package", [](const std::string& path) { ValidatePlan(*Package::Open(path)); },
      py::arg("path"), "Opens and validates a package; raises Error naming the failed check.");
  py::class_<PyEngine> engine(m, "Engine", py::is_final(),
                              "A package opened with the public API (host/api.h): generation on the GPU when "
                              "usable and planned for, else on the CPU.");
  ConstructInNew(engine);
  engine.def(py::init<const PathArg&, const StrArg&, const IntArg&, const BoolArg&>(), py::arg("path"),
           py::arg("device") = py::str("auto"), py::arg("cpu_threads") = py::int_(0),
           py::arg("check_target") = py::bool_(true))
      .def("generate", &PyEngine::Generate, py::kw_only(), py::arg("prompt") = py::none(),
           py::arg("prompt_ids") = py::none(), py::arg("chat") = py::none(),
           py::arg("max_new_tokens") = py::int_(32), py::arg("temperature") = py::float_(0.0), py::arg("top_k") = py::int_(0),
           py::arg("top_p") = py::float_(1.0), py::arg("seed") = py::int_(0), py::arg("stop") = py::str(""),
           py::arg("stop_at_eos") = py::bool_(true), py::arg("reuse_kv_cache") = py::bool_(true),
           py::arg("on_token") = py::none(),
           "Generates from exactly one of prompt (text), prompt_ids or chat (a list of {'role', "
           "'content'} dicts). on_token(id, piece_bytes) is called as tokens are chosen; returning "
           "False stops. reuse_kv_cache keeps the K/V rows earlier requests left for the prompt's "
           "leading tokens (same tokens, less prompt time). Returns a dict: prompt_ids, prompt_reused "
           "(leading prompt tokens not run again), tokens, text, stopped, prompt_ms, decode_ms.")
      .def("encode", &PyEngine::Encode, py::arg("text"), "Ids of text (special tokens parsed; no BOS).")
      .def("decode", &PyEngine::Decode, py::arg("ids"), "Text of token ids.")
      .def_property_readonly("executor_name", &PyEngine::executor_name)
      .def_property_readonly("vocab_size", &PyEngine::vocab_size)
      .def_property_readonly("max_context", &PyEngine::max_context);
  py::class_<CpuSession> session(m, "CpuSession", py::is_final(), "A package loaded, validated and run by the CPU executor.");
  ConstructInNew(session);
  session
      .def(py::init([](const PathArg& path, const IntArg& threads) {
             return std::make_unique<CpuSession>(PathStr(path, "path"), StrictInt<int>(threads, "threads"));
           }),
           py::arg("path"), py::arg("threads") = py::int_(0))
      .def(
          "step",
          [](CpuSession& s, const IntArg& token, const IntArg& pos, bool logits) {
            s.Step(StrictInt<int>(token, "token"), StrictInt<int>(pos, "pos"), logits);
          },
          py::arg("token"), py::arg("pos"), py::arg("logits").noconvert() = true,
           "Runs input `token` at position `pos` (appends to the K/V cache). Positions come in order "
           "from 0 (which starts a new request); an earlier one goes back: another token there "
           "rewrites the cache from there, the same token keeps the positions after it; one that "
           "skips a position raises Error.")
      .def("select", &CpuSession::Select, "Greedy token after a step with logits (-1: non-finite); before any, an error.")
      .def("logits", &CpuSession::Logits, "FP32 logits (vocab,) of the last step with logits; before any, an error.")
      .def(
          "generate",
          [](CpuSession& s, const IdsArg& prompt, const IntArg& max_new_tokens, bool stop_at_eos) {
            return s.Generate(StrictIds(prompt, "prompt"), StrictInt<int>(max_new_tokens, "max_new_tokens"),
                              stop_at_eos);
          },
          py::arg("prompt"), py::arg("max_new_tokens"), py::arg("stop_at_eos").noconvert() = true,
          "Greedy generation from position 0; returns new ids.")
      .def("decode", [](const CpuSession& s, const IdsArg& ids) { return Utf8Text(s.Decode(StrictIds(ids, "ids"))); },
           py::arg("ids"), "Text of token ids (bytes that are not UTF-8 as U+FFFD, as HF decodes).")
      .def(
          "encode",
          [](const CpuSession& s, const StrArg& text, bool parse_special) {
            return s.Encode(StrictStr(text, "text"), parse_special);
          },
          py::arg("text"), py::arg("parse_special").noconvert() = true,
           "Token ids of `text` (no BOS), as HF tokenizers encodes it.")
      .def_property_readonly("vocab_size", [](const CpuSession& s) { return s.package().model().vocab; })
      .def_property_readonly("max_context", [](const CpuSession& s) { return s.package().plan().max_context; });
  py::class_<Tokenizer> tokenizer(m, "Tokenizer", py::is_final(), "A package's tokenizer alone (byte-level BPE).");
  ConstructInNew(tokenizer);
  tokenizer.def(py::init([](const PathArg& path) {
                  return Tokenizer::FromJson(Package::Open(PathStr(path, "path"))->tokenizer_json());
                }),
           py::arg("path"), "The tokenizer of the package at `path`.")
      .def_static(
          "from_json", [](const StrArg& section) { return Tokenizer::FromJson(StrictStr(section, "section")); },
          py::arg("section"),
                  "A tokenizer from the text of a package's tokenizer section (TokenizerSpec.to_json()).")
      .def(
          "encode",
          [](const Tokenizer& t, const StrArg& text, bool parse_special) {
            return t.Encode(StrictStr(text, "text"), parse_special);
          },
          py::arg("text"), py::arg("parse_special").noconvert() = true,
           "Token ids of `text`, without BOS; special tokens are parsed only when parse_special.")
      .def("decode", [](const Tokenizer& t, const IdsArg& ids) { return Utf8Text(t.Decode(StrictIds(ids, "ids"))); },
           py::arg("ids"), "Text of token ids (bytes that are not UTF-8 as U+FFFD, as HF decodes).")
      .def_property_readonly("vocab_size", &Tokenizer::vocab_size)
      .def_property_readonly("bos_id", &Tokenizer::bos_id)
      .def_property_readonly("add_bos", &Tokenizer::add_bos);
}
