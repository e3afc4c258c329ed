/*
 * What every libFuzzer harness includes. FUZZ_ASSERT aborts, so that a
 * broken property is a finding like a crash.
 */
#ifndef CORDON_FUZZ_H
#define CORDON_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FUZZ_ASSERT(c)                                                         \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "%s:%d: property failed: %s\n",        \
			    __FILE__, __LINE__, #c);                           \
			abort();                                               \
		}                                                              \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
