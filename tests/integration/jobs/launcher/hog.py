# A memory hog: 1 GB at once. A MemoryError under an rlimit, the OOM
# killer under a cgroup; "hog=alive" under neither.
try:
    a = bytearray(1024 * 1024 * 1024)
    print("hog=alive")
except MemoryError:
    print("hog=stopped")
