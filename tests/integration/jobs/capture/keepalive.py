# Plain HTTP to an allowed name's address, captured, on connections kept
# alive (run by it_capture): each request must be judged on its own, one
# after another and pipelined, and one whose Host is another name than
# the one dialled refused, never sent to the dialled name's upstream.
# argv: the name, its port, another name allowed on the same port.
import socket
import sys

host, port, other = sys.argv[1], int(sys.argv[2]), sys.argv[3]


def request(path, name):
    return ("GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (path, name, port)).encode()


def response(f):
    status = f.readline().decode().strip()
    length = 0
    while True:
        line = f.readline()
        if line in (b"\r\n", b""):
            break
        k, _, v = line.decode().partition(":")
        if k.strip().lower() == "content-length":
            length = int(v)
    return status, f.read(length)


s = socket.create_connection((host, port), timeout=10)
f = s.makefile("rb")
for path in ("/ok/ka1", "/ok/ka2"):
    s.sendall(request(path, host))
    status, body = response(f)
    print("keepalive", path, status, path.encode() in body)
s.sendall(request("/ok/ka3", other))
print("other host", response(f)[0])
s.close()

s = socket.create_connection((host, port), timeout=10)
f = s.makefile("rb")
s.sendall(request("/ok/pl1", host) + request("/ok/pl2", host) +
          request("/ok/pl3", other))
for i in range(3):
    status, body = response(f)
    print("pipelined", i + 1, status, ("/ok/pl%d" % (i + 1)).encode() in body)
