# As many captured plain-HTTP connections as the launcher takes, each with
# one request answered and then held open until the job is stopped (run
# by it_capture); meanwhile refused names and a direct connect, which the
# launcher must still have the descriptors to tell the proxy. Then 8 KiB
# of output, past the manifest's output_kb: the launcher stops the job
# with everything held, whenever its work ends (no wall clock to race).
import socket
import struct
import sys
import time

host, port, want = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
held, refused = [], 0
for i in range(want):
    try:
        s = socket.create_connection((host, port), timeout=10)
        s.sendall(("GET /ok/m%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" %
                   (i, host, port)).encode())
        if not s.recv(12).startswith(b"HTTP/1.1 200"):
            raise OSError("no answer")
        held.append(s)
    except OSError:
        refused += 1
print("held", len(held), "refused", refused, flush=True)
# Ten refused names at once: ten refusals the launcher tells the proxy
# together, each on a channel connection of its own.
q = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
q.settimeout(5)
for i in range(10):
    name = b"".join(bytes([len(l)]) + l for l in (b"n%d" % i, b"evil", b"example"))
    q.sendto(struct.pack(">HHHHHH", i, 0x0100, 1, 0, 0, 0) + name + b"\0" +
             struct.pack(">HH", 1, 1), ("127.0.0.53", 53))
nx = 0
for i in range(10):
    nx += (q.recv(512)[3] & 15) == 3
print("names refused", nx, flush=True)
try:
    socket.create_connection(("10.0.0.1", 5432), timeout=5)
except OSError as e:
    print("direct", type(e).__name__, flush=True)
print("." * 8192, flush=True)
time.sleep(60)
