# Connects and datagrams where nothing listens inside the job's namespace
# (run by it_capture): each must be refused where it is made, and each
# is a decision in the proxy's log. Each line says how it ended and in
# how many milliseconds (printed, not judged: the machine is shared).
import socket
import sys
import time


def tcp(family, addr):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(5)
    t = time.monotonic()
    try:
        s.connect(addr)
        r = "connected"
    except OSError as e:
        r = type(e).__name__
    print("tcp", addr[0], addr[1], r, "%.1fms" % ((time.monotonic() - t) * 1000))
    s.close()


def udp(family, addr):
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.settimeout(5)
    t = time.monotonic()
    try:
        s.connect(addr)
        s.send(b"\x42\x42\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x01")
        s.recv(512)
        r = "answered"
    except OSError as e:
        r = type(e).__name__
    print("udp", addr[0], addr[1], r, "%.1fms" % ((time.monotonic() - t) * 1000))
    s.close()


tcp(socket.AF_INET, ("10.0.0.1", 5432))
tcp(socket.AF_INET, ("169.254.169.254", 80))
tcp(socket.AF_INET, ("8.8.8.8", 53))
tcp(socket.AF_INET, (socket.gethostbyname(sys.argv[1]), 5432))
tcp(socket.AF_INET6, ("2001:db8::1", 443))
udp(socket.AF_INET, ("8.8.8.8", 53))
udp(socket.AF_INET6, ("2001:db8::2", 53))
# Let the last refusals reach the proxy before the job ends.
time.sleep(0.5)
