#!/usr/bin/python3
# An upstream whose answer on .../slow is under way when the job's first
# injected request comes (it_reflect_midway.c): it sends "start", waits up
# to 10 s for a head carrying X-Api-Key, then sends every head it was sent
# and closes (the answer is delimited by the close). Any other path: 200
# "ok", its head logged.
import argparse
import os
import socketserver
import threading

LOG = []
COND = threading.Condition()


class H(socketserver.BaseRequestHandler):
    def handle(self):
        data = b""
        while b"\r\n\r\n" not in data:
            more = self.request.recv(4096)
            if not more:
                return
            data += more
        head = data[:data.index(b"\r\n\r\n") + 4]
        target = head.split(b" ", 2)[1]
        if target.endswith(b"/slow"):
            self.request.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n"
                                 b"\r\nstart\n")
            with COND:
                COND.wait_for(lambda: any(b"X-Api-Key" in h for h in LOG),
                              timeout=10)
                body = b"".join(LOG)
            self.request.sendall(b"log: " + body)
            return
        with COND:
            LOG.append(head)
            COND.notify_all()
        self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n"
                             b"Connection: close\r\n\r\nok\n")


class S(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    a = ap.parse_args()
    s = S(("127.0.0.1", 0), H)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % s.server_address[1])
    os.rename(tmp, a.port_file)
    s.serve_forever()


main()
