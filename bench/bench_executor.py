"""CPU per message of the rclpy executors our nodes can spin in, measured side by side.

A 'plant' process publishes a 21-joint ``sensor_msgs/JointState`` from a 1 kHz steady timer, a
'controller' process answers each with a 6-value ``std_msgs/Float64MultiArray`` (the shape of the
Gough-Stewart graph's hop). Both run the same executor; the CPU time of each process over the
window divided by the messages answered is printed for rclpy's ``SingleThreadedExecutor``
(the anchor: what ``rclpy.spin`` uses) and ``EventsExecutor`` (what ``spin_node`` uses,
``robot_dynamics.ros._common.make_executor``), with the ratio.

    .venv/bin/python bench/bench_executor.py [--seconds 8]

Run it on an otherwise idle machine (the numbers are CPU time, not wall time, so other load
changes them less, but it still does). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, sys, time
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from robot_dynamics.ros._common import make_executor
role, kind, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
rclpy.init()
n = Node('bench_' + role)
count = [0]
if role == 'plant':
    from rclpy.clock import Clock, ClockType
    pub = n.create_publisher(JointState, 'bench_js', 10)
    names = [f'j{i}' for i in range(21)]
    def tick():
        m = JointState()
        m.header.stamp = n.get_clock().now().to_msg()
        m.name, m.position, m.velocity = names, [0.1] * 21, [0.0] * 21
        pub.publish(m)
    n.create_timer(1e-3, tick, clock=Clock(clock_type=ClockType.STEADY_TIME))
    n.create_subscription(Float64MultiArray, 'bench_cmd', lambda m: count.__setitem__(0, count[0] + 1), 10)
else:
    pub = n.create_publisher(Float64MultiArray, 'bench_cmd', 10)
    def answer(m):
        count[0] += 1
        pub.publish(Float64MultiArray(data=list(m.position[:6])))
    n.create_subscription(JointState, 'bench_js', answer, 10)
ex = make_executor(kind)
ex.add_node(n)
t_end = time.monotonic() + 2.0
while time.monotonic() < t_end:          # discovery and warm-up
    ex.spin_once(timeout_sec=0.1)
c0, n0, w0 = time.process_time(), count[0], time.monotonic()
while time.monotonic() - w0 < seconds:
    ex.spin_once(timeout_sec=0.1)
cpu, msgs = time.process_time() - c0, count[0] - n0
print(json.dumps(dict(role=role, kind=kind, msgs=msgs, cpu=cpu, wall=time.monotonic() - w0)), flush=True)
"""


def run(kind, seconds, env):
    procs = [
        subprocess.Popen(
            [sys.executable, '-c', CHILD, role, kind, str(seconds)], env=env, stdout=subprocess.PIPE, text=True
        )
        for role in ('plant', 'controller')
    ]
    out = {}
    for p in procs:
        stdout, _ = p.communicate(timeout=seconds + 60)
        r = json.loads(stdout.strip().splitlines()[-1])
        out[r['role']] = r
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument('--seconds', type=float, default=8.0, help='measured window per executor [s]')
    a = ap.parse_args(argv)
    from robot_dynamics.ros.bringup import discovery_env

    env = dict(
        os.environ,
        ROS_DOMAIN_ID=str(random.randint(150, 230)),
        ROS_LOG_DIR=os.environ.get('ROS_LOG_DIR', tempfile.mkdtemp(prefix='bench_executor_')),
    )
    env.update(discovery_env(env))  # DDS on loopback (the package's profile) unless widened
    print(
        f'# 1 kHz JointState (21 joints) -> Float64MultiArray (6) round trip, {a.seconds:g} s per executor, '
        f'{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}'
    )
    print(
        f'{"executor":<24}{"answered":>10}{"plant us/msg":>14}{"ctrl us/msg":>13}{"plant CPU %":>13}{"ctrl CPU %":>12}'
    )
    res = {}
    for kind, label in (('single', 'SingleThreadedExecutor'), ('events', 'EventsExecutor')):
        r = run(kind, a.seconds, env)
        per = {k: 1e6 * v['cpu'] / max(v['msgs'], 1) for k, v in r.items()}
        res[kind] = per
        print(
            f'{label:<24}{r["controller"]["msgs"]:>10d}{per["plant"]:>14.0f}{per["controller"]:>13.0f}'
            f'{100 * r["plant"]["cpu"] / r["plant"]["wall"]:>13.1f}{100 * r["controller"]["cpu"] / r["controller"]["wall"]:>12.1f}'
        )
        time.sleep(0.5)
    print(
        f'ratio single / events: plant {res["single"]["plant"] / res["events"]["plant"]:.2f}x, '
        f'controller {res["single"]["controller"] / res["events"]["controller"]:.2f}x'
    )


if __name__ == '__main__':
    main()
