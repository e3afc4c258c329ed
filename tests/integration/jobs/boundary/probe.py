# A hostile job's tour of the sandbox's boundary (it_boundary.c runs it
# inside `cordon run`). It prints one line per attempt, "name result",
# where result is "ok", an errno name, or what it found; the test decides.
# argv: the host pid of a stopped process in the caller's process group,
# that group's id, an abstract unix socket name listening on the host, and
# a host directory holding a file named host-secret.
import errno
import fcntl
import os
import signal
import socket
import sys
import termios

victim, victim_pgrp = int(sys.argv[1]), int(sys.argv[2])
abstract, hostdir = sys.argv[3], sys.argv[4].lstrip("/")


def out(name, result):
    print(name, result, flush=True)


def attempt(f):
    try:
        r = f()
        return "ok" if r is None else r
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def is_open(fd):
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


# 1. Descriptors: exactly 0, 1, 2; none of them reaches the host.
fds = [fd for fd in range(0, 4096) if is_open(fd)]
out("fds", ",".join(str(fd) for fd in fds))
reached = []
for fd in fds:
    for how in (lambda: os.listdir("/proc/self/fd/%d" % fd),
                lambda: os.listdir(fd),
                lambda: os.listdir("/proc/self/fd/%d/%s" % (fd, hostdir)),
                lambda: os.open("host-secret", os.O_RDONLY, dir_fd=fd),
                lambda: os.open(hostdir + "/host-secret", os.O_RDONLY,
                                dir_fd=fd)):
        try:
            r = how()
            if (isinstance(r, list) and "host-secret" in r) or \
                    isinstance(r, int):
                reached.append(str(fd))
        except (OSError, TypeError):
            pass
out("host_reached", ",".join(reached) or "none")
# PID 1's descriptors (a copy of the launcher's) and /proc/1 itself.
out("proc1_fd", attempt(lambda: ",".join(os.listdir("/proc/1/fd"))))
out("proc1_environ", attempt(lambda: str(len(open("/proc/1/environ").read()))))
out("dev_tty", attempt(lambda: os.close(os.open("/dev/tty", os.O_RDWR))))

# Typing into the caller's terminal: on every descriptor, and on fd 0-2.
TIOCLINUX = 0x541C


def type_in(fd):
    for c in b"id\n":
        fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))


for fd in sorted(set(fds) | {0, 1, 2}):
    out("tiocsti_%d" % fd, attempt(lambda: type_in(fd)))
    out("tioclinux_%d" % fd, attempt(
        lambda: fcntl.ioctl(fd, TIOCLINUX, b"\x06\x00") and None))

# The session: the sandbox's own, with no controlling terminal.
out("sid", os.getsid(0))
out("pgrp", os.getpgrp())
with open("/proc/self/stat") as f:
    out("tty_nr", f.read().rsplit(")", 1)[1].split()[4])

# 3. Signals: at the process group, at everyone, through SIGIO owners.
out("kill_0", attempt(lambda: os.kill(0, signal.SIGCONT)))
out("kill_-1", attempt(lambda: os.kill(-1, signal.SIGCONT)))
out("kill_victim", attempt(lambda: os.kill(victim, signal.SIGCONT)))
out("kill_victim_pgrp", attempt(lambda: os.killpg(victim_pgrp,
                                                  signal.SIGCONT)))
out("pidfd_victim", attempt(lambda: os.close(os.pidfd_open(victim))))
out("setown_pid", attempt(
    lambda: str(fcntl.fcntl(1, fcntl.F_SETOWN, victim))))
out("setown_pgrp", attempt(
    lambda: str(fcntl.fcntl(1, fcntl.F_SETOWN, -victim_pgrp))))
F_SETSIG = 10
attempt(lambda: fcntl.fcntl(1, F_SETSIG, int(signal.SIGCONT)))
attempt(lambda: fcntl.fcntl(1, fcntl.F_SETFL,
                            fcntl.fcntl(1, fcntl.F_GETFL) | os.O_ASYNC))
out("sigio_written", "ok")
attempt(lambda: fcntl.fcntl(1, fcntl.F_SETFL,
                            fcntl.fcntl(1, fcntl.F_GETFL) & ~os.O_ASYNC))

# 2. Socket families.
families = {"AF_UNSPEC": 0, "AF_AX25": 3, "AF_IPX": 4, "AF_APPLETALK": 5,
            "AF_X25": 9, "AF_KEY": 15, "AF_PACKET": 17, "AF_RDS": 21,
            "AF_PPPOX": 24, "AF_LLC": 26, "AF_CAN": 29, "AF_TIPC": 30,
            "AF_BLUETOOTH": 31, "AF_ALG": 38, "AF_NFC": 39, "AF_VSOCK": 40,
            "AF_KCM": 41, "AF_QIPCRTR": 42, "AF_SMC": 43, "AF_XDP": 44,
            "AF_MCTP": 45}


def socketpair(fam, t):
    for s in socket.socketpair(fam, t):
        s.close()


types = (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET,
         socket.SOCK_RAW)
for name, fam in families.items():
    seen = set()
    for t in types:
        seen.add(attempt(lambda: socket.socket(fam, t).close()))
        seen.add(attempt(lambda: socketpair(fam, t)))
    out("socket_" + name, ",".join(sorted(seen)))
# The kernel's old spelling of a packet socket.
out("socket_AF_INET_SOCK_PACKET", attempt(lambda: socket.socket(
    socket.AF_INET, 10, 0).close()))
# Inet protocols the kernel loads as modules: SCTP, DCCP, L2TP, SMC.
for name, t, proto in (("SCTP", socket.SOCK_STREAM, 132),
                       ("SCTP_SEQPACKET", socket.SOCK_SEQPACKET, 132),
                       ("DCCP", 6, 33), ("L2TP", socket.SOCK_DGRAM, 115),
                       ("SMC", socket.SOCK_STREAM, 256)):
    for fam, fname in ((socket.AF_INET, "inet"), (socket.AF_INET6, "inet6")):
        out("inetproto_%s_%s" % (fname, name), attempt(
            lambda: socket.socket(fam, t, proto).close()))
out("inet_mptcp", attempt(lambda: socket.socket(
    socket.AF_INET, socket.SOCK_STREAM, 262).close()))
netlink = {"KOBJECT_UEVENT": 15, "SOCK_DIAG": 4, "AUDIT": 9,
           "NETFILTER": 12, "GENERIC": 16, "XFRM": 6, "CONNECTOR": 11}
for name, proto in netlink.items():
    seen = {attempt(lambda: socket.socket(socket.AF_NETLINK, t,
                                          proto).close())
            for t in (socket.SOCK_RAW, socket.SOCK_DGRAM)}
    out("netlink_" + name, ",".join(sorted(seen)))
out("netlink_ROUTE", attempt(lambda: socket.socket(
    socket.AF_NETLINK, socket.SOCK_RAW, 0).close()))
out("raw_inet", attempt(lambda: socket.socket(
    socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).close()))
out("raw_inet6", attempt(lambda: socket.socket(
    socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6).close()))
out("ping_inet", attempt(lambda: socket.socket(
    socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP).close()))
out("unix_abstract_host", attempt(lambda: socket.socket(
    socket.AF_UNIX, socket.SOCK_STREAM).connect("\0" + abstract)))
out("inet_relay", attempt(lambda: socket.create_connection(
    ("127.0.0.1", 3128), timeout=5).close()))
out("inet6", attempt(lambda: socket.socket(socket.AF_INET6).close()))

# 7. Host information: masked files read empty, masked directories list
# nothing, read-only ones are read-only mounts, /sys is not there.
for p in ("/proc/kcore", "/proc/keys", "/proc/timer_list",
          "/proc/sched_debug", "/proc/cmdline", "/proc/config.gz",
          "/proc/latency_stats", "/proc/timer_stats"):
    out("read_" + p, attempt(lambda: str(len(open(p, "rb").read(65536)))))
for p in ("/proc/acpi", "/proc/asound", "/proc/scsi", "/sys/firmware",
          "/sys/devices/virtual/powercap", "/sys"):
    out("list_" + p, attempt(lambda: str(len(os.listdir(p)))))
with open("/proc/self/mountinfo") as f:
    mounts = {line.split()[4]: line.split()[5].split(",") for line in f}
for p in ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
          "/proc/sysrq-trigger"):
    if not os.path.exists(p):
        out("ro_" + p, "absent")
    else:
        out("ro_" + p, "ro" if "ro" in mounts.get(p, []) else "rw")
out("end", "ok")
