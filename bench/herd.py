#!/usr/bin/env python3
"""Model of a herd restart at the request floor (docs/evidence/performance.md, "restart").

K tasks start at the same instant on N free IDs. In each round every task still
without an ID picks one of the free IDs at random (no coordination); of the
tasks that picked one ID, one wins. A winner pays the round's cost: `floor`
requests in the first round (LIST, [manifest GET,] GET, CAS), `retry` more per
later round (a fresh LIST, GET, CAS). Between rounds the losers know exactly
which IDs were taken, so no read is wasted: a lower bound for any scheduling
that judges each take on a read.

    python3 bench/herd.py [K] [seeds]
"""
import random
import statistics
import sys


def run(k, floor, retry, seed):
    rnd = random.Random(seed)
    free, waiting, cost, costs = list(range(k)), k, floor, []
    while waiting:
        winners = {rnd.choice(free) for _ in range(waiting)}
        costs += [cost] * len(winners)
        free = [x for x in free if x not in winners]
        waiting -= len(winners)
        cost += retry
    return statistics.mean(costs), max(costs)


def main():
    k = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    for floor, what in ((4, "LIST, manifest GET, GET, CAS"), (3, "LIST, GET, CAS (no manifest GET)")):
        runs = [run(k, floor, 3, s) for s in range(seeds)]
        print(f"K = N = {k}, floor {floor} ({what}): mean {statistics.mean(r[0] for r in runs):.2f} "
              f"requests per task, worst {max(r[1] for r in runs)} ({seeds} seeds)")


if __name__ == "__main__":
    main()
