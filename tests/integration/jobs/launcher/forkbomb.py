# A fork bomb of up to 500 sleeping children: prints how many forks
# worked before the job's pids limit refused one.
import os
import time

n = 0
for i in range(500):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    n += 1
print("forked=%d" % n)
