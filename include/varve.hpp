/*
 * varve.hpp: a C++17 header-only wrapper over varve's C API (varve.h).
 * Guide to the C API: docs/c-api.md. Link exactly as for the C library:
 *   -lvarve_ffi -lpthread -ldl -lm
 * Test: crates/varve-ffi/tests/cpp/test_varve.cpp (run by
 * crates/varve-ffi/tests/cpp_api.rs, plainly and under ASan + UBSan).
 *
 * ERRORS: EXCEPTIONS. Every call that fails throws varve::Error, a
 * std::runtime_error carrying the C status (code(), code_name()) and the
 * library's message (message(); what() is "VARVE_BUSY: <message>").
 * Why exceptions rather than a Result<T> type:
 *   - C++17 has no std::expected, and a home-made Result would be one more
 *     vocabulary type for callers to learn and propagate by hand;
 *   - the failures varve reports (IO errors, corruption, a locked
 *     directory, a closed handle, a full disk) are exceptional: a caller
 *     rarely handles them where they happen, and an ignored Result would
 *     drop them silently, while an exception cannot be ignored;
 *   - RAII already owns every handle, so unwinding leaks nothing.
 * The one expected "failure", a key that is absent, is NOT an error in the
 * C API (VARVE_NOT_FOUND writes no message) and is not one here either:
 * Db::get returns std::optional<std::string> (std::nullopt when absent),
 * Db::get(key, &out) returns false, Db::multi_get gives one optional per
 * key. NOT_FOUND is only thrown where it is a real error: opening a
 * database that does not exist (create_if_missing off, or read-only).
 *
 * OWNERSHIP. Db, Snapshot, Iterator, WriteBatch, PinnedValue and the three
 * options classes each own one C handle: they are move-only, their
 * destructors free the handle, and a moved-from object holds none (a call
 * on a moved-from or closed Db throws Error with VARVE_CLOSED). Results
 * that the C API returns in malloc'ed buffers (values, stats, anchors,
 * ranges, messages) are copied into std::string / std::vector and freed
 * before the call returns. Iterator::key() / value() and
 * PinnedValue::view() are std::string_view borrowed from their object
 * (valid until the iterator moves or the object dies). Keys and values
 * going in are std::string_view (copied or used only during the call) and
 * may hold NUL bytes.
 *
 * THREAD-SAFETY (the rules of varve.h, per class):
 *   Db                   any threads at once; only close() (and the
 *                        destructor, and move-assignment) need every other
 *                        thread to be done with it. shutdown() may race
 *                        other threads: they then get Error(VARVE_CLOSED)
 *   Snapshot,
 *   PinnedValue,
 *   KeyAnchors, Range    immutable: any threads
 *   Options,
 *   ReadOptions,
 *   WriteOptions         set from one thread at a time; once set, any
 *                        threads may pass the same object to calls at once
 *   Iterator,
 *   WriteBatch           one thread at a time (may move between threads)
 *   Error                a plain value
 *
 * Destroy iterators and snapshots before the Db they came from (they stay
 * memory-safe afterwards, as in C, but hold files open).
 *
 * Example:
 *   varve::Db db = varve::Db::open("/tmp/example-db");
 *   db.put("apple", "red");
 *   if (std::optional<std::string> v = db.get("apple")) use(*v);
 *   varve::ReadOptions ro;
 *   ro.set_iterate_lower_bound("a").set_iterate_upper_bound("b");
 *   varve::Iterator it = db.iterator(ro);
 *   // a move throws if the scan meets an error; the loop ends at the end
 *   for (it.seek_to_first(); it.valid(); it.next()) use(it.key(), it.value());
 */

#ifndef VARVE_HPP
#define VARVE_HPP

#include "varve.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace varve {

/* ------------------------------------------------------------ statuses */

/** The C status codes (VARVE_OK, VARVE_NOT_FOUND, ... in varve.h). */
using Status = varve_status;

/** The library's version ("0.1.0"). */
inline const char *version() noexcept { return varve_version(); }

/** The name of a status code ("VARVE_BUSY", ...). */
inline const char *status_name(Status code) noexcept {
    return varve_status_name(static_cast<int>(code));
}

/**
 * Every failure of a call. code() is the C status (never VARVE_OK, and
 * VARVE_NOT_FOUND only for opening a database that does not exist); message()
 * is the library's message (naming the file where the error concerns
 * one), what() the two together.
 */
class Error : public std::runtime_error {
  public:
    Error(Status code, const std::string &message)
        : std::runtime_error(std::string(status_name(code)) +
                             (message.empty() ? "" : ": " + message)),
          code_(code), message_(message) {}

    Status code() const noexcept { return code_; }
    const char *code_name() const noexcept { return status_name(code_); }
    const std::string &message() const noexcept { return message_; }

  private:
    Status code_;
    std::string message_;
};

namespace detail {

/** The `char **errptr` of one call: frees the message when it goes. */
class ErrPtr {
  public:
    ErrPtr() noexcept = default;
    ErrPtr(const ErrPtr &) = delete;
    ErrPtr &operator=(const ErrPtr &) = delete;
    ~ErrPtr() { varve_free(msg_); }
    char **get() noexcept { return &msg_; }
    const char *msg() const noexcept { return msg_; }

  private:
    char *msg_ = nullptr;
};

/** Throws Error(status, message) unless `status` is VARVE_OK. */
inline void check(Status status, const ErrPtr &err) {
    if (status != VARVE_OK) {
        throw Error(status, err.msg() ? err.msg() : "");
    }
}

/** Calls `fn(args..., errptr)`, a C call with a trailing errptr, and
 *  throws its error unless it returns VARVE_OK. */
template <class Fn, class... Args> void call(Fn fn, Args... args) {
    ErrPtr err;
    check(fn(args..., err.get()), err);
}

/** A handle a *_create call returned; NULL only after a library panic. */
template <class T> T *created(T *handle, const char *what) {
    if (handle == nullptr) {
        throw Error(VARVE_PANIC, std::string(what) + " returned NULL");
    }
    return handle;
}

/** A pointer for `s` that is never NULL: NULL means "no key" (unbounded)
 *  to some calls, where an empty view means the empty key. */
inline const char *ptr(std::string_view s) noexcept { return s.data() ? s.data() : ""; }

/** A buffer varve malloc'ed, freed with varve_free. */
struct Malloced {
    char *p = nullptr;
    Malloced() noexcept = default;
    Malloced(const Malloced &) = delete;
    Malloced &operator=(const Malloced &) = delete;
    ~Malloced() { varve_free(p); }
};

/** Moves a handle out of `from`, leaving NULL. */
template <class T> T *take(T *&from) noexcept { return std::exchange(from, nullptr); }

}  // namespace detail

/* ------------------------------------------------------------- options */

/** Block compression (varve_compression). */
enum class Compression : int {
    None = VARVE_COMPRESSION_NONE,
    Lz4 = VARVE_COMPRESSION_LZ4,
};

/**
 * Options for opening a database (varve_options_t). A default-constructed
 * object holds no handle and means varve's defaults; the first setter
 * creates the handle. Setters return *this for chaining; the meaning and
 * range of each is that of the varve_options_set_* function of the same
 * name. A value outside its domain (a Compression that is none of the
 * enum's values) throws Error(VARVE_INVALID_ARGUMENT) at once and leaves
 * the option as it was; numeric ranges are checked by open, over all the
 * options together. Thread-safety: set from one thread, then shared
 * read-only by any threads.
 */
class Options {
  public:
    Options() noexcept = default;
    Options(const Options &) = delete;
    Options &operator=(const Options &) = delete;
    Options(Options &&o) noexcept : h_(detail::take(o.h_)) {}
    Options &operator=(Options &&o) noexcept {
        if (this != &o) {
            varve_options_destroy(h_);
            h_ = detail::take(o.h_);
        }
        return *this;
    }
    ~Options() { varve_options_destroy(h_); }

    Options &set_create_if_missing(bool v) { return set(varve_options_set_create_if_missing, v); }
    Options &set_error_if_exists(bool v) { return set(varve_options_set_error_if_exists, v); }
    Options &set_write_buffer_size(std::size_t bytes) {
        return set(varve_options_set_write_buffer_size, bytes);
    }
    Options &set_cache_size(std::size_t bytes) { return set(varve_options_set_cache_size, bytes); }
    /** One memory budget for the whole engine (0: none). docs/memory.md */
    Options &set_memory_budget(std::size_t bytes) {
        return set(varve_options_set_memory_budget, bytes);
    }
    /** Values of at least `bytes` go to blob files; 0 turns blob files off. */
    Options &set_min_blob_size(std::size_t bytes) {
        return set(varve_options_set_min_blob_size, bytes);
    }
    Options &set_blob_file_size(std::uint64_t bytes) {
        return set(varve_options_set_blob_file_size, bytes);
    }
    Options &set_blob_write_lanes(std::size_t lanes) {
        return set(varve_options_set_blob_write_lanes, lanes);
    }
    /** Blob write lanes split the key space instead of serving threads. */
    Options &set_blob_lanes_by_key(bool on) {
        return set(varve_options_set_blob_lanes_by_key, on ? 1 : 0);
    }
    Options &set_bloom_bits_per_key(std::uint32_t bits) {
        return set(varve_options_set_bloom_bits_per_key, bits);
    }
    Options &set_compression(Compression c) {
        return set(varve_options_set_compression, static_cast<int>(c));
    }
    Options &set_max_open_files(std::size_t n) { return set(varve_options_set_max_open_files, n); }
    Options &set_use_direct_reads(bool v) { return set(varve_options_set_use_direct_reads, v); }
    Options &set_paranoid_checks(bool v) { return set(varve_options_set_paranoid_checks, v); }
    Options &set_block_size(std::size_t bytes) { return set(varve_options_set_block_size, bytes); }

    /** The C handle, NULL while no setter was called (defaults). */
    const varve_options_t *handle() const noexcept { return h_; }

  private:
    /** Calls the C setter `fn` with this handle, throwing its error. */
    template <class Fn, class... Args> Options &set(Fn fn, Args... args) {
        detail::call(fn, h(), args...);
        return *this;
    }
    varve_options_t *h() {
        if (h_ == nullptr) {
            h_ = detail::created(varve_options_create(), "varve_options_create");
        }
        return h_;
    }
    varve_options_t *h_ = nullptr;
};

/** Options for writes (varve_writeoptions_t): lazy like Options. */
class WriteOptions {
  public:
    WriteOptions() noexcept = default;
    WriteOptions(const WriteOptions &) = delete;
    WriteOptions &operator=(const WriteOptions &) = delete;
    WriteOptions(WriteOptions &&o) noexcept : h_(detail::take(o.h_)) {}
    WriteOptions &operator=(WriteOptions &&o) noexcept {
        if (this != &o) {
            varve_writeoptions_destroy(h_);
            h_ = detail::take(o.h_);
        }
        return *this;
    }
    ~WriteOptions() { varve_writeoptions_destroy(h_); }

    /** fdatasync the WAL before the write returns (survives power loss;
     *  without it a write survives a crash of the process). Default off. */
    WriteOptions &set_sync(bool v) { return set(varve_writeoptions_set_sync, v); }
    /** Skip the WAL (lost on a crash). Default off; not with sync. */
    WriteOptions &set_disable_wal(bool v) { return set(varve_writeoptions_set_disable_wal, v); }

    const varve_writeoptions_t *handle() const noexcept { return h_; }

  private:
    /** Calls the C setter `fn` with this handle, throwing its error. */
    template <class Fn, class... Args> WriteOptions &set(Fn fn, Args... args) {
        detail::call(fn, h(), args...);
        return *this;
    }
    varve_writeoptions_t *h() {
        if (h_ == nullptr) {
            h_ = detail::created(varve_writeoptions_create(), "varve_writeoptions_create");
        }
        return h_;
    }
    varve_writeoptions_t *h_ = nullptr;
};

class Snapshot;

/**
 * Options for reads, multi_get, iterators and scans (varve_readoptions_t):
 * lazy like Options. Bounds are copied; a snapshot set here is referenced
 * by the options themselves, so the Snapshot may be destroyed first.
 */
class ReadOptions {
  public:
    ReadOptions() noexcept = default;
    ReadOptions(const ReadOptions &) = delete;
    ReadOptions &operator=(const ReadOptions &) = delete;
    ReadOptions(ReadOptions &&o) noexcept : h_(detail::take(o.h_)) {}
    ReadOptions &operator=(ReadOptions &&o) noexcept {
        if (this != &o) {
            varve_readoptions_destroy(h_);
            h_ = detail::take(o.h_);
        }
        return *this;
    }
    ~ReadOptions() { varve_readoptions_destroy(h_); }

    /** Read as of `snapshot`. */
    inline ReadOptions &set_snapshot(const Snapshot &snapshot);
    /** Read the latest state again. */
    ReadOptions &clear_snapshot() { return set(varve_readoptions_set_snapshot, nullptr); }
    /** Iterators and scans start at or after `key` (inclusive). */
    ReadOptions &set_iterate_lower_bound(std::string_view key) {
        return set(varve_readoptions_set_iterate_lower_bound, detail::ptr(key), key.size());
    }
    /** Iterators and scans stop before `key` (exclusive). An empty key
     *  makes an empty range. */
    ReadOptions &set_iterate_upper_bound(std::string_view key) {
        return set(varve_readoptions_set_iterate_upper_bound, detail::ptr(key), key.size());
    }
    ReadOptions &clear_iterate_lower_bound() {
        return set(varve_readoptions_set_iterate_lower_bound, nullptr, 0);
    }
    ReadOptions &clear_iterate_upper_bound() {
        return set(varve_readoptions_set_iterate_upper_bound, nullptr, 0);
    }
    ReadOptions &set_fill_cache(bool v) { return set(varve_readoptions_set_fill_cache, v); }
    /** multi_get looks keys up concurrently through io_uring. */
    ReadOptions &set_async_io(bool v) { return set(varve_readoptions_set_async_io, v); }
    ReadOptions &set_async_queue_depth(std::size_t depth) {
        return set(varve_readoptions_set_async_queue_depth, depth);
    }
    /** Largest read-ahead chunk of an iterator; 0 turns read-ahead off. */
    ReadOptions &set_readahead_size(std::size_t bytes) {
        return set(varve_readoptions_set_readahead_size, bytes);
    }
    /** Forward iterators from the first key share one merge (default true). */
    ReadOptions &set_shared_passes(bool v) { return set(varve_readoptions_set_shared_passes, v); }
    /** Seeks position their sources concurrently (default true). */
    ReadOptions &set_concurrent_seeks(bool v) {
        return set(varve_readoptions_set_concurrent_seeks, v);
    }

    const varve_readoptions_t *handle() const noexcept { return h_; }

  private:
    /** Calls the C setter `fn` with this handle, throwing its error. */
    template <class Fn, class... Args> ReadOptions &set(Fn fn, Args... args) {
        detail::call(fn, h(), args...);
        return *this;
    }
    varve_readoptions_t *h() {
        if (h_ == nullptr) {
            h_ = detail::created(varve_readoptions_create(), "varve_readoptions_create");
        }
        return h_;
    }
    varve_readoptions_t *h_ = nullptr;
};

/* ---------------------------------------------------- small value types */

/**
 * A key range [start, end): std::nullopt is unbounded on that side; an
 * engaged empty string is the empty key (so an empty `end` makes an empty
 * range). Range{} is every key.
 */
struct Range {
    std::optional<std::string> start;
    std::optional<std::string> end;

    friend bool operator==(const Range &a, const Range &b) {
        return a.start == b.start && a.end == b.end;
    }
    friend bool operator!=(const Range &a, const Range &b) { return !(a == b); }
};

/** One anchor of Db::approximate_key_anchors. */
struct KeyAnchor {
    /** A key strictly inside the range (not necessarily in the database). */
    std::string key;
    /** Approximate bytes in [previous anchor or range start, key). */
    std::uint64_t bytes_before = 0;
};

/** The result of Db::approximate_key_anchors. */
struct KeyAnchors {
    /** Sorted, distinct anchors. */
    std::vector<KeyAnchor> anchors;
    /** Approximate bytes from the last anchor (or the start) to the end. */
    std::uint64_t bytes_after_last = 0;
    /** Every bytes_before plus bytes_after_last. */
    std::uint64_t total_bytes = 0;
};

namespace detail {
inline varve_range_t c_range(const Range &r) noexcept {
    varve_range_t c{nullptr, 0, nullptr, 0};
    if (r.start) {
        c.start = ptr(*r.start);
        c.start_len = r.start->size();
    }
    if (r.end) {
        c.end = ptr(*r.end);
        c.end_len = r.end->size();
    }
    return c;
}

inline std::optional<std::string> owned(const char *p, std::size_t n) {
    if (p == nullptr) {
        return std::nullopt;
    }
    return std::string(p, n);
}
}  // namespace detail

/* -------------------------------------------------------------- handles */

/**
 * A point-in-time view of a database (varve_snapshot_t), made by
 * Db::snapshot() and used through ReadOptions::set_snapshot. Released by
 * its destructor (or release()). Immutable: any threads.
 */
class Snapshot {
  public:
    Snapshot() noexcept = default;
    Snapshot(const Snapshot &) = delete;
    Snapshot &operator=(const Snapshot &) = delete;
    Snapshot(Snapshot &&o) noexcept : h_(detail::take(o.h_)) {}
    Snapshot &operator=(Snapshot &&o) noexcept {
        if (this != &o) {
            varve_snapshot_release(h_);
            h_ = detail::take(o.h_);
        }
        return *this;
    }
    ~Snapshot() { varve_snapshot_release(h_); }

    /** The sequence number it sees up to (inclusive); 0 when empty. */
    std::uint64_t sequence() const noexcept { return varve_snapshot_sequence(h_); }
    /** Releases it now (read options it was set on keep their own reference). */
    void release() noexcept { varve_snapshot_release(detail::take(h_)); }
    explicit operator bool() const noexcept { return h_ != nullptr; }
    const varve_snapshot_t *handle() const noexcept { return h_; }

  private:
    friend class Db;
    explicit Snapshot(varve_snapshot_t *h) noexcept : h_(h) {}
    varve_snapshot_t *h_ = nullptr;
};

inline ReadOptions &ReadOptions::set_snapshot(const Snapshot &snapshot) {
    return set(varve_readoptions_set_snapshot, snapshot.handle());
}

/**
 * A value read by Db::get_pinned without a further copy (varve_pinned_t).
 * Immutable: any threads.
 */
class PinnedValue {
  public:
    PinnedValue(const PinnedValue &) = delete;
    PinnedValue &operator=(const PinnedValue &) = delete;
    PinnedValue(PinnedValue &&o) noexcept : h_(detail::take(o.h_)) {}
    PinnedValue &operator=(PinnedValue &&o) noexcept {
        if (this != &o) {
            varve_pinned_destroy(h_);
            h_ = detail::take(o.h_);
        }
        return *this;
    }
    ~PinnedValue() { varve_pinned_destroy(h_); }

    /** The bytes, borrowed from this object. */
    std::string_view view() const noexcept {
        std::size_t len = 0;
        const char *p = varve_pinned_value(h_, &len);
        return p ? std::string_view(p, len) : std::string_view();
    }
    std::size_t size() const noexcept { return view().size(); }
    std::string to_string() const { return std::string(view()); }

  private:
    friend class Db;
    explicit PinnedValue(varve_pinned_t *h) noexcept : h_(h) {}
    varve_pinned_t *h_ = nullptr;
};

/**
 * A write batch (varve_writebatch_t): operations applied atomically by
 * Db::write, which leaves the batch unchanged. One thread at a time (it
 * may move between threads).
 */
class WriteBatch {
  public:
    WriteBatch() : h_(detail::created(varve_writebatch_create(), "varve_writebatch_create")) {}
    WriteBatch(const WriteBatch &) = delete;
    WriteBatch &operator=(const WriteBatch &) = delete;
    /** The moved-from batch holds no handle: use it again only after
     *  assigning a new batch to it. */
    WriteBatch(WriteBatch &&o) noexcept : h_(detail::take(o.h_)) {}
    WriteBatch &operator=(WriteBatch &&o) noexcept {
        if (this != &o) {
            varve_writebatch_destroy(h_);
            h_ = detail::take(o.h_);
        }
        return *this;
    }
    ~WriteBatch() { varve_writebatch_destroy(h_); }

    /** Adds key = value (both copied; limits are checked by Db::write). */
    WriteBatch &put(std::string_view key, std::string_view value) {
        detail::call(varve_writebatch_put, live(), key.data(), key.size(), value.data(),
                     value.size());
        return *this;
    }
    /** Adds a deletion of `key`. */
    WriteBatch &del(std::string_view key) {
        detail::call(varve_writebatch_delete, live(), key.data(), key.size());
        return *this;
    }
    /** Adds a deletion of every key in [start, end) (one record). */
    WriteBatch &del_range(std::string_view start, std::string_view end) {
        detail::call(varve_writebatch_delete_range, live(), start.data(), start.size(),
                     end.data(), end.size());
        return *this;
    }
    /** Removes every operation. */
    void clear() { detail::call(varve_writebatch_clear, live()); }
    /** Number of operations. */
    std::size_t count() const noexcept { return varve_writebatch_count(h_); }

    const varve_writebatch_t *handle() const noexcept { return h_; }

  private:
    varve_writebatch_t *live() const {
        if (h_ == nullptr) {
            throw Error(VARVE_INVALID_ARGUMENT, "use of a moved-from varve::WriteBatch");
        }
        return h_;
    }
    varve_writebatch_t *h_ = nullptr;
};

/**
 * An iterator (varve_iterator_t), made by Db::iterator(read_options): it
 * sees the database as of its creation (or the options' snapshot), within
 * the options' bounds. Not positioned until a seek. Every move throws the
 * error the iterator has after it (IO, corruption, a library panic; a
 * moved-from Iterator: VARVE_INVALID_ARGUMENT), and an iterator with an
 * error stays invalid; reaching an end is no error: valid() turns false.
 * check() throws the same error, if any. One thread at a time (it may
 * move between threads).
 */
class Iterator {
  public:
    Iterator() noexcept = default;
    Iterator(const Iterator &) = delete;
    Iterator &operator=(const Iterator &) = delete;
    Iterator(Iterator &&o) noexcept : h_(detail::take(o.h_)) {}
    Iterator &operator=(Iterator &&o) noexcept {
        if (this != &o) {
            varve_iter_destroy(h_);
            h_ = detail::take(o.h_);
        }
        return *this;
    }
    ~Iterator() { varve_iter_destroy(h_); }

    bool valid() const noexcept { return varve_iter_valid(h_); }
    /** The first key at or after the lower bound. */
    void seek_to_first() { step(varve_iter_seek_to_first); }
    /** The last key before the upper bound. */
    void seek_to_last() { step(varve_iter_seek_to_last); }
    /** The first key >= `key` (clamped to the bounds). */
    void seek(std::string_view key) { step(varve_iter_seek, key.data(), key.size()); }
    /** The last key <= `key` (clamped to the bounds). */
    void seek_for_prev(std::string_view key) {
        step(varve_iter_seek_for_prev, key.data(), key.size());
    }
    /** Moves on; nothing when not valid. */
    void next() { step(varve_iter_next); }
    void prev() { step(varve_iter_prev); }

    /** The current key (empty when not valid), valid until the iterator
     *  moves or dies. */
    std::string_view key() const noexcept {
        std::size_t len = 0;
        const char *p = varve_iter_key(h_, &len);
        return p ? std::string_view(p, len) : std::string_view();
    }
    /** The current value, valid until the iterator moves or dies. A value
     *  in a blob file is read here: if that read fails, throws its error
     *  (the iterator is then invalid). Empty when not valid. */
    std::string_view value() const {
        std::size_t len = 0;
        const char *p = varve_iter_value(h_, &len);
        if (p == nullptr) {
            check();
            return std::string_view();
        }
        return std::string_view(p, len);
    }
    /** Throws the first error the iterator met (IO, corruption, a panic),
     *  as the moves do; returns when there is none. An iterator with an
     *  error stays invalid. */
    void check() const { detail::call(varve_iter_status, h_); }

    varve_iterator_t *handle() const noexcept { return h_; }

  private:
    friend class Db;
    explicit Iterator(varve_iterator_t *h) noexcept : h_(h) {}
    /** A move: the C call `fn` with this handle; throws the status after. */
    template <class Fn, class... Args> void step(Fn fn, Args... args) {
        detail::call(fn, h_, args...);
    }
    varve_iterator_t *h_ = nullptr;
};

/**
 * An open database (varve_db_t). Any threads at once; only close(), the
 * destructor and move-assignment need every other thread done with it.
 * The destructor closes the database and ignores a close error: call
 * close() to see it. A default-constructed, moved-from or closed Db holds
 * no handle, and its calls throw Error(VARVE_CLOSED).
 */
class Db {
  public:
    Db() noexcept = default;
    Db(const Db &) = delete;
    Db &operator=(const Db &) = delete;
    Db(Db &&o) noexcept : h_(detail::take(o.h_)) {}
    /** Closes the database held before (error ignored). */
    Db &operator=(Db &&o) noexcept {
        if (this != &o) {
            varve_close(h_, nullptr);
            h_ = detail::take(o.h_);
        }
        return *this;
    }
    ~Db() { varve_close(h_, nullptr); }

    /** Opens (by default creating) the database in directory `path`.
     *  VARVE_BUSY if another opener (this process or another) holds it. */
    static Db open(const std::string &path, const Options &options = Options()) {
        varve_db_t *h = nullptr;
        detail::call(varve_open, options.handle(), path.c_str(), &h);
        return Db(h);
    }
    /** Opens an existing database for reading only: writes, flush and
     *  compaction throw VARVE_READ_ONLY (or VARVE_INVALID_ARGUMENT). */
    static Db open_read_only(const std::string &path, const Options &options = Options()) {
        varve_db_t *h = nullptr;
        detail::call(varve_open_read_only, options.handle(), path.c_str(), &h);
        return Db(h);
    }
    /** Deletes the (closed) database in `path`; VARVE_BUSY while open. */
    static void destroy(const std::string &path, const Options &options = Options()) {
        detail::call(varve_destroy, options.handle(), path.c_str());
    }

    /** Closes the database and frees the handle, whatever the outcome
     *  (so the Db is empty afterwards even when this throws). No other
     *  thread may be using it. A no-op on an empty Db. */
    void close() {
        detail::call(varve_close, detail::take(h_));
    }
    /** Closes the database but keeps the handle: waits for calls in
     *  flight on other threads, after which every call throws
     *  VARVE_CLOSED. Safe while other threads use the Db; join them, then
     *  destroy (or close()) the Db. */
    void shutdown() {
        detail::call(varve_shutdown, h_);
    }
    /** True while the Db holds a handle (it may have been shut down). */
    explicit operator bool() const noexcept { return h_ != nullptr; }

    /* -- writes ---------------------------------------------------- */

    void put(std::string_view key, std::string_view value,
             const WriteOptions &options = WriteOptions()) {
        detail::call(varve_put, h_, options.handle(), key.data(), key.size(), value.data(),
                     value.size());
    }
    /** Deletes `key` (not an error if it is absent). */
    void del(std::string_view key, const WriteOptions &options = WriteOptions()) {
        detail::call(varve_delete, h_, options.handle(), key.data(), key.size());
    }
    /** Deletes every key in [start, end) with one range tombstone. */
    void del_range(std::string_view start, std::string_view end,
                   const WriteOptions &options = WriteOptions()) {
        detail::call(varve_delete_range, h_, options.handle(), start.data(), start.size(),
                     end.data(), end.size());
    }
    /** Applies `batch` atomically; the batch is left unchanged. */
    void write(const WriteBatch &batch, const WriteOptions &options = WriteOptions()) {
        if (batch.handle() == nullptr) {
            throw Error(VARVE_INVALID_ARGUMENT, "use of a moved-from varve::WriteBatch");
        }
        detail::call(varve_write, h_, options.handle(), batch.handle());
    }

    /* -- reads ----------------------------------------------------- */

    /** The value of `key`, std::nullopt when it is absent. */
    std::optional<std::string> get(std::string_view key,
                                   const ReadOptions &options = ReadOptions()) const {
        std::optional<PinnedValue> v = get_pinned(key, options);
        if (!v) {
            return std::nullopt;
        }
        return v->to_string();
    }
    /** Reads `key` into `*value` (reusing its buffer): true when found,
     *  false (and `*value` untouched) when absent. */
    bool get(std::string_view key, std::string *value,
             const ReadOptions &options = ReadOptions()) const {
        std::optional<PinnedValue> v = get_pinned(key, options);
        if (!v) {
            return false;
        }
        std::string_view bytes = v->view();
        value->assign(bytes.data(), bytes.size());
        return true;
    }
    /** The value of `key` in the buffer the engine read it into (no
     *  further copy); std::nullopt when absent. */
    std::optional<PinnedValue> get_pinned(std::string_view key,
                                          const ReadOptions &options = ReadOptions()) const {
        detail::ErrPtr err;
        varve_pinned_t *p = nullptr;
        varve_status st =
            varve_get_pinned(h_, options.handle(), key.data(), key.size(), &p, err.get());
        if (st == VARVE_NOT_FOUND) {
            return std::nullopt;
        }
        detail::check(st, err);
        return PinnedValue(p);
    }

    /** Looks `keys` up as of one sequence number: one optional per key, in
     *  order (std::nullopt: absent). If a key's lookup fails, throws the
     *  error of the first such key. */
    template <class Keys>
    std::vector<std::optional<std::string>>
    multi_get(const Keys &keys, const ReadOptions &options = ReadOptions()) const {
        std::vector<std::string_view> views;
        for (const auto &k : keys) {
            views.emplace_back(k);
        }
        return multi_get_views(views, options);
    }
    std::vector<std::optional<std::string>>
    multi_get(std::initializer_list<std::string_view> keys,
              const ReadOptions &options = ReadOptions()) const {
        return multi_get_views(std::vector<std::string_view>(keys), options);
    }

    /** A snapshot of the database as of now. */
    Snapshot snapshot() const {
        varve_snapshot_t *s = nullptr;
        detail::call(varve_snapshot_create, h_, &s);
        return Snapshot(s);
    }

    /** An iterator over the database as of now (or the options'
     *  snapshot), within the options' bounds. Not positioned yet. */
    Iterator iterator(const ReadOptions &options = ReadOptions()) const {
        varve_iterator_t *it = nullptr;
        detail::call(varve_iter_create, h_, options.handle(), &it);
        return Iterator(it);
    }

    /* -- scans ----------------------------------------------------- */

    /** The number of keys in `range` (intersected with the options'
     *  bounds) in one snapshot, counted on `threads` threads (0: one per
     *  CPU), values unread. */
    std::uint64_t par_count(const Range &range = Range(), std::size_t threads = 0,
                            const ReadOptions &options = ReadOptions()) const {
        varve_range_t r = detail::c_range(range);
        std::uint64_t n = 0;
        detail::call(varve_par_count, h_, options.handle(), &r, threads, &n);
        return n;
    }

    /** At most `max_anchors` sorted keys strictly inside `range`, each
     *  with the approximate bytes before it (from indexes, no data read). */
    KeyAnchors approximate_key_anchors(const Range &range, std::size_t max_anchors) const {
        varve_range_t r = detail::c_range(range);
        varve_anchors_t *a = nullptr;
        detail::call(varve_approximate_key_anchors, h_, &r, max_anchors, &a);
        struct Guard {
            varve_anchors_t *a;
            ~Guard() { varve_anchors_destroy(a); }
        } guard{a};
        KeyAnchors out;
        out.anchors.reserve(a->count);
        for (std::size_t i = 0; i < a->count; i++) {
            const varve_anchor_t &x = a->anchors[i];
            out.anchors.push_back(KeyAnchor{std::string(x.key, x.key_len), x.bytes_before});
        }
        out.bytes_after_last = a->bytes_after_last;
        out.total_bytes = a->total_bytes;
        return out;
    }

    /** `range` cut into at most `parts` contiguous ranges of about equal
     *  bytes (at least one), in key order. */
    std::vector<Range> split_range(const Range &range, std::size_t parts) const {
        varve_range_t r = detail::c_range(range);
        varve_ranges_t *rs = nullptr;
        detail::call(varve_split_range, h_, &r, parts, &rs);
        struct Guard {
            varve_ranges_t *r;
            ~Guard() { varve_ranges_destroy(r); }
        } guard{rs};
        std::vector<Range> out;
        out.reserve(rs->count);
        for (std::size_t i = 0; i < rs->count; i++) {
            const varve_range_t &x = rs->ranges[i];
            out.push_back(Range{detail::owned(x.start, x.start_len), detail::owned(x.end, x.end_len)});
        }
        return out;
    }

    /* -- administration -------------------------------------------- */

    /** A consistent, openable copy in directory `path` (absent or empty). */
    void checkpoint(const std::string &path) const {
        detail::call(varve_checkpoint, h_, path.c_str());
    }
    /** Writes every memtable to tables and waits for it. */
    void flush() {
        detail::call(varve_flush, h_);
    }
    /** Compacts the tables overlapping [begin, end] (std::nullopt:
     *  unbounded on that side) down to the deepest level holding them. */
    void compact_range(std::optional<std::string_view> begin = std::nullopt,
                       std::optional<std::string_view> end = std::nullopt) {
        detail::call(varve_compact_range, h_, begin ? detail::ptr(*begin) : nullptr,
                     begin ? begin->size() : 0, end ? detail::ptr(*end) : nullptr,
                     end ? end->size() : 0);
    }
    /** Waits until no compaction or blob garbage collection is due. */
    void wait_for_compactions() {
        detail::call(varve_wait_for_compactions, h_);
    }
    /** Brings writes back after a full disk, once space is freed. */
    void resume() {
        detail::call(varve_resume, h_);
    }
    /** The engine's counters and tree shape as text. */
    std::string stats() const {
        detail::Malloced text;
        detail::call(varve_stats, h_, &text.p);
        return text.p ? std::string(text.p) : std::string();
    }

    /** The C handle (NULL when empty), for calls this wrapper lacks. */
    varve_db_t *handle() const noexcept { return h_; }

  private:
    explicit Db(varve_db_t *h) noexcept : h_(h) {}

    std::vector<std::optional<std::string>>
    multi_get_views(const std::vector<std::string_view> &keys, const ReadOptions &options) const {
        const std::size_t n = keys.size();
        std::vector<const char *> ptrs(n);
        std::vector<std::size_t> lens(n);
        for (std::size_t i = 0; i < n; i++) {
            ptrs[i] = detail::ptr(keys[i]);
            lens[i] = keys[i].size();
        }
        // Owned C buffers, freed however this returns.
        struct Outputs {
            std::vector<char *> values, errs;
            explicit Outputs(std::size_t n) : values(n, nullptr), errs(n, nullptr) {}
            ~Outputs() {
                for (char *v : values) varve_free(v);
                for (char *e : errs) varve_free(e);
            }
        } out(n);
        std::vector<std::size_t> value_lens(n, 0);
        std::vector<varve_status> statuses(n, VARVE_OK);
        detail::call(varve_multi_get, h_, options.handle(), n, ptrs.data(), lens.data(),
                     out.values.data(), value_lens.data(), statuses.data(), out.errs.data());
        std::vector<std::optional<std::string>> result(n);
        for (std::size_t i = 0; i < n; i++) {
            if (statuses[i] == VARVE_OK) {
                result[i].emplace(out.values[i], value_lens[i]);
            } else if (statuses[i] != VARVE_NOT_FOUND) {
                throw Error(statuses[i], out.errs[i] ? out.errs[i] : "");
            }
        }
        return result;
    }

    varve_db_t *h_ = nullptr;
};

}  // namespace varve

#endif  // VARVE_HPP
