# A request through the relay (127.0.0.1:3128) whose sender half-closes
# at once: the answer must still come. Prints half=<status code>.
import socket
import sys

port = sys.argv[1]
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(("GET http://api.test:%s/ok/half HTTP/1.1\r\n"
           "Host: api.test:%s\r\nConnection: close\r\n\r\n"
           % (port, port)).encode())
s.shutdown(socket.SHUT_WR)
d = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    d += b
print("half=" + d.split(b" ")[1].decode())
