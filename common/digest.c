#include "digest.h"

#include <openssl/evp.h>
#include <stdio.h>

void
sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN + 1])
{
	unsigned char md[32];
	unsigned int n = sizeof(md);

	out[0] = '\0';
	if (EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) != 1)
		return;
	for (size_t i = 0; i < sizeof(md); i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}
