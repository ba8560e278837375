/*
 * strvec: a NULL-terminated, growable array of malloc'd strings (an argv or
 * an environment), after git's strvec. v[n] is always NULL, so .v can be
 * passed to execve() as is.
 */
#ifndef SBX_COMMON_STRVEC_H
#define SBX_COMMON_STRVEC_H

#include <stddef.h>

typedef struct strvec {
    char **v;
    size_t n;
    size_t alloc;
} strvec;

#define STRVEC_INIT { strvec_empty, 0, 0 }
extern char *strvec_empty[];

void strvec_init(strvec *sv);
void strvec_push(strvec *sv, const char *s);
void strvec_pushn(strvec *sv, const char *s, size_t len);
void strvec_pushf(strvec *sv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strvec_pushv(strvec *sv, char *const *v);
void strvec_clear(strvec *sv);

#endif
