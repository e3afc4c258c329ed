#!/usr/bin/python3
# A job that tries to outlive its stop (it_redteam_stop.c): before its main
# process exits it leaves behind
#   - a daemon: double fork, a session of its own, SIGTERM, SIGHUP, SIGINT
#     and SIGUSR1 ignored, its parent gone (reparented to the sandbox's
#     PID 1), writing /work/repo/late.txt and asking the proxy every 20 ms;
#   - a stopped process (SIGSTOP), and one traced by its child
#     (PTRACE_TRACEME, then stopped);
#   - a process that re-forks itself every 10 ms (a new pid each time);
#   - a process with an interval timer whose handler forks a new daemon;
#   - a zombie: a child never waited for.
# Then it prints "ready" and exits 0, so the stop path runs with all of
# them alive.
import ctypes
import os
import signal
import socket
import sys
import time


def ignore_all():
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGUSR1,
              signal.SIGPIPE):
        signal.signal(s, signal.SIG_IGN)


def ask_proxy():
    proxy = os.environ.get("HTTP_PROXY") or os.environ.get("http_proxy")
    if not proxy:
        return
    hp = proxy.split("//", 1)[-1].rstrip("/")
    host, port = hp.rsplit(":", 1)
    try:
        s = socket.create_connection((host, int(port)), timeout=0.5)
        s.sendall(b"GET http://api.test/linger HTTP/1.1\r\nHost: api.test\r\n"
                  b"Connection: close\r\n\r\n")
        s.recv(100)
        s.close()
    except OSError:
        pass


def daemon_loop(tag):
    ignore_all()
    n = 0
    while True:
        n += 1
        try:
            with open("/work/repo/late-%s.txt" % tag, "w") as f:
                f.write("%d\n" % n)
        except OSError:
            pass
        ask_proxy()
        time.sleep(0.02)


def detach(body):
    """body() in a grandchild in a session of its own; returns at once."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            try:
                body()
            finally:
                os._exit(0)
        os._exit(0)
    os.wait()


def stopped():
    os.kill(os.getpid(), signal.SIGSTOP)
    time.sleep(3600)


def traced():
    libc = ctypes.CDLL(None, use_errno=True)
    if os.fork() == 0:
        libc.ptrace(0, 0, None, None)  # PTRACE_TRACEME
        os.kill(os.getpid(), signal.SIGSTOP)
        time.sleep(3600)
        os._exit(0)
    ignore_all()
    time.sleep(3600)


def hopper():
    ignore_all()
    while True:
        if os.fork() != 0:
            os._exit(0)
        time.sleep(0.01)


def timer():
    ignore_all()

    def again(signum, frame):
        detach(lambda: daemon_loop("timer"))

    signal.signal(signal.SIGALRM, again)
    signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
    while True:
        signal.pause()


detach(lambda: daemon_loop("daemon"))
detach(stopped)
detach(traced)
detach(hopper)
detach(timer)
if os.fork() == 0:
    os._exit(0)  # a zombie: never waited for
time.sleep(0.5)
print("ready", flush=True)
sys.exit(0)
