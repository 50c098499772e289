/* The checks of dnpipe's C unit tests (tests/test_core.c, tests/test_red.c): a failed check
 * prints file, line, test and expression and fails its test; RUN prints "ok" or "FAIL" per test,
 * and main() ends with CHECK_SUMMARY() (exit status 1 when any test failed). */
#ifndef DNPIPE_TESTS_CHECK_H
#define DNPIPE_TESTS_CHECK_H

#include <stdio.h>

static int g_pass, g_fail, g_ok;
static const char *g_test;

#define CHECK(cond)                                                                                  \
    do {                                                                                             \
        if (!(cond)) {                                                                               \
            fprintf(stderr, "FAIL %s:%d [%s]: %s\n", __FILE__, __LINE__, g_test, #cond);             \
            g_ok = 0;                                                                                \
        }                                                                                            \
    } while (0)
/* Equality as 64-bit integers (either signedness); both values printed signed and unsigned. */
#define CHECK_EQ(a, b)                                                                               \
    do {                                                                                             \
        unsigned long long _a = (unsigned long long)(a), _b = (unsigned long long)(b);               \
        if (_a != _b) {                                                                              \
            fprintf(stderr, "FAIL %s:%d [%s]: %s == %lld (%llu), expected %s == %lld (%llu)\n",      \
                    __FILE__, __LINE__, g_test, #a, (long long)_a, _a, #b, (long long)_b, _b);       \
            g_ok = 0;                                                                                \
        }                                                                                            \
    } while (0)
#define TEST(name) static void name(void)
#define RUN(name)                                                                                    \
    do {                                                                                             \
        g_test = #name;                                                                              \
        g_ok = 1;                                                                                    \
        name();                                                                                      \
        if (g_ok) {                                                                                  \
            g_pass++;                                                                                \
            printf("ok   %s\n", #name);                                                              \
        } else {                                                                                     \
            g_fail++;                                                                                \
            printf("FAIL %s\n", #name);                                                              \
        }                                                                                            \
    } while (0)
#define CHECK_SUMMARY()                                                                              \
    (printf("%d passed, %d failed\n", g_pass, g_fail), g_fail ? 1 : 0)

#endif
