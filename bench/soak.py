"""Soak run: a robot's real graph for a long time, resident memory (RSS) of every node sampled
over it, growth per minute printed per node (the aim: < 1 MB over 10 minutes).

    .venv/bin/python bench/soak.py                          # five_bar, 10 minutes
    .venv/bin/python bench/soak.py --robot irsbot2 --minutes 3 --interval 10

RSS is read from /proc/<pid>/status (VmRSS) of each node process the built-in launcher started;
the first ``--warmup`` seconds are skipped (kernel caches, DDS discovery, first allocations).
Growth = least-squares slope of RSS over the remaining samples [MB/min] and total growth
(last - first sample) [MB]. Progress is printed at every sample. Nothing is asserted here.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

import numpy as np


def rss_mb(pid):
    try:
        with open(f'/proc/{pid}/status') as fh:
            for line in fh:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return float('nan')
    return float('nan')


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--robot', default='five_bar', help='robot config (default five_bar)')
    ap.add_argument('--minutes', type=float, default=10.0, help='measured duration [min] (default 10)')
    ap.add_argument('--interval', type=float, default=15.0, help='sampling interval [s] (default 15)')
    ap.add_argument('--warmup', type=float, default=30.0, help='skipped start [s] (default 30)')
    ap.add_argument('--timing', choices=['realtime', 'lockstep'], default=None)
    ap.add_argument('--logdir', default='out', help='node logs (default out/)')
    a = ap.parse_args(argv)
    from robot_dynamics.ros.bringup import use_discovery_env

    use_discovery_env()  # DDS on loopback (the package's profile) unless widened
    os.environ.setdefault('ROS_DOMAIN_ID', str(random.SystemRandom().randint(101, 200)))
    os.makedirs(a.logdir, exist_ok=True)
    from robot_dynamics.ros.bringup import load_bringup
    from robot_dynamics.ros.launcher import Launcher

    b = load_bringup(a.robot, timing=a.timing)
    samples = {}
    with open(os.path.join(a.logdir, f'soak_{a.robot}.log'), 'w') as logf:
        launcher = Launcher(b, out=logf).start()
        try:
            print(
                f'# soak {a.robot}: {a.minutes:g} min after {a.warmup:g} s warm-up, sample every {a.interval:g} s',
                flush=True,
            )
            time.sleep(a.warmup)
            t0 = time.monotonic()
            while time.monotonic() - t0 <= a.minutes * 60.0:
                dead = launcher.poll()
                if dead:
                    print(f'node {dead[0]} died (code {dead[1]})', file=sys.stderr)
                    return 1
                t = (time.monotonic() - t0) / 60.0
                row = {n: rss_mb(p.pid) for n, p in launcher.procs.items()}
                for n, v in row.items():
                    samples.setdefault(n, []).append((t, v))
                print(f'  t = {t:5.2f} min  ' + '  '.join(f'{n} {v:.1f} MB' for n, v in row.items()), flush=True)
                time.sleep(a.interval)
        finally:
            launcher.shutdown()
    print(f'{"node":22s} {"RSS start":>9s} {"RSS end":>8s} {"growth":>7s} {"slope":>9s}')
    for n, s in samples.items():
        t, v = np.array(s).T
        slope = np.polyfit(t, v, 1)[0] if len(t) > 2 else float('nan')
        print(f'{n:22s} {v[0]:8.1f}M {v[-1]:7.1f}M {v[-1] - v[0]:+6.2f}M {slope:+7.3f}M/min')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
