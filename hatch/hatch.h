/*
 * cordon-hatch: the return path. It copies a job's inputs in, gives the
 * job an overlay whose upper directory lives on a size-capped tmpfs, and
 * turns that upper directory alone into a patch and a report once the job
 * has stopped. Nothing the job wrote is executed or trusted.
 */
#ifndef CORDON_HATCH_H
#define CORDON_HATCH_H

#include "config.h"

#define HATCH_PROG "cordon-hatch"
#define HATCH_LISTEN "127.0.0.1:7703"

struct hatch_config {
	struct config_common common;
};

struct hatch {
	struct hatch_config cfg;
};

#endif
