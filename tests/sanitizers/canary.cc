// Commits one error on purpose, named by argv[1], so that tests/sanitizers/canary_test.sh can
// check that the test command's sanitizer build stops it and names the function and file. Each
// error sits in its own function, kept out of line; every value comes from argv so that the
// optimiser cannot fold it away.
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

char global_buffer[16];

// Reads through a pointer whose object the compiler cannot see, so that the access is ASan's to
// catch (UBSan's bounds and object-size checks catch an overflow they can see first).
[[gnu::noinline]] char ReadAt(const char* p, int i) { return p[i]; }

[[gnu::noinline]] int SignedOverflow(int a, int b) { return a + b; }

[[gnu::noinline]] int ShiftTooFar(int value, int by) { return value << by; }

[[gnu::noinline]] char HeapOverflow(int past) {
  char* p = new char[8];
  std::memset(p, 'x', 8);
  const char c = ReadAt(p, 8 + past);
  delete[] p;
  return c;
}

[[gnu::noinline]] char GlobalOverflow(int past) { return ReadAt(global_buffer, 16 + past); }

[[gnu::noinline]] int UseAfterFree(int n) {
  int* p = new int[4]{n, n, n, n};
  delete[] p;
  return p[n];
}

[[gnu::noinline]] void* Leak(int n) { return std::malloc(64 + static_cast<size_t>(n)); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(
        stderr,
        "usage: sanitizer_canary signed-overflow|shift|heap|global|use-after-free|leak|none\n");
    return 2;
  }
  const std::string what = argv[1];
  const int zero = argc - 2;  // 0, unknown to the compiler
  volatile int sink = 0;
  if (what == "signed-overflow") sink = SignedOverflow(INT_MAX, 1 + zero);
  if (what == "shift") sink = ShiftTooFar(1, 40 + zero);
  if (what == "heap") sink = HeapOverflow(zero);
  if (what == "global") sink = GlobalOverflow(zero);
  if (what == "use-after-free") sink = UseAfterFree(1 + zero);
  if (what == "leak") {
    void* volatile p = Leak(zero);
    p = nullptr;
    (void)p;
  }
  std::printf("%d\n", sink);
  return 0;
}
