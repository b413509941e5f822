/*
 * test_varve.c: exercises every function of include/varve.h from plain C11,
 * error paths included. Run by crates/varve-ffi/tests/c_api.rs (plain and
 * under AddressSanitizer + UBSan) and by scripts/test-c-api.sh.
 *
 * Usage: test_varve [SCRATCH_DIR]   (default: a fresh directory in $TMPDIR
 * or /tmp, removed at the end). Exits non-zero on the first failed check,
 * printing the check, its line and the status/message it got.
 */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700

#include "varve.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- checks */

static int checks;     /* checks passed */
static char *err;      /* the errptr of every call; NULL between checks */
static char root[PATH_MAX / 2];

static void fail_line(int line, const char *what) {
    fprintf(stderr, "test_varve: FAILED at test_varve.c:%d: %s\n", line, what);
    if (err) {
        fprintf(stderr, "  last error message: %s\n", err);
    }
    exit(1);
}

#define CHECK(cond)                                                           \
    do {                                                                      \
        if (!(cond)) fail_line(__LINE__, #cond);                              \
        checks++;                                                             \
    } while (0)

/* EXPECT(status, call): `call` returns `status`; on VARVE_OK no message. */
#define EXPECT(want, call)                                                    \
    do {                                                                      \
        varve_status got_ = (call);                                           \
        if (got_ != (want)) {                                                 \
            fprintf(stderr, "test_varve: %s returned %s, wanted %s\n", #call, \
                    varve_status_name(got_), varve_status_name(want));        \
            fail_line(__LINE__, #call);                                       \
        }                                                                     \
        if (got_ == VARVE_OK && err != NULL)                                  \
            fail_line(__LINE__, "a successful call wrote a message");         \
        checks++;                                                             \
    } while (0)

#define OK(call) EXPECT(VARVE_OK, call)

/* The last call failed: its message exists and contains `part`. Frees it. */
#define EXPECT_MSG(part)                                                      \
    do {                                                                      \
        if (err == NULL) fail_line(__LINE__, "no error message");             \
        if (strstr(err, (part)) == NULL) {                                    \
            fprintf(stderr, "test_varve: message lacks \"%s\"\n", (part));    \
            fail_line(__LINE__, "message content");                           \
        }                                                                     \
        varve_free(err);                                                      \
        err = NULL;                                                           \
        checks++;                                                             \
    } while (0)

#define KEY(s) (s), strlen(s)

static const char *path_in(const char *name) {
    static char buf[4][PATH_MAX];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, PATH_MAX, "%s/%s", root, name);
    return p;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void rm_rf(const char *path) { nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* `key` reads as `want` (NULL: VARVE_NOT_FOUND) through varve_get. */
static void expect_value_at(int line, varve_db_t *db, const varve_readoptions_t *ro,
                            const char *key, const char *want) {
    char *value = (char *)1;
    size_t len = 99;
    varve_status st = varve_get(db, ro, key, strlen(key), &value, &len, &err);
    if (want == NULL) {
        if (st != VARVE_NOT_FOUND || value != NULL || len != 0 || err != NULL) {
            fprintf(stderr, "test_varve: get(%s) = %s, wanted VARVE_NOT_FOUND\n", key,
                    varve_status_name(st));
            fail_line(line, "expect_value (absent)");
        }
    } else {
        if (st != VARVE_OK || value == NULL || len != strlen(want) ||
            memcmp(value, want, len) != 0 || value[len] != '\0') {
            fprintf(stderr, "test_varve: get(%s) = %s \"%.*s\", wanted \"%s\"\n", key,
                    varve_status_name(st), value ? (int)len : 0, value ? value : "", want);
            fail_line(line, "expect_value");
        }
    }
    varve_free(value);
    checks++;
}
#define EXPECT_VALUE(db, ro, key, want) expect_value_at(__LINE__, db, ro, key, want)

/* Overwrites `len` bytes at `offset` of `path` with 0xA5. */
static void scribble(const char *path, long offset, size_t len) {
    int fd = open(path, O_WRONLY);
    if (fd < 0) fail_line(__LINE__, path);
    char *junk = malloc(len);
    memset(junk, 0xA5, len);
    if (pwrite(fd, junk, len, offset) != (ssize_t)len) fail_line(__LINE__, "pwrite");
    free(junk);
    close(fd);
}

/* The path of the first file in `dir` whose name contains `part`. */
static int find_file(const char *dir, const char *part, char *out) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)) != NULL) {
        if (strstr(e->d_name, part)) {
            snprintf(out, PATH_MAX, "%s/%s", dir, e->d_name);
            found = 1;
            break;
        }
    }
    closedir(d);
    return found;
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static varve_db_t *open_db(const char *path, const varve_options_t *opts) {
    varve_db_t *db = NULL;
    OK(varve_open(opts, path, &db, &err));
    CHECK(db != NULL);
    return db;
}

/* ----------------------------------------------------------------- tests */

static void test_library(void) {
    CHECK(strcmp(varve_version(), "0.1.0") == 0);
    CHECK(strcmp(varve_status_name(VARVE_OK), "VARVE_OK") == 0);
    CHECK(strcmp(varve_status_name(VARVE_NOT_FOUND), "VARVE_NOT_FOUND") == 0);
    CHECK(strcmp(varve_status_name(VARVE_BUSY), "VARVE_BUSY") == 0);
    CHECK(strcmp(varve_status_name(VARVE_UNKNOWN), "VARVE_UNKNOWN") == 0);
    CHECK(strcmp(varve_status_name(-1), "VARVE_UNKNOWN_STATUS") == 0);
    CHECK(strcmp(varve_status_name(1000), "VARVE_UNKNOWN_STATUS") == 0);

    /* A panic inside the library comes back as a status, twice over. */
    EXPECT(VARVE_PANIC, varve_test_panic(&err));
    EXPECT_MSG("deliberate panic");
    EXPECT(VARVE_PANIC, varve_test_panic(NULL));
    /* A message already in *errptr is freed and replaced. */
    EXPECT(VARVE_PANIC, varve_test_panic(&err));
    EXPECT(VARVE_PANIC, varve_test_panic(&err));
    EXPECT_MSG("varve_test_panic");
    varve_free(NULL);
    fprintf(stderr, "test_varve: (the panic messages above are expected)\n");
}

static void test_options_and_open_errors(void) {
    varve_options_t *opts = varve_options_create();
    CHECK(opts != NULL);
    OK(varve_options_set_create_if_missing(opts, true, &err));
    OK(varve_options_set_error_if_exists(opts, false, &err));
    OK(varve_options_set_write_buffer_size(opts, 1 << 20, &err));
    OK(varve_options_set_cache_size(opts, 8 << 20, &err));
    OK(varve_options_set_min_blob_size(opts, 1024, &err));
    OK(varve_options_set_blob_file_size(opts, 4 << 20, &err));
    OK(varve_options_set_blob_write_lanes(opts, 2, &err));
    OK(varve_options_set_blob_lanes_by_key(opts, 0, &err));
    OK(varve_options_set_bloom_bits_per_key(opts, 12, &err));
    OK(varve_options_set_compression(opts, VARVE_COMPRESSION_LZ4, &err));
    OK(varve_options_set_max_open_files(opts, 100, &err));
    OK(varve_options_set_use_direct_reads(opts, false, &err));
    OK(varve_options_set_paranoid_checks(opts, true, &err));
    OK(varve_options_set_block_size(opts, 4096, &err));
    OK(varve_options_set_memory_budget(opts, 0, &err));
    /* A NULL handle, and a value outside the setter's domain, are refused
     * at once with a message (freed by EXPECT_MSG with varve_free); the
     * option keeps its value (LZ4, as the opens below show). */
    EXPECT(VARVE_INVALID_ARGUMENT, varve_options_set_cache_size(NULL, 1, &err));
    EXPECT_MSG("options is NULL");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_options_set_compression(NULL, 99, &err));
    EXPECT_MSG("options is NULL");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_options_set_compression(opts, 99, &err));
    EXPECT_MSG("compression 99");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_options_set_compression(opts, -1, NULL));

    varve_db_t *db = open_db(path_in("opts"), opts);
    char big[5000];
    memset(big, 'b', sizeof big);
    OK(varve_put(db, NULL, KEY("big"), big, sizeof big, &err));
    OK(varve_flush(db, &err));
    char *stats = NULL;
    OK(varve_stats(db, &stats, &err));
    CHECK(stats != NULL && strstr(stats, "** varve stats **") != NULL);
    CHECK(strstr(stats, "budget") == NULL);
    varve_free(stats);
    OK(varve_close(db, &err));
    char blob[PATH_MAX];
    CHECK(find_file(path_in("opts"), ".blob", blob)); /* min_blob_size 1024 */

    /* error_if_exists on an existing database. */
    OK(varve_options_set_error_if_exists(opts, true, &err));
    db = (varve_db_t *)1;
    EXPECT(VARVE_ALREADY_EXISTS, varve_open(opts, path_in("opts"), &db, &err));
    CHECK(db == NULL);
    EXPECT_MSG("opts");
    OK(varve_options_set_error_if_exists(opts, false, &err));

    /* create_if_missing off on a missing database. */
    OK(varve_options_set_create_if_missing(opts, false, &err));
    EXPECT(VARVE_NOT_FOUND, varve_open(opts, path_in("missing"), &db, &err));
    EXPECT_MSG("missing");
    OK(varve_options_set_create_if_missing(opts, true, &err));

    /* Out-of-range values are taken by the setter and refused at open
     * (Options::validate checks the ranges, some across options). */
    OK(varve_options_set_write_buffer_size(opts, 10, &err));
    EXPECT(VARVE_INVALID_ARGUMENT, varve_open(opts, path_in("bad"), &db, &err));
    EXPECT_MSG("write_buffer_size");
    OK(varve_options_set_write_buffer_size(opts, 1 << 20, &err));
    /* A bad compression code is refused by the setter and leaves no trace:
     * the open that follows succeeds. */
    EXPECT(VARVE_INVALID_ARGUMENT, varve_options_set_compression(opts, 7, &err));
    EXPECT_MSG("compression 7");
    db = open_db(path_in("bad"), opts);
    OK(varve_close(db, &err));
    varve_options_destroy(opts);
    varve_options_destroy(NULL);

    /* A memory budget, blob files off: the stats show the budget and no
     * blob file appears. */
    opts = varve_options_create();
    OK(varve_options_set_memory_budget(opts, 32 << 20, &err));
    OK(varve_options_set_min_blob_size(opts, 0, &err));
    db = open_db(path_in("budget"), opts);
    varve_options_destroy(opts); /* the open copied it */
    OK(varve_put(db, NULL, KEY("big"), big, sizeof big, &err));
    OK(varve_flush(db, &err));
    OK(varve_stats(db, &stats, &err));
    CHECK(strstr(stats, "of a 32.0 MiB budget") != NULL);
    varve_free(stats);
    OK(varve_close(db, &err));
    CHECK(!find_file(path_in("budget"), ".blob", blob));

    /* Bad arguments. */
    db = (varve_db_t *)1;
    EXPECT(VARVE_INVALID_ARGUMENT, varve_open(NULL, NULL, &db, &err));
    CHECK(db == NULL); /* out-pointers are cleared first */
    EXPECT_MSG("path is NULL");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_open(NULL, path_in("x"), NULL, &err));
    EXPECT_MSG("db_out is NULL");

    /* A path under a regular file. */
    FILE *f = fopen(path_in("regular"), "w");
    CHECK(f != NULL);
    fputs("not a directory\n", f);
    fclose(f);
    varve_status st = varve_open(NULL, path_in("regular/db"), &db, &err);
    CHECK(st == VARVE_IO_ERROR);
    CHECK(db == NULL);
    fprintf(stderr, "test_varve: path under a file: %s: %s\n", varve_status_name(st), err);
    EXPECT_MSG("regular");
    /* The regular file itself. */
    EXPECT(VARVE_INVALID_ARGUMENT, varve_open(NULL, path_in("regular"), &db, &err));
    EXPECT_MSG("not a directory");
}

static void test_second_opener_and_destroy(void) {
    varve_db_t *db = open_db(path_in("locked"), NULL);
    varve_db_t *second = (varve_db_t *)1;
    EXPECT(VARVE_BUSY, varve_open(NULL, path_in("locked"), &second, &err));
    CHECK(second == NULL);
    EXPECT_MSG("LOCK");
    EXPECT(VARVE_BUSY, varve_open_read_only(NULL, path_in("locked"), &second, &err));
    EXPECT_MSG("locked");
    EXPECT(VARVE_BUSY, varve_destroy(NULL, path_in("locked"), &err));
    EXPECT_MSG("locked");
    OK(varve_close(db, &err));
    OK(varve_destroy(NULL, path_in("locked"), &err));
    struct stat sb;
    CHECK(stat(path_in("locked"), &sb) != 0 && errno == ENOENT);
    EXPECT(VARVE_INVALID_ARGUMENT, varve_destroy(NULL, NULL, &err));
    EXPECT_MSG("path");
}

static void test_put_get_delete(varve_db_t *db) {
    OK(varve_put(db, NULL, KEY("apple"), KEY("red"), &err));
    OK(varve_put(db, NULL, KEY("banana"), KEY("yellow"), &err));
    EXPECT_VALUE(db, NULL, "apple", "red");
    EXPECT_VALUE(db, NULL, "banana", "yellow");
    EXPECT_VALUE(db, NULL, "cherry", NULL);
    OK(varve_delete(db, NULL, KEY("apple"), &err));
    EXPECT_VALUE(db, NULL, "apple", NULL);
    OK(varve_delete(db, NULL, KEY("never-there"), &err));

    /* An empty value (NULL allowed with length 0); empty keys are refused. */
    OK(varve_put(db, NULL, KEY("empty"), NULL, 0, &err));
    EXPECT_VALUE(db, NULL, "empty", "");
    OK(varve_delete(db, NULL, KEY("empty"), &err));
    EXPECT_VALUE(db, NULL, "empty", NULL);
    EXPECT(VARVE_INVALID_ARGUMENT, varve_put(db, NULL, NULL, 0, KEY("v"), &err));
    EXPECT_MSG("empty key");

    /* Binary data with NUL bytes. */
    const char bin[] = {'a', 0, 'b', 0};
    OK(varve_put(db, NULL, bin, sizeof bin, bin, sizeof bin, &err));
    char *v = NULL;
    size_t n = 0;
    OK(varve_get(db, NULL, bin, sizeof bin, &v, &n, &err));
    CHECK(n == sizeof bin && memcmp(v, bin, n) == 0);
    varve_free(v);

    /* Write options. */
    varve_writeoptions_t *wo = varve_writeoptions_create();
    CHECK(wo != NULL);
    OK(varve_writeoptions_set_sync(wo, true, &err));
    OK(varve_put(db, wo, KEY("synced"), KEY("yes"), &err));
    OK(varve_writeoptions_set_sync(wo, false, &err));
    OK(varve_writeoptions_set_disable_wal(wo, true, &err));
    OK(varve_put(db, wo, KEY("nowal"), KEY("yes"), &err));
    OK(varve_delete(db, wo, KEY("nowal"), &err));
    OK(varve_writeoptions_set_sync(wo, true, &err));
    EXPECT(VARVE_INVALID_ARGUMENT, varve_put(db, wo, KEY("both"), KEY("x"), &err));
    EXPECT_MSG("sync");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_writeoptions_set_sync(NULL, true, &err));
    EXPECT_MSG("write options is NULL");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_writeoptions_set_disable_wal(NULL, false, &err));
    EXPECT_MSG("write options is NULL");
    varve_writeoptions_destroy(wo);
    varve_writeoptions_destroy(NULL);
    EXPECT_VALUE(db, NULL, "synced", "yes");
    EXPECT_VALUE(db, NULL, "nowal", NULL);

    /* Argument errors. */
    EXPECT(VARVE_INVALID_ARGUMENT, varve_put(db, NULL, NULL, 3, KEY("v"), &err));
    EXPECT_MSG("key is NULL with length 3");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_get(db, NULL, KEY("apple"), NULL, &n, &err));
    EXPECT_MSG("value_out");
    EXPECT(VARVE_CLOSED, varve_get(NULL, NULL, KEY("apple"), &v, &n, &err));
    EXPECT_MSG("NULL");
    char huge_key[70000];
    memset(huge_key, 'k', sizeof huge_key);
    EXPECT(VARVE_INVALID_ARGUMENT, varve_put(db, NULL, huge_key, sizeof huge_key, KEY("v"), &err));
    EXPECT_MSG("key");

    /* Pinned get, for a small value and a blob value. */
    char big[20000];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (char)('a' + i % 26);
    OK(varve_put(db, NULL, KEY("big"), big, sizeof big, &err));
    varve_pinned_t *p = NULL;
    OK(varve_get_pinned(db, NULL, KEY("big"), &p, &err));
    size_t plen = 0;
    const char *pv = varve_pinned_value(p, &plen);
    CHECK(p != NULL && plen == sizeof big && memcmp(pv, big, plen) == 0);
    CHECK(varve_pinned_value(p, NULL) == pv);
    varve_pinned_destroy(p);
    p = (varve_pinned_t *)1;
    EXPECT(VARVE_NOT_FOUND, varve_get_pinned(db, NULL, KEY("nope"), &p, &err));
    CHECK(p == NULL && err == NULL);
    CHECK(varve_pinned_value(NULL, &plen) == NULL && plen == 0);
    varve_pinned_destroy(NULL);
    OK(varve_flush(db, &err));
    OK(varve_get_pinned(db, NULL, KEY("banana"), &p, &err));
    pv = varve_pinned_value(p, &plen);
    CHECK(plen == 6 && memcmp(pv, "yellow", 6) == 0);
    varve_pinned_destroy(p);
    OK(varve_get(db, NULL, KEY("big"), &v, &n, &err));
    CHECK(n == sizeof big && memcmp(v, big, n) == 0);
    varve_free(v);
}

static void test_batch(varve_db_t *db) {
    varve_writebatch_t *b = varve_writebatch_create();
    CHECK(b != NULL && varve_writebatch_count(b) == 0);
    OK(varve_writebatch_put(b, KEY("b1"), KEY("one"), &err));
    OK(varve_writebatch_put(b, KEY("b2"), KEY("two"), &err));
    OK(varve_writebatch_put(b, KEY("b3"), KEY("three"), &err));
    OK(varve_writebatch_delete(b, KEY("b2"), &err));
    CHECK(varve_writebatch_count(b) == 4);
    OK(varve_write(db, NULL, b, &err));
    CHECK(varve_writebatch_count(b) == 4); /* unchanged by the write */
    EXPECT_VALUE(db, NULL, "b1", "one");
    EXPECT_VALUE(db, NULL, "b2", NULL);
    EXPECT_VALUE(db, NULL, "b3", "three");
    OK(varve_writebatch_clear(b, &err));
    CHECK(varve_writebatch_count(b) == 0);
    OK(varve_writebatch_delete(b, KEY("b1"), &err));
    varve_writeoptions_t *wo = varve_writeoptions_create();
    OK(varve_writeoptions_set_sync(wo, true, &err));
    OK(varve_write(db, wo, b, &err));
    varve_writeoptions_destroy(wo);
    EXPECT_VALUE(db, NULL, "b1", NULL);
    OK(varve_writebatch_clear(b, &err));
    OK(varve_write(db, NULL, b, &err)); /* empty batch */

    /* A range delete in a batch: [b3, b5) goes, b5 and a later put stay. */
    OK(varve_writebatch_put(b, KEY("b4"), KEY("four"), &err));
    OK(varve_writebatch_put(b, KEY("b5"), KEY("five"), &err));
    OK(varve_writebatch_delete_range(b, KEY("b3"), KEY("b5"), &err));
    OK(varve_writebatch_put(b, KEY("b4"), KEY("again"), &err));
    OK(varve_write(db, NULL, b, &err));
    EXPECT_VALUE(db, NULL, "b3", NULL);
    EXPECT_VALUE(db, NULL, "b4", "again");
    EXPECT_VALUE(db, NULL, "b5", "five");
    OK(varve_writebatch_clear(b, &err));
    /* On the database: [b4, b6), and a reversed range is refused. */
    OK(varve_delete_range(db, NULL, KEY("b4"), KEY("b6"), &err));
    EXPECT_VALUE(db, NULL, "b4", NULL);
    EXPECT_VALUE(db, NULL, "b5", NULL);
    EXPECT(VARVE_INVALID_ARGUMENT, varve_delete_range(db, NULL, KEY("b6"), KEY("b4"), &err));
    EXPECT_MSG("delete_range");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_writebatch_delete_range(NULL, KEY("a"), KEY("b"), &err));
    EXPECT_MSG("batch is NULL");

    EXPECT(VARVE_INVALID_ARGUMENT, varve_writebatch_put(b, NULL, 2, KEY("v"), &err));
    EXPECT_MSG("key is NULL");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_writebatch_put(NULL, KEY("k"), KEY("v"), &err));
    EXPECT_MSG("batch is NULL");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_writebatch_delete(NULL, KEY("k"), &err));
    EXPECT_MSG("batch is NULL");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_write(db, NULL, NULL, &err));
    EXPECT_MSG("batch is NULL");
    CHECK(varve_writebatch_count(NULL) == 0);
    EXPECT(VARVE_INVALID_ARGUMENT, varve_writebatch_clear(NULL, &err));
    EXPECT_MSG("batch is NULL");
    varve_writebatch_destroy(b);
    varve_writebatch_destroy(NULL);
}

static void test_multi_get(varve_db_t *db) {
    char key[16], val[16];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "mg%03d", i);
        snprintf(val, sizeof val, "val%03d", i);
        OK(varve_put(db, NULL, KEY(key), KEY(val), &err));
    }
    OK(varve_flush(db, &err)); /* so the lookups go to the tables */
    OK(varve_put(db, NULL, KEY("mg000"), KEY("fresh"), &err)); /* memtable */

    enum { N = 40 };
    char names[N][16];
    const char *keys[N];
    size_t key_lens[N];
    for (int i = 0; i < N; i++) {
        /* even i: present (mg000..mg078); odd i: absent */
        snprintf(names[i], sizeof names[i], i % 2 ? "absent%03d" : "mg%03d", i);
        keys[i] = names[i];
        key_lens[i] = strlen(names[i]);
    }
    varve_readoptions_t *ro = varve_readoptions_create();
    for (int async = 0; async <= 1; async++) {
        OK(varve_readoptions_set_async_io(ro, async, &err));
        OK(varve_readoptions_set_async_queue_depth(ro, async ? 8 : 32, &err));
        char *values[N];
        size_t value_lens[N];
        varve_status statuses[N];
        char *errs[N];
        OK(varve_multi_get(db, ro, N, keys, key_lens, values, value_lens, statuses, errs,
                           &err));
        for (int i = 0; i < N; i++) {
            CHECK(errs[i] == NULL);
            if (i % 2) {
                CHECK(statuses[i] == VARVE_NOT_FOUND && values[i] == NULL &&
                      value_lens[i] == 0);
            } else {
                char want[16];
                snprintf(want, sizeof want, i == 0 ? "fresh" : "val%03d", i);
                CHECK(statuses[i] == VARVE_OK);
                CHECK(value_lens[i] == strlen(want) && strcmp(values[i], want) == 0);
            }
            varve_free(values[i]);
        }
        /* errs may be NULL. */
        OK(varve_multi_get(db, ro, 2, keys, key_lens, values, value_lens, statuses, NULL,
                           &err));
        CHECK(statuses[0] == VARVE_OK && statuses[1] == VARVE_NOT_FOUND);
        varve_free(values[0]);
    }
    /* n = 0 with NULL arrays. */
    OK(varve_multi_get(db, ro, 0, NULL, NULL, NULL, NULL, NULL, NULL, &err));
    /* NULL keys: the whole call fails and every status says so. */
    char *values[2];
    size_t value_lens[2];
    varve_status statuses[2] = {VARVE_OK, VARVE_OK};
    EXPECT(VARVE_INVALID_ARGUMENT, varve_multi_get(db, ro, 2, NULL, key_lens, values,
                                                   value_lens, statuses, NULL, &err));
    EXPECT_MSG("keys is NULL");
    CHECK(statuses[0] == VARVE_INVALID_ARGUMENT && statuses[1] == VARVE_INVALID_ARGUMENT);
    const char *bad_keys[2] = {"mg002", NULL};
    size_t bad_lens[2] = {5, 4};
    EXPECT(VARVE_INVALID_ARGUMENT, varve_multi_get(db, ro, 2, bad_keys, bad_lens, values,
                                                   value_lens, statuses, NULL, &err));
    EXPECT_MSG("keys[1]");
    EXPECT(VARVE_CLOSED, varve_multi_get(NULL, ro, 2, keys, key_lens, values, value_lens,
                                         statuses, NULL, &err));
    EXPECT_MSG("NULL");
    CHECK(statuses[0] == VARVE_CLOSED);
    varve_readoptions_destroy(ro);
}

static void test_snapshots(varve_db_t *db) {
    OK(varve_put(db, NULL, KEY("snap"), KEY("v1"), &err));
    varve_snapshot_t *s = NULL;
    OK(varve_snapshot_create(db, &s, &err));
    CHECK(s != NULL && varve_snapshot_sequence(s) > 0);
    CHECK(varve_snapshot_sequence(NULL) == 0);
    OK(varve_put(db, NULL, KEY("snap"), KEY("v2"), &err));
    OK(varve_put(db, NULL, KEY("snap-new"), KEY("x"), &err));

    varve_readoptions_t *ro = varve_readoptions_create();
    OK(varve_readoptions_set_snapshot(ro, s, &err));
    EXPECT_VALUE(db, ro, "snap", "v1");
    EXPECT_VALUE(db, ro, "snap-new", NULL);
    EXPECT_VALUE(db, NULL, "snap", "v2");

    /* An iterator with the snapshot sees the old value too. */
    OK(varve_readoptions_set_iterate_lower_bound(ro, KEY("snap"), &err));
    OK(varve_readoptions_set_iterate_upper_bound(ro, KEY("snaq"), &err));
    varve_iterator_t *it = NULL;
    OK(varve_iter_create(db, ro, &it, &err));
    OK(varve_iter_seek_to_first(it, &err));
    size_t len;
    CHECK(varve_iter_valid(it));
    const char *k = varve_iter_key(it, &len);
    CHECK(len == 4 && memcmp(k, "snap", 4) == 0);
    const char *v = varve_iter_value(it, &len);
    CHECK(len == 2 && memcmp(v, "v1", 2) == 0);
    OK(varve_iter_next(it, &err));
    CHECK(!varve_iter_valid(it)); /* snap-new is after the snapshot */
    varve_iter_destroy(it);

    /* Flushed and compacted, the snapshot still pins v1. */
    OK(varve_compact_range(db, NULL, 0, NULL, 0, &err));
    EXPECT_VALUE(db, ro, "snap", "v1");

    /* The read options hold their own reference. */
    varve_snapshot_release(s);
    EXPECT_VALUE(db, ro, "snap", "v1");
    OK(varve_readoptions_set_snapshot(ro, NULL, &err));
    EXPECT_VALUE(db, ro, "snap", "v2");
    varve_snapshot_release(NULL);
    varve_readoptions_destroy(ro);

    EXPECT(VARVE_INVALID_ARGUMENT, varve_snapshot_create(db, NULL, &err));
    EXPECT_MSG("snapshot_out");
    s = (varve_snapshot_t *)1;
    EXPECT(VARVE_CLOSED, varve_snapshot_create(NULL, &s, &err));
    CHECK(s == NULL);
    EXPECT_MSG("NULL");
}

/* Walks `it` from its position in direction `dir` (+1/-1), checking that
 * the keys are it%02d from `first` by steps of dir, `count` of them. */
static void walk_at(int line, varve_iterator_t *it, int first, int count, int dir) {
    for (int i = 0; i < count; i++) {
        char want[16], wantv[16];
        snprintf(want, sizeof want, "it%02d", first + dir * i);
        snprintf(wantv, sizeof wantv, "value%02d", first + dir * i);
        size_t kl = 0, vl = 0;
        if (!varve_iter_valid(it)) fail_line(line, "iterator ended early");
        const char *k = varve_iter_key(it, &kl);
        const char *v = varve_iter_value(it, &vl);
        if (kl != strlen(want) || memcmp(k, want, kl) != 0) {
            fprintf(stderr, "test_varve: iterator at \"%.*s\", wanted %s\n", (int)kl, k, want);
            fail_line(line, "iterator key");
        }
        if (vl != strlen(wantv) || memcmp(v, wantv, vl) != 0) fail_line(line, "iterator value");
        checks++;
        varve_status st = dir > 0 ? varve_iter_next(it, &err) : varve_iter_prev(it, &err);
        if (st != VARVE_OK) fail_line(line, "iterator move");
    }
    if (varve_iter_valid(it)) fail_line(line, "iterator went past its bound");
    if (varve_iter_status(it, &err) != VARVE_OK) fail_line(line, "iterator status");
}
#define WALK(it, first, count, dir) walk_at(__LINE__, it, first, count, dir)

static void test_iterators(varve_db_t *db) {
    char key[16], val[16];
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof key, "it%02d", i);
        snprintf(val, sizeof val, "value%02d", i);
        OK(varve_put(db, NULL, KEY(key), KEY(val), &err));
        if (i == 10) OK(varve_flush(db, &err)); /* half in a table */
    }
    varve_readoptions_t *ro = varve_readoptions_create();
    OK(varve_readoptions_set_iterate_lower_bound(ro, KEY("it05"), &err));
    OK(varve_readoptions_set_iterate_upper_bound(ro, KEY("it15"), &err));
    OK(varve_readoptions_set_fill_cache(ro, false, &err));
    OK(varve_readoptions_set_readahead_size(ro, 0, &err));
    /* A bound that is NULL with a length, and a NULL handle, are refused
     * at once; the bound set before stays (the walks below). */
    EXPECT(VARVE_INVALID_ARGUMENT, varve_readoptions_set_iterate_lower_bound(ro, NULL, 4, &err));
    EXPECT_MSG("iterate_lower_bound is NULL with length 4");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_readoptions_set_iterate_upper_bound(ro, NULL, 1, &err));
    EXPECT_MSG("iterate_upper_bound");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_readoptions_set_readahead_size(NULL, 0, &err));
    EXPECT_MSG("read options is NULL");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_readoptions_set_snapshot(NULL, NULL, &err));
    EXPECT_MSG("read options is NULL");
    varve_iterator_t *it = NULL;
    OK(varve_iter_create(db, ro, &it, &err));
    varve_readoptions_destroy(ro); /* the iterator copied its bounds */
    CHECK(!varve_iter_valid(it)); /* not positioned yet */

    OK(varve_iter_seek_to_first(it, &err));
    WALK(it, 5, 10, +1); /* it05..it14 */
    OK(varve_iter_seek_to_last(it, &err));
    WALK(it, 14, 10, -1); /* it14..it05 */

    OK(varve_iter_seek(it, KEY("it10"), &err));
    WALK(it, 10, 5, +1);
    OK(varve_iter_seek(it, KEY("it00"), &err)); /* clamped to the lower bound */
    WALK(it, 5, 10, +1);
    OK(varve_iter_seek(it, KEY("it99"), &err));
    CHECK(!varve_iter_valid(it));
    OK(varve_iter_seek_for_prev(it, KEY("it10a"), &err));
    WALK(it, 10, 6, -1);
    OK(varve_iter_seek_for_prev(it, KEY("zzz"), &err)); /* clamped to the upper bound */
    WALK(it, 14, 10, -1);
    OK(varve_iter_seek_for_prev(it, KEY("a"), &err));
    CHECK(!varve_iter_valid(it));

    /* Direction changes. */
    OK(varve_iter_seek(it, KEY("it07"), &err));
    OK(varve_iter_next(it, &err));
    OK(varve_iter_prev(it, &err));
    size_t len = 0;
    const char *k = varve_iter_key(it, &len);
    CHECK(len == 4 && memcmp(k, "it07", 4) == 0);

    /* Off either end: every move still returns VARVE_OK (no error), the
     * moves past it are no-ops, key/value NULL. */
    OK(varve_iter_seek_to_first(it, &err));
    OK(varve_iter_prev(it, &err));
    CHECK(!varve_iter_valid(it));
    OK(varve_iter_prev(it, &err));
    OK(varve_iter_seek_to_last(it, &err));
    OK(varve_iter_next(it, &err));
    CHECK(!varve_iter_valid(it));
    OK(varve_iter_next(it, &err));
    OK(varve_iter_prev(it, &err));
    len = 99;
    CHECK(varve_iter_key(it, &len) == NULL && len == 0);
    CHECK(varve_iter_value(it, &len) == NULL && len == 0);
    CHECK(varve_iter_key(it, NULL) == NULL);
    OK(varve_iter_status(it, &err));

    /* A NULL key with a length breaks the iterator: the seek returns
     * VARVE_INVALID_ARGUMENT, and so does every later move (and
     * varve_iter_status), each with the message. */
    EXPECT(VARVE_INVALID_ARGUMENT, varve_iter_seek(it, NULL, 5, &err));
    EXPECT_MSG("key is NULL");
    CHECK(!varve_iter_valid(it));
    EXPECT(VARVE_INVALID_ARGUMENT, varve_iter_status(it, &err));
    EXPECT_MSG("key is NULL");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_iter_seek_to_first(it, &err));
    EXPECT_MSG("key is NULL");
    CHECK(!varve_iter_valid(it)); /* stays broken */
    EXPECT(VARVE_INVALID_ARGUMENT, varve_iter_seek_to_last(it, &err));
    EXPECT_MSG("key is NULL");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_iter_seek(it, KEY("it07"), &err));
    EXPECT_MSG("key is NULL");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_iter_seek_for_prev(it, KEY("it07"), &err));
    EXPECT_MSG("key is NULL");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_iter_next(it, &err));
    EXPECT_MSG("key is NULL");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_iter_prev(it, NULL)); /* no message wanted */
    CHECK(!varve_iter_valid(it) && varve_iter_key(it, NULL) == NULL);
    varve_iter_destroy(it);
    /* A panic during a move would return VARVE_PANIC the same way; C has
     * no way to provoke one inside an iterator (varve_test_panic panics in
     * its own call), so the Rust unit tests of src/iter.rs cover it. */

    /* No bounds, NULL read options: the other keys are around them. */
    OK(varve_iter_create(db, NULL, &it, &err));
    OK(varve_iter_seek(it, KEY("it"), &err));
    for (int i = 0; i < 20; i++) OK(varve_iter_next(it, &err));
    k = varve_iter_key(it, &len);
    CHECK(varve_iter_valid(it) && len == 5 && memcmp(k, "mg000", 5) == 0);
    OK(varve_iter_seek_for_prev(it, KEY("it"), &err));
    k = varve_iter_key(it, &len);
    CHECK(varve_iter_valid(it) && len == 3 && memcmp(k, "big", 3) == 0);
    OK(varve_iter_seek_to_first(it, &err));
    CHECK(varve_iter_valid(it));
    OK(varve_iter_seek_to_last(it, &err));
    CHECK(varve_iter_valid(it));
    varve_iter_destroy(it);

    /* NULL handles. */
    CHECK(!varve_iter_valid(NULL));
    /* Moves on NULL: what varve_iter_status(NULL) reports. */
    EXPECT(VARVE_INVALID_ARGUMENT, varve_iter_seek_to_first(NULL, &err));
    EXPECT_MSG("iterator is NULL");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_iter_seek_to_last(NULL, &err));
    EXPECT_MSG("iterator is NULL");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_iter_seek(NULL, KEY("x"), &err));
    EXPECT_MSG("iterator is NULL");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_iter_seek_for_prev(NULL, KEY("x"), &err));
    EXPECT_MSG("iterator is NULL");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_iter_next(NULL, &err));
    EXPECT_MSG("iterator is NULL");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_iter_prev(NULL, &err));
    EXPECT_MSG("iterator is NULL");
    CHECK(varve_iter_key(NULL, &len) == NULL && len == 0);
    CHECK(varve_iter_value(NULL, NULL) == NULL);
    EXPECT(VARVE_INVALID_ARGUMENT, varve_iter_status(NULL, &err));
    EXPECT_MSG("iterator is NULL");
    varve_iter_destroy(NULL);
    EXPECT(VARVE_INVALID_ARGUMENT, varve_iter_create(db, NULL, NULL, &err));
    EXPECT_MSG("iter_out");
}

/* The "Shared passes: N passes" count of varve_stats (a line that is
 * there once a pass was made). */
static unsigned long long shared_passes_of(varve_db_t *db) {
    char *stats = NULL;
    OK(varve_stats(db, &stats, &err));
    CHECK(stats != NULL);
    const char *p = stats ? strstr(stats, "Shared passes: ") : NULL;
    unsigned long long n = p ? strtoull(p + strlen("Shared passes: "), NULL, 10) : 0;
    varve_free(stats);
    return n;
}

/* Two iterators from the first key, stepped in turn: both see the same
 * keys (returned: how many); with shared passes they share one merge. */
static size_t walk_two(varve_db_t *db, bool shared) {
    varve_readoptions_t *ro = varve_readoptions_create();
    OK(varve_readoptions_set_shared_passes(ro, shared, &err));
    OK(varve_readoptions_set_concurrent_seeks(ro, !shared, &err));
    varve_iterator_t *a = NULL, *b = NULL;
    OK(varve_iter_create(db, ro, &a, &err));
    OK(varve_iter_create(db, ro, &b, &err));
    varve_readoptions_destroy(ro);
    OK(varve_iter_seek_to_first(a, &err));
    OK(varve_iter_seek_to_first(b, &err));
    size_t n = 0;
    while (varve_iter_valid(a)) {
        size_t alen = 0, blen = 0;
        CHECK(varve_iter_valid(b));
        const char *ak = varve_iter_key(a, &alen);
        const char *bk = varve_iter_key(b, &blen);
        CHECK(bk != NULL && alen == blen && memcmp(ak, bk, alen) == 0);
        const char *av = varve_iter_value(a, &alen);
        const char *bv = varve_iter_value(b, &blen);
        CHECK(bv != NULL && alen == blen && memcmp(av, bv, alen) == 0);
        OK(varve_iter_next(a, &err));
        OK(varve_iter_next(b, &err));
        n++;
    }
    CHECK(!varve_iter_valid(b));
    OK(varve_iter_status(a, &err));
    OK(varve_iter_status(b, &err));
    varve_iter_destroy(a);
    varve_iter_destroy(b);
    return n;
}

static void test_shared_passes(varve_db_t *db) {
    unsigned long long before = shared_passes_of(db);
    size_t alone = walk_two(db, false);
    CHECK(alone > 20);
    CHECK(shared_passes_of(db) == before); /* no pass without shared passes */
    CHECK(walk_two(db, true) == alone);
    CHECK(shared_passes_of(db) == before + 1); /* one merge for both */
    EXPECT(VARVE_INVALID_ARGUMENT, varve_readoptions_set_shared_passes(NULL, true, &err));
    EXPECT_MSG("read options is NULL");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_readoptions_set_concurrent_seeks(NULL, true, &err));
    EXPECT_MSG("read options is NULL");
}

static void test_scans(varve_db_t *db) {
    /* 3000 keys of ~120 bytes, in tables: the anchors need index blocks. */
    char key[32], val[128];
    memset(val, 'v', sizeof val);
    varve_writebatch_t *b = varve_writebatch_create();
    for (int i = 0; i < 3000; i++) {
        snprintf(key, sizeof key, "scan%05d", i);
        OK(varve_writebatch_put(b, KEY(key), val, 100, &err));
    }
    OK(varve_write(db, NULL, b, &err));
    varve_writebatch_destroy(b);
    OK(varve_flush(db, &err));

    varve_range_t scans = {"scan", 4, "scan~", 5};
    uint64_t count = 0;
    OK(varve_par_count(db, NULL, &scans, 2, &count, &err));
    CHECK(count == 3000);
    varve_range_t part = {"scan00100", 9, "scan00200", 9};
    OK(varve_par_count(db, NULL, &part, 0, &count, &err));
    CHECK(count == 100);
    /* Intersected with the read options' bounds. */
    varve_readoptions_t *ro = varve_readoptions_create();
    OK(varve_readoptions_set_iterate_lower_bound(ro, KEY("scan00150"), &err));
    OK(varve_par_count(db, ro, &part, 1, &count, &err));
    CHECK(count == 50);
    varve_readoptions_destroy(ro);
    varve_range_t empty = {"b", 1, "a", 1};
    OK(varve_par_count(db, NULL, &empty, 2, &count, &err));
    CHECK(count == 0);
    uint64_t all = 0;
    OK(varve_par_count(db, NULL, NULL, 2, &all, &err));
    CHECK(all >= 3000);
    EXPECT(VARVE_INVALID_ARGUMENT, varve_par_count(db, NULL, NULL, 2, NULL, &err));
    EXPECT_MSG("count_out");

    /* Anchors. */
    varve_anchors_t *a = NULL;
    OK(varve_approximate_key_anchors(db, &scans, 16, &a, &err));
    CHECK(a != NULL && a->count >= 2 && a->count <= 16);
    uint64_t sum = a->bytes_after_last;
    for (size_t i = 0; i < a->count; i++) {
        const varve_anchor_t *x = &a->anchors[i];
        CHECK(x->key != NULL);
        CHECK(x->key_len >= 4 && memcmp(x->key, "scan", 4) == 0);
        if (i > 0) {
            const varve_anchor_t *prev = &a->anchors[i - 1];
            size_t m = prev->key_len < x->key_len ? prev->key_len : x->key_len;
            int c = memcmp(prev->key, x->key, m);
            CHECK(c < 0 || (c == 0 && prev->key_len < x->key_len));
        }
        sum += x->bytes_before;
    }
    CHECK(sum == a->total_bytes && a->total_bytes > 3000 * 100);
    varve_anchors_destroy(a);
    OK(varve_approximate_key_anchors(db, &empty, 16, &a, &err));
    CHECK(a->count == 0 && a->anchors == NULL && a->total_bytes == 0);
    varve_anchors_destroy(a);
    varve_anchors_destroy(NULL);

    /* Split: contiguous parts covering the range; counts add up. */
    varve_ranges_t *r = NULL;
    OK(varve_split_range(db, &scans, 4, &r, &err));
    CHECK(r != NULL && r->count >= 2 && r->count <= 4);
    CHECK(r->ranges[0].start_len == 4 && memcmp(r->ranges[0].start, "scan", 4) == 0);
    CHECK(r->ranges[r->count - 1].end_len == 5);
    uint64_t total = 0;
    for (size_t i = 0; i < r->count; i++) {
        if (i + 1 < r->count) {
            CHECK(r->ranges[i].end_len == r->ranges[i + 1].start_len);
            CHECK(memcmp(r->ranges[i].end, r->ranges[i + 1].start, r->ranges[i].end_len) == 0);
        }
        OK(varve_par_count(db, NULL, &r->ranges[i], 1, &count, &err));
        CHECK(count > 0);
        total += count;
    }
    CHECK(total == 3000);
    varve_ranges_destroy(r);
    /* The whole key space: unbounded ends stay NULL. */
    OK(varve_split_range(db, NULL, 3, &r, &err));
    CHECK(r->count >= 1 && r->ranges[0].start == NULL);
    CHECK(r->ranges[r->count - 1].end == NULL);
    varve_ranges_destroy(r);
    OK(varve_split_range(db, &empty, 0, &r, &err));
    CHECK(r->count == 1);
    varve_ranges_destroy(r);
    varve_ranges_destroy(NULL);
    EXPECT(VARVE_INVALID_ARGUMENT, varve_split_range(db, NULL, 2, NULL, &err));
    EXPECT_MSG("ranges_out");
    EXPECT(VARVE_CLOSED, varve_approximate_key_anchors(NULL, NULL, 2, &a, &err));
    EXPECT_MSG("NULL");
}

static void test_admin(varve_db_t *db) {
    OK(varve_put(db, NULL, KEY("admin"), KEY("1"), &err));
    OK(varve_flush(db, &err));
    OK(varve_compact_range(db, KEY("a"), KEY("z"), &err));
    OK(varve_compact_range(db, NULL, 0, NULL, 0, &err));
    OK(varve_compact_range(db, KEY("it"), NULL, 0, &err));
    OK(varve_wait_for_compactions(db, &err));
    OK(varve_resume(db, &err)); /* not poisoned: a no-op */
    char *stats = NULL;
    OK(varve_stats(db, &stats, &err));
    CHECK(stats != NULL && strstr(stats, "Level") != NULL && strstr(stats, "Flush:") != NULL);
    varve_free(stats);
    EXPECT(VARVE_INVALID_ARGUMENT, varve_stats(db, NULL, &err));
    EXPECT_MSG("stats_out");

    /* Checkpoint, then open the copy and read it. */
    OK(varve_put(db, NULL, KEY("in-checkpoint"), KEY("yes"), &err));
    OK(varve_checkpoint(db, path_in("ckpt"), &err));
    OK(varve_put(db, NULL, KEY("after-checkpoint"), KEY("yes"), &err));
    EXPECT(VARVE_INVALID_ARGUMENT, varve_checkpoint(db, path_in("ckpt"), &err));
    EXPECT_MSG("ckpt");
    EXPECT(VARVE_INVALID_ARGUMENT, varve_checkpoint(db, NULL, &err));
    EXPECT_MSG("path is NULL");
    varve_db_t *copy = open_db(path_in("ckpt"), NULL);
    EXPECT_VALUE(copy, NULL, "in-checkpoint", "yes");
    EXPECT_VALUE(copy, NULL, "banana", "yellow");
    EXPECT_VALUE(copy, NULL, "after-checkpoint", NULL);
    uint64_t count = 0;
    varve_range_t scans = {"scan", 4, "scan~", 5};
    OK(varve_par_count(copy, NULL, &scans, 2, &count, &err));
    CHECK(count == 3000);
    OK(varve_close(copy, &err));

    EXPECT(VARVE_CLOSED, varve_flush(NULL, &err));
    EXPECT_MSG("NULL");
    EXPECT(VARVE_CLOSED, varve_compact_range(NULL, NULL, 0, NULL, 0, &err));
    EXPECT_MSG("NULL");
    EXPECT(VARVE_CLOSED, varve_wait_for_compactions(NULL, &err));
    EXPECT_MSG("NULL");
    EXPECT(VARVE_CLOSED, varve_resume(NULL, &err));
    EXPECT_MSG("NULL");
    EXPECT(VARVE_CLOSED, varve_checkpoint(NULL, path_in("ckpt2"), &err));
    EXPECT_MSG("NULL");
    EXPECT(VARVE_CLOSED, varve_stats(NULL, &stats, &err));
    EXPECT_MSG("NULL");
}

static void test_read_only(void) {
    varve_db_t *db = NULL;
    OK(varve_open_read_only(NULL, path_in("main"), &db, &err));
    EXPECT_VALUE(db, NULL, "banana", "yellow");
    EXPECT(VARVE_READ_ONLY, varve_put(db, NULL, KEY("k"), KEY("v"), &err));
    EXPECT_MSG("read-only");
    varve_status st = varve_flush(db, &err);
    CHECK(st == VARVE_READ_ONLY || st == VARVE_INVALID_ARGUMENT);
    EXPECT_MSG("read-only");
    varve_iterator_t *it = NULL;
    OK(varve_iter_create(db, NULL, &it, &err));
    OK(varve_iter_seek_to_first(it, &err));
    CHECK(varve_iter_valid(it));
    varve_iter_destroy(it);
    OK(varve_close(db, &err));
    EXPECT(VARVE_NOT_FOUND, varve_open_read_only(NULL, path_in("nothing"), &db, &err));
    EXPECT_MSG("nothing");
}

static void test_closed_handle(void) {
    varve_db_t *db = open_db(path_in("closed"), NULL);
    OK(varve_put(db, NULL, KEY("k"), KEY("v"), &err));
    /* An iterator and a snapshot taken before the shutdown. */
    varve_iterator_t *it = NULL;
    OK(varve_iter_create(db, NULL, &it, &err));
    varve_snapshot_t *s = NULL;
    OK(varve_snapshot_create(db, &s, &err));

    OK(varve_shutdown(db, &err));
    EXPECT(VARVE_CLOSED, varve_put(db, NULL, KEY("k"), KEY("v2"), &err));
    EXPECT_MSG("closed");
    char *v = NULL;
    size_t n = 0;
    EXPECT(VARVE_CLOSED, varve_get(db, NULL, KEY("k"), &v, &n, &err));
    EXPECT_MSG("closed");
    CHECK(v == NULL);
    EXPECT(VARVE_CLOSED, varve_delete(db, NULL, KEY("k"), &err));
    EXPECT_MSG("closed");
    varve_iterator_t *it2 = NULL;
    EXPECT(VARVE_CLOSED, varve_iter_create(db, NULL, &it2, &err));
    EXPECT_MSG("closed");
    EXPECT(VARVE_CLOSED, varve_flush(db, &err));
    EXPECT_MSG("closed");
    EXPECT(VARVE_CLOSED, varve_stats(db, &v, &err));
    EXPECT_MSG("closed");
    OK(varve_shutdown(db, &err)); /* again: fine */
    /* The directory lock is released: another opener gets it. */
    varve_db_t *again = open_db(path_in("closed"), NULL);
    EXPECT_VALUE(again, NULL, "k", "v");
    OK(varve_close(again, &err));
    OK(varve_close(db, &err)); /* frees the handle */
    OK(varve_close(NULL, &err));
    EXPECT(VARVE_CLOSED, varve_shutdown(NULL, &err));
    EXPECT_MSG("NULL");

    /* The iterator made before stays memory-safe after the close. */
    OK(varve_iter_seek_to_first(it, &err));
    CHECK(varve_iter_valid(it));
    size_t len = 0;
    const char *k = varve_iter_key(it, &len);
    CHECK(len == 1 && k[0] == 'k');
    varve_iter_destroy(it);
    varve_snapshot_release(s);
}

/* Threads writing and reading while the main thread shuts the handle. */
struct worker {
    varve_db_t *db;
    int id;
    int ops;
    varve_status last;
};

static void *work(void *arg) {
    struct worker *w = arg;
    char key[32], *v;
    size_t n;
    for (w->ops = 0; w->ops < 100000; w->ops++) {
        snprintf(key, sizeof key, "t%d-%d", w->id, w->ops % 50);
        varve_status st = varve_put(w->db, NULL, KEY(key), KEY("x"), NULL);
        if (st == VARVE_OK) st = varve_get(w->db, NULL, KEY(key), &v, &n, NULL);
        if (st != VARVE_OK) {
            w->last = st;
            return NULL;
        }
        varve_free(v);
    }
    w->last = VARVE_OK;
    return NULL;
}

static void test_threads(void) {
    varve_db_t *db = open_db(path_in("threads"), NULL);
    struct worker w[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){db, i, 0, VARVE_UNKNOWN};
        CHECK(pthread_create(&t[i], NULL, work, &w[i]) == 0);
    }
    struct timespec pause = {0, 100 * 1000 * 1000};
    nanosleep(&pause, NULL);
    OK(varve_shutdown(db, &err)); /* waits for the calls in flight */
    for (int i = 0; i < 4; i++) {
        CHECK(pthread_join(t[i], NULL) == 0);
        CHECK(w[i].last == VARVE_CLOSED || w[i].last == VARVE_OK);
        CHECK(w[i].ops > 0);
    }
    OK(varve_close(db, &err));
}

static void test_corruption(void) {
    /* A damaged table: reads through it fail with VARVE_CORRUPTION naming
     * the file. */
    varve_options_t *opts = varve_options_create();
    OK(varve_options_set_min_blob_size(opts, 0, &err));
    OK(varve_options_set_cache_size(opts, 0, &err));
    varve_db_t *db = open_db(path_in("bad-table"), opts);
    char key[32], val[100];
    memset(val, 'v', sizeof val);
    for (int i = 0; i < 2000; i++) {
        snprintf(key, sizeof key, "key%05d", i);
        OK(varve_put(db, NULL, KEY(key), val, sizeof val, &err));
    }
    OK(varve_flush(db, &err));
    OK(varve_close(db, &err));
    char table[PATH_MAX];
    CHECK(find_file(path_in("bad-table"), ".sst", table));
    long size = file_size(table);
    CHECK(size > 100000);
    scribble(table, 4096, (size_t)(size / 2)); /* the data blocks */
    varve_db_t *bad = NULL;
    varve_status st = varve_open(opts, path_in("bad-table"), &bad, &err);
    if (st == VARVE_OK) {
        /* Open reads no data block: a full scan meets the damage. */
        fprintf(stderr, "test_varve: damaged table: found by reads\n");
        varve_iterator_t *it = NULL;
        OK(varve_iter_create(bad, NULL, &it, &err));
        /* The move that meets the damage returns it. */
        varve_status moved = varve_iter_seek_to_first(it, &err);
        while (moved == VARVE_OK && varve_iter_valid(it)) moved = varve_iter_next(it, &err);
        EXPECT(VARVE_CORRUPTION, moved);
        EXPECT_MSG(".sst");
        CHECK(!varve_iter_valid(it));
        EXPECT(VARVE_CORRUPTION, varve_iter_status(it, &err));
        EXPECT_MSG(".sst");
        EXPECT(VARVE_CORRUPTION, varve_iter_next(it, &err));
        EXPECT_MSG(".sst");
        varve_iter_destroy(it);
        char *v = NULL;
        size_t n = 0;
        EXPECT(VARVE_CORRUPTION, varve_get(bad, NULL, KEY("key00500"), &v, &n, &err));
        CHECK(v == NULL);
        EXPECT_MSG(".sst");
        OK(varve_close(bad, &err));
    } else {
        fprintf(stderr, "test_varve: damaged table: found by open\n");
        EXPECT(VARVE_CORRUPTION, st);
        EXPECT_MSG(".sst");
    }

    /* A damaged manifest: the open fails with VARVE_CORRUPTION naming it. */
    db = open_db(path_in("bad-manifest"), opts);
    OK(varve_put(db, NULL, KEY("k"), KEY("v"), &err));
    OK(varve_flush(db, &err));
    OK(varve_close(db, &err));
    char manifest[PATH_MAX];
    CHECK(find_file(path_in("bad-manifest"), "MANIFEST-", manifest));
    size = file_size(manifest);
    CHECK(size > 20);
    scribble(manifest, 8, (size_t)(size - 8));
    EXPECT(VARVE_CORRUPTION, varve_open(opts, path_in("bad-manifest"), &bad, &err));
    CHECK(bad == NULL);
    EXPECT_MSG("MANIFEST");
    varve_options_destroy(opts);
}

int main(int argc, char **argv) {
    int own_root = argc < 2;
    if (own_root) {
        const char *tmp = getenv("TMPDIR");
        snprintf(root, sizeof root, "%s/varve-c-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(root)) {
            perror("mkdtemp");
            return 1;
        }
    } else {
        snprintf(root, sizeof root, "%s", argv[1]);
        mkdir(root, 0755);
    }

    test_library();
    test_options_and_open_errors();
    test_second_opener_and_destroy();

    varve_db_t *db = open_db(path_in("main"), NULL);
    test_put_get_delete(db);
    test_batch(db);
    test_multi_get(db);
    test_snapshots(db);
    test_iterators(db);
    test_shared_passes(db);
    test_scans(db);
    test_admin(db);
    OK(varve_close(db, &err));

    test_read_only();
    test_closed_handle();
    test_threads();
    test_corruption();

    if (own_root) rm_rf(root);
    printf("test_varve: %d passed, 0 failed\n", checks);
    return 0;
}
