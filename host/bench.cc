// `bench`: TileInfer as a resident benchmark server for the showcase harness
// (py/tools/showcase.py), which keeps every runtime loaded in its own process and
// interleaves their measurements. Reads commands from stdin, one per line, and answers each
// with one JSON line on stdout:
//
//   context C R   R timed launches of a window of kWindow (16) forced steps at contexts
//                 L-15 .. L, L = max(C, 16), logits at every step (the window every runtime
//                 of the showcase times) -> {"context": C, "window": [L-15, L], "ms_per_token": [R]}
//   generate N    greedy generation of N new tokens from --prompt_ids (selection included)
//                 -> {"tokens": [...], "ms_per_token": m, "tokens_per_s": t}, m = wall time
//                 from the first new token to the last / (N - 1)
//   quit
//
// ms per token of a window = the launch's CUDA-event time / kWindow (GPU), wall time on the
// CPU executor (--device=cpu, for trying the harness without a GPU). K/V rows before the
// window are written once, from seeded pseudo-random tokens.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gflags/gflags.h>
#include <nlohmann/json.hpp>

#include "host/cpu_executor.h"
#include "host/error.h"
#include "host/generate.h"
#include "host/gpu_executor.h"
#include "host/package.h"
#include "host/validate.h"

DEFINE_string(package, "", "Package to serve (required).");
DEFINE_string(device, "gpu", "gpu, or cpu (to try the harness without a GPU).");
DEFINE_string(prompt_ids, "1,4093,198,1780,314,260,3575,282,4649,47,2,198,1,520,9531,198",
              "Prompt of `generate` (ids).");
DEFINE_int32(attention_tile_min, tileinfer::GpuOptions{}.attention_tile_min, "GPU: ATTENTION in tiles (positions over lanes) in steps whose chunks hold at least this many positions; 0: the default, 65 (host/gpu_executor.h AttentionTileMin).");
DEFINE_bool(check_target, true, "GPU: refuse a package made for another GPU or worker build.");
DEFINE_int32(seed, 1234, "Seed of the tokens behind the K/V rows and in the windows.");

namespace tileinfer {
namespace {

using json = nlohmann::json;

constexpr int kWindow = 16;  // steps per timed launch

class Server {
 public:
  Server(const Package& pkg) : pkg_(pkg), rng_(FLAGS_seed) {
    if (FLAGS_device == "gpu") {
      GpuOptions o;
      o.check_target = FLAGS_check_target;
      o.attention_tile_min = FLAGS_attention_tile_min;
      gpu_ = std::make_unique<GpuExecutor>(pkg, o);
      exec_ = gpu_.get();
    } else if (FLAGS_device == "cpu") {
      cpu_ = std::make_unique<CpuExecutor>(pkg);
      exec_ = cpu_.get();
    } else {
      throw Error("--device must be gpu or cpu, not '" + FLAGS_device + "'");
    }
    std::fprintf(stderr, "bench: %s on %s\n", pkg.path().c_str(), exec_->name().c_str());
  }

  json Context(int context, int reps) {
    const int max_context = pkg_.plan().max_context;
    if (context < 1 || context > max_context || reps < 1) {
      throw Error("context must be in 1.." + std::to_string(max_context) + " and reps >= 1");
    }
    const int last = std::max(context, std::min(kWindow, max_context));
    const int first = last - std::min(kWindow, last);
    Fill(first);
    std::vector<int> window(tokens_.begin() + first, tokens_.begin() + last);
    std::vector<double> ms;
    for (int r = 0; r < reps; ++r) ms.push_back(Window(window, first) / window.size());
    if (first == 0) filled_ = last;  // position 0 starts a new request: the rows after the window are gone
    return {{"context", context}, {"window", {first + 1, last}}, {"ms_per_token", ms}};
  }

  json Generate(int n) {
    using Clock = std::chrono::steady_clock;
    GenerateOptions o;
    o.max_new_tokens = n;
    o.stop_at_eos = false;
    Clock::time_point first, last;
    int seen = 0;
    o.on_token = [&](int) {  // tokens arrive as the worker chooses them (streaming)
      last = Clock::now();
      if (seen++ == 0) first = last;
      return true;
    };
    const GenerateResult r = exec_->Generate(ParseIntList(FLAGS_prompt_ids, "--prompt_ids"), o);
    filled_ = 0;  // the generation rewrote the K/V rows
    // Wall time from the first new token to the last, per token (as the peers measure it).
    const double ms = std::chrono::duration<double, std::milli>(last - first).count() /
                      std::max<size_t>(1, r.tokens.size() - 1);
    return {{"tokens", r.tokens}, {"ms_per_token", ms}, {"tokens_per_s", 1000.0 / ms}};
  }

 private:
  // K/V rows for positions [0, upto) exist (and tokens_ covers the max context).
  void Fill(int upto) {
    const int max_context = pkg_.plan().max_context;
    while (static_cast<int>(tokens_.size()) < max_context) tokens_.push_back(static_cast<int>(rng_() % pkg_.model().vocab));
    while (filled_ < upto) {
      const int n = std::min({kMaxStepsPerLaunch, upto - filled_});
      Window(std::vector<int>(tokens_.begin() + filled_, tokens_.begin() + filled_ + n), filled_);
      filled_ += n;
    }
  }

  // Runs `window` at positions start.. with logits at every step; milliseconds.
  double Window(const std::vector<int>& window, int start) {
    if (gpu_) return gpu_->RunForcedWindow(window, start);
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < window.size(); ++i) cpu_->Step(window[i], start + static_cast<int>(i), true);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }

  const Package& pkg_;
  std::unique_ptr<GpuExecutor> gpu_;
  std::unique_ptr<CpuExecutor> cpu_;
  Executor* exec_ = nullptr;
  std::mt19937 rng_;
  std::vector<int> tokens_;
  int filled_ = 0;
};

int Run() {
  auto pkg = Package::Open(FLAGS_package);
  ValidatePlan(*pkg);
  Server server(*pkg);
  std::printf("%s\n", json{{"ready", true}, {"runtime", "tileinfer"}}.dump().c_str());
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    json answer;
    try {
      if (cmd == "context") {
        int c = 0, r = 0;
        if (!(in >> c >> r)) throw Error("usage: context C REPS");
        answer = server.Context(c, r);
      } else if (cmd == "generate") {
        int n = 0;
        if (!(in >> n) || n < 1) throw Error("usage: generate N (N >= 1)");
        answer = server.Generate(n);
      } else if (cmd == "quit") {
        return 0;
      } else {
        throw Error("unknown command '" + cmd + "': context C REPS | generate N | quit");
      }
    } catch (const Error& e) {
      answer = {{"error", e.what()}};
    }
    std::printf("%s\n", answer.dump().c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace tileinfer

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_package.empty()) {
    std::fprintf(stderr, "error: --package is required\n");
    return 2;
  }
  return tileinfer::ExitCodeOf(tileinfer::Run);
}
