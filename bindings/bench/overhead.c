/* The binding-overhead loop, in C over include/varve.h: the same loop as
 * overhead.rs (the Rust reference) and overhead.py. `fill` puts NUM
 * 16-byte keys ("%016llu" of a permuted index) with 100-byte values in a
 * fixed pseudo-random order, unsynced; then the database is closed and
 * reopened (db_bench's readrandom on an existing database); `read` makes
 * one untimed pass over every key (hot in a 256 MiB block cache), then NUM
 * timed gets in another fixed order, each checked. Prints `c fill <ops/s>` and `c read <ops/s>`.
 *
 *   overhead DIR [NUM]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "varve.h"

#define FILL_STEP 999983ULL
#define READ_STEP 7919ULL

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, varve_status s, char *err) {
    fprintf(stderr, "overhead: %s: %s: %s\n", what, varve_status_name((int)s), err ? err : "");
    varve_free(err);
    exit(1);
}

static void make_key(char *k, unsigned long long i) {
    char buf[32];
    snprintf(buf, sizeof buf, "%016llu", i);
    memcpy(k, buf, 16);
}

static void make_value(char *v, unsigned long long i) {
    make_key(v, i);
    memset(v + 16, 'x', 84);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: overhead DIR [NUM]\n");
        return 2;
    }
    const char *dir = argv[1];
    unsigned long long num = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000ULL;
    if (num == 0 || num % FILL_STEP == 0 || num % READ_STEP == 0) {
        fprintf(stderr, "overhead: bad NUM\n");
        return 2;
    }
    char *err = NULL;
    varve_destroy(NULL, dir, NULL);
    varve_options_t *opts = varve_options_create();
    varve_status s = varve_options_set_cache_size(opts, 256u << 20, &err);
    if (s != VARVE_OK) die("options", s, err);
    varve_db_t *db = NULL;
    s = varve_open(opts, dir, &db, &err);
    if (s != VARVE_OK) die("open", s, err);

    char key[16], value[100];
    double t = now();
    for (unsigned long long j = 0; j < num; j++) {
        unsigned long long i = j * FILL_STEP % num;
        make_key(key, i);
        make_value(value, i);
        s = varve_put(db, NULL, key, sizeof key, value, sizeof value, &err);
        if (s != VARVE_OK) die("put", s, err);
    }
    printf("c fill %.0f\n", (double)num / (now() - t));
    fflush(stdout);
    s = varve_close(db, &err);
    if (s != VARVE_OK) die("close", s, err);
    db = NULL;
    s = varve_open(opts, dir, &db, &err);
    if (s != VARVE_OK) die("reopen", s, err);
    varve_options_destroy(opts);

    for (unsigned long long i = 0; i < num; i++) {
        char *v = NULL;
        size_t len = 0;
        make_key(key, i);
        s = varve_get(db, NULL, key, sizeof key, &v, &len, &err);
        if (s != VARVE_OK) die("warm get", s, err);
        varve_free(v);
    }
    t = now();
    unsigned long long found = 0;
    for (unsigned long long j = 0; j < num; j++) {
        unsigned long long i = j * READ_STEP % num;
        char *v = NULL;
        size_t len = 0;
        make_key(key, i);
        s = varve_get(db, NULL, key, sizeof key, &v, &len, &err);
        if (s == VARVE_OK) {
            if (len != 100) {
                fprintf(stderr, "overhead: key %llu: %zu bytes\n", i, len);
                return 1;
            }
            found++;
        } else if (s != VARVE_NOT_FOUND) {
            die("get", s, err);
        }
        varve_free(v);
    }
    double rate = (double)num / (now() - t);
    if (found != num) {
        fprintf(stderr, "overhead: found %llu of %llu\n", found, num);
        return 1;
    }
    printf("c read %.0f\n", rate);
    s = varve_close(db, &err);
    if (s != VARVE_OK) die("close", s, err);
    return 0;
}
