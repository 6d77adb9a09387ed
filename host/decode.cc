// `bazel run //host:decode -- --package=PATH --prompt_ids=1,2,3`: load a TileInfer package,
// validate it, and decode greedily on the GPU (the persistent worker) or the CPU executor.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gflags/gflags.h>

#include "cuda/device_query.h"
#include "host/cpu_executor.h"
#include "host/error.h"
#include "host/generate.h"
#include "host/gpu_executor.h"
#include "host/package.h"
#include "host/tokenizer.h"
#include "host/validate.h"

DEFINE_string(package, "", "Path to a .tpkg package written by the planner (required).");
DEFINE_string(prompt_ids, "", "Prompt as comma-separated token ids, e.g. 1,504,3937.");
DEFINE_int32(max_new_tokens, 32, "Most tokens to generate.");
DEFINE_string(device, "auto", "auto (GPU when there is one), cpu, or gpu.");
DEFINE_int32(threads, 0, "CPU executor threads (0: one per hardware thread).");
DEFINE_bool(ignore_eos, false, "Keep generating past the model's stop tokens.");
DEFINE_uint32(stage_bytes, 0, "GPU: shared memory per worker for staging its next task's weights (0: off).");
DEFINE_double(temperature, 0.0, "Sampling temperature; 0 is greedy (largest logit, lowest id among ties).");
DEFINE_int32(top_k, 0, "Sample among the k most likely tokens (0: all).");
DEFINE_double(top_p, 1.0, "Then among the smallest set reaching this probability (1: all).");
DEFINE_uint64(seed, 0, "Seed of the sampler: the same seed, package and prompt give the same tokens.");
DEFINE_string(stop, "", "Stop once the continuation contains this text (after the token that completes it).");
DEFINE_bool(check_target, true, "GPU: refuse a package made for another GPU or worker build.");

namespace tileinfer {
namespace {

// Resolves a user path against the directory `bazel run` was started from.
std::string UserPath(const std::string& path) {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.empty() || path[0] == '/' || cwd == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

int Run() {
  if (FLAGS_package.empty()) throw Error("--package is required (a .tpkg written by the planner)");
  if (FLAGS_device != "auto" && FLAGS_device != "cpu" && FLAGS_device != "gpu") {
    throw Error("--device must be auto, cpu or gpu, not '" + FLAGS_device + "'");
  }
  std::vector<int> prompt = ParseIntList(FLAGS_prompt_ids, "--prompt_ids");
  auto pkg = Package::Open(UserPath(FLAGS_package));
  ValidatePlan(*pkg);
  Tokenizer tokenizer = Tokenizer::FromJson(pkg->tokenizer_json());
  if (prompt.empty() && pkg->model().bos_token_id >= 0) prompt.push_back(pkg->model().bos_token_id);

  DeviceInfo dev = QueryDevices();
  std::unique_ptr<Executor> exec;
  if (FLAGS_device == "gpu" || (FLAGS_device == "auto" && dev.count > 0)) {
    if (dev.count == 0) throw Error("--device=gpu, but there is no usable GPU (" + dev.why_none + ")");
    GpuOptions options;
    options.check_target = FLAGS_check_target;
    options.stage_bytes = FLAGS_stage_bytes;
    try {
      exec = std::make_unique<GpuExecutor>(*pkg, options);
    } catch (const Error& e) {
      if (FLAGS_device == "gpu") throw;
      // auto: a package planned for another GPU or worker build still runs, on the CPU.
      std::fprintf(stderr, "Not using the GPU: %s\nUsing the CPU executor.\n", e.what());
    }
  } else if (dev.count == 0 && FLAGS_device == "auto") {
    std::fprintf(stderr, "No usable GPU (%s): using the CPU executor.\n", dev.why_none.c_str());
  }
  if (!exec) exec = std::make_unique<CpuExecutor>(*pkg, FLAGS_threads);
  std::fprintf(stderr, "Package %s: %d layers, hidden %d, vocab %d; plan of %d tasks in %d waves "
               "for %s; running on the %s.\n", pkg->path().c_str(), pkg->model().layers,
               pkg->model().hidden, pkg->model().vocab, pkg->plan().tasks, pkg->plan().waves,
               pkg->target().name.c_str(), exec->name().c_str());
  std::printf("prompt: %s\n", tokenizer.Decode(prompt).c_str());
  std::printf("output: ");
  std::fflush(stdout);
  GenerateOptions options;
  options.max_new_tokens = FLAGS_max_new_tokens;
  options.stop_at_eos = !FLAGS_ignore_eos;
  options.sampling.temperature = static_cast<float>(FLAGS_temperature);
  options.sampling.top_k = FLAGS_top_k;
  options.sampling.top_p = static_cast<float>(FLAGS_top_p);
  options.sampling.seed = FLAGS_seed;
  std::string text;  // the continuation so far, for --stop
  options.on_token = [&](int id) {
    const std::string piece = tokenizer.Decode({id});
    std::printf("%s", piece.c_str());
    std::fflush(stdout);
    text += piece;
    return FLAGS_stop.empty() || text.find(FLAGS_stop) == std::string::npos;
  };
  GenerateResult r = exec->Generate(prompt, options);
  std::printf("\n");
  std::string ids;
  for (int id : r.tokens) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  std::printf("ids: %s\n", ids.c_str());
  const int decoded = static_cast<int>(r.tokens.size()) - 1;
  std::printf("prompt: %zu tokens in %.1f ms; decode: %d tokens in %.1f ms (%.2f ms/token, %.1f tokens/s)%s\n",
              prompt.size(), r.prompt_ms, decoded, r.decode_ms,
              decoded > 0 ? r.decode_ms / decoded : 0.0, decoded > 0 ? 1000.0 * decoded / r.decode_ms : 0.0,
              r.stopped_at_eos ? "; stopped at EOS" : "");
  return 0;
}

}  // namespace
}  // namespace tileinfer

int main(int argc, char** argv) {
  gflags::SetUsageMessage("decode --package=PATH [--prompt_ids=1,2,3] [--max_new_tokens=N] [--device=auto|cpu|gpu]");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (argc > 1) {
    std::fprintf(stderr, "error: unexpected argument '%s' (flags are --name=value)\n", argv[1]);
    return 2;
  }
  if (FLAGS_package.empty()) {
    gflags::ShowUsageWithFlagsRestrict(argv[0], "host/");
    return 0;
  }
  try {
    return tileinfer::Run();
  } catch (const tileinfer::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
