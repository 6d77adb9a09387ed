// `bazel run //host:decode -- --package=PATH --prompt="text"`: load a TileInfer package,
// check it, and generate on the GPU (the persistent worker) or the CPU executor, streaming
// the continuation; `--chat` holds a conversation with the model's chat template.
// Everything goes through the public API (host/api.h), as an embedding program would.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <gflags/gflags.h>

#include "host/api.h"
#include "host/cpu_executor.h"
#include "host/error.h"
#include "host/generate.h"
#include "host/sampler.h"
#include "host/tokenizer.h"

DEFINE_string(package, "", "Path to a .tpkg package written by the planner (required).");
DEFINE_string(prompt, "", "Prompt text, encoded with the package's tokenizer (special tokens such as <|im_start|> are parsed; BOS as the package says).");
DEFINE_string(prompt_ids, "", "Prompt as comma-separated token ids, e.g. 1,504,3937.");
DEFINE_bool(chat, false, "Chat: read user turns from stdin (one line each), answer with the model's chat template.");
DEFINE_string(system, "", "--chat: a system message (not given: the template's own, if any; --system= an empty one).");
DEFINE_int32(max_new_tokens, 32, "Most tokens to generate (per turn with --chat).");
DEFINE_string(device, "auto", "auto (GPU when there is one and the package was planned for it), cpu, or gpu.");
DEFINE_int32(threads, 0, "CPU executor threads, 0 to 1024 (0: one per hardware thread).");
DEFINE_bool(ignore_eos, false, "Keep generating past the model's stop tokens.");
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

void Ok(const api::Status& s) {
  if (!s.ok()) throw Error(s.message());
}

std::string Ids(const std::vector<int>& ids) {
  std::string out;
  for (int id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

// Text as it is, NUL bytes included (a token's piece may hold one; %s would cut it there).
void PrintBytes(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

// Flushes stdout; a failed write (a full disk, a closed stdout) is an error, so that a script
// never takes a cut-off output with exit status 0 for a whole one. (A pipe closed by its reader
// ends the process by SIGPIPE first, status 141, as for any command.)
void FlushStdout() {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    const int e = errno;
    throw Error(std::string("cannot write the output to stdout (") + (e != 0 ? std::strerror(e) : "write error") +
                (e == ENOSPC || e == EDQUOT ? "): free space on its disk, or give it another file or pipe"
                                            : "): give it a writable file or pipe"));
  }
}

void PrintTimes(const api::Result& r) {
  const int decoded = static_cast<int>(r.tokens.size()) - 1;
  const std::string reused =
      r.prompt_reused > 0 ? " (" + std::to_string(r.prompt_reused) + " kept in the K/V cache)" : "";
  std::printf("prompt: %zu tokens%s in %.1f ms; decode: %d tokens in %.1f ms (%.2f ms/token, %.1f tokens/s)%s\n",
              r.prompt_ids.size(), reused.c_str(), r.prompt_ms, decoded, r.decode_ms,
              decoded > 0 ? r.decode_ms / decoded : 0.0, decoded > 0 ? 1000.0 * decoded / r.decode_ms : 0.0,
              r.stopped ? "; stopped" : "");
}

int Run() {
  const int prompts = !FLAGS_prompt.empty() + !FLAGS_prompt_ids.empty() + FLAGS_chat;
  if (prompts > 1) throw Error("give one of --prompt, --prompt_ids or --chat");
  // --system= (given, empty) is an empty system message, which replaces the template's default one.
  const bool system_given = !gflags::GetCommandLineFlagInfoOrDie("system").is_default;
  if (system_given && !FLAGS_chat) throw Error("--system is for --chat only (a text prompt holds its own)");
  for (const auto& [flag, text] : {std::pair<const char*, const std::string&>{"--prompt", FLAGS_prompt},
                                   std::pair<const char*, const std::string&>{"--system", FLAGS_system}}) {
    const size_t bad = InvalidUtf8At(text);  // named here: the tokenizer's offset would be the rendered text's
    if (bad != std::string::npos) {
      throw Error(std::string(flag) + " is not valid UTF-8 (its byte " + std::to_string(bad) + "): give UTF-8 text" +
                  (flag == std::string("--prompt") ? ", or the prompt as --prompt_ids" : ""));
    }
  }
  api::Request request;
  request.max_new_tokens = FLAGS_max_new_tokens;
  request.stop_at_eos = !FLAGS_ignore_eos;
  request.stop = FLAGS_stop;
  request.temperature = OptionFloat(FLAGS_temperature, "--temperature", /*zero_allowed=*/true);
  request.top_k = FLAGS_top_k;
  request.top_p = OptionFloat(FLAGS_top_p, "--top_p", /*zero_allowed=*/false);
  request.seed = FLAGS_seed;
  Ok(api::Engine::CheckOptions(request));  // before the package loads, a prompt prints or a turn is read
  if (request.temperature == 0.0f) {  // greedy: the sampler's flags have no effect; say so rather than ignore them
    std::string unused;
    int n_unused = 0;
    for (const char* flag : {"top_k", "top_p", "seed"}) {
      if (gflags::GetCommandLineFlagInfoOrDie(flag).is_default) continue;
      unused += std::string(unused.empty() ? "--" : ", --") + flag;
      ++n_unused;
    }
    if (!unused.empty()) {
      std::fprintf(stderr, "note: %s only %s when sampling (--temperature > 0); this run is greedy.\n",
                   unused.c_str(), n_unused == 1 ? "applies" : "apply");
    }
  }

  if (FLAGS_threads < 0 || FLAGS_threads > CpuExecutor::kMaxThreads) {  // the flag's name, not the API field's
    throw Error("--threads=" + std::to_string(FLAGS_threads) + ": give 0 (one per hardware thread) or 1 to " +
                std::to_string(CpuExecutor::kMaxThreads));
  }
  api::EngineOptions eo;
  eo.device = FLAGS_device;
  eo.cpu_threads = FLAGS_threads;
  eo.check_target = FLAGS_check_target;
  std::unique_ptr<api::Engine> engine;
  Ok(api::Engine::Open(UserPath(FLAGS_package), eo, &engine));
  std::fprintf(stderr, "Package %s: running on the %s.\n", FLAGS_package.c_str(), engine->executor_name().c_str());
  auto stream = [](int, const std::string& piece) {
    PrintBytes(piece);
    return std::fflush(stdout) == 0;  // a failed write stops the request; FlushStdout then says why
  };

  if (FLAGS_chat) {
    if (system_given) request.chat.push_back({"system", FLAGS_system});
    {  // the chat format and the system message, checked before a turn is read
      std::vector<api::Message> probe = request.chat;
      probe.push_back({"user", "hi"});
      std::vector<int> ids;
      const api::Status s = engine->ChatPromptIds(probe, &ids);
      if (!s.ok()) {  // nothing typed yet: say that it is the package's template, not the user's text
        throw Error(std::string("--chat cannot encode a conversation with this package (a first user turn \"hi\"") +
                    (system_given ? " after the --system message" : "") + "): " + s.message());
      }
    }
    std::fprintf(stderr, "Chat: one line per turn; an empty line or end of input ends the chat.\n");
    std::string line;
    // The "> " prompt only for a person at a terminal: with piped turns it would land
    // before each answer.
    const bool interactive = isatty(STDIN_FILENO) != 0;
    int failed_turns = 0;
    // A line ends at "\n" or "\r\n" (a file written on Windows): a "\r" alone is an empty line.
    auto read_turn = [&] {
      errno = 0;
      if (!std::getline(std::cin, line)) {
        if (std::cin.bad() || std::ferror(stdin) != 0) {  // a read error, not the end of input (stdin a directory)
          const int e = errno;
          throw Error(std::string("cannot read the chat from stdin (") + (e != 0 ? std::strerror(e) : "read error") +
                      "): give it a file or pipe of lines, or a terminal");
        }
        return false;
      }
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return !line.empty();
    };
    while ((interactive && std::fprintf(stderr, "> ")), read_turn()) {
      const size_t bad = InvalidUtf8At(line);  // its offset in the line, not in the rendered chat
      if (bad != std::string::npos) {
        std::fprintf(stderr, "error: this line is not valid UTF-8 (its byte %zu) (this turn is left out of the "
                     "conversation)\n", bad);
        ++failed_turns;
        continue;
      }
      request.chat.push_back({"user", line});
      // A long conversation leaves less room than --max_new_tokens: the answer gets what is
      // left; once nothing is, the chat ends (every later turn would be longer still).
      api::Request turn = request;
      std::vector<int> ids;
      if (engine->ChatPromptIds(request.chat, &ids).ok()) {  // else Generate says what is wrong
        turn.chat.clear();  // its ids, encoded once
        turn.prompt_ids = ids;
        const int room = engine->max_context() - static_cast<int>(ids.size());
        if (room < 1) {
          throw Error("the conversation (" + std::to_string(ids.size()) + " tokens with this turn) has filled the "
                      "package's max context of " + std::to_string(engine->max_context()) +
                      ": start a new chat, or re-plan with a larger --max_context");
        }
        if (room < turn.max_new_tokens) {
          std::fprintf(stderr, "note: the conversation is %zu tokens of the package's %d: this answer gets at most %d\n",
                       ids.size(), engine->max_context(), room);
          turn.max_new_tokens = room;
        }
      }
      api::Result r;
      bool streamed = false;
      const api::Status s = engine->Generate(turn, [&](int id, const std::string& piece) {
        streamed = true;
        return stream(id, piece);
      }, &r);
      if (s.ok() || streamed) std::printf("\n");  // ends the answer's line; none for a refused turn
      FlushStdout();  // a failed write ends the chat, whatever the turn's status
      if (!s.ok()) {  // say why and go on: the engine serves the next turn, without this one
        std::fprintf(stderr, "error: %s (this turn is left out of the conversation)\n", s.message().c_str());
        request.chat.pop_back();
        ++failed_turns;
        continue;
      }
      // The answer's bytes may end inside a character (max_new_tokens) or hold bytes that are
      // not UTF-8 at all (a sampled token): the next turns must still encode the conversation.
      request.chat.push_back({"assistant", ReplaceInvalidUtf8(r.text)});
      PrintTimes(r);
      FlushStdout();  // before the next "> " on stderr, also when stdout is a pipe
    }
    if (failed_turns > 0) std::fprintf(stderr, "error: %d turn(s) failed (above)\n", failed_turns);
    return failed_turns > 0 ? 1 : 0;
  }

  if (!FLAGS_prompt.empty()) {
    request.prompt = FLAGS_prompt;
  } else {
    request.prompt_ids = ParseIntList(FLAGS_prompt_ids, "--prompt_ids");
    if (request.prompt_ids.empty()) throw Error("give a prompt: --prompt, --prompt_ids or --chat");
  }
  std::string prompt_text;
  std::vector<int> prompt_ids = request.prompt_ids;
  if (prompt_ids.empty()) Ok(engine->Encode(request.prompt, &prompt_ids));
  Ok(engine->Decode(prompt_ids, &prompt_text));
  std::printf("prompt: ");
  PrintBytes(prompt_text);
  std::printf("\n");
  FlushStdout();
  // "output: " goes out with the first piece, so that a request refused before any token
  // (its error on stderr) leaves no dangling "output: " on stdout.
  bool output_started = false;
  auto start_output = [&] {
    if (!output_started) std::printf("output: ");
    output_started = true;
  };
  api::Result r;
  const api::Status s = engine->Generate(request, [&](int id, const std::string& piece) {
    start_output();
    return stream(id, piece);
  }, &r);
  if (!s.ok() && output_started) std::printf("\n");  // the error goes to stderr on a line of its own
  FlushStdout();  // a write that failed stopped the request: that is the error to report
  Ok(s);
  start_output();
  std::printf("\n");
  std::printf("ids: %s\n", Ids(r.tokens).c_str());
  PrintTimes(r);
  FlushStdout();
  return 0;
}

}  // namespace
}  // namespace tileinfer

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "decode --package=PATH (--prompt=TEXT | --prompt_ids=1,2,3 | --chat [--system=TEXT]) [--max_new_tokens=N]\n"
      "    [--device=auto|cpu|gpu] [--threads=N] [--check_target=false] [--ignore_eos] [--stop=TEXT]\n"
      "    [--temperature=T --top_k=K --top_p=P --seed=S]");
  // --help (or -h alone) asks for the usage: print decode's own flags and succeed (gflags' own
  // --help lists every library's flags and exits 1). Parsed by gflags, so that a value such as
  // `--prompt -h` stays a value.
  const bool h_alone = argc == 2 && std::string(argv[1]) == "-h";
  if (!h_alone) gflags::ParseCommandLineNonHelpFlags(&argc, &argv, true);
  std::string help;
  if (h_alone || (gflags::GetCommandLineOption("help", &help) && help == "true")) {
    gflags::ShowUsageWithFlagsRestrict(argv[0], "host/");
    return 0;
  }
  gflags::HandleCommandLineHelpFlags();  // the other help flags (--helpfull, --version, ...) as before
  if (argc > 1) {
    std::fprintf(stderr, "error: unexpected argument '%s' (flags are --name=value)\n", argv[1]);
    return 2;
  }
  if (FLAGS_package.empty()) {
    gflags::ShowUsageWithFlagsRestrict(argv[0], "host/");
    std::fprintf(stderr, "error: --package is required\n");
    return 2;
  }
  return tileinfer::ExitCodeOf(tileinfer::Run);
}
