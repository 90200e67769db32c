// The driver of every fuzz target (fuzz.h):
//   fuzz_<target> FILE|DIR...                  runs each input once (AFL++ runs it with @@;
//                                              a directory: every file in it)
//   fuzz_<target> --mutate-runs R [--seed N] FILE|DIR...
//                                              mutates those inputs at random R times and runs
//                                              each mutant (the test command's smoke run: no
//                                              coverage guidance, a sanitizer build); the same
//                                              R and N run the same mutants on any machine
//   fuzz_<target> --mutate-seconds S [--seed N] FILE|DIR...
//                                              the same for S seconds instead
// A mutant is 1–8 edits of an input: a bit flip, an interesting byte (0, 0xff, quotes,
// separators, digits), a random byte inserted, a range deleted or repeated, a splice with
// another input. It prints how many inputs it ran and at what rate.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "fuzz.h"

namespace {

std::string Read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void Collect(const std::filesystem::path& p, std::vector<std::filesystem::path>& out) {
  if (std::filesystem::is_directory(p)) {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(p)) {
      if (e.is_regular_file()) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    out.insert(out.end(), files.begin(), files.end());
  } else {
    out.push_back(p);
  }
}

std::string Mutate(const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  auto below = [&](size_t n) { return n == 0 ? size_t{0} : size_t(rng() % n); };
  std::string s = corpus[below(corpus.size())];
  static const char kInteresting[] = {'\0', '\xff', '"', '\'', ',', ':', '{', '}', '[', ']',
                                      '\n', '-', '0', '9', '.', 'e', ' ', '#', '\\', '@'};
  const int edits = 1 + int(below(8));
  for (int i = 0; i < edits; ++i) {
    switch (below(6)) {
      case 0:
        if (!s.empty()) s[below(s.size())] ^= char(1u << below(8));
        break;
      case 1:
        if (!s.empty()) s[below(s.size())] = kInteresting[below(sizeof kInteresting)];
        break;
      case 2:
        s.insert(s.begin() + std::ptrdiff_t(below(s.size() + 1)), char(rng()));
        break;
      case 3:
        if (!s.empty()) {
          const size_t at = below(s.size());
          s.erase(at, 1 + below(std::min<size_t>(32, s.size() - at)));
        }
        break;
      case 4:
        if (!s.empty() && s.size() < (1u << 16)) {
          const size_t at = below(s.size());
          const std::string piece = s.substr(at, 1 + below(std::min<size_t>(64, s.size() - at)));
          s.insert(below(s.size() + 1), piece);
        }
        break;
      default: {
        const std::string& other = corpus[below(corpus.size())];
        if (!other.empty()) s = s.substr(0, below(s.size() + 1)) + other.substr(below(other.size()));
        break;
      }
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 0;
  long budget = 0;
  uint64_t seed = 1;
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mutate-seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (a == "--mutate-runs" && i + 1 < argc) {
      budget = std::atol(argv[++i]);
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      Collect(a, inputs);
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr,
                 "usage: %s [--mutate-runs R | --mutate-seconds S] [--seed N] FILE|DIR...\n",
                 argv[0]);
    return 2;
  }
  std::vector<std::string> corpus;
  for (const auto& p : inputs) {
    corpus.push_back(Read(p));
    tessera::fuzz::FuzzOne(p.string(), corpus.back());
  }
  if (seconds <= 0 && budget <= 0) return 0;
  const std::string scratch = (std::filesystem::temp_directory_path() /
                               ("tessera-fuzz-" + std::to_string(getpid())))
                                  .string();
  std::mt19937_64 rng(seed);
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + std::chrono::duration<double>(seconds);
  long runs = 0;
  while (budget > 0 ? runs < budget : std::chrono::steady_clock::now() < until) {
    const std::string m = Mutate(corpus, rng);
    std::ofstream(scratch, std::ios::binary | std::ios::trunc) << m;
    tessera::fuzz::FuzzOne(scratch, m);
    ++runs;
  }
  std::filesystem::remove(scratch);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: %ld mutated inputs in %.1f s (%.0f/s) from %zu seeds, no finding\n", argv[0],
              runs, took, double(runs) / took, corpus.size());
  return 0;
}
