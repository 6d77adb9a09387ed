// TileInfer's public C++ API: open a package, generate with options and a token callback.
// Errors are status values, never exceptions. Link //host:tileinfer; see examples/embed/.
//
//   std::unique_ptr<tileinfer::api::Engine> engine;
//   tileinfer::api::Status s = tileinfer::api::Engine::Open("model.tpkg", {}, &engine);
//   tileinfer::api::Request request;
//   request.prompt_ids = {1, 504, 3575};
//   tileinfer::api::Result result;
//   s = engine->Generate(request, [](int id, const std::string& piece) { return true; }, &result);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tileinfer {
namespace api {

class Status {
 public:
  Status() = default;
  static Status Error(std::string message) { return Status(std::move(message)); }
  bool ok() const { return message_.empty(); }
  // What is wrong and what to do; empty when ok().
  const std::string& message() const { return message_; }

 private:
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::string message_;
};

struct EngineOptions {
  std::string device = "auto";  // auto (GPU when usable and planned for), cpu, or gpu; auto
                                // without a GPU says so on stderr, once a process
  int cpu_threads = 0;          // CPU executor threads, 0..1024; 0: one per hardware thread
  bool check_target = true;     // GPU: refuse a package planned for another GPU or worker
};

struct Message {
  std::string role;     // "system", "user" or "assistant"
  std::string content;
};

// The prompt is exactly one of: prompt_ids, prompt (text), or chat (messages rendered with
// the model's chat template and an assistant turn opened). Text and chats get the model's
// BOS exactly once: added when the tokenizer says so, unless the text already starts with it.
struct Request {
  std::vector<int> prompt_ids;  // the prompt as token ids
  std::string prompt;           // the prompt as text (special tokens like <|im_start|> parsed)
  std::vector<Message> chat;    // a conversation; the reply is the assistant's next turn
  int max_new_tokens = 32;
  bool stop_at_eos = true;      // stop at the package's stop token ids
  std::string stop;             // also stop once the continuation contains this text
  float temperature = 0.0f;     // 0: greedy; else sampled (cuda/sample.h; CPU and GPU alike)
  int top_k = 0;                // 0: all ids
  float top_p = 1.0f;           // 1: all ids
  uint64_t seed = 0;            // same seed, package and prompt: same tokens
  // Keep the K/V cache rows that earlier requests left for the prompt's leading tokens (a row
  // stays until a request writes another token at its position), and run only the rest of the
  // prompt (a chat's next turn runs only that turn). The tokens are the same either way
  // (bit-identical logits); false runs every position, e.g. to time a whole prompt.
  bool reuse_kv_cache = true;
};

struct Result {
  std::vector<int> prompt_ids;  // the prompt as the model saw it
  int prompt_reused = 0;        // its leading tokens whose K/V rows were kept (reuse_kv_cache)
  std::vector<int> tokens;      // new tokens (the stop token included when one ended it)
  std::string text;             // their text, without a final stop token's: the tokens' bytes,
                                // which need not be UTF-8 (an end inside a character, a sampled
                                // byte token); replace those bytes before a Request::chat holds it
  bool stopped = false;         // ended by a stop token or the stop text
  double prompt_ms = 0;         // wall time of the prompt and the first new token
  double decode_ms = 0;         // wall time of the other new tokens
};

// Called with each new token id and its text as soon as it is chosen; return false to stop. An
// exception it throws stops the request, and Generate returns it as the error ("on_token threw:
// ..."); the engine serves the next request.
using TokenCallback = std::function<bool(int id, const std::string& piece)>;

class Engine {
 public:
  // Opens, checks (format, checksums, plan) and loads a package. On a GPU the weights are
  // uploaded once here. The CPU executor reads the weights from the mapped file on every step:
  // replace an open package only by renaming a new file over it, never by rewriting it.
  static Status Open(const std::string& package_path, const EngineOptions& options,
                     std::unique_ptr<Engine>* engine);
  // Destroy an engine only when no Generate runs on it (one on another thread must have
  // returned: the engine's memory goes, as with any C++ object in use). In a fork()ed child
  // the destructor frees nothing (the executor's threads and GPU context are the parent's);
  // the child's exit does.
  ~Engine();

  // One request: from position 0, or from the first prompt token whose K/V row does not hold
  // it (Request::reuse_kv_cache; a refused request changes no row; after an executor's error,
  // such as a non-finite logit, from 0). `on_token` may be empty. The engine serves the next
  // request after an error. One request at a time: a Generate while another runs on the same
  // engine (another thread's, or one from inside `on_token`) returns an error at once, as does
  // a Generate in another process than the one that opened the engine (a fork()ed child: the
  // CPU executor's threads and the GPU context do not survive fork); such a refused call
  // leaves *result as it was.
  Status Generate(const Request& request, const TokenCallback& on_token, Result* result);

  // The request's options that do not depend on the prompt or the package (max_new_tokens
  // at least 1; temperature, top_k, top_p): OK, or the error Generate would give for them.
  static Status CheckOptions(const Request& request);

  // Text of token ids (the package's tokenizer). Ids outside the model's vocabulary: an
  // error; ids inside it that the tokenizer lacks (padded embedding rows, or every id of a
  // package planned without tokenizer.json) have no text, as in HF's decode. Generate's
  // pieces and text follow the same rule.
  Status Decode(const std::vector<int>& ids, std::string* text) const;
  // Ids of text (special tokens parsed; no BOS added).
  Status Encode(const std::string& text, std::vector<int>* ids) const;
  // The prompt ids Generate takes for a Request whose chat is `chat`: the conversation in the
  // model's chat template, an assistant turn opened, BOS once. An error when the package has no
  // chat format, a role is unknown, a message's text is not UTF-8 or `chat` is empty.
  Status ChatPromptIds(const std::vector<Message>& chat, std::vector<int>* ids) const;

  // "CPU executor (N threads)" or "GPU <name> (...)".
  std::string executor_name() const;
  int vocab_size() const;
  int max_context() const;

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace api
}  // namespace tileinfer
