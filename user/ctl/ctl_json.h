/* ctl_json.h - writing JSON by hand for ringsteerctl's --json output (the
 * binary does not link a JSON library): string literals escaped so that
 * any bytes, even a corrupt id, give valid JSON. */
#ifndef RS_CTL_JSON_H
#define RS_CTL_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Writes s as a JSON string literal, quotes included: '"', '\\' and
 * control characters escaped, valid UTF-8 kept, any other byte written as
 * U+FFFD (so the output is always valid UTF-8 JSON). */
void ctl_json_string(FILE *out, const char *s);

/* Writes "name": then the value, preceded by ", " unless first. */
void ctl_json_key_string(FILE *out, bool first, const char *name, const char *value);
void ctl_json_key_int(FILE *out, bool first, const char *name, int64_t value);
void ctl_json_key_uint(FILE *out, bool first, const char *name, uint64_t value);
void ctl_json_key_bool(FILE *out, bool first, const char *name, bool value);

#endif
