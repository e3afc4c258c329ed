# A connection through the relay still open when the job's time is up:
# the launcher must end it with the rest of the job.
import socket
import time

s = socket.create_connection(("127.0.0.1", 3128))
time.sleep(30)
