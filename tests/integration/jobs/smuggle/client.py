#!/usr/bin/python3
# A client for it_trailers.c: python's http.client on the job's channel (a
# Unix socket), the URL in absolute form as to a forward proxy. Prints the
# status, the body, and "complete" once the chunked body was read to its end.
import http.client
import socket
import sys


class Unix(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=10)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(self.path)


def main():
    c = Unix(sys.argv[1])
    url = sys.argv[2]
    host = url.split("/")[2]
    c.putrequest("GET", url, skip_host=True, skip_accept_encoding=True)
    c.putheader("Host", host)
    c.endheaders()
    r = c.getresponse()
    body = r.read()  # a cut chunked body raises IncompleteRead
    print(r.status)
    sys.stdout.write(body.decode())
    print("complete")


if __name__ == "__main__":
    main()
