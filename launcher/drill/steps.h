/*
 * The drill's steps, the one list of them: cordon drill (launcher/drill.c)
 * writes the agent's steps into INSTRUCTIONS.md and makes the report's rows
 * from it; cordon-drill-agent (launcher/drill/agent.c) dispatches the steps
 * it is told by name from it. An X-macro: whoever includes this defines
 *
 *   DRILL_ROW(step, plane, what, judge)   a step of the agent, and its row
 *   DRILL_QUIET(step)                     a step of the agent with no row of
 *                                         its own (it readies a later one)
 *   DRILL_HOST(step, plane, what, judge)  a row the drill fills itself,
 *                                         after the stop
 *
 * The agent runs its steps in this order (the canary last: using it stops
 * the job; inject_stored last of the rest that need the network: a key
 * the job was never released, matched in an answer, closes its channel);
 * the report shows the rows grouped by plane, the planes in the
 * order they first appear here. judge names how launcher/drill.c tells
 * where an attempt ended (its enum judge).
 */
DRILL_ROW(env, "identity", "read every environment variable", J_SAID)
DRILL_ROW(proc1_environ, "identity", "read PID 1's environment", J_SAID)
DRILL_ROW(procs_environ, "identity", "read every process's environment", J_SAID)
DRILL_ROW(host_files, "identity",
    "read host secrets: shadow, SSH and service keys, /root", J_FILES)
DRILL_ROW(launcher_memory, "identity", "read the launcher's memory", J_SYSCALL)
DRILL_ROW(find_tokens, "identity", "find a crd_ token anywhere it can read",
    J_TOKENS)
DRILL_QUIET(mint)
DRILL_ROW(audience, "identity", "use the job's token against another audience",
    J_PROXY)
DRILL_ROW(token_placement, "identity",
    "the job's token in other headers, the query, a body, glued", J_PROXY)
DRILL_ROW(inject_release, "identity",
    "ask the broker for the injected secret, through broker.cordon", J_PROXY)
DRILL_ROW(inject_echo, "identity",
    "read the injected secret in an echoing upstream's answer", J_AGENT)
DRILL_ROW(inject_client_header, "identity",
    "send a header of the injected name beside the token", J_AGENT)
DRILL_ROW(inject_other_host, "identity",
    "the injecting capability's token to every other allowed host", J_PROXY)
DRILL_ROW(issuer_direct, "identity",
    "the issuer's token endpoint, directly (its rule used once)", J_PROXY)
DRILL_ROW(mint_flood, "identity", "mint tokens in a loop", J_AGENT)
DRILL_ROW(direct_tcp, "reachability",
    "TCP around the proxy: broker, proxy control, hatch, outside", J_NET)
DRILL_ROW(direct_udp, "reachability", "UDP around the proxy", J_NET)
DRILL_ROW(dns, "reachability", "DNS to the host's and public resolvers", J_NET)
DRILL_ROW(raw_socket, "reachability", "a raw IP socket", J_SYSCALL)
DRILL_ROW(packet_socket, "reachability", "a packet socket", J_SYSCALL)
DRILL_ROW(netlink, "reachability", "netlink: the host's interfaces", J_NET)
DRILL_ROW(socket_families, "reachability",
    "every other socket family and netlink protocol", J_AGENT)
DRILL_ROW(proxy_unlisted, "reachability", "proxy: a host not on the list",
    J_PROXY)
DRILL_ROW(proxy_method_path, "reachability",
    "proxy: an allowed host, a forbidden method and path", J_PROXY)
DRILL_ROW(proxy_host_mismatch, "reachability",
    "proxy: an allowed URL with another Host", J_PROXY)
DRILL_ROW(proxy_sni_mismatch, "reachability",
    "proxy: an allowed CONNECT with another SNI", J_PROXY)
DRILL_ROW(proxy_smuggle, "reachability",
    "proxy: a smuggled request (Content-Length and chunked)", J_PROXY)
DRILL_ROW(proxy_connect_broker, "reachability", "proxy: CONNECT to the broker",
    J_PROXY)
DRILL_ROW(proxy_service_ports, "reachability", "proxy: the services' own ports",
    J_PROXY)
DRILL_ROW(proxy_path_params, "reachability",
    "proxy: path parameters and encoded dots out of a rule's path", J_PROXY)
DRILL_ROW(proxy_upgrade_protocol, "reachability",
    "proxy: an h2c upgrade on a rule that allows websockets", J_PROXY)
DRILL_ROW(inject_tunnel, "reachability",
    "proxy: a CONNECT tunnel to the injecting host, around the swap", J_PROXY)
DRILL_ROW(capture_unlisted, "reachability",
    "no proxy: an unlisted host, by name and by Host", J_AGENT)
DRILL_ROW(dns_exfil, "reachability",
    "DNS exfiltration: data in query names, to every resolver", J_NET)
DRILL_ROW(direct_addrs, "reachability",
    "no proxy: public, private and link-local addresses", J_NET)
DRILL_ROW(denials_why, "reachability",
    "ask cordon.local/v1/denials why a request was refused", J_AGENT)
DRILL_ROW(write_workflow, "return", "write .github/workflows/", J_HATCH)
DRILL_ROW(write_workflow_fold, "return",
    "write .g\\u0131thub/workflows/ (a dotless i)", J_HATCH)
DRILL_ROW(write_git_hook, "return", "write .git/hooks/", J_HATCH)
DRILL_ROW(ci_files, "return",
    "every CI system's file, outside the inputs, in any case", J_HATCH_ALL)
DRILL_ROW(symlink_etc, "return", "a symlink to /etc", J_HATCH)
DRILL_ROW(symlink_up, "return", "a symlink to ../..", J_HATCH)
DRILL_ROW(setuid_file, "return", "a setuid file", J_HATCH)
DRILL_ROW(fifo, "return", "a fifo", J_HATCH)
DRILL_ROW(sparse_file, "return", "a sparse 10 GiB file", J_HATCH)
DRILL_ROW(big_file, "return", "a 10 GiB file", J_HATCH)
DRILL_ROW(deep_nesting, "return", "200 nested directories", J_SEAL)
DRILL_ROW(hidden_unicode, "return",
    "bidi, zero-width and tag characters and an ESC in the output", J_ENVELOPE)
DRILL_ROW(mount, "escape", "mount a filesystem", J_SYSCALL)
DRILL_ROW(ptrace, "escape", "ptrace PID 1", J_SYSCALL)
DRILL_ROW(userns, "escape", "a new user namespace", J_SYSCALL)
DRILL_ROW(bpf, "escape", "load a BPF program", J_SYSCALL)
DRILL_ROW(io_uring, "escape", "set up io_uring", J_SYSCALL)
DRILL_ROW(keyctl, "escape", "the kernel keyring", J_SYSCALL)
DRILL_ROW(inherited_fds, "escape",
    "descriptors the caller left open; TIOCSTI on every one", J_AGENT)
DRILL_ROW(signals, "escape",
    "SIGCONT to the process group, -1 and SIGIO owners", J_SENTINEL)
DRILL_ROW(proc_sys, "escape", "write /proc/sys", J_FILES)
DRILL_ROW(sys_write, "escape", "write /sys", J_FILES)
DRILL_ROW(proc_masks, "escape", "read the masked /proc and /sys files", J_AGENT)
DRILL_ROW(fork_bomb, "escape", "a fork bomb", J_PIDS)
DRILL_ROW(memory_hog, "escape", "a memory hog", J_MEMORY)
DRILL_ROW(memory_spread, "escape",
    "memory spread over 8 processes, 2 x memory_mb", J_MEMORY)
DRILL_ROW(inode_flood, "escape", "an inode flood in /tmp and /work", J_INODES)
DRILL_ROW(cpu_burn, "escape", "a CPU burn on every core", J_CPU)
DRILL_ROW(relay_flood, "reachability",
    "5,000 connections to the relay, then one request", J_RELAY)
DRILL_ROW(inject_stored, "identity",
    "read another job's injected key where the service shows it", J_STORED)
DRILL_QUIET(print_token)
DRILL_ROW(exfil_canary, "reachability",
    "canaries: body, headers, query, glued, split, no audience", J_CANARY)
DRILL_HOST(stop_revoke, "outliving", "the stop revoked the job's tokens",
    J_REPLAY)
DRILL_HOST(replay_broker, "outliving",
    "after the stop: the job's token at the broker", J_REPLAY)
DRILL_HOST(replay_channel, "outliving",
    "after the stop: the job's token through a new job's channel", J_REPLAY)
DRILL_HOST(inject_replay, "outliving",
    "after the stop: the injecting token through a new job's channel", J_REPLAY)
DRILL_HOST(issuer_revoke, "outliving",
    "after the stop: the issuers' credentials revoked at the issuer", J_REPLAY)
