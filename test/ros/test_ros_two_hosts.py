"""Two hosts: the plant on one, the controller on the other, as a multi-machine robot is set up.

Two network namespaces joined by a veth pair play two machines on a LAN (10.78.0.1 and
10.78.0.2, multicast on; the addresses exist only inside those namespaces and the test deletes
both namespaces). The plant host runs five_bar's sim_node (``robot-dynamics launch five_bar
--nodes sim_node``), the control host the rest of its graph (kinematics_node, trajectory_node,
dynamics_node, by the built-in launcher) and a probe, in lock-step (simulated time: every state and command must cross the link, and
/clock with them).

* With the settings docs/launch_and_safety.md gives for a robot on several machines
  (``ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET`` on both hosts): the controller receives the plant's
  joint states and the graph tracks the circle as on one host (the five_bar demo's 15 mm bound,
  measured ~0.1 mm).
* With the default settings (DDS on loopback): nothing crosses: the control host sees no joint
  state and its controller never answers one.

Needs root (``ip netns``), which CI has.
"""

import suite_paths
import json
import os
import shutil
import subprocess
import sys
import textwrap
import uuid

import pytest

from robot_dynamics.tools.demos import DEMOS

pytestmark = pytest.mark.ros

ROOT = suite_paths.ROOT

# one host: its share of five_bar's lock-step graph, started by the built-in launcher; the control
# host also spins a probe (tracking error and joint states) and prints what it saw as JSON
# the control host: five_bar's lock-step graph without sim_node, by the built-in launcher, and a
# probe (tracking error, joint states); prints what it saw as JSON
HOST = textwrap.dedent(r"""
    import dataclasses, json, os, sys, time
    mode, seconds = sys.argv[1], float(sys.argv[2])
    if mode == 'default':                # the package's loopback profile, as the launcher's
        from robot_dynamics.ros.bringup import use_discovery_env
        use_discovery_env()
    import rclpy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from robot_dynamics.ros.bringup import load_bringup
    from robot_dynamics.ros.launcher import Launcher
    b = load_bringup('five_bar', timing='lockstep')
    launcher = Launcher(dataclasses.replace(b, nodes=[s for s in b.nodes if s.executable != 'sim_node']),
                        env=dict(os.environ), out=open(os.devnull, 'w'))
    seen = {'js': 0, 'err': [], 'alive': True}
    rclpy.init()
    probe = rclpy.create_node('two_hosts_probe')
    probe.create_subscription(JointState, '/joint_states', lambda m: seen.__setitem__('js', seen['js'] + 1), 100)
    probe.create_subscription(Float64MultiArray, '/dynamics_node/tracking_error',
                              lambda m: seen['err'].append(list(m.data)), 100)
    launcher.start()
    try:
        t_end = time.monotonic() + seconds
        while time.monotonic() < t_end:
            rclpy.spin_once(probe, timeout_sec=0.05)
            seen['alive'] = seen['alive'] and launcher.poll() is None
    finally:
        launcher.shutdown(timeout=5.0)
    print(json.dumps(seen))
""")


def _ip(*args):
    return subprocess.run(['ip', *args], capture_output=True, text=True)


@pytest.fixture
def two_hosts():
    """Two network namespaces joined by a veth pair (10.78.0.1 / 10.78.0.2), deleted after."""
    if not shutil.which('ip'):
        pytest.fail('ip (iproute2) is needed: apt-get install iproute2')
    tag = uuid.uuid4().hex[:6]
    a, b = f'rdplant{tag}', f'rdctl{tag}'
    r = _ip('netns', 'add', a)
    if r.returncode:
        pytest.skip(f'network namespaces are not permitted here: {r.stderr.strip()[:200]}')
    try:
        _ip('netns', 'add', b)
        va, vb = f'va{tag}', f'vb{tag}'
        steps = [
            ('link', 'add', va, 'type', 'veth', 'peer', 'name', vb),
            ('link', 'set', va, 'netns', a),
            ('link', 'set', vb, 'netns', b),
            ('-n', a, 'addr', 'add', '10.78.0.1/24', 'dev', va),
            ('-n', b, 'addr', 'add', '10.78.0.2/24', 'dev', vb),
        ]
        for ns, dev in ((a, va), (b, vb)):
            steps += [
                ('-n', ns, 'link', 'set', 'lo', 'up'),
                ('-n', ns, 'link', 'set', dev, 'multicast', 'on', 'up'),
                ('-n', ns, 'route', 'add', 'default', 'dev', dev),
            ]
        for st in steps:
            r = _ip(*st)
            assert r.returncode == 0, (st, r.stderr)
        yield a, b
    finally:
        _ip('netns', 'del', a)
        _ip('netns', 'del', b)
    assert a not in _ip('netns', 'list').stdout


def _run(hosts, mode, tmp_path, seconds=25.0):
    """The plant host: ``robot-dynamics launch five_bar --nodes sim_node`` (as a user starts it on
    the machine with the drivers); the control host: the rest of the graph and the probe (HOST).
    ``mode`` 'subnet': ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET on both; 'default': no DDS
    variable (the launcher's loopback profile)."""
    (tmp_path / 'host.py').write_text(HOST)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ('ROS_AUTOMATIC_DISCOVERY_RANGE', 'FASTDDS_DEFAULT_PROFILES_FILE')
    }
    env['PYTHONPATH'] = os.pathsep.join([ROOT] + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p])
    if mode == 'subnet':
        env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'SUBNET'
    cmds = {
        'plant': [
            sys.executable,
            '-m',
            'robot_dynamics.tools.cli',
            'launch',
            'five_bar',
            '--timing',
            'lockstep',
            '--nodes',
            'sim_node',
            '--duration',
            str(seconds),
        ],
        'control': [sys.executable, str(tmp_path / 'host.py'), mode, str(seconds)],
    }
    procs = {
        role: subprocess.Popen(
            ['ip', 'netns', 'exec', ns] + cmds[role],
            env=env,
            cwd=str(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for role, ns in zip(('plant', 'control'), hosts)
    }
    res = {}
    for role, p in procs.items():
        out, err = p.communicate(timeout=seconds + 120)
        assert p.returncode == 0, (role, out[-3000:], err[-3000:])
        res[role] = json.loads(out.strip().splitlines()[-1]) if role == 'control' else {'log': out + err}
    return res


def test_plant_and_controller_on_two_hosts_with_subnet_discovery(two_hosts, tmp_path):
    res = _run(two_hosts, 'subnet', tmp_path)
    ctl = res['control']
    err = [max(abs(v) for v in e[:2]) for e in ctl['err']]
    late = err[len(err) // 4 :]  # after the start transient
    print(
        f'\ntwo hosts, SUBNET: {ctl["js"]} joint states crossed, {len(err)} tracking samples, '
        f'max |e| after the first quarter {max(late, default=float("nan")) * 1e3:.3f} mm'
    )
    assert ctl['alive'], res
    assert ctl['js'] > 200, ctl['js']
    assert len(late) > 100 and max(late) < DEMOS['five_bar'].bound, (len(late), max(late, default=None))


def test_nothing_crosses_between_hosts_with_the_default_settings(two_hosts, tmp_path):
    res = _run(two_hosts, 'default', tmp_path, seconds=12.0)
    print(
        f'\ntwo hosts, default settings: {res["control"]["js"]} joint states crossed, '
        f'{len(res["control"]["err"])} tracking samples'
    )
    assert res['control']['alive'], res
    assert 'loopback only' in res['plant']['log'], res['plant']['log'][-2000:]
    assert res['control']['js'] == 0 and not res['control']['err'], res['control']
