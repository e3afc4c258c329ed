/*
 * cordon-broker: the identity plane. It issues capabilities, not
 * credentials: tokens scoped to one named capability, bound to one job,
 * at most 15 minutes, stored hashed and revoked at the issuer.
 */
#ifndef CORDON_BROKER_H
#define CORDON_BROKER_H

#include "config.h"
#include "http_server.h"
#include "keys.h"

#define BROKER_PROG "cordon-broker"
#define BROKER_LISTEN "127.0.0.1:7701"

struct broker_config {
	struct config_common common;
	char *keys_dir; /* default <state_dir>/keys */
};

struct broker {
	struct broker_config cfg;
	struct keyring keys;
};

extern const struct config_option broker_options[];
extern const size_t broker_noptions;

#endif
