"""Wall-clock run of each robot's real ROS 2 graph: real-time factor, /joint_states rate,
state -> command latency, overruns, measured beside the configured periods.

    .venv/bin/python bench/bench_loop.py                       # all robots, 20 s each, idle
    .venv/bin/python bench/bench_loop.py --hogs 2              # next to two CPU hogs
    .venv/bin/python bench/bench_loop.py --robots five_bar irsbot2 --duration 30

Per robot the graph of config/<robot>.yaml is started with the built-in launcher (timing
realtime unless --timing lockstep), a probe node in this process records the arrival times of
``/joint_states`` (or of the controller's own ``state_topic`` / sim_node's ``control_state_topic``
when the config sets one: the every-state topic, /joint_states being decimated for
visualisation) and of the
controller's commands, ``/sim_node/real_time_factor`` and
``/diagnostics``. Latency = arrival of a command - arrival of the newest state before it (both
at the probe: includes the DDS hops state -> controller -> probe, an upper bound of the
controller's own state -> command time, which ``/diagnostics`` reports as latency_p50/p99 for
controller_node). ``plant p50/p99``: the same measured by sim_node itself (publication of a
state -> arrival of the first command after it, its ``answer_*`` diagnostics; one DDS hop each
way, as a hardware interface sees the loop). The plant's real-time factor is simulated / wall
time over the window. Nothing
here is asserted: the numbers are printed (and written as CSV with --csv).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time

import numpy as np

from robot_dynamics.tools.demos import command_latency

ROBOTS = [
    'five_bar',
    'four_bar',
    'slider_crank',
    'irsbot2',
    'irsbot2_t1',
    'series_parallel_3dof',
    'hydraulic_boom',
    'planar_3rrr_sea',
    'gough_stewart',
]


def _probe_run(robot, duration, timing, startup, logdir):
    from robot_dynamics.ros.bringup import load_bringup
    from robot_dynamics.ros.launcher import Launcher
    from robot_dynamics.ros.recorder import recording

    b = load_bringup(robot, timing=timing)
    sim = next(s for s in b.nodes if s.executable == 'sim_node')
    ctl = next((s for s in b.nodes if s.name != 'sim_node' and 'controller' in s.parameters), None)
    topic = f'/{(ctl.parameters if ctl else sim.parameters).get("controller", "effort_controller")}/commands'
    row = dict(
        robot=robot,
        rate=float(sim.parameters.get('rate', 1000.0)),
        publish_rate=float(sim.parameters.get('publish_rate', 100.0)),
        ok=False,
    )
    from robot_dynamics.ros.bringup import observer_priority

    with (
        open(os.path.join(logdir, f'bench_loop_{robot}.log'), 'w') as logf,
        observer_priority(timing),
        recording() as rec,
    ):
        cmd = rec.subscribe('cmd', 'Float64MultiArray', topic)
        rtf = rec.subscribe('rtf', 'Float64', '/sim_node/real_time_factor')
        diag = rec.subscribe('diag', 'DiagnosticArray', '/diagnostics')
        ctl_topic = b.control_state_topic()  # the controller's every-state topic, or ''
        ctl_js = rec.subscribe('ctl_js', 'JointState', ctl_topic) if ctl_topic else None
        if ctl_topic:
            row['js_topic'] = ctl_topic
        launcher = Launcher(b, out=logf).start()
        try:
            t0 = time.monotonic()
            while time.monotonic() - t0 < startup and not cmd and not launcher.poll():
                time.sleep(0.1)
            if not cmd:
                row['error'] = f'no command within {startup:g} s' + (
                    f' ({launcher.poll()[0]} died)' if launcher.poll() else ''
                )
                return row
            row['startup'] = time.monotonic() - t0
            time.sleep(1.0)  # settle
            # (recording() keeps the cyclic GC off: its full collections of the recorded messages
            # would show as a "~100 ms maximum" of the boom at this probe)
            w0 = time.monotonic()
            time.sleep(duration)
            w1 = time.monotonic()
            with rec.lock:
                J = (
                    [(t, m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec) for t, m in ctl_js if t >= w0]
                    if ctl_js is not None
                    else [(j[3], j[0]) for j in rec.js if j[3] >= w0]
                )
                C = [t for t, _ in cmd if t >= w0]
                R = [m.data for t, m in rtf if t >= w0]
                D = {st.name: {kv.key: kv.value for kv in st.values} for _, m in diag for st in m.status}
        finally:
            launcher.shutdown()
    if len(J) < 2 or len(C) < 2:
        row['error'] = f'{len(J)} states, {len(C)} commands in the window'
        return row
    ja = np.array([a for a, _ in J])
    js_st = np.array([s for _, s in J])
    row['js_rate'] = (len(J) - 1) / (ja[-1] - ja[0])
    # real time: sim_node's own real-time factor (its stamps are mapped onto the wall clock);
    # lock-step: simulated time (stamps) per wall second
    row['rtf'] = float(np.mean(R)) if (timing == 'realtime' and R) else (js_st[-1] - js_st[0]) / (w1 - w0)
    ca = np.array(C)
    lat = command_latency(ja, ca)
    row['cmd_rate'] = (len(C) - 1) / (ca[-1] - ca[0])
    row['lat_p50'], row['lat_p99'], row['lat_max'] = (np.percentile(lat, 50), np.percentile(lat, 99), lat.max())
    # the controller's loop report (sim_node's status is named '<node>: control loop' too)
    ctrl_diag = next((v for k_, v in D.items() if 'control loop' in k_ and 'sim_node' not in k_), None)
    sim_diag = next((v for k_, v in D.items() if 'sim_node' in k_), None)
    if sim_diag and timing == 'realtime':
        row['slip'] = float(sim_diag.get('slip', 'nan'))
        ticks = float(sim_diag.get('ticks', 0) or 0)
        if ticks:  # sim_node's own view: steps taken without a
            row['late'] = float(sim_diag.get('late_commands', 0)) / ticks  # command since the last state
        for q in ('p50', 'p99', 'max'):  # state -> command at the plant (one hop each way)
            if f'answer_{q}' in sim_diag:
                row[f'plant_{q}'] = float(sim_diag[f'answer_{q}'])
    if ctrl_diag:
        row['overruns'] = int(ctrl_diag.get('overruns', 0))
        row['safe_commands'] = int(ctrl_diag.get('safe_commands', 0))
        row['compute_p99'] = float(ctrl_diag.get('compute_p99', 'nan'))
    row['ok'] = True
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--robots', nargs='+', default=ROBOTS, help='robots (default: all nine)')
    ap.add_argument('--duration', type=float, default=20.0, help='measured window per robot [s] (default 20)')
    ap.add_argument('--hogs', type=int, default=0, help='CPU hogs (python busy loops) beside the graph')
    ap.add_argument('--timing', choices=['realtime', 'lockstep'], default='realtime')
    ap.add_argument('--startup', type=float, default=90.0, help='max wait for the first command [s]')
    ap.add_argument('--logdir', default='out', help='node logs (default out/)')
    ap.add_argument('--csv', default=None, help='append the rows to this CSV file')
    a = ap.parse_args(argv)
    from robot_dynamics.ros.bringup import use_discovery_env

    use_discovery_env()  # DDS on loopback (the package's profile) unless widened
    os.environ.setdefault('ROS_DOMAIN_ID', str(random.SystemRandom().randint(101, 200)))
    os.makedirs(a.logdir, exist_ok=True)
    hogs = [subprocess.Popen([sys.executable, '-c', 'while 1: pass']) for _ in range(a.hogs)]
    rows = []
    try:
        print(
            f'# {a.timing} graphs, {a.duration:g} s window, {a.hogs} CPU hog(s), '
            f'{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}'
        )
        print(
            f'{"robot":22s} {"sim Hz":>7s} {"js Hz cfg":>9s} {"js Hz":>7s} {"RTF":>5s} {"cmd Hz":>7s} '
            f'{"lat p50":>8s} {"p99":>7s} {"max":>7s} {"overruns":>8s} {"safe":>5s} {"comp p99":>8s} {"late %":>7s} '
            f'{"plant p50":>9s} {"p99":>6s} {"max":>6s}  (ms)'
        )
        for r in a.robots:
            row = _probe_run(r, a.duration, a.timing, a.startup, a.logdir)
            rows.append(row)
            if not row['ok']:
                print(f'{r:22s} ERROR: {row.get("error")}', flush=True)
                continue
            f = lambda k, s=1e3: f'{row[k] * s:.2f}' if k in row else '-'  # noqa: E731
            print(
                f'{r:22s} {row["rate"]:7.0f} {row["publish_rate"]:9.0f} {row["js_rate"]:7.1f} '
                f'{row["rtf"]:5.2f} {row["cmd_rate"]:7.1f} {f("lat_p50"):>8s} {f("lat_p99"):>7s} '
                f'{f("lat_max"):>7s} {str(row.get("overruns", "-")):>8s} {str(row.get("safe_commands", "-")):>5s} '
                f'{f("compute_p99"):>8s} {f("late", 100):>7s} {f("plant_p50"):>9s} {f("plant_p99"):>6s} '
                f'{f("plant_max"):>6s}',
                flush=True,
            )
    finally:
        for h in hogs:
            h.kill()
    if a.csv:
        import csv

        keys = sorted({k for r in rows for k in r})
        new = not os.path.exists(a.csv)
        with open(a.csv, 'a', newline='') as fh:
            w = csv.DictWriter(fh, keys + ['hogs', 'timing'])
            if new:
                w.writeheader()
            for r in rows:
                w.writerow({**r, 'hogs': a.hogs, 'timing': a.timing})
    return 0


if __name__ == '__main__':
    sys.exit(main())
