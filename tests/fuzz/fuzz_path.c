/*
 * Fuzzes the check on relative paths that others choose: whatever it
 * accepts has no empty, "." or ".." component and is not absolute.
 */
#include "fuzz.h"
#include "path.h"

#include <stdlib.h>
#include <string.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Copied and ended: the input has no NUL of its own (strndup would
	 * look for one past its end). */
	char *s = malloc(size + 1);

	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (path_is_safe_relative(s)) {
		FUZZ_ASSERT(s[0] != '\0' && s[0] != '/');
		for (char *c = s, *end; *c != '\0'; c = end + (*end == '/')) {
			end = c + strcspn(c, "/");
			size_t n = (size_t)(end - c);
			FUZZ_ASSERT(n > 0);
			FUZZ_ASSERT(!(n == 1 && c[0] == '.'));
			FUZZ_ASSERT(!(n == 2 && c[0] == '.' && c[1] == '.'));
			if (*end == '\0')
				break;
		}
		FUZZ_ASSERT(s[strlen(s) - 1] != '/');
	}
	free(s);
	return 0;
}
