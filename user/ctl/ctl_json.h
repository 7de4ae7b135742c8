/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_json.h - ringsteerctl's --json output, built with jansson: a
 * document is made as a json_t (json_pack, json_array_append_new) and
 * printed once, so no command counts its own commas and brackets.  Text
 * from a store or a map goes in through ctl_json_text, so that any bytes,
 * even a corrupt id, give valid JSON. */
#ifndef RS_CTL_JSON_H
#define RS_CTL_JSON_H

#include <stdio.h>

#include <jansson.h>

/* A JSON string holding s (NULL: ""), valid UTF-8 kept and every byte
 * that does not start a well-formed sequence replaced by U+FFFD.  NULL
 * only when out of memory (json_pack's "o" then fails the whole pack). */
json_t *ctl_json_text(const char *s);

/* Writes doc and a newline to out, keys in the order they were added
 * (`{"a": 1, "b": [2, 3]}`: ", " and ": " between items), and drops the
 * reference to doc.  Returns 0, -ENOMEM (doc NULL: building it failed) or
 * -EIO. */
int ctl_json_print(FILE *out, json_t *doc);

/* Writes s to out as one JSON string literal, quotes included (an id in
 * an error message, shown safely whatever its bytes). */
void ctl_json_quote(FILE *out, const char *s);

#endif
