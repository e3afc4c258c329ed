# What is no egress, and a burst past what the launcher tells at once
# (run by it_capture): connects to the job's own closed loopback ports
# (127.0.0.1, ::1, and "localhost", which tries both), then argv[1]
# connects at once to closed ports of one address outside.
import socket
import sys
import time

for fam, addr in ((socket.AF_INET, ("127.0.0.1", 5999)),
                  (socket.AF_INET6, ("::1", 5999))):
    s = socket.socket(fam, socket.SOCK_STREAM)
    try:
        s.connect(addr)
    except OSError as e:
        print("local", addr[0], type(e).__name__, flush=True)
    s.close()
try:
    socket.create_connection(("localhost", 5998), timeout=5)
except OSError as e:
    print("localhost", type(e).__name__, flush=True)

n, refused, socks = int(sys.argv[1]), 0, []
for i in range(n):
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect(("10.9.9.9", 1000 + i))
    except ConnectionRefusedError:
        refused += 1
    except BlockingIOError:
        pass
    socks.append(s)
time.sleep(1)
for s in socks:
    refused += s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 111
print("burst refused", refused, flush=True)
time.sleep(3)  # the launcher tells the rest meanwhile
