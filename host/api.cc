// The public API over the package reader, validator, executors and tokenizer.
#include "host/api.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <exception>
#include <mutex>

#include "cuda/device_query.h"
#include "host/chat.h"
#include "host/cpu_executor.h"
#include "host/error.h"
#include "host/generate.h"
#include "host/gpu_executor.h"
#include "host/package.h"
#include "host/sampler.h"
#include "host/tokenizer.h"
#include "host/validate.h"

namespace tileinfer {
namespace api {

struct Engine::Impl {
  std::unique_ptr<Package> pkg;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Executor> exec;
  std::unique_ptr<ChatFormat> chat;  // null: the package has no chat format (chat_error says why)
  std::string chat_error;
  // A Generate is running: the executor holds one request's K/V cache, so a second one (from
  // another thread, or from the first one's callback) must be refused, not interleaved.
  std::atomic<bool> busy{false};
  // The process that opened the engine: its CPU executor's threads and its GPU context do not
  // survive fork(), so a forked child's Generate would wait for threads that do not exist.
  pid_t opener = getpid();

  // The request's prompt as ids (see Request).
  std::vector<int> PromptIds(const Request& r) const {
    const int given = !r.prompt_ids.empty() + !r.prompt.empty() + !r.chat.empty();
    if (given == 0) {
      throw tileinfer::Error("the prompt is empty: give one of prompt_ids, prompt (text) or chat, not empty");
    }
    if (given != 1) {
      throw tileinfer::Error("give exactly one of prompt_ids, prompt (text) or chat; got " + std::to_string(given));
    }
    if (!r.prompt_ids.empty()) return r.prompt_ids;
    std::string text = r.prompt;
    if (!r.chat.empty()) {
      std::vector<ChatMessage> messages;
      for (const Message& m : r.chat) {
        // Named here: the tokenizer's offset would be the rendered conversation's.
        const size_t bad = InvalidUtf8At(m.content);
        if (bad != std::string::npos) {
          throw tileinfer::Error("chat[" + std::to_string(messages.size()) + "] (" + m.role +
                                 ") is not valid UTF-8 at byte " + std::to_string(bad) +
                                 ": replace its ill-formed bytes with U+FFFD (a Result::text can end "
                                 "inside a character, or hold sampled bytes that are not UTF-8)");
        }
        messages.push_back({m.role, m.content});
      }
      if (!chat) throw tileinfer::Error(chat_error);
      text = chat->Render(messages, true);
    }
    std::vector<int> ids = tokenizer->Encode(text, true);
    const int bos = tokenizer->bos_id();
    if (tokenizer->add_bos() && bos >= 0 && (ids.empty() || ids[0] != bos)) ids.insert(ids.begin(), bos);
    if (ids.empty()) throw tileinfer::Error("the prompt is empty");
    return ids;
  }
};

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() {
  // In a fork()ed child the executor's threads and GPU context are the parent's: tearing them
  // down there could hang or touch the parent's device state, so the child leaves the engine to
  // its exit.
  if (impl_ && getpid() != impl_->opener) (void)impl_.release();
}

namespace {

// Every library error becomes a Status; nothing else escapes the API.
template <typename F>
Status Guard(F&& body) {
  try {
    body();
    return Status();
  } catch (const tileinfer::Error& e) {
    return Status::Error(e.what());
  } catch (const std::bad_alloc&) {
    return Status::Error("out of host memory");
  } catch (const std::exception& e) {
    return Status::Error(std::string("internal error: ") + e.what());
  } catch (...) {
    return Status::Error("internal error: an exception that is not a std::exception");
  }
}

// The text of `ids`, ids of the model's vocabulary that the tokenizer lacks left out: rows
// a checkpoint pads its embedding with beyond the tokenizer's vocabulary, or every id of a
// package without a tokenizer. HF's decode leaves such ids out alike.
std::string TextOf(const Tokenizer& tokenizer, const std::vector<int>& ids) {
  std::vector<int> known;
  known.reserve(ids.size());
  for (int id : ids) {
    if (id >= 0 && id < tokenizer.vocab_size()) known.push_back(id);
  }
  return tokenizer.Decode(known);
}

// A request's options as the executors take them (its prompt and stop text aside).
GenerateOptions OptionsOf(const Request& request) {
  GenerateOptions options;
  options.max_new_tokens = request.max_new_tokens;
  options.stop_at_eos = request.stop_at_eos;
  options.sampling = SamplingOptions{request.temperature, request.top_k, request.top_p, request.seed};
  options.reuse_kv_cache = request.reuse_kv_cache;
  return options;
}

}  // namespace

Status Engine::Open(const std::string& package_path, const EngineOptions& options,
                    std::unique_ptr<Engine>* engine) {
  return Guard([&] {
    if (options.device != "auto" && options.device != "cpu" && options.device != "gpu") {
      throw tileinfer::Error("device must be auto, cpu or gpu, not '" + options.device + "'");
    }
    CpuExecutor::CheckThreads(options.cpu_threads);  // also when the GPU runs
    auto impl = std::make_unique<Impl>();
    impl->pkg = Package::Open(package_path);
    ValidatePlan(*impl->pkg);
    impl->tokenizer = std::make_unique<Tokenizer>(Tokenizer::FromJson(impl->pkg->tokenizer_json()));
    try {  // parsed once; a package without a chat format still serves text and id prompts
      impl->chat = std::make_unique<ChatFormat>(ChatFormat::FromTokenizerJson(impl->pkg->tokenizer_json()));
    } catch (const tileinfer::Error& e) {
      impl->chat_error = e.what();
    }
    const DeviceInfo dev = QueryDevices();
    if (options.device == "gpu" || (options.device == "auto" && dev.count > 0)) {
      if (dev.count == 0) throw tileinfer::Error("device gpu, but there is no usable GPU (" + dev.why_none + ")");
      GpuOptions gpu;
      gpu.check_target = options.check_target;
      try {
        impl->exec = std::make_unique<GpuExecutor>(*impl->pkg, gpu);
      } catch (const tileinfer::Error& e) {
        if (options.device == "gpu") throw;
        // auto: a package planned for another GPU or worker build still runs, on the CPU.
        std::fprintf(stderr, "Not using the GPU: %s\nUsing the CPU executor.\n", e.what());
      }
    } else if (dev.count == 0 && options.device == "auto") {
      // Once a process: the reason is the machine's, the same for every engine it opens.
      static std::once_flag said;
      std::call_once(said, [&] {
        std::fprintf(stderr, "No usable GPU (%s): using the CPU executor.\n", dev.why_none.c_str());
      });
    }
    if (!impl->exec) impl->exec = std::make_unique<CpuExecutor>(*impl->pkg, options.cpu_threads);
    engine->reset(new Engine(std::move(impl)));
  });
}

Status Engine::Generate(const Request& request, const TokenCallback& on_token, Result* result) {
  if (getpid() != impl_->opener) {
    return Status::Error("this engine was opened in process " + std::to_string(impl_->opener) +
                         " and cannot serve another process, such as a fork()ed child (its CPU threads "
                         "and GPU context do not survive fork): open an engine in each process, or use "
                         "multiprocessing's 'spawn' start method");
  }
  if (impl_->busy.exchange(true)) {
    return Status::Error("this engine is already generating: it serves one request at a time (an "
                         "on_token callback must not call Generate (generate in Python) on its own "
                         "engine; threads need an engine each, or must take turns)");
  }
  struct Release {
    std::atomic<bool>& busy;
    ~Release() { busy = false; }
  } release{impl_->busy};
  *result = Result();  // after the checks above: a refused call leaves the caller's result alone
  return Guard([&] {
    GenerateOptions options = OptionsOf(request);
    bool stopped_by_text = false;
    std::string callback_error;  // what on_token threw: it stops the request, and is the error
    options.on_token = [&](int id) {
      const std::string piece = TextOf(*impl_->tokenizer, {id});
      result->text += piece;
      bool caller_goes_on = true;
      if (on_token) {
        // Caught here, so that nothing leaves an executor midway (the GPU's poll loop must
        // cancel its launch and keep its K/V history).
        try {
          caller_goes_on = on_token(id, piece);
        } catch (const std::exception& e) {
          callback_error = std::string("on_token threw: ") + e.what();
          return false;
        } catch (...) {
          callback_error = "on_token threw an exception that is not a std::exception";
          return false;
        }
      }
      stopped_by_text = !request.stop.empty() && result->text.find(request.stop) != std::string::npos;
      return caller_goes_on && !stopped_by_text;
    };
    result->prompt_ids = impl_->PromptIds(request);
    GenerateResult r = impl_->exec->Generate(result->prompt_ids, options);
    if (!callback_error.empty()) {
      throw tileinfer::Error(callback_error + " (the request stopped after " + std::to_string(r.tokens.size()) +
                             " token(s); the engine serves the next one)");
    }
    result->tokens = r.tokens;
    result->prompt_reused = r.prompt_reused;
    if (r.stopped_at_eos && !r.tokens.empty()) {
      result->text = TextOf(*impl_->tokenizer, {r.tokens.begin(), r.tokens.end() - 1});
    }
    result->stopped = r.stopped_at_eos || stopped_by_text;
    result->prompt_ms = r.prompt_ms;
    result->decode_ms = r.decode_ms;
  });
}

Status Engine::CheckOptions(const Request& request) {
  return Guard([&] { CheckGenerateOptions(OptionsOf(request)); });
}

Status Engine::Decode(const std::vector<int>& ids, std::string* text) const {
  return Guard([&] {
    for (int id : ids) CheckTokenId(*impl_->pkg, id, "token id");
    *text = TextOf(*impl_->tokenizer, ids);
  });
}

Status Engine::Encode(const std::string& text, std::vector<int>* ids) const {
  return Guard([&] { *ids = impl_->tokenizer->Encode(text, true); });
}

Status Engine::ChatPromptIds(const std::vector<Message>& chat, std::vector<int>* ids) const {
  return Guard([&] {
    if (chat.empty()) throw tileinfer::Error("the chat is empty: give at least one message");
    Request request;
    request.chat = chat;
    *ids = impl_->PromptIds(request);
  });
}

std::string Engine::executor_name() const { return impl_->exec->name(); }
int Engine::vocab_size() const { return impl_->pkg->model().vocab; }
int Engine::max_context() const { return impl_->pkg->plan().max_context; }

}  // namespace api
}  // namespace tileinfer
