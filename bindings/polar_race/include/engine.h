// engine.h: the engine interface of the PolarDB 2018 engine contest, as a
// contest harness expects it (namespace polar_race). This copy is
// implemented over varve's C API by engine_varve.cc; link a harness with
//   g++ ... -I<this dir> -L<bindings/polar_race/lib> -lengine -lpthread -ldl
// C++11.

#ifndef POLAR_RACE_INCLUDE_ENGINE_H_
#define POLAR_RACE_INCLUDE_ENGINE_H_

#include <string>

#include "polar_string.h"

namespace polar_race {

enum RetCode {
  kSucc = 0,
  kNotFound = 1,
  kCorruption = 2,
  kNotSupported = 3,
  kInvalidArgument = 4,
  kIOError = 5,
  kIncomplete = 6,
  kTimedOut = 7,
  kFull = 8,
  kOutOfMemory = 9,
};

// Receives the entries of Engine::Range, one call each.
class Visitor {
 public:
  virtual ~Visitor() {}

  // key and value are valid during this call only.
  virtual void Visit(const PolarString& key, const PolarString& value) = 0;
};

class Engine {
 public:
  // Opens the engine in directory `name` (created if missing) and stores
  // it in *eptr (NULL on failure). `delete engine` closes it.
  static RetCode Open(const std::string& name, Engine** eptr);

  Engine() {}

  virtual ~Engine();

  // Sets key to value. Safe to call from many threads at once, like Read
  // and Range. An acknowledged write survives a kill -9 of the process.
  virtual RetCode Write(const PolarString& key, const PolarString& value) = 0;

  // Reads key into *value: kSucc, or kNotFound when the key is absent.
  virtual RetCode Read(const PolarString& key, std::string* value) = 0;

  // Calls visitor.Visit for every key in [lower, upper) in ascending
  // unsigned byte order: lower inclusive, upper exclusive, and an empty
  // bound is unbounded on its side (Range("", "", v) visits everything).
  virtual RetCode Range(const PolarString& lower, const PolarString& upper,
                        Visitor& visitor) = 0;
};

}  // namespace polar_race

#endif  // POLAR_RACE_INCLUDE_ENGINE_H_
