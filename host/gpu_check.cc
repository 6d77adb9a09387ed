// `gpu_check`: the GPU worker against the CPU executor on one package, on the GPU machine.
//
//   gpu_check --package=P --contexts=1,2,100 [--cpu_contexts=1,2,100] [--runs=10 --tokens=256]
//             [--logits_out=FILE] [--check_target=false]
//
// Feeds a fixed pseudo-random prompt (seeded; or --prompt_ids) one step at a time to the GPU
// (and, up to the largest of --cpu_contexts, to the CPU executor), and at each context in
// --contexts records the GPU logits; where the CPU ran too, prints the max relative error
// max|gpu - cpu| / max|cpu|. Then generates --tokens greedily --runs times and checks that
// every run gives the same tokens and the same final logits bits. --logits_out writes
// the prompt ids and the GPU logits (raw little-endian) for the Hugging Face comparison
// (py/tools/hf_compare.py). Exits 1 when a tolerance or a determinism check fails.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <gflags/gflags.h>
#include <nlohmann/json.hpp>

#include "host/cpu_executor.h"
#include "host/error.h"
#include "host/generate.h"
#include "host/gpu_executor.h"
#include "host/package.h"
#include "host/sampler.h"
#include "host/validate.h"

DEFINE_string(package, "", "Package to check (required).");
DEFINE_string(contexts, "1,2,100", "Contexts (prompt lengths) at which to compare logits.");
DEFINE_string(cpu_contexts, "", "Contexts at which the CPU executor runs too (default: --contexts).");
DEFINE_string(prompt_ids, "", "Prompt ids (default: seeded pseudo-random ids).");
DEFINE_int32(seed, 1234, "Seed of the pseudo-random prompt.");
DEFINE_double(tolerance, 2e-3, "Largest max|gpu-cpu|/max|cpu| accepted.");
DEFINE_int32(runs, 10, "Determinism: generations to compare.");
DEFINE_int32(tokens, 256, "Determinism: tokens per generation.");
DEFINE_string(logits_out, "", "Write prompt ids and GPU logits here (see the file comment).");
DEFINE_string(tokens_out, "", "Write the generation's prompt and tokens here (comma-separated, two lines).");
DEFINE_int32(carveout, tileinfer::GpuOptions{}.carveout, "GPU: the worker's preferred shared-memory carveout, percent (0: most L1; -1: driver's choice).");
DEFINE_bool(cache_records, tileinfer::GpuOptions{}.cache_records, "GPU: copy each worker's task records to its shared memory once per launch.");
DEFINE_int32(attention_tile_min, tileinfer::GpuOptions{}.attention_tile_min, "GPU: ATTENTION in tiles (positions over lanes) in steps whose chunks hold at least this many positions; 0: the default, 65 (host/gpu_executor.h AttentionTileMin).");
DEFINE_bool(check_target, true, "Refuse a package made for another GPU or worker build.");
DEFINE_int32(threads, 0, "CPU executor threads.");
DEFINE_int32(sampling_checks, 120, "Sampled steps whose in-kernel choice must equal the CPU sampler's on the same logits (0: skip).");
DEFINE_int32(sampler_rows, 0, "Synthetic rows (ties, +-0, flat and peaked, V up to 200,000) on which the worker's sampler must choose what the CPU sampler chooses (0: skip).");
DEFINE_bool(stream_checks, true, "Check that tokens stream during a launch and that a cancel ends it early.");
DEFINE_bool(stop_before_nonfinite_check, false, "On a package whose generations reach a non-finite logit "
            "(tests/gpu/make_models.py's tiny_big), only this check: a request its caller stops at the token "
            "whose step is non-finite leaves the next request what a run from position 0 gives (GPU and CPU).");
DEFINE_bool(oom_check, false, "Fill GPU memory, check the out-of-memory message at load, then load again.");
DEFINE_string(trace_out, "", "Write a worker trace (JSON, per task and barrier timings) of one step at each "
              "--trace_contexts value to FILE_PREFIX_<context>.json.");
DEFINE_string(trace_contexts, "32,4064", "Contexts of the traced steps (each inside a 64-step launch).");
DEFINE_int32(cpu_generate_tokens, 32, "Also compare the GPU's generation (64-step launches) with the CPU executor's for this many tokens (0: skip).");

namespace tileinfer {
namespace {

double MaxRelError(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    diff = std::max(diff, std::fabs(double(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(double(want[i])));
  }
  return diff / scale;
}

// Whether two logits vectors hold the same bits (the determinism and K/V-reuse checks).
bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The worker's sampled choice against the CPU sampler on the very logits the worker saw:
// every draw must agree (cuda/sample.h is one rule for both). Re-running the step at `pos`
// with the same token rewrites the same K/V, so the state does not change.
bool CheckSampling(GpuExecutor& gpu, int token, int pos, int checks) {
  const SamplingOptions kinds[] = {{1.0f, 0, 1.0f, 0},  {0.7f, 40, 0.95f, 0}, {1.5f, 0, 0.9f, 0},
                                   {1.0f, 1, 1.0f, 0},  {0.8f, 5, 1.0f, 0},   {2.0f, 0, 0.5f, 0},
                                   {1.2f, 1 << 30, 0.99f, 0}};
  const int n_kinds = sizeof(kinds) / sizeof(kinds[0]);
  int agree = 0, distinct = 0;
  double sampled_ms = 0, greedy_ms = 0;
  std::vector<int> seen;
  for (int c = 0; c < checks; ++c) {
    SamplingOptions o = kinds[c % n_kinds];
    o.seed = 1000 + c;
    gpu.set_step_sampling(o);
    gpu.Step(token, pos, true);
    sampled_ms += gpu.last_launch_ms();
    const int32_t got = gpu.Select();
    const int32_t want = SampleToken(gpu.Logits(), o, static_cast<uint64_t>(pos));
    if (got == want) {
      ++agree;
    } else if (agree + 3 > c) {
      std::printf("sampling: FAIL: T=%g top_k=%d top_p=%g seed %llu: worker %d, CPU sampler %d\n", o.temperature,
                  o.top_k, o.top_p, static_cast<unsigned long long>(o.seed), got, want);
    }
    if (std::find(seen.begin(), seen.end(), got) == seen.end()) seen.push_back(got), ++distinct;
  }
  gpu.set_step_sampling(SamplingOptions{});
  for (int c = 0; c < 10; ++c) {
    gpu.Step(token, pos, true);
    greedy_ms += gpu.last_launch_ms();
  }
  std::printf("sampling at context %d: %d of %d in-kernel draws equal the CPU sampler's (%d distinct ids); "
              "step %.3f ms sampled, %.3f ms greedy\n", pos + 1, agree, checks, distinct, sampled_ms / checks,
              greedy_ms / 10);
  return agree == checks;
}

// The positions-in-order rule on the GPU (KvHistory, host/generate.h) on positions 0-3 (0 starts
// a new request): a step or window that skips a position throws, naming what it skips;
// re-running positions 1-2 with the tokens they hold keeps the rows after them, and the next
// step's logits are bit for bit those before; another token drops them; a generation holds the
// rows of the tokens it fed (the prompt and every new token but the last), each at its position.
// Needs a max context of at least 8.
bool CheckStepOrder(GpuExecutor& gpu, int vocab) {
  bool ok = true;
  auto expect = [&](const char* what, const std::function<void()>& run, const std::string& error) {
    std::string got;
    try {
      run();
    } catch (const Error& e) {
      got = e.what();
    }
    const bool pass = error.empty() ? got.empty() : got.find(error) != std::string::npos;
    if (!pass) std::printf("step order: FAIL: %s: %s\n", what, got.empty() ? "no error" : got.c_str());
    ok &= pass;
  };
  const std::vector<int> t = {1 % vocab, 2 % vocab, 3 % vocab, 4 % vocab};
  for (int pos = 0; pos < 4; ++pos) gpu.Step(t[pos], pos, pos == 3);  // the rows of positions 0-3
  const std::string skip = " skips position";
  expect("a step past them", [&] { gpu.Step(t[0], 5, true); }, "position 5" + skip + " 4,");
  expect("a window past them", [&] { gpu.RunForcedWindow({t[0], t[1]}, 6); }, "position 6" + skip + "s 4-5,");
  gpu.Step(t[0], 4, true);
  const std::vector<float> before = gpu.Logits();
  expect("positions 1-2 again with their tokens", [&] { gpu.RunForcedWindow({t[1], t[2]}, 1); }, "");
  expect("position 4 after them", [&] { gpu.Step(t[0], 4, true); }, "");
  if (gpu.Logits() != before) {
    std::printf("step order: FAIL: position 4's logits after positions 1-2 ran again differ\n");
    ok = false;
  }
  expect("position 1 with another token", [&] { gpu.Step((t[1] + 1) % vocab, 1, true); }, "");
  expect("position 3 after that", [&] { gpu.Step(t[0], 3, true); }, "position 3" + skip + " 2,");
  GenerateOptions gen;
  gen.max_new_tokens = 4;
  gen.stop_at_eos = false;
  GenerateResult r;
  expect("a generation from 2 prompt tokens", [&] { r = gpu.Generate({t[0], t[1]}, gen); }, "");
  if (r.tokens.size() == 4) {  // positions 0-4 hold t0, t1 and the first three new tokens
    expect("position 3 again with the second new token", [&] { gpu.Step(r.tokens[1], 3, true); }, "");
    expect("position 5 after it", [&] { gpu.Step(t[0], 5, true); }, "");
    expect("position 7 then", [&] { gpu.Step(t[0], 7, true); }, "position 7" + skip + " 6,");
  } else {
    std::printf("step order: FAIL: the generation gave %zu tokens, not 4\n", r.tokens.size());
    ok = false;
  }
  std::printf("step order (skips refused, same-token windows keep later rows): %s\n", ok ? "ok" : "FAIL");
  return ok;
}

// The worker's sampler alone on adversarial synthetic rows against the CPU sampler: ties
// (quantised logits), -0 next to +0, one dominant logit, flat rows, vocabularies from 1 to
// 200,000, top_k around V and top_p down to 1e-6. Every draw must agree.
bool CheckSamplerRows(int rows) {
  std::mt19937_64 rng(99);
  const int vocabs[] = {1, 2, 7, 100, 4097, 49152, 128256, 200000};
  const float temps[] = {0.05f, 0.5f, 1.0f, 2.0f, 10.0f};
  const float ps[] = {1.0f, 0.95f, 0.5f, 1e-6f};
  int agree = 0;
  for (int r = 0; r < rows; ++r) {
    const int V = vocabs[r % 8];
    const int shape = (r / 8) % 5;
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> row(V);
    for (int i = 0; i < V; ++i) {
      float x = normal(rng) * (shape == 3 ? 0.01f : 4.0f);
      if (shape == 1) x = std::round(x);                     // many exact ties
      if (shape == 2) x = (rng() & 1) ? 0.0f : -0.0f;        // +0 and -0 only
      row[i] = x;
    }
    if (shape == 4) row[rng() % V] = 60.0f;                  // one dominant logit
    const int ks[] = {0, 1, 2, 5, 40, V - 1, V, V + 1};
    SamplingOptions o{temps[(r / 40) % 5], std::max(0, ks[(r / 3) % 8]), ps[(r / 5) % 4], 1000u + r};
    int got = -2;
    const std::string err = SampleRowOnDevice(row, o.temperature, o.top_k, o.top_p, o.seed, r, &got);
    if (!err.empty()) throw Error("sampler row " + std::to_string(r) + ": " + err);
    const int want = SampleToken(row, o, r);
    if (got == want) {
      ++agree;
    } else if (r - agree < 5) {
      std::printf("sampler rows: FAIL row %d (V=%d shape %d T=%g top_k=%d top_p=%g): device %d, CPU %d\n", r, V,
                  shape, o.temperature, o.top_k, o.top_p, got, want);
    }
  }
  std::printf("sampler rows: %d of %d synthetic rows drawn alike by the worker's sampler and the CPU sampler\n",
              agree, rows);
  return agree == rows;
}

// Streaming and cancel on a 64-step generation launch.
bool CheckStreaming(GpuExecutor& gpu, const std::vector<int>& prompt) {
  using Clock = std::chrono::steady_clock;
  GenerateOptions gen;
  gen.max_new_tokens = kMaxStepsPerLaunch + 1;  // the prompt's launch gives 1, then one full launch
  gen.stop_at_eos = false;
  std::vector<double> at;
  Clock::time_point t0;
  gen.on_token = [&](int) {
    if (at.empty()) t0 = Clock::now();
    at.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    return true;
  };
  const GenerateResult full = gpu.Generate(prompt, gen);
  const double launch_ms = full.decode_ms;
  // at[1] is the first token of the 64-step launch, at.back() its last.
  const double first = at.size() > 2 ? at[1] : 0, last = at.empty() ? 0 : at.back();
  const bool streamed = at.size() == full.tokens.size() && last - first > 0.5 * launch_ms;
  std::printf("streaming: %zu tokens; within the %.2f ms launch the first arrived at %.2f ms, the last at %.2f ms "
              "(%s)\n", at.size(), launch_ms, first, last, streamed ? "ok: spread over the launch" : "FAIL: not streamed");
  int seen = 0;
  gen.on_token = [&](int) { return ++seen < 6; };  // stop after the 6th token
  const GenerateResult cut = gpu.Generate(prompt, gen);
  const bool cancelled = cut.tokens.size() == 6 && cut.decode_ms < 0.5 * launch_ms &&
                         std::equal(cut.tokens.begin(), cut.tokens.end(), full.tokens.begin());
  std::printf("cancel after 6 tokens: %zu tokens, the launch ran %.2f ms of %.2f (%s)\n", cut.tokens.size(),
              cut.decode_ms, launch_ms, cancelled ? "ok" : "FAIL");
  return streamed && cancelled;
}

// K/V rows kept across requests (GenerateOptions::reuse_kv_cache): a request whose prompt
// continues the last request's prompt and tokens runs only its new part, and gives the tokens
// and final logits, bit for bit, of the same request run from position 0. Needs a max context of
// 2 * (prompt + max_new_tokens).
bool CheckKvReuse(GpuExecutor& gpu, const std::vector<int>& prompt, GenerateOptions gen) {
  gen.reuse_kv_cache = false;
  const GenerateResult first = gpu.Generate(prompt, gen);
  std::vector<int> next = prompt;
  next.insert(next.end(), first.tokens.begin(), first.tokens.end());  // the last token never ran
  next.insert(next.end(), prompt.begin(), prompt.end());  // a new turn's tokens
  const int held = static_cast<int>(prompt.size() + first.tokens.size()) - 1;
  const GenerateResult want = gpu.Generate(next, gen);  // from position 0
  const std::vector<float> want_logits = gpu.Logits();
  gpu.Generate(prompt, gen);  // the rows of prompt + first.tokens again
  gen.reuse_kv_cache = true;
  const GenerateResult got = gpu.Generate(next, gen);
  const std::vector<float> got_logits = gpu.Logits();
  const bool ok = got.prompt_reused == held && got.tokens == want.tokens && SameBits(got_logits, want_logits);
  std::printf("K/V reuse: a %zu-token prompt kept %d rows (want %d); tokens and last logits %s\n", next.size(),
              got.prompt_reused, held, ok ? "bit-identical to a run from position 0" : "FAIL: differ");
  return ok;
}

// --stop_before_nonfinite_check on `exec`: finds a prompt {a, x} whose greedy generation
// delivers m >= 2 tokens and then stops at a non-finite logit (the step fed token m; from the
// second token on the GPU chooses inside a generation launch, which can run on), and a
// prompt {a, y} whose generation succeeds; then stops the first request at its m-th token (on
// the GPU the worker still runs the step that token feeds: it reads the cancel word only as a
// step begins) and checks that the second, which may keep the row of a, gives the tokens and
// last logits of a run from position 0. False (with a line saying why) otherwise.
bool CheckStopBeforeNonFinite(Executor& exec, int vocab) {
  GenerateOptions gen;
  gen.max_new_tokens = 12;
  gen.stop_at_eos = false;
  const int ids = std::min(vocab, 200);
  // 0: the generation succeeds; 1: it stops at a non-finite logit after two tokens or more (into
  // *got); 2: other.
  auto outcome_of = [&](const std::vector<int>& prompt, std::vector<int>* got) {
    GenerateOptions g = gen;
    got->clear();
    g.on_token = [got](int t) { got->push_back(t); return true; };
    try {
      exec.Generate(prompt, g);
      return 0;
    } catch (const Error& e) {
      return got->size() >= 2 && std::string(e.what()).find("non-finite") != std::string::npos ? 1 : 2;
    }
  };
  std::vector<int> stop_prompt, ok_prompt, delivered, scratch;
  for (int a = 0; a < ids && ok_prompt.empty(); ++a) {
    for (int x = 0; x < ids && stop_prompt.empty(); ++x) {
      if (outcome_of({a, x}, &delivered) == 1) stop_prompt = {a, x};
    }
    for (int y = 0; y < ids && !stop_prompt.empty() && ok_prompt.empty(); ++y) {
      if (outcome_of({a, y}, &scratch) == 0) ok_prompt = {a, y};
    }
    if (ok_prompt.empty()) stop_prompt.clear();
  }
  if (ok_prompt.empty()) {
    std::printf("%s: stop before a non-finite step: FAIL: no prompts {a, x} and {a, y} (ids < %d) of which "
                "one stops at a non-finite logit after two tokens and one succeeds (use tiny_big)\n",
                exec.name().c_str(), ids);
    return false;
  }
  gen.reuse_kv_cache = false;
  const GenerateResult want = exec.Generate(ok_prompt, gen);  // from position 0
  const std::vector<float> want_logits = exec.Logits();
  GenerateOptions stopping = gen;
  const size_t m = delivered.size();
  size_t seen = 0;
  stopping.on_token = [&](int) { return ++seen < m; };
  const GenerateResult stopped = exec.Generate(stop_prompt, stopping);
  gen.reuse_kv_cache = true;
  bool ok = stopped.tokens == delivered;
  std::string outcome;
  try {
    const GenerateResult got = exec.Generate(ok_prompt, gen);
    const std::vector<float> got_logits = exec.Logits();
    ok &= got.tokens == want.tokens && SameBits(got_logits, want_logits);
    outcome = "kept " + std::to_string(got.prompt_reused) + " rows";
  } catch (const Error& e) {
    ok = false;
    outcome = std::string("error: ") + e.what();
  }
  std::printf("%s: stop before a non-finite step (prompt %d,%d stopped at its token %zu; then %d,%d): %s; %s\n",
              exec.name().c_str(), stop_prompt[0], stop_prompt[1], m, ok_prompt[0], ok_prompt[1], outcome.c_str(),
              ok ? "tokens and last logits as from position 0" : "FAIL");
  return ok;
}

// Out of memory at load: a clear message with the bytes needed and free; after the memory is
// back the same process loads and runs the package.
bool CheckOutOfMemory(const Package& pkg, int token) {
  size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) return false;
  const size_t leave = pkg.weights_bytes() / 2;
  void* ballast = nullptr;
  if (free_bytes <= leave || cudaMalloc(&ballast, free_bytes - leave) != cudaSuccess) {
    std::printf("out of memory: FAIL: could not take %zu bytes to provoke it\n", free_bytes - leave);
    return false;
  }
  std::string message;
  try {
    GpuExecutor starved(pkg);
  } catch (const Error& e) {
    message = e.what();
  }
  cudaFree(ballast);
  const bool clear = message.find("out of GPU memory") != std::string::npos &&
                     message.find("bytes needed") != std::string::npos;
  std::printf("out of memory at load: \"%s\" (%s)\n", message.c_str(), clear ? "ok" : "FAIL");
  GpuExecutor again(pkg);
  again.Step(token, 0, true);
  const bool works = again.Select() >= 0;
  std::printf("load after the memory came back: %s\n", works ? "ok" : "FAIL");
  return clear && works;
}

// One traced step at context `context` of a greedy generation from a one-token prompt,
// written as JSON: the model's shape, then per task (package order) its worker, wave, opcode,
// layer, rows, slot and (begin, end) in ns of %globaltimer and in SM clocks; then per worker
// and wave the grid barrier's (arrival, exit). A phase-trace build (bazel
// --define=phase_trace=1) adds "phases_clk": per task (package order, as "tasks") its
// kMaxPhases SM clocks of the phase marks inside it (PhaseMark, cuda/common.cuh), 0 = no
// mark. py/tools/trace_report.py reads it.
void WriteTrace(GpuExecutor& gpu, const Package& pkg, int context, const std::string& path) {
  gpu.set_trace(context - 1);
  GenerateOptions gen;
  gen.max_new_tokens = context + 8;
  gen.stop_at_eos = false;
  const GenerateResult r = gpu.Generate({pkg.model().bos_token_id >= 0 ? pkg.model().bos_token_id : 1}, gen);
  gpu.set_trace(-1);
  const auto events = gpu.TraceEvents();
  const auto phases = gpu.TracePhases();  // empty unless a phase-trace build
  const auto tasks = pkg.tasks();
  const ModelConfig& m = pkg.model();
  const PlanParams& pp = pkg.plan();
  const auto& order = gpu.task_order();
  std::vector<size_t> entry_of(order.size());
  for (size_t i = 0; i < order.size(); ++i) entry_of[order[i]] = i;
  nlohmann::json task_rows = nlohmann::json::array(), barrier_rows = nlohmann::json::array();
  nlohmann::json phase_rows = nlohmann::json::array();
  for (size_t k = 0; k < tasks.size; ++k) {
    const auto& t = tasks[k];
    const auto& e = events[entry_of[k]];
    task_rows.push_back({t.worker, t.wave, t.opcode, t.layer, t.row_begin, t.row_end, t.slot, t.param1,
                         e.begin_ns, e.end_ns, e.begin_clk, e.end_clk});
    if (!phases.empty()) {
      const auto first = phases.begin() + entry_of[k] * kMaxPhases;
      phase_rows.push_back(std::vector<unsigned long long>(first, first + kMaxPhases));
    }
  }
  for (int w = 0; w < pp.workers; ++w) {
    for (int v = 0; v < pp.waves; ++v) {
      const auto& e = events[order.size() + static_cast<size_t>(w) * pp.waves + v];
      barrier_rows.push_back({w, v, e.begin_ns, e.end_ns, e.begin_clk, e.end_clk});
    }
  }
  const double ms_per_token = r.decode_ms / std::max<size_t>(1, r.tokens.size() - 1);
  nlohmann::json trace = {
      {"package", pkg.path()}, {"gpu", gpu.name()}, {"context", context},
      {"decode_ms_per_token", ms_per_token},
      {"hidden", m.hidden}, {"ffn", m.ffn}, {"layers", m.layers}, {"heads", m.heads},
      {"kv_heads", m.kv_heads}, {"head_dim", m.head_dim}, {"vocab", m.vocab}, {"workers", pp.workers},
      {"waves", pp.waves}, {"attention_min_chunk", pp.attention_min_chunk},
      {"tasks", task_rows}, {"barriers", barrier_rows}};
  if (!phases.empty()) trace["phases_clk"] = phase_rows;
  std::ofstream out(path);
  out << trace.dump() << "\n";
  if (!out) throw Error("could not write " + path);
  std::printf("trace at context %d: %s (%.4f ms/token in that generation)\n", context, path.c_str(), ms_per_token);
}

int Run() {
  auto pkg = Package::Open(FLAGS_package);
  ValidatePlan(*pkg);
  GpuOptions options;
  options.check_target = FLAGS_check_target;
  options.cache_records = FLAGS_cache_records;
  options.carveout = FLAGS_carveout;
  options.attention_tile_min = FLAGS_attention_tile_min;
  GpuExecutor gpu(*pkg, options);
  std::printf("gpu_check: %s on %s\n", pkg->path().c_str(), gpu.name().c_str());
  if (FLAGS_stop_before_nonfinite_check) {  // a package whose generations fail: no other check applies
    bool ok = CheckStopBeforeNonFinite(gpu, pkg->model().vocab);
    CpuExecutor cpu(*pkg, FLAGS_threads);
    ok &= CheckStopBeforeNonFinite(cpu, pkg->model().vocab);
    std::printf("gpu_check: %s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
  }
  std::vector<int> contexts = ParseIntList(FLAGS_contexts, "--contexts");
  std::sort(contexts.begin(), contexts.end());
  contexts.erase(std::unique(contexts.begin(), contexts.end()), contexts.end());
  if (!contexts.empty() && contexts[0] < 1) throw Error("--contexts must be >= 1");
  std::vector<int> cpu_contexts = FLAGS_cpu_contexts.empty() ? contexts : ParseIntList(FLAGS_cpu_contexts, "--cpu_contexts");
  for (int c : cpu_contexts) {
    if (!std::binary_search(contexts.begin(), contexts.end(), c)) {
      throw Error("--cpu_contexts value " + std::to_string(c) + " is not one of --contexts");
    }
  }
  const int max_ctx = contexts.empty() ? 0 : contexts.back();
  const int cpu_max = cpu_contexts.empty() ? 0 : *std::max_element(cpu_contexts.begin(), cpu_contexts.end());
  if (max_ctx > pkg->plan().max_context) throw Error("--contexts exceed the package's max context");
  std::vector<int> prompt = ParseIntList(FLAGS_prompt_ids, "--prompt_ids");
  std::mt19937 rng(FLAGS_seed);
  while (static_cast<int>(prompt.size()) < max_ctx) prompt.push_back(static_cast<int>(rng() % pkg->model().vocab));
  prompt.resize(max_ctx);

  std::unique_ptr<CpuExecutor> cpu;
  if (cpu_max > 0) cpu = std::make_unique<CpuExecutor>(*pkg, FLAGS_threads);
  bool ok = true;
  std::ofstream out;
  if (!FLAGS_logits_out.empty()) {
    out.open(FLAGS_logits_out, std::ios::binary);
    const int32_t header[3] = {static_cast<int32_t>(contexts.size()), max_ctx, pkg->model().vocab};
    out.write(reinterpret_cast<const char*>(header), sizeof(header));
    out.write(reinterpret_cast<const char*>(contexts.data()), contexts.size() * 4);
    out.write(reinterpret_cast<const char*>(prompt.data()), prompt.size() * 4);
  }
  size_t next = 0;
  for (int pos = 0; pos < max_ctx; ++pos) {
    const bool want = next < contexts.size() && contexts[next] == pos + 1;
    gpu.Step(prompt[pos], pos, want);
    const bool with_cpu = pos < cpu_max;
    if (with_cpu) cpu->Step(prompt[pos], pos, want);
    if (!want) continue;
    const std::vector<float> g = gpu.Logits();
    if (out.is_open()) out.write(reinterpret_cast<const char*>(g.data()), g.size() * 4);
    const int32_t gsel = gpu.Select();
    // The selection rule: the largest logit, the lowest id among ties.
    const int32_t lowest_argmax = static_cast<int32_t>(std::max_element(g.begin(), g.end()) - g.begin());
    if (gsel != lowest_argmax) {
      ok = false;
      std::printf("context %5d: FAIL: the worker chose %d, the lowest argmax of its logits is %d\n", pos + 1,
                  gsel, lowest_argmax);
    }
    if (with_cpu && std::find(cpu_contexts.begin(), cpu_contexts.end(), pos + 1) != cpu_contexts.end()) {
      const std::vector<float> c = cpu->Logits();
      const double err = MaxRelError(g, c);
      const int32_t csel = cpu->Select();
      const bool pass = err <= FLAGS_tolerance;
      ok &= pass;
      std::printf("context %5d: gpu vs cpu max rel error %.3e (%s), greedy gpu %d cpu %d, step %.3f ms\n",
                  pos + 1, err, pass ? "ok" : "FAIL", gsel, csel, gpu.last_launch_ms());
    } else {
      std::printf("context %5d: gpu greedy %d, step %.3f ms\n", pos + 1, gsel, gpu.last_launch_ms());
    }
    ++next;
  }
  if (FLAGS_sampling_checks > 0 && max_ctx > 0) {
    ok &= CheckSampling(gpu, prompt[max_ctx - 1], max_ctx - 1, FLAGS_sampling_checks);
  }
  if (FLAGS_oom_check) ok &= CheckOutOfMemory(*pkg, prompt.empty() ? 0 : prompt[0]);
  if (FLAGS_sampler_rows > 0) ok &= CheckSamplerRows(FLAGS_sampler_rows);

  if (FLAGS_runs > 0 && FLAGS_tokens > 0) {
    std::vector<int> base_prompt(prompt.begin(), prompt.begin() + std::min<size_t>(prompt.size(), 8));
    if (base_prompt.empty()) base_prompt.push_back(pkg->model().bos_token_id >= 0 ? pkg->model().bos_token_id : 0);
    GenerateOptions gen;
    gen.max_new_tokens = FLAGS_tokens;
    gen.stop_at_eos = false;
    std::vector<int> first;
    std::vector<float> first_logits;
    bool same = true;
    double total_ms = 0;
    for (int r = 0; r < FLAGS_runs; ++r) {
      GenerateResult res = gpu.Generate(base_prompt, gen);
      std::vector<float> logits = gpu.Logits();
      total_ms += res.decode_ms;
      if (r == 0) {
        first = res.tokens;
        first_logits = logits;
      } else if (res.tokens != first || !SameBits(logits, first_logits)) {
        same = false;
        std::printf("run %d differs from run 0\n", r);
      }
    }
    ok &= same;
    if (cpu && FLAGS_cpu_generate_tokens > 0) {
      // The launch path (forced prompt steps, LM_HEAD skips, in-kernel selection) against the
      // CPU executor. Any difference fails; on real weights a near-tie between the top two
      // logits could cause one, and the printed step says where to look.
      GenerateOptions cg = gen;
      cg.max_new_tokens = std::min(FLAGS_cpu_generate_tokens, FLAGS_tokens);
      const std::vector<int> want = cpu->Generate(base_prompt, cg).tokens;
      const size_t n = std::min(want.size(), first.size());
      size_t agree = 0;
      while (agree < n && want[agree] == first[agree]) ++agree;
      const bool gen_ok = agree == n;
      std::printf("generation vs CPU executor: %zu of %zu tokens agree%s\n", agree, n, gen_ok ? "" : " (FAIL)");
      ok &= gen_ok;
    }
    std::printf("determinism: %d runs of %d tokens: %s; decode %.4f ms/token (mean)\n", FLAGS_runs,
                FLAGS_tokens, same ? "bit-identical" : "FAIL", total_ms / FLAGS_runs / std::max(1, FLAGS_tokens - 1));
    std::string ids;
    for (size_t i = 0; i < std::min<size_t>(first.size(), 32); ++i) ids += std::to_string(first[i]) + " ";
    if (!FLAGS_tokens_out.empty()) {
      std::ofstream t(FLAGS_tokens_out);
      for (size_t i = 0; i < base_prompt.size(); ++i) t << (i ? "," : "") << base_prompt[i];
      t << "\n";
      for (size_t i = 0; i < first.size(); ++i) t << (i ? "," : "") << first[i];
      t << "\n";
    }
    std::printf("first tokens: %s\n", ids.c_str());

    // Seeded sampling: the same seed gives the same tokens on every run, another seed others.
    GenerateOptions sampled = gen;
    sampled.sampling = SamplingOptions{0.8f, 40, 0.95f, 7};
    const GenerateResult s1 = gpu.Generate(base_prompt, sampled);
    bool sampled_same = true;
    for (int r = 1; r < std::min(FLAGS_runs, 5); ++r) sampled_same &= gpu.Generate(base_prompt, sampled).tokens == s1.tokens;
    sampled.sampling.seed = 8;
    const bool other_differs = gpu.Generate(base_prompt, sampled).tokens != s1.tokens;
    std::printf("seeded sampling (T=0.8, top_k=40, top_p=0.95): %d runs of %d tokens %s; seed 8 %s; "
                "decode %.4f ms/token\n", std::min(FLAGS_runs, 5), FLAGS_tokens,
                sampled_same ? "bit-identical" : "FAIL: differ", other_differs ? "differs" : "gives the same tokens",
                s1.decode_ms / std::max<size_t>(1, s1.tokens.size() - 1));
    ok &= sampled_same;
    if (FLAGS_stream_checks && pkg->plan().max_context >= static_cast<int>(base_prompt.size()) + kMaxStepsPerLaunch + 1) {
      ok &= CheckStreaming(gpu, base_prompt);
    }
    if (pkg->plan().max_context >= 2 * (static_cast<int>(base_prompt.size()) + FLAGS_tokens)) {
      ok &= CheckKvReuse(gpu, base_prompt, gen);
    } else {
      std::printf("K/V reuse: not checked: max context %d < 2 x (prompt %zu + --tokens %d)\n",
                  pkg->plan().max_context, base_prompt.size(), FLAGS_tokens);
    }
  }
  if (pkg->plan().max_context >= 8 && pkg->model().vocab >= 2) {
    ok &= CheckStepOrder(gpu, pkg->model().vocab);
  }
  if (!FLAGS_trace_out.empty()) {
    for (int c : ParseIntList(FLAGS_trace_contexts, "--trace_contexts")) {
      if (c < 2 || c + 8 > pkg->plan().max_context) throw Error("--trace_contexts must be in 2..max_context-8");
      WriteTrace(gpu, *pkg, c, FLAGS_trace_out + "_" + std::to_string(c) + ".json");
    }
  }
  std::printf("gpu_check: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace tileinfer

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  return tileinfer::ExitCodeOf(tileinfer::Run);
}
