// engine_varve.h: EngineVarve, the contest's polar_race::Engine over
// varve's C API (include/varve.h at the repository's root).
//
// Durability: writes go with sync = false. varve appends every write to
// its write-ahead log before Write returns, so an acknowledged write
// survives a kill -9 of the process (the contest's rule); only a power
// loss or a kernel crash can take the writes of the last moments, which
// sync = true would add an fdatasync per write to prevent.

#ifndef POLAR_RACE_ENGINE_VARVE_H_
#define POLAR_RACE_ENGINE_VARVE_H_

#include <string>

#include "engine.h"
#include "varve.h"

namespace polar_race {

class EngineVarve : public Engine {
 public:
  // The contest's setup: blob files for values of 4 KiB and more, 64
  // blob write lanes, one memory budget of 1.5 GiB (environment variable
  // VARVE_MEMORY_BUDGET, in bytes, overrides it; 0 means no budget).
  static const size_t kDefaultMemoryBudget = (size_t)3 << 29;  // 1.5 GiB
  static const size_t kBlobWriteLanes = 64;
  static const size_t kMinBlobSize = 4096;

  // Opens (creating if missing) the database in directory `name`.
  static RetCode Open(const std::string& name, Engine** eptr);

  ~EngineVarve() override;

  RetCode Write(const PolarString& key, const PolarString& value) override;
  RetCode Read(const PolarString& key, std::string* value) override;
  RetCode Range(const PolarString& lower, const PolarString& upper,
                Visitor& visitor) override;

  // A varve status as a RetCode.
  static RetCode ToRetCode(varve_status status);

 private:
  explicit EngineVarve(varve_db_t* db) : db_(db) {}
  EngineVarve(const EngineVarve&) = delete;
  EngineVarve& operator=(const EngineVarve&) = delete;

  varve_db_t* db_;
};

}  // namespace polar_race

#endif  // POLAR_RACE_ENGINE_VARVE_H_
