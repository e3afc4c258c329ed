#!/usr/bin/env python3
"""Where one row's instructions a request go beyond another's, function by
function: run by bench_proxy.sh's instr part (never alone, but it can be).

  callgrind_diff.py [-n TOP] [-c FUNCTION]... NAME=FILE:REQUESTS ...

Each FILE is a callgrind dump of the proxy over a window of REQUESTS
answered requests (the first NAME the base, the last the one compared).
Each function's own instructions (Ir, not inclusive: what its own code
ran) are read from the dump and divided by its row's requests. Prints the TOP functions by last - first (Ir a request, the
largest first), each row's figure beside it, then the sum of the rest and
of everything, so that the list can be checked against the totals.
Each -c FUNCTION: how many calls each row made to it in its window and
their inclusive Ir a request (for the broker client's calls: work that
comes with time, not with requests).
"""
import os
import re
import sys

NAME = re.compile(r"^\((\d+)\)(?: (.*))?$")


def functions(path):
    """{function [object]: its own Ir} and the dump's total Ir, read from
    the dump itself (the format of valgrind's callgrind-format docs: a
    cost line after "calls=" is the call's inclusive cost, not the
    caller's own, and is skipped)."""
    names = {"ob": {}, "fl": {}, "fn": {}}
    kind = {"ob": "ob", "cob": "ob", "fl": "fl", "fi": "fl", "fe": "fl",
            "cfi": "fl", "cfl": "fl", "fn": "fn", "cfn": "fn"}
    funcs, calls, total, ob, fn, cfn, skip = {}, {}, None, "", "", "", None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line[0] == "#":
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                if skip is not None:
                    parts = line.split()
                    got = calls.setdefault(cfn, [0, 0])
                    got[0] += skip
                    got[1] += int(parts[1]) if len(parts) >= 2 else 0
                    skip = None
                    continue
                parts = line.split()
                if len(parts) >= 2:
                    key = fn + (" [" + ob + "]" if ob else "")
                    funcs[key] = funcs.get(key, 0) + int(parts[1])
                continue
            k, _, v = line.partition("=")
            if k in kind:
                m = NAME.match(v)
                table = names[kind[k]]
                if m:
                    if m.group(2) is not None:
                        table[m.group(1)] = m.group(2)
                    v = table.get(m.group(1), "?")
                if k == "ob":
                    ob = os.path.basename(v)
                elif k == "fn":
                    fn = v
                elif k == "cfn":
                    cfn = v
                continue
            if k == "calls":
                skip = int(v.split()[0])
            elif line.startswith("totals:") or line.startswith("summary:"):
                total = int(line.split()[1])
    if total is None:
        sys.exit("callgrind_diff: no totals in " + path)
    return funcs, calls, total


def main(argv):
    top, wanted = 15, []
    while len(argv) >= 2 and argv[0] in ("-n", "-c"):
        if argv[0] == "-n":
            top = int(argv[1])
        else:
            wanted.append(argv[1])
        argv = argv[2:]
    if len(argv) < 2:
        sys.exit(__doc__)
    rows = []
    for a in argv:
        name, rest = a.split("=", 1)
        path, n = rest.rsplit(":", 1)
        funcs, calls, total = functions(path)
        n = int(n)
        if n <= 0:
            sys.exit("callgrind_diff: no requests for " + name)
        rows.append((name, {k: v / n for k, v in funcs.items()}, total / n,
                     calls, n))
    base, last = rows[0], rows[-1]
    keys = set()
    for r in rows:
        keys |= r[1].keys()
    diff = sorted(keys, key=lambda k: last[1].get(k, 0) - base[1].get(k, 0),
                  reverse=True)
    names = [r[0] for r in rows]
    print("%-58s %s %12s" % ("function [object], Ir a request",
                             " ".join("%10s" % n for n in names),
                             "%s-%s" % (last[0], base[0])))
    shown = 0.0
    for k in diff[:top]:
        d = last[1].get(k, 0) - base[1].get(k, 0)
        shown += d
        print("%-58s %s %+12.1f" % (k[:58], " ".join(
            "%10.1f" % r[1].get(k, 0) for r in rows), d))
    total_d = last[2] - base[2]
    print("%-58s %s %+12.1f" % ("(every other function)", " ".join(
        "%10s" % "" for _ in rows), total_d - shown))
    print("%-58s %s %+12.1f" % ("(all)", " ".join(
        "%10.1f" % r[2] for r in rows), total_d))
    for w in wanted:
        print("calls to %s in the window, and their inclusive Ir a "
              "request: %s" % (w, ", ".join(
                  "%s %d (%.1f)" % (r[0], r[3].get(w, [0, 0])[0],
                                    r[3].get(w, [0, 0])[1] / r[4])
                  for r in rows)))


if __name__ == "__main__":
    main(sys.argv[1:])
