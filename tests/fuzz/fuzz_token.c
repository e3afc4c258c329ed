/*
 * Fuzzes the crd_ token parser: it never reads past its input, and what it
 * accepts is exactly the documented shape with a matching checksum.
 */
#include "fuzz.h"
#include "token.h"

#include <errno.h>
#include <string.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int r = token_parse((const char *)data, size);

	if (r == 0) {
		char crc[TOKEN_CRC_LEN];

		FUZZ_ASSERT(size == TOKEN_LEN);
		FUZZ_ASSERT(memcmp(data, TOKEN_PREFIX, TOKEN_PREFIX_LEN) == 0);
		token_checksum((const char *)data + TOKEN_PREFIX_LEN, crc);
		FUZZ_ASSERT(
		    memcmp(crc, data + TOKEN_PREFIX_LEN + TOKEN_BODY_LEN,
			TOKEN_CRC_LEN) == 0);
	} else
		FUZZ_ASSERT(r == -EINVAL || r == -EBADMSG);
	return 0;
}
