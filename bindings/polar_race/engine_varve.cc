// engine_varve.cc: the contest's Engine over varve's C API. See
// engine_varve.h for the options and the durability argument.

#include "engine_varve.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <memory>

namespace polar_race {

namespace {

// Prints a failed call's message to stderr (the Engine interface has no
// place for it) and frees it.
RetCode Fail(const char* what, varve_status status, char* err) {
  fprintf(stderr, "engine_varve: %s: %s: %s\n", what, varve_status_name(status),
          err ? err : "(no message)");
  varve_free(err);
  return EngineVarve::ToRetCode(status);
}

// The memory budget: VARVE_MEMORY_BUDGET (bytes) or the default. False
// (with a message) when the variable is set but not a number.
bool MemoryBudget(size_t* bytes) {
  *bytes = EngineVarve::kDefaultMemoryBudget;
  const char* env = getenv("VARVE_MEMORY_BUDGET");
  if (env == NULL || *env == '\0') return true;
  char* end = NULL;
  errno = 0;
  unsigned long long v = strtoull(env, &end, 10);
  if (errno != 0 || end == env || *end != '\0' || env[0] == '-') {
    fprintf(stderr, "engine_varve: VARVE_MEMORY_BUDGET=%s is not a number of bytes\n", env);
    return false;
  }
  *bytes = (size_t)v;
  return true;
}

struct OptionsDeleter {
  void operator()(varve_options_t* o) const { varve_options_destroy(o); }
};
struct ReadOptionsDeleter {
  void operator()(varve_readoptions_t* o) const { varve_readoptions_destroy(o); }
};
struct IteratorDeleter {
  void operator()(varve_iterator_t* it) const { varve_iter_destroy(it); }
};
struct PinnedDeleter {
  void operator()(varve_pinned_t* p) const { varve_pinned_destroy(p); }
};

}  // namespace

Engine::~Engine() {}

RetCode Engine::Open(const std::string& name, Engine** eptr) {
  return EngineVarve::Open(name, eptr);
}

RetCode EngineVarve::ToRetCode(varve_status status) {
  switch (status) {
    case VARVE_OK:
      return kSucc;
    case VARVE_NOT_FOUND:
      return kNotFound;
    case VARVE_CORRUPTION:
      return kCorruption;
    case VARVE_NOT_SUPPORTED:
      return kNotSupported;
    case VARVE_INVALID_ARGUMENT:
      return kInvalidArgument;
    case VARVE_NO_SPACE:
      return kFull;
    case VARVE_OUT_OF_MEMORY:
      return kOutOfMemory;
    case VARVE_IO_ERROR:
    default:
      // BUSY, ALREADY_EXISTS, POISONED, READ_ONLY, CLOSED, PANIC, UNKNOWN.
      return kIOError;
  }
}

RetCode EngineVarve::Open(const std::string& name, Engine** eptr) {
  *eptr = NULL;
  size_t budget = 0;
  if (!MemoryBudget(&budget)) return kInvalidArgument;
  std::unique_ptr<varve_options_t, OptionsDeleter> opts(varve_options_create());
  if (!opts) return kOutOfMemory;
  // Every setter returns a status: the first failure skips the rest.
  char* err = NULL;
  varve_status st = varve_options_set_create_if_missing(opts.get(), true, &err);
  if (st == VARVE_OK) st = varve_options_set_min_blob_size(opts.get(), kMinBlobSize, &err);
  // 64 concurrent blob files, each taking one 64th of the key space (the
  // contest's keys are spread evenly over their 8 bytes): the values of a
  // key range sit together, so the range phase's key-ordered scans read
  // each file once.
  if (st == VARVE_OK) {
    st = varve_options_set_blob_write_lanes(opts.get(), kBlobWriteLanes, &err);
  }
  if (st == VARVE_OK) st = varve_options_set_blob_lanes_by_key(opts.get(), 1, &err);
  if (st == VARVE_OK) st = varve_options_set_memory_budget(opts.get(), budget, &err);
  if (st != VARVE_OK) return Fail("options", st, err);

  varve_db_t* db = NULL;
  st = varve_open(opts.get(), name.c_str(), &db, &err);
  if (st != VARVE_OK) return Fail(("open " + name).c_str(), st, err);
  *eptr = new EngineVarve(db);
  return kSucc;
}

EngineVarve::~EngineVarve() {
  char* err = NULL;
  varve_status st = varve_close(db_, &err);
  if (st != VARVE_OK) Fail("close", st, err);
}

RetCode EngineVarve::Write(const PolarString& key, const PolarString& value) {
  char* err = NULL;
  // NULL write options: sync = false (see engine_varve.h).
  varve_status st =
      varve_put(db_, NULL, key.data(), key.size(), value.data(), value.size(), &err);
  if (st != VARVE_OK) return Fail("write", st, err);
  return kSucc;
}

RetCode EngineVarve::Read(const PolarString& key, std::string* value) {
  char* err = NULL;
  varve_pinned_t* raw = NULL;
  varve_status st = varve_get_pinned(db_, NULL, key.data(), key.size(), &raw, &err);
  if (st == VARVE_NOT_FOUND) return kNotFound;
  if (st != VARVE_OK) return Fail("read", st, err);
  std::unique_ptr<varve_pinned_t, PinnedDeleter> pinned(raw);
  size_t len = 0;
  const char* p = varve_pinned_value(pinned.get(), &len);
  value->assign(p, len);
  return kSucc;
}

RetCode EngineVarve::Range(const PolarString& lower, const PolarString& upper,
                           Visitor& visitor) {
  std::unique_ptr<varve_readoptions_t, ReadOptionsDeleter> ro(varve_readoptions_create());
  if (!ro) return kOutOfMemory;
  // An empty bound is no bound.
  char* err = NULL;
  varve_status st = VARVE_OK;
  if (!lower.empty()) {
    st = varve_readoptions_set_iterate_lower_bound(ro.get(), lower.data(), lower.size(), &err);
  }
  if (st == VARVE_OK && !upper.empty()) {
    st = varve_readoptions_set_iterate_upper_bound(ro.get(), upper.data(), upper.size(), &err);
  }
  if (st != VARVE_OK) return Fail("range bounds", st, err);
  varve_iterator_t* raw = NULL;
  st = varve_iter_create(db_, ro.get(), &raw, &err);
  if (st != VARVE_OK) return Fail("range", st, err);
  std::unique_ptr<varve_iterator_t, IteratorDeleter> it(raw);
  // Each move returns the iterator's status: VARVE_OK at the end too.
  st = varve_iter_seek_to_first(it.get(), &err);
  while (st == VARVE_OK && varve_iter_valid(it.get())) {
    size_t key_len = 0;
    size_t value_len = 0;
    const char* k = varve_iter_key(it.get(), &key_len);
    // A value in a blob file is read here; NULL if that read failed, and
    // the iterator's status says why.
    const char* v = varve_iter_value(it.get(), &value_len);
    if (k == NULL || v == NULL) {
      st = varve_iter_status(it.get(), &err);
      break;
    }
    visitor.Visit(PolarString(k, key_len), PolarString(v, value_len));
    st = varve_iter_next(it.get(), &err);
  }
  if (st != VARVE_OK) return Fail("range", st, err);
  return kSucc;
}

}  // namespace polar_race
