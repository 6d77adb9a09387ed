// How another program embeds TileInfer: link //host:tileinfer, include host/api.h.
//
//   bazel run //examples/embed -- PACKAGE.tpkg 1,504,3575 [max_new_tokens]
//
// Streams the continuation of the prompt ids to stdout, then prints the ids.
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "host/api.h"

namespace {

// `text` as a whole decimal int in [lo, hi], else false (no partial or wrapped values).
bool ParseInt(const std::string& text, long lo, long hi, int* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: %s PACKAGE.tpkg PROMPT_IDS [MAX_NEW_TOKENS]\n", argv[0]);
    return 2;
  }
  std::string path = argv[1];
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");  // under `bazel run`
  if (cwd != nullptr && !path.empty() && path[0] != '/') path = std::string(cwd) + "/" + path;

  tileinfer::api::Request request;
  const std::string list = argv[2];
  std::stringstream ids(list + ",");  // every item ends at a comma: "1," has an empty last one
  for (std::string item; std::getline(ids, item, ',');) {
    int id = 0;
    if (!ParseInt(item, 0, INT_MAX, &id)) {
      std::fprintf(stderr, "error: prompt id '%s' is not a token id (a non-negative integer); give "
                   "comma-separated ids such as 1,504,3575\n", item.c_str());
      return 2;
    }
    request.prompt_ids.push_back(id);
  }
  if (argc == 4 && !ParseInt(argv[3], 1, INT_MAX, &request.max_new_tokens)) {
    std::fprintf(stderr, "error: MAX_NEW_TOKENS '%s' must be a positive integer\n", argv[3]);
    return 2;
  }

  std::unique_ptr<tileinfer::api::Engine> engine;
  tileinfer::api::Status status = tileinfer::api::Engine::Open(path, {}, &engine);
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", status.message().c_str());
    return 1;
  }
  tileinfer::api::Result result;
  status = engine->Generate(
      request,
      [](int, const std::string& piece) {
        std::fwrite(piece.data(), 1, piece.size(), stdout);  // a piece may hold a NUL byte
        std::fflush(stdout);
        return true;
      },
      &result);
  std::printf("\n");
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", status.message().c_str());
    return 1;
  }
  std::printf("%zu tokens on the %s%s\n", result.tokens.size(), engine->executor_name().c_str(),
              result.stopped ? ", stopped" : "");
  return 0;
}
