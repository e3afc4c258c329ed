/*
 * Why a host cannot make the sandbox. When sandbox_spawn fails, the error
 * it gives ("private mounts: Invalid argument") names the step, not the
 * host's reason; diagnose_sandbox looks at what it can read and says which
 * of the known reasons it met and what to do.
 */
#ifndef CORDON_DIAGNOSE_H
#define CORDON_DIAGNOSE_H

#include <stddef.h>

/*
 * Probes the host as seen under root ("" for the real one; a test passes a
 * directory laid out as /): whether / is a mount point in
 * root/proc/self/mountinfo (not in a chroot); root/proc/sys/kernel/
 * unprivileged_userns_clone, root/proc/sys/user/max_user_namespaces and
 * root/proc/sys/kernel/apparmor_restrict_unprivileged_userns (user
 * namespaces refused); and whether this is a container (CAP_SYS_ADMIN
 * missing from CapEff in root/proc/self/status; root/.dockerenv or
 * root/run/.containerenv only when CapEff cannot be read: a privileged
 * container makes the sandbox). Writes each finding with what to do, "; "
 * between them, into out (always NUL-terminated; "" when none) and
 * returns how many it found. A file it cannot read is no finding.
 */
int diagnose_sandbox(const char *root, char *out, size_t len);

#endif
