// harness.cc: a harness in the style of the PolarDB 2018 engine contest,
// written only against the contest's interface (engine.h, polar_string.h) and linked as a
// contest harness is:
//   g++ ... -Iinclude harness.cc -Llib -lengine -lpthread -ldl
//
// Usage: harness PHASE DIR NUM THREADS
//   write        writes keys 0 .. NUM-1 on THREADS threads (each thread its
//                share, in a random order), prints "WRITTEN <NUM>" after
//                the last Write returned, then sleeps until it is killed
//                (run_contest.sh sends SIGKILL: no close, no flush)
//   write-close  the same, but closes the engine and exits (by hand)
//   read         reads every key (each thread its share, in another random
//                order) and checks each whole value; absent keys must
//                read kNotFound
//   range        every thread scans the whole database twice with
//                Range("", "", visitor): keys strictly ascending in
//                unsigned byte order, each one written, each value's
//                length, first and last 8 bytes (and, for the thread's
//                1/THREADS share of the keys, every byte), the count; then
//                bounded ranges, checked against the key set
// Keys are 8 bytes, values 4096. Key number k is the 8 big-endian bytes
// of a bijective mix of k, so keys spread over the whole space and a key
// maps back to its number; its value is a function of k and position.
// Exits 0 on success, 1 with a message on the first failed check.

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine.h"
#include "polar_string.h"

using polar_race::Engine;
using polar_race::PolarString;
using polar_race::RetCode;
using polar_race::Visitor;

namespace {

const size_t kKeySize = 8;
const size_t kValueSize = 4096;
const size_t kWords = kValueSize / 8;
const int kPasses = 2;

// ------------------------------------------------------------ key space

// murmur3's fmix64: bijective on 64 bits (each step is invertible).
const uint64_t kC1 = 0xff51afd7ed558ccdULL;
const uint64_t kC2 = 0xc4ceb9fe1a85ec53ULL;

uint64_t Inverse(uint64_t c) {  // of an odd number, mod 2^64 (Newton)
  uint64_t x = c;
  for (int i = 0; i < 6; i++) x *= 2 - c * x;
  return x;
}

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= kC1;
  x ^= x >> 33;
  x *= kC2;
  x ^= x >> 33;
  return x;
}

uint64_t Unmix(uint64_t x) {  // x ^= x >> 33 is its own inverse
  static const uint64_t i1 = Inverse(kC1), i2 = Inverse(kC2);
  x ^= x >> 33;
  x *= i2;
  x ^= x >> 33;
  x *= i1;
  x ^= x >> 33;
  return x;
}

// The key of number k: the big-endian bytes of Mix(k).
std::string KeyOf(uint64_t k) {
  uint64_t m = Mix(k);
  std::string key(kKeySize, '\0');
  for (size_t i = 0; i < kKeySize; i++) key[i] = (char)(m >> (56 - 8 * i));
  return key;
}

// The number of a key, or UINT64_MAX if it is not 8 bytes.
uint64_t NumberOf(const PolarString& key) {
  if (key.size() != kKeySize) return UINT64_MAX;
  uint64_t m = 0;
  for (size_t i = 0; i < kKeySize; i++) m = (m << 8) | (uint8_t)key[i];
  return Unmix(m);
}

uint64_t Splitmix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Word i (little-endian 8 bytes at offset 8 i) of the value of key k.
uint64_t ValueWord(uint64_t k, size_t i) { return Splitmix(k * kWords + i); }

void MakeValue(uint64_t k, char* out) {
  for (size_t i = 0; i < kWords; i++) {
    uint64_t w = ValueWord(k, i);
    for (int b = 0; b < 8; b++) out[8 * i + b] = (char)(w >> (8 * b));
  }
}

uint64_t LoadWord(const char* p) {
  uint64_t w = 0;
  for (int b = 7; b >= 0; b--) w = (w << 8) | (uint8_t)p[b];
  return w;
}

// Empty when the value of key k is right: its length and its first and
// last words, and every word when `full`.
std::string CheckValue(uint64_t k, const char* p, size_t n, bool full) {
  char why[160];
  if (n != kValueSize) {
    snprintf(why, sizeof why, "key number %llu: a %zu-byte value", (unsigned long long)k, n);
    return why;
  }
  for (size_t i = 0; i < kWords; i += full ? 1 : kWords - 1) {
    if (LoadWord(p + 8 * i) != ValueWord(k, i)) {
      snprintf(why, sizeof why, "key number %llu: value bytes %zu..%zu are wrong",
               (unsigned long long)k, 8 * i, 8 * i + 7);
      return why;
    }
  }
  return std::string();
}

// ------------------------------------------------------------- plumbing

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// The first failure of any thread, reported at the end.
std::mutex g_fail_mu;
std::string g_fail;
std::atomic<long> g_failures(0);

void Failure(const std::string& what) {
  if (g_failures.fetch_add(1) == 0) {
    std::lock_guard<std::mutex> l(g_fail_mu);
    g_fail = what;
  }
}

const char* CodeName(RetCode rc) {
  static const char* names[] = {"kSucc",           "kNotFound", "kCorruption", "kNotSupported",
                                "kInvalidArgument", "kIOError",  "kIncomplete", "kTimedOut",
                                "kFull",           "kOutOfMemory"};
  return rc >= 0 && rc <= 9 ? names[rc] : "unknown RetCode";
}

// Runs fn(t) on `threads` threads and waits for them.
template <class Fn>
void RunThreads(int threads, Fn fn) {
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++) ts.emplace_back(fn, t);
  for (size_t i = 0; i < ts.size(); i++) ts[i].join();
}

// Thread t's key numbers (k % threads == t), shuffled with `seed`.
std::vector<uint64_t> Share(uint64_t num, int threads, int t, uint64_t seed) {
  std::vector<uint64_t> ks;
  for (uint64_t k = (uint64_t)t; k < num; k += (uint64_t)threads) ks.push_back(k);
  std::mt19937_64 rng(seed * 1000003 + (uint64_t)t);
  std::shuffle(ks.begin(), ks.end(), rng);
  return ks;
}

void Report(const char* phase, uint64_t ops, uint64_t bytes, double secs, int threads) {
  printf("harness: %-5s %llu ops on %d threads: %.3f s, %.0f ops/s, %.1f MB/s\n", phase,
         (unsigned long long)ops, threads, secs, secs > 0 ? ops / secs : 0.0,
         secs > 0 ? bytes / secs / 1e6 : 0.0);
  fflush(stdout);
}

Engine* OpenEngine(const std::string& dir) {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  Engine* engine = NULL;
  RetCode rc = Engine::Open(dir, &engine);
  if (rc != polar_race::kSucc || engine == NULL) {
    fprintf(stderr, "harness: Engine::Open(%s) returned %s\n", dir.c_str(), CodeName(rc));
    exit(1);
  }
  printf("harness: open %s: %.3f s\n", dir.c_str(), Seconds(t0));
  fflush(stdout);
  return engine;
}

// ---------------------------------------------------------------- phases

void WritePhase(Engine* engine, uint64_t num, int threads) {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  RunThreads(threads, [&](int t) {
    std::vector<char> value(kValueSize);
    std::vector<uint64_t> ks = Share(num, threads, t, 1);
    for (size_t i = 0; i < ks.size(); i++) {
      std::string key = KeyOf(ks[i]);
      MakeValue(ks[i], value.data());
      RetCode rc = engine->Write(key, PolarString(value.data(), value.size()));
      if (rc != polar_race::kSucc) {
        Failure("Write of key number " + std::to_string(ks[i]) + " returned " + CodeName(rc));
        return;
      }
    }
  });
  Report("write", num, num * (kKeySize + kValueSize), Seconds(t0), threads);
}

void ReadPhase(Engine* engine, uint64_t num, int threads) {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  RunThreads(threads, [&](int t) {
    std::string value;
    std::vector<uint64_t> ks = Share(num, threads, t, 2);
    for (size_t i = 0; i < ks.size(); i++) {
      RetCode rc = engine->Read(KeyOf(ks[i]), &value);
      if (rc != polar_race::kSucc) {
        Failure("Read of key number " + std::to_string(ks[i]) + " returned " + CodeName(rc));
        return;
      }
      std::string why = CheckValue(ks[i], value.data(), value.size(), true);
      if (!why.empty()) {
        Failure("Read: " + why);
        return;
      }
    }
    // Keys never written read kNotFound, leaving the value alone.
    value = "unchanged";
    for (uint64_t k = num + (uint64_t)t; k < num + 4 * (uint64_t)threads; k += threads) {
      RetCode rc = engine->Read(KeyOf(k), &value);
      if (rc != polar_race::kNotFound || value != "unchanged") {
        Failure("Read of the unwritten key number " + std::to_string(k) + " returned " +
                CodeName(rc));
        return;
      }
    }
  });
  Report("read", num, num * (kKeySize + kValueSize), Seconds(t0), threads);
}

// Checks the entries of one Range call.
class CheckingVisitor : public Visitor {
 public:
  // Keys in [lower, upper) (empty: unbounded) of numbers below num; full
  // content checks for key numbers k with k % threads == t.
  CheckingVisitor(uint64_t num, int threads, int t, const std::string& lower,
                  const std::string& upper)
      : num_(num), threads_((uint64_t)threads), t_((uint64_t)t), lower_(lower), upper_(upper) {}

  void Visit(const PolarString& key, const PolarString& value) override {
    if (!why_.empty()) return;
    char buf[200];
    uint64_t k = NumberOf(key);
    if (k == UINT64_MAX) {
      snprintf(buf, sizeof buf, "entry %llu has a %zu-byte key", (unsigned long long)count_,
               key.size());
      why_ = buf;
    } else if (k >= num_) {
      snprintf(buf, sizeof buf, "entry %llu: key number %llu was never written",
               (unsigned long long)count_, (unsigned long long)k);
      why_ = buf;
    } else if (count_ > 0 && PolarString(last_).compare(key) >= 0) {
      snprintf(buf, sizeof buf, "entry %llu (key number %llu) is not after the one before",
               (unsigned long long)count_, (unsigned long long)k);
      why_ = buf;
    } else if ((!lower_.empty() && key.compare(lower_) < 0) ||
               (!upper_.empty() && key.compare(upper_) >= 0)) {
      snprintf(buf, sizeof buf, "entry %llu (key number %llu) is outside the bounds",
               (unsigned long long)count_, (unsigned long long)k);
      why_ = buf;
    } else {
      why_ = CheckValue(k, value.data(), value.size(), k % threads_ == t_);
    }
    last_.assign(key.data(), key.size());
    count_++;
  }

  uint64_t count() const { return count_; }
  const std::string& why() const { return why_; }

 private:
  uint64_t num_, threads_, t_;
  std::string lower_, upper_;
  std::string last_;
  uint64_t count_ = 0;
  std::string why_;
};

// One Range call, checked: `want` entries.
void CheckedRange(Engine* engine, uint64_t num, int threads, int t, const std::string& lower,
                  const std::string& upper, uint64_t want, const std::string& what) {
  CheckingVisitor v(num, threads, t, lower, upper);
  RetCode rc = engine->Range(lower, upper, v);
  if (rc != polar_race::kSucc) {
    Failure(what + ": Range returned " + CodeName(rc));
  } else if (!v.why().empty()) {
    Failure(what + ": " + v.why());
  } else if (v.count() != want) {
    Failure(what + ": " + std::to_string(v.count()) + " entries, expected " +
            std::to_string(want));
  }
}

void RangePhase(Engine* engine, uint64_t num, int threads) {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  RunThreads(threads, [&](int t) {
    for (int pass = 0; pass < kPasses; pass++) {
      CheckedRange(engine, num, threads, t, "", "", num,
                   "thread " + std::to_string(t) + " pass " + std::to_string(pass));
    }
  });
  double secs = Seconds(t0);
  uint64_t entries = num * (uint64_t)threads * kPasses;
  Report("range", entries, entries * (kKeySize + kValueSize), secs, threads);

  // Bounded ranges: lower inclusive, upper exclusive, one side open.
  std::vector<std::string> keys;
  for (uint64_t k = 0; k < num; k++) keys.push_back(KeyOf(k));
  std::sort(keys.begin(), keys.end(), [](const std::string& a, const std::string& b) {
    return PolarString(a).compare(b) < 0;
  });
  if (num >= 4) {
    const std::string& a = keys[num / 4];
    const std::string& b = keys[num / 2];
    const uint64_t n = num / 2 - num / 4;
    CheckedRange(engine, num, 1, 0, a, b, n, "Range(key[n/4], key[n/2])");
    CheckedRange(engine, num, 1, 0, a, "", num - num / 4, "Range(key[n/4], \"\")");
    CheckedRange(engine, num, 1, 0, "", b, num / 2, "Range(\"\", key[n/2])");
    CheckedRange(engine, num, 1, 0, a, a, 0, "Range(a, a)");
    CheckedRange(engine, num, 1, 0, b, a, 0, "Range(b, a) with b > a");
    // Bounds between keys: one byte past a key is just after it.
    CheckedRange(engine, num, 1, 0, a + '\0', b + '\0', n, "Range(a + \"\\0\", b + \"\\0\")");
  }
}

uint64_t ParseNumber(const char* s, const char* what) {
  char* end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || *end != '\0' || s[0] == '-') {
    fprintf(stderr, "harness: %s must be a number, got '%s'\n", what, s);
    exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s write|write-close|read|range DIR NUM THREADS\n", argv[0]);
    return 2;
  }
  const std::string phase = argv[1];
  const std::string dir = argv[2];
  const uint64_t num = ParseNumber(argv[3], "NUM");
  const uint64_t threads = ParseNumber(argv[4], "THREADS");
  if (threads < 1 || threads > 4096) {
    fprintf(stderr, "harness: THREADS must be in 1..4096\n");
    return 2;
  }
  if (phase != "write" && phase != "write-close" && phase != "read" && phase != "range") {
    fprintf(stderr, "harness: unknown phase '%s'\n", phase.c_str());
    return 2;
  }

  Engine* engine = OpenEngine(dir);
  if (phase == "read") {
    ReadPhase(engine, num, (int)threads);
  } else if (phase == "range") {
    RangePhase(engine, num, (int)threads);
  } else {
    WritePhase(engine, num, (int)threads);
  }
  if (g_failures.load() > 0) {
    std::lock_guard<std::mutex> l(g_fail_mu);
    fprintf(stderr, "harness: %s FAILED (%ld failures), the first: %s\n", phase.c_str(),
            g_failures.load(), g_fail.c_str());
    return 1;
  }
  if (phase == "write") {
    // Every Write has returned: the driver may kill us now.
    printf("WRITTEN %llu\n", (unsigned long long)num);
    fflush(stdout);
    for (int i = 0; i < 600; i++) sleep(1);
    fprintf(stderr, "harness: write: not killed within 600 s after WRITTEN\n");
    return 3;
  }
  delete engine;  // closes the database
  printf("harness: %s OK\n", phase.c_str());
  fflush(stdout);
  return 0;
}
