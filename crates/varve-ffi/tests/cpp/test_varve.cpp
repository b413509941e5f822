// test_varve.cpp: exercises include/varve.hpp, the C++17 wrapper over the C
// API: RAII and moves, errors thrown as varve::Error (a second opener,
// closed handles, bad options, read-only writes, a library panic), NOT_FOUND
// as an empty optional, batches, multi_get, snapshots, iterators, scans,
// administration and threads. Run by crates/varve-ffi/tests/cpp_api.rs
// (plainly and under AddressSanitizer + UBSan).
//
// Usage: test_varve_cpp [SCRATCH_DIR]  (default: a fresh directory in
// $TMPDIR or /tmp, removed at the end). Exits non-zero on the first failed
// check, printing it and its line. Prints "N passed, 0 failed" at the end.

#include "varve.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace std::string_literals;

// Handles are move-only; options are lazy and movable.
static_assert(!std::is_copy_constructible_v<varve::Db>);
static_assert(!std::is_copy_assignable_v<varve::Db>);
static_assert(std::is_nothrow_move_constructible_v<varve::Db>);
static_assert(std::is_nothrow_move_assignable_v<varve::Db>);
static_assert(!std::is_copy_constructible_v<varve::Iterator>);
static_assert(std::is_nothrow_move_constructible_v<varve::Iterator>);
static_assert(!std::is_copy_constructible_v<varve::Snapshot>);
static_assert(std::is_nothrow_move_constructible_v<varve::Snapshot>);
static_assert(!std::is_copy_constructible_v<varve::WriteBatch>);
static_assert(std::is_nothrow_move_constructible_v<varve::WriteBatch>);
static_assert(!std::is_copy_constructible_v<varve::PinnedValue>);
static_assert(!std::is_copy_constructible_v<varve::Options>);
static_assert(std::is_nothrow_default_constructible_v<varve::Options>);
static_assert(std::is_nothrow_default_constructible_v<varve::ReadOptions>);
static_assert(std::is_nothrow_default_constructible_v<varve::WriteOptions>);
static_assert(std::is_base_of_v<std::runtime_error, varve::Error>);

static int checks;
static fs::path root;

[[noreturn]] static void fail_line(int line, const std::string &what) {
    std::fprintf(stderr, "test_varve_cpp: FAILED at test_varve.cpp:%d: %s\n", line, what.c_str());
    std::exit(1);
}

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) fail_line(__LINE__, #cond);                                                   \
        checks++;                                                                                  \
    } while (0)

// `stmt` throws varve::Error with code `want` and a message containing
// `part`.
#define EXPECT_THROW(want, part, stmt)                                                             \
    do {                                                                                           \
        bool thrown_ = false;                                                                      \
        try {                                                                                      \
            stmt;                                                                                  \
        } catch (const varve::Error &e_) {                                                         \
            thrown_ = true;                                                                        \
            if (e_.code() != (want)) {                                                             \
                fail_line(__LINE__, std::string(#stmt) + " threw " + e_.what() + ", wanted " +    \
                                        varve::status_name(want));                                 \
            }                                                                                      \
            if (std::string(e_.what()).find(part) == std::string::npos) {                          \
                fail_line(__LINE__, std::string(#stmt) + ": message \"" + e_.what() +             \
                                        "\" lacks \"" + (part) + "\"");                            \
            }                                                                                      \
        }                                                                                          \
        if (!thrown_) fail_line(__LINE__, std::string(#stmt) + " did not throw");                  \
        checks++;                                                                                  \
    } while (0)

static std::string path_in(const std::string &name) { return (root / name).string(); }

// ---------------------------------------------------------------- tests

static void test_library() {
    CHECK(std::string(varve::version()) == "0.1.0");
    CHECK(std::string(varve::status_name(VARVE_BUSY)) == "VARVE_BUSY");
    varve::Error e(VARVE_CORRUPTION, "bad block in x.sst");
    CHECK(e.code() == VARVE_CORRUPTION);
    CHECK(std::string(e.code_name()) == "VARVE_CORRUPTION");
    CHECK(e.message() == "bad block in x.sst");
    CHECK(std::string(e.what()) == "VARVE_CORRUPTION: bad block in x.sst");
    // A panic inside the library is an Error like any other.
    {
        varve::detail::ErrPtr err;
        EXPECT_THROW(VARVE_PANIC, "deliberate panic",
                     varve::detail::check(varve_test_panic(err.get()), err));
    }
    // Caught as the standard base class too.
    bool caught = false;
    try {
        varve::detail::ErrPtr err;
        varve::detail::check(varve_test_panic(err.get()), err);
    } catch (const std::runtime_error &re) {
        caught = std::string(re.what()).find("VARVE_PANIC") == 0;
    }
    CHECK(caught);
    std::fprintf(stderr, "test_varve_cpp: (the panic messages above are expected)\n");
}

static void test_open_errors() {
    // A second opener of the same directory: VARVE_BUSY, naming the lock.
    varve::Db db = varve::Db::open(path_in("locked"));
    CHECK(static_cast<bool>(db));
    EXPECT_THROW(VARVE_BUSY, "LOCK", varve::Db::open(path_in("locked")));
    EXPECT_THROW(VARVE_BUSY, "locked", varve::Db::open_read_only(path_in("locked")));
    EXPECT_THROW(VARVE_BUSY, "locked", varve::Db::destroy(path_in("locked")));
    db.close();
    CHECK(!db);
    db.close();  // empty: a no-op
    varve::Db::destroy(path_in("locked"));
    CHECK(!fs::exists(path_in("locked")));

    // create_if_missing off: NOT_FOUND is an error at open.
    varve::Options no_create;
    no_create.set_create_if_missing(false);
    EXPECT_THROW(VARVE_NOT_FOUND, "", varve::Db::open(path_in("nothing"), no_create));
    EXPECT_THROW(VARVE_NOT_FOUND, "nothing", varve::Db::open_read_only(path_in("nothing")));

    // error_if_exists on an existing database.
    { varve::Db made = varve::Db::open(path_in("exists")); }
    varve::Options excl;
    excl.set_error_if_exists(true);
    EXPECT_THROW(VARVE_ALREADY_EXISTS, "", varve::Db::open(path_in("exists"), excl));

    // Options out of range are refused at open; chained setters.
    varve::Options bad;
    bad.set_blob_write_lanes(0).set_memory_budget(0);
    EXPECT_THROW(VARVE_INVALID_ARGUMENT, "lanes", varve::Db::open(path_in("bad"), bad));
    EXPECT_THROW(VARVE_INVALID_ARGUMENT, "",
                 varve::Db::open(path_in("bad2"), varve::Options().set_block_size(1)));
    // A value outside its domain throws from the setter at once, and the
    // option keeps what it had: the open succeeds.
    varve::Options lz4;
    lz4.set_compression(varve::Compression::Lz4);
    EXPECT_THROW(VARVE_INVALID_ARGUMENT, "compression 9",
                 lz4.set_compression(static_cast<varve::Compression>(9)));
    { varve::Db made = varve::Db::open(path_in("lz4"), lz4); }

    // A path under a regular file.
    std::FILE *f = std::fopen(path_in("regular").c_str(), "w");
    CHECK(f != nullptr);
    std::fclose(f);
    EXPECT_THROW(VARVE_IO_ERROR, "regular", varve::Db::open(path_in("regular/db")));

    // Every setter, then a successful open.
    varve::Options all;
    all.set_create_if_missing(true)
        .set_error_if_exists(false)
        .set_write_buffer_size(1 << 20)
        .set_cache_size(8 << 20)
        .set_min_blob_size(1024)
        .set_blob_file_size(4 << 20)
        .set_blob_write_lanes(2)
        .set_blob_lanes_by_key(false)
        .set_bloom_bits_per_key(12)
        .set_compression(varve::Compression::Lz4)
        .set_max_open_files(100)
        .set_use_direct_reads(false)
        .set_paranoid_checks(true)
        .set_block_size(4096)
        .set_memory_budget(64 << 20);
    CHECK(all.handle() != nullptr);
    varve::Options moved = std::move(all);
    CHECK(all.handle() == nullptr && moved.handle() != nullptr);
    varve::Db opts_db = varve::Db::open(path_in("opts"), moved);
    opts_db.put("k", std::string(2000, 'b'));  // a blob value
    CHECK(opts_db.get("k") == std::string(2000, 'b'));
}

static void test_put_get_delete(varve::Db &db) {
    db.put("apple", "red");
    db.put("banana", "yellow");
    CHECK(db.get("apple") == "red"s);
    CHECK(db.get("banana").value() == "yellow");
    // NOT_FOUND is not an error: an empty optional.
    std::optional<std::string> cherry = db.get("cherry");
    CHECK(!cherry.has_value());
    db.del("apple");
    CHECK(db.get("apple") == std::nullopt);
    db.del("never-there");

    // Range deletes: [r1, r3) goes, r3 stays; in a batch, in order.
    db.put("r1", "x");
    db.put("r2", "x");
    db.put("r3", "x");
    db.del_range("r1", "r3");
    CHECK(!db.get("r1") && !db.get("r2") && db.get("r3") == "x"s);
    varve::WriteBatch rb;
    rb.put("r1", "before").del_range("r1", "r4").put("r2", "after");
    db.write(rb);
    CHECK(!db.get("r1") && db.get("r2") == "after"s && !db.get("r3"));
    EXPECT_THROW(VARVE_INVALID_ARGUMENT, "delete_range", db.del_range("r9", "r1"));
    db.del("r2");

    // get into a reused buffer.
    std::string buf = "untouched";
    CHECK(!db.get("apple", &buf));
    CHECK(buf == "untouched");
    CHECK(db.get("banana", &buf));
    CHECK(buf == "yellow");

    // Pinned.
    std::optional<varve::PinnedValue> pinned = db.get_pinned("banana");
    CHECK(pinned && pinned->view() == "yellow" && pinned->size() == 6);
    CHECK(pinned->to_string() == "yellow");
    varve::PinnedValue p2 = std::move(*pinned);
    CHECK(p2.view() == "yellow");
    CHECK(pinned->view().empty());  // moved-from
    CHECK(!db.get_pinned("apple"));

    // Empty value; empty keys are refused.
    db.put("empty", "");
    CHECK(db.get("empty") == ""s);
    db.put("empty", std::string_view());
    CHECK(db.get("empty") == ""s);
    EXPECT_THROW(VARVE_INVALID_ARGUMENT, "empty key", db.put("", "v"));

    // Binary keys and values with NUL bytes.
    const std::string bin("a\0b\0"s);
    CHECK(bin.size() == 4);
    db.put(bin, bin + bin);
    CHECK(db.get(bin) == bin + bin);
    CHECK(db.get("a"s) == std::nullopt);

    // Large values (blob files at >= 4 KiB by default).
    std::string big(100000, 'x');
    big[0] = 'A';
    big[99999] = 'Z';
    db.put("big", big);
    CHECK(db.get("big") == big);

    // Write options.
    varve::WriteOptions sync;
    sync.set_sync(true);
    db.put("synced", "1", sync);
    CHECK(db.get("synced") == "1"s);
    db.del("synced", sync);
    CHECK(!db.get("synced"));
    db.put("nowal", "1", varve::WriteOptions().set_disable_wal(true));
    CHECK(db.get("nowal") == "1"s);
    varve::WriteOptions both;
    both.set_sync(true).set_disable_wal(true);
    EXPECT_THROW(VARVE_INVALID_ARGUMENT, "", db.put("k", "v", both));
}

static void test_batch(varve::Db &db) {
    varve::WriteBatch b;
    CHECK(b.count() == 0);
    b.put("b1", "one").put("b2", "two").del("banana");
    CHECK(b.count() == 3);
    // Nothing is visible before the write.
    CHECK(!db.get("b1"));
    db.write(b, varve::WriteOptions().set_sync(true));
    CHECK(db.get("b1") == "one"s && db.get("b2") == "two"s && !db.get("banana"));
    CHECK(b.count() == 3);  // unchanged by the write
    b.clear();
    CHECK(b.count() == 0);
    b.put("b3", "three");
    varve::WriteBatch moved = std::move(b);
    CHECK(moved.count() == 1 && b.count() == 0);
    db.write(moved);
    CHECK(db.get("b3") == "three"s);
    // A moved-from batch is refused, not dereferenced.
    EXPECT_THROW(VARVE_INVALID_ARGUMENT, "moved-from", b.put("x", "y"));
    EXPECT_THROW(VARVE_INVALID_ARGUMENT, "moved-from", db.write(b));
    EXPECT_THROW(VARVE_INVALID_ARGUMENT, "moved-from", b.clear());
    b = varve::WriteBatch();
    b.put("banana", "yellow");
    db.write(b);
    // A batch with a bad key fails as a whole.
    varve::WriteBatch bad;
    bad.put("ok-key", "1").put("", "empty key");
    EXPECT_THROW(VARVE_INVALID_ARGUMENT, "", db.write(bad));
    CHECK(!db.get("ok-key"));
}

static void test_multi_get(varve::Db &db) {
    db.put("mg1", "v1");
    db.put("mg3", "v3");
    std::vector<std::optional<std::string>> r = db.multi_get({"mg1", "mg2", "mg3"});
    CHECK(r.size() == 3);
    CHECK(r[0] == "v1"s && !r[1] && r[2] == "v3"s);
    std::vector<std::string> keys = {"mg3", "nope", "mg1"};
    r = db.multi_get(keys, varve::ReadOptions().set_async_io(true).set_async_queue_depth(4));
    CHECK(r.size() == 3 && r[0] == "v3"s && !r[1] && r[2] == "v1"s);
    std::vector<std::string_view> views = {"mg1"};
    CHECK(db.multi_get(views)[0] == "v1"s);
    CHECK(db.multi_get(std::vector<std::string>{}).empty());
    // The empty key (refused by writes) is simply absent, as for get.
    CHECK(!db.get("") && !db.multi_get({"mg1", ""})[1]);
}

static void test_snapshots(varve::Db &db) {
    db.put("snap", "before");
    varve::Snapshot s = db.snapshot();
    CHECK(s && s.sequence() > 0);
    db.put("snap", "after");
    db.put("snap-new", "x");
    varve::ReadOptions at;
    at.set_snapshot(s);
    CHECK(db.get("snap", at) == "before"s);
    CHECK(!db.get("snap-new", at));
    CHECK(db.get("snap") == "after"s);
    std::vector<std::optional<std::string>> r = db.multi_get({"snap", "snap-new"}, at);
    CHECK(r[0] == "before"s && !r[1]);
    // The options keep their own reference: release the snapshot first.
    varve::Snapshot later = db.snapshot();
    CHECK(later.sequence() > s.sequence());
    s.release();
    CHECK(!s && s.sequence() == 0);
    CHECK(db.get("snap", at) == "before"s);
    at.clear_snapshot();
    CHECK(db.get("snap", at) == "after"s);
    varve::Snapshot moved = std::move(later);
    CHECK(moved && !later);
}

static void test_iterators(varve::Db &db) {
    varve::WriteBatch b;
    for (char c = 'a'; c <= 'j'; c++) {
        b.put("it-"s + c, "val-"s + c);
    }
    db.write(b);

    varve::ReadOptions ro;
    ro.set_iterate_lower_bound("it-").set_iterate_upper_bound("it.");
    varve::Iterator it = db.iterator(ro);
    CHECK(!it.valid());  // not positioned
    CHECK(it.key().empty() && it.value().empty());
    std::string seen;
    for (it.seek_to_first(); it.valid(); it.next()) {
        CHECK(it.key().substr(0, 3) == "it-");
        CHECK(it.value() == "val-"s + it.key()[3]);
        seen += it.key()[3];
    }
    it.check();
    CHECK(seen == "abcdefghij");
    seen.clear();
    for (it.seek_to_last(); it.valid(); it.prev()) {
        seen += it.key()[3];
    }
    CHECK(seen == "jihgfedcba");
    it.seek("it-c");
    CHECK(it.valid() && it.key() == "it-c");
    it.seek("it-c0");
    CHECK(it.valid() && it.key() == "it-d");
    it.seek_for_prev("it-c0");
    CHECK(it.valid() && it.key() == "it-c");
    it.prev();
    CHECK(it.valid() && it.key() == "it-b");
    it.next();
    CHECK(it.valid() && it.key() == "it-c" && it.value() == "val-c");
    // Clamped to the bounds.
    it.seek("a");
    CHECK(it.valid() && it.key() == "it-a");
    it.seek_for_prev("z");
    CHECK(it.valid() && it.key() == "it-j");
    it.seek("it-z");
    CHECK(!it.valid());
    it.next();  // past the end: no error, no throw
    it.prev();
    CHECK(!it.valid());
    it.check();

    // The iterator sees the database as of its creation.
    db.put("it-k", "late");
    it.seek("it-j");
    it.next();
    CHECK(!it.valid());
    varve::Iterator moved = std::move(it);
    CHECK(!it.valid() && it.key().empty());
    // A move on a moved-from iterator throws (the C call's status).
    EXPECT_THROW(VARVE_INVALID_ARGUMENT, "iterator is NULL", it.next());
    EXPECT_THROW(VARVE_INVALID_ARGUMENT, "iterator is NULL", it.seek("it-a"));
    EXPECT_THROW(VARVE_INVALID_ARGUMENT, "iterator is NULL", it.check());
    moved.seek("it-a");
    CHECK(moved.valid());

    // Cleared bounds; a snapshot; an empty upper bound is an empty range.
    varve::Snapshot s = db.snapshot();
    db.put("it-l", "after snapshot");
    ro.clear_iterate_lower_bound().clear_iterate_upper_bound().set_snapshot(s);
    ro.set_fill_cache(false).set_readahead_size(0);
    ro.set_shared_passes(false).set_concurrent_seeks(false);
    varve::Iterator all = db.iterator(ro);
    std::size_t n = 0;
    bool saw_k = false, saw_l = false;
    for (all.seek_to_first(); all.valid(); all.next()) {
        n++;
        saw_k |= all.key() == "it-k";
        saw_l |= all.key() == "it-l";
    }
    all.check();
    CHECK(n > 11 && saw_k && !saw_l);
    varve::ReadOptions none;
    none.set_iterate_upper_bound("");
    varve::Iterator empty = db.iterator(none);
    empty.seek_to_first();
    CHECK(!empty.valid());
    empty.check();

    // Binary keys in order (unsigned bytes).
    db.put("\xff\x01"s, "high");
    db.put("\x01\xff"s, "low");
    varve::Iterator bin = db.iterator();
    bin.seek_to_last();
    CHECK(bin.valid() && bin.key() == "\xff\x01"s && bin.value() == "high");
    bin.seek_to_first();
    CHECK(bin.valid() && bin.key() == "\x01\xff"s);
}

static void test_scans(varve::Db &db) {
    // 3000 keys of ~100-byte values, in tables: the anchors need indexes.
    varve::WriteBatch b;
    char key[32];
    for (int i = 0; i < 3000; i++) {
        std::snprintf(key, sizeof key, "scan%05d", i);
        b.put(key, std::string(100, 'v'));
    }
    db.write(b);
    db.flush();

    const varve::Range scans{"scan"s, "scan~"s};
    CHECK(db.par_count(scans, 2) == 3000);
    CHECK(db.par_count(varve::Range{"scan00100"s, "scan00200"s}) == 100);
    CHECK(db.par_count(varve::Range{"scan00100"s, "scan00200"s}, 1,
                       varve::ReadOptions().set_iterate_lower_bound("scan00150")) == 50);
    CHECK(db.par_count(varve::Range{"b"s, "a"s}) == 0);
    CHECK(db.par_count(varve::Range{std::nullopt, ""s}) == 0);  // empty end key
    CHECK(db.par_count() >= 3000);
    CHECK(db.par_count(varve::Range{"scan"s, std::nullopt}, 2) >= 3000);

    varve::KeyAnchors a = db.approximate_key_anchors(scans, 16);
    CHECK(a.anchors.size() >= 2 && a.anchors.size() <= 16);
    std::uint64_t sum = a.bytes_after_last;
    for (std::size_t i = 0; i < a.anchors.size(); i++) {
        CHECK(a.anchors[i].key.compare(0, 4, "scan") == 0);
        if (i > 0) {
            CHECK(a.anchors[i - 1].key < a.anchors[i].key);
        }
        sum += a.anchors[i].bytes_before;
    }
    CHECK(sum == a.total_bytes && a.total_bytes > 3000 * 100);
    varve::KeyAnchors none = db.approximate_key_anchors(varve::Range{"b"s, "a"s}, 16);
    CHECK(none.anchors.empty() && none.total_bytes == 0);

    std::vector<varve::Range> parts = db.split_range(scans, 4);
    CHECK(parts.size() >= 2 && parts.size() <= 4);
    CHECK(parts.front().start == "scan"s && parts.back().end == "scan~"s);
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < parts.size(); i++) {
        if (i + 1 < parts.size()) {
            CHECK(parts[i].end && parts[i].end == parts[i + 1].start);
        }
        std::uint64_t c = db.par_count(parts[i], 1);
        CHECK(c > 0);
        total += c;
        // Each part bounds an iterator on its own.
        varve::ReadOptions ro;
        ro.set_iterate_lower_bound(*parts[i].start);
        if (parts[i].end) ro.set_iterate_upper_bound(*parts[i].end);
        varve::Iterator it = db.iterator(ro);
        std::uint64_t n = 0;
        for (it.seek_to_first(); it.valid(); it.next()) n++;
        CHECK(n == c);
    }
    CHECK(total == 3000);
    std::vector<varve::Range> whole = db.split_range(varve::Range{}, 3);
    CHECK(!whole.empty() && !whole.front().start && !whole.back().end);
    CHECK(db.split_range(varve::Range{"b"s, "a"s}, 0).size() == 1);
}

static void test_admin(varve::Db &db) {
    db.put("admin", "1");
    db.flush();
    db.compact_range("a", "z");
    db.compact_range();
    db.compact_range("it", std::nullopt);
    db.compact_range(std::nullopt, "b");
    db.wait_for_compactions();
    db.resume();  // not poisoned: a no-op
    std::string stats = db.stats();
    CHECK(stats.find("Level") != std::string::npos);

    db.put("in-checkpoint", "yes");
    db.checkpoint(path_in("ckpt"));
    db.put("after-checkpoint", "yes");
    EXPECT_THROW(VARVE_INVALID_ARGUMENT, "ckpt", db.checkpoint(path_in("ckpt")));
    varve::Db copy = varve::Db::open(path_in("ckpt"));
    CHECK(copy.get("in-checkpoint") == "yes"s);
    CHECK(!copy.get("after-checkpoint"));
    CHECK(copy.par_count(varve::Range{"scan"s, "scan~"s}, 2) == 3000);
}

static void test_read_only() {
    varve::Db db = varve::Db::open_read_only(path_in("main"));
    CHECK(db.get("banana") == "yellow"s);
    EXPECT_THROW(VARVE_READ_ONLY, "read-only", db.put("k", "v"));
    bool refused = false;
    try {
        db.flush();
    } catch (const varve::Error &e) {
        refused = e.code() == VARVE_READ_ONLY || e.code() == VARVE_INVALID_ARGUMENT;
    }
    CHECK(refused);
    varve::Iterator it = db.iterator();
    it.seek_to_first();
    CHECK(it.valid());
}

static void test_closed_and_moved() {
    varve::Db db = varve::Db::open(path_in("closed"));
    db.put("k", "v");
    varve::Iterator it = db.iterator();
    varve::Snapshot s = db.snapshot();

    // Moved-from and default Db: every call throws VARVE_CLOSED.
    varve::Db other = std::move(db);
    CHECK(!db && other);
    EXPECT_THROW(VARVE_CLOSED, "", db.put("k", "v"));
    EXPECT_THROW(VARVE_CLOSED, "", db.get("k"));
    varve::Db never;
    EXPECT_THROW(VARVE_CLOSED, "", never.iterator());
    EXPECT_THROW(VARVE_CLOSED, "", never.stats());

    // Shut down: the handle stays, calls throw VARVE_CLOSED.
    other.shutdown();
    EXPECT_THROW(VARVE_CLOSED, "closed", other.put("k", "v2"));
    EXPECT_THROW(VARVE_CLOSED, "closed", other.get("k"));
    EXPECT_THROW(VARVE_CLOSED, "closed", other.snapshot());
    EXPECT_THROW(VARVE_CLOSED, "closed", other.multi_get({"k"}));
    other.shutdown();  // again: fine
    // The lock is released: another opener gets it.
    varve::Db again = varve::Db::open(path_in("closed"));
    CHECK(again.get("k") == "v"s);
    // Move-assignment closes what it replaces (releasing the lock).
    again = varve::Db();
    again = varve::Db::open(path_in("closed"));
    again.close();
    other.close();

    // Iterators and snapshots made before stay usable after the close.
    it.seek_to_first();
    CHECK(it.valid() && it.key() == "k" && it.value() == "v");
}

static void test_threads() {
    varve::Db db = varve::Db::open(path_in("threads"));
    varve::WriteOptions wo;  // shared by every thread once set
    wo.set_sync(false);
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++) {
        threads.emplace_back([&db, &wo, &failures, t] {
            try {
                varve::WriteBatch b;
                for (int i = 0; i < 2000; i++) {
                    std::string key = "t" + std::to_string(t) + "-" + std::to_string(i);
                    db.put(key, key + "!", wo);
                    if (db.get(key) != key + "!") failures++;
                    if (i % 100 == 0) {
                        b.clear();
                        b.put(key + "b", "x");
                        db.write(b, wo);
                    }
                }
                varve::ReadOptions ro;
                std::string lo = "t" + std::to_string(t) + "-";
                std::string hi = "t" + std::to_string(t) + ".";
                ro.set_iterate_lower_bound(lo).set_iterate_upper_bound(hi);
                varve::Iterator it = db.iterator(ro);
                int n = 0;
                for (it.seek_to_first(); it.valid(); it.next()) n++;
                it.check();
                if (n != 2020) failures++;
            } catch (const varve::Error &e) {
                std::fprintf(stderr, "thread %d: %s\n", t, e.what());
                failures++;
            }
        });
    }
    for (std::thread &t : threads) t.join();
    CHECK(failures.load() == 0);
    CHECK(db.par_count() == 4 * 2020);

    // A shutdown racing workers: they see VARVE_CLOSED, never a crash.
    std::atomic<int> closed_seen{0};
    std::vector<std::thread> racers;
    for (int t = 0; t < 2; t++) {
        racers.emplace_back([&db, &closed_seen] {
            for (;;) {
                try {
                    db.put("race", "x");
                    (void)db.get("race");
                } catch (const varve::Error &e) {
                    if (e.code() == VARVE_CLOSED) closed_seen++;
                    return;
                }
            }
        });
    }
    ::usleep(20000);
    db.shutdown();
    for (std::thread &t : racers) t.join();
    CHECK(closed_seen.load() == 2);
    db.close();
}

int main(int argc, char **argv) {
    bool own = argc < 2;
    if (own) {
        const char *tmp = std::getenv("TMPDIR");
        std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/varve-cpp-XXXXXX";
        std::vector<char> buf(tmpl.begin(), tmpl.end());
        buf.push_back('\0');
        if (::mkdtemp(buf.data()) == nullptr) {
            std::perror("mkdtemp");
            return 1;
        }
        root = buf.data();
    } else {
        root = argv[1];
        fs::create_directories(root);
    }

    try {
        test_library();
        test_open_errors();
        {
            varve::Db db = varve::Db::open(path_in("main"));
            test_put_get_delete(db);
            test_batch(db);
            test_multi_get(db);
            test_snapshots(db);
            test_iterators(db);
            test_scans(db);
            test_admin(db);
        }  // closed by the destructor
        test_read_only();
        test_closed_and_moved();
        test_threads();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "test_varve_cpp: FAILED: unexpected exception: %s\n", e.what());
        return 1;
    }

    if (own) {
        fs::remove_all(root);
    }
    std::printf("test_varve_cpp: %d passed, 0 failed\n", checks);
    return 0;
}
