/*
 * One reading of a request path: the check the proxy makes on every path
 * before a prefix match, and the broker on every path prefix of a
 * manifest, so that a prefix the broker accepts is one the proxy loads.
 * Shared by both processes, hence in common/.
 */
#ifndef CORDON_EGRESS_PATH_H
#define CORDON_EGRESS_PATH_H

#include <stddef.h>

/*
 * Checks a request path before the prefix match: the path is refused
 * when any server in common use (Tomcat and Spring, nginx, Apache,
 * Express, Go, Python, and the Windows ones) could read it as another
 * path than its text. The query and fragment (from '?' or '#') are not
 * part of it. egress_path_problem returns NULL for a path with one
 * reading, else what is wrong with it (a constant string, for a log's
 * detail): "not_absolute" (no leading '/'), "bad_escape" ('%' without
 * two hex digits), "backslash" ('\' or %5C), "semicolon" (';' or %3B
 * anywhere), "control" (a control byte, raw or encoded, %00 too),
 * "raw_byte" (a space or a byte above 0x7f not encoded), "double_encoding"
 * (%25), "encoded_dot" (%2E), "encoded_slash" (%2F), "bad_utf8"
 * (encoded bytes that are not shortest-form UTF-8: %C0%AE), "confusable"
 * (a character NFKC reads as '.', '/', '\', ';' or '%'), "empty_segment"
 * ("//"), "dot_segment" (a segment of dots only: ".", "..", "...") or
 * "trailing_dot" ("admin."). egress_path_ok: 0, or -EINVAL when there
 * is a problem.
 */
const char *egress_path_problem(const char *path, size_t len);
int egress_path_ok(const char *path, size_t len);

#endif
