"""Nodes start in seconds: after ``robot-dynamics warmup`` no node compiles a kernel.

A session fixture runs :func:`robot_dynamics.tools.warmup.warmup` in-process first: the test suite runs
the SOURCE tree (conftest puts it on PYTHONPATH for the node processes too), whose numba cache is
the one the nodes load. Then, for every robot config, the config's nodes are started with the
built-in launcher (its command, its parameters), from a working directory that contains a fake
``robot_dynamics`` package that fails on import (the nodes must run the package of their
``sys.path``, never the working directory's), with ``NUMBA_DEBUG_CACHE=1``; the test measures, per
node, the time from the start of the processes to the node's first output message (wall time,
and the node's own CPU time: see the bounds below) and checks that no process compiled (saved) a
kernel while the graph ran (five outputs per node, so the steady-state calls ran too). This
also checks that the warm-up covers what the nodes call.
"""

import suite_paths
import io
import os
import subprocess
import sys
import time

import pytest

rclpy = pytest.importorskip('rclpy')  # installed by scripts/test.sh; never missing in CI

from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from robot_dynamics.ros.bringup import load_bringup  # noqa: E402
from robot_dynamics.ros.launcher import Launcher  # noqa: E402
from robot_dynamics.tools.warmup import _NODES, robot_names  # noqa: E402
from ros_helpers import DEEP, Probe, assert_no_process_left  # noqa: E402

pytestmark = pytest.mark.ros

ROOT = suite_paths.ROOT

# Bounds on process start -> first output message of every node (the first state of sim_node, the
# first command cycle of a controller, ...). The direct check that no node compiles is the
# NUMBA_DEBUG_CACHE log (no kernel saved); the bounds catch a start that got expensive some other
# way. Compiling one kernel family takes 20-230 s of CPU on the 2-core CI machine (3x that on a
# 3x slower one), so a node that compiles at start exceeds both bounds by far.
# * START_BOUND, on the node's own CPU time (user + system, /proc) until its first output: a
#   cached start costs 0.4-2.2 s of CPU on the 2-core CI machine (interpreter, rclpy, numpy and
#   numba imports, numba's first-call set-up ~1 s, loading the cached kernels, the model) and up
#   to 9.5 s on a CI machine 3x slower (its Python and numpy ran 3x slower: bench_rigid_step
#   five_bar 161 us against 52.5 us). CPU time does not depend on how busy the machine is.
# * WALL_BOUND, on wall time: all nodes of a config start together (as the launcher does); on the
#   shared 2-core machine (load average ~4 from other jobs) their first outputs came after
#   1.4-7.2 s, on the 3x slower machine up to 23 s (CPU contention, DDS discovery, a controller
#   waits for the plant's first state and the reference). The nodes start at normal scheduling
#   (a SCHED_FIFO control path that cannot keep up fills both cores: see the test).
START_BOUND = 15.0
WALL_BOUND = 90.0

# executable -> (topic of its first output, type); '~' = the node's name
FIRST_OUTPUT = {
    'sim_node': ('joint_states', JointState),
    'kinematics_node': ('~/loop_residual', Float64MultiArray),
    'trajectory_node': ('reference/derivatives', Float64MultiArray),
    'dynamics_node': ('~/tracking_error', Float64MultiArray),
    'controller_node': ('~/tracking_error', Float64MultiArray),
    'ik_node': ('~/diagnostics', Float64MultiArray),
    'ip_controller': ('~/diagnostics', Float64MultiArray),
    'vdc_controller': ('~/diagnostics', Float64MultiArray),
    'sea_controller': ('~/tracking_error', Float64MultiArray),
}
FAKE = 'FAKE robot_dynamics of the working directory imported'


def _fake_package(directory):
    pkg = os.path.join(directory, 'robot_dynamics')
    os.makedirs(os.path.join(pkg, 'nodes'), exist_ok=True)
    for f in ('__init__.py', os.path.join('nodes', '__init__.py')):
        with open(os.path.join(pkg, f), 'w') as fh:
            fh.write(f'raise ImportError({FAKE!r})\n')


@pytest.fixture(scope='session')
def warm_cache():
    """Compile and cache the kernels of every config for the package under test (the source
    tree): minutes on a cold cache, a few seconds on a warm one."""
    from robot_dynamics.tools.warmup import warmup

    return warmup(progress=None)


def test_every_executable_has_a_warmup_and_an_output():
    exes = {s.executable for r in robot_names() for s in load_bringup(r).nodes}
    assert exes, 'no node in the configs'
    assert exes <= set(_NODES), f'no warm-up for {sorted(exes - set(_NODES))} (robot_dynamics/tools/warmup.py)'
    assert exes <= set(FIRST_OUTPUT), sorted(exes - set(FIRST_OUTPUT))


def test_launcher_runs_the_package_on_sys_path_not_the_working_directory(tmp_path, monkeypatch):
    """The node command (interpreter flags, working directory, environment of the launcher)
    imports the package of PYTHONPATH (here: the source tree under test) or the installed one,
    never a robot_dynamics/ in the caller's directory or in the nodes' working directory."""
    _fake_package(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    b = load_bringup('five_bar')
    show = ['-c', 'import robot_dynamics, sys; print(robot_dynamics.__file__)']
    launcher = Launcher(b)
    try:
        assert os.path.realpath(launcher.cwd) != os.path.realpath(str(tmp_path))
        if sys.version_info >= (3, 11):
            assert launcher.python_flags() == ['-P']
            _fake_package(launcher.cwd)  # only -P keeps the nodes' own directory out
        cmd = launcher.command(b.nodes[0])
        assert cmd[cmd.index('-m') + 1] == 'robot_dynamics.ros.sim_node'
        r = subprocess.run(
            cmd[: cmd.index('-m')] + show,
            cwd=launcher.cwd,
            env=launcher.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0 and FAKE not in r.stderr, r.stderr
        assert os.path.realpath(r.stdout.strip()) == os.path.join(
            os.path.realpath(ROOT), 'robot_dynamics', '__init__.py'
        )
    finally:
        launcher.shutdown()
    # without PYTHONPATH: the installed package (if this interpreter has one), never the fakes
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    launcher = Launcher(b, env=env)
    try:
        if sys.version_info >= (3, 11):
            _fake_package(launcher.cwd)
        cmd = launcher.command(b.nodes[0])
        r = subprocess.run(
            cmd[: cmd.index('-m')] + show,
            cwd=launcher.cwd,
            env=launcher.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        launcher.shutdown()
    assert FAKE not in r.stderr, r.stderr
    if r.returncode == 0:
        path = os.path.realpath(r.stdout.strip())
        assert not path.startswith(os.path.realpath(str(tmp_path))), path
        assert path.startswith(os.path.realpath(sys.prefix)), path  # the installed package
    else:
        assert 'No module named' in r.stderr, r.stderr  # not installed here


def test_relative_paths_keep_their_meaning(tmp_path, monkeypatch):
    """The nodes run elsewhere: relative PYTHONPATH entries and model paths are made absolute,
    empty PYTHONPATH entries (= the working directory) dropped."""
    import shutil

    import yaml

    b = load_bringup('four_bar')
    shutil.copy(b.urdf, tmp_path / 'mine.urdf')
    monkeypatch.chdir(tmp_path)
    spec = b.nodes[0]
    spec.parameters['robot_description'] = 'mine.urdf'
    launcher = Launcher(b, env=dict(os.environ, PYTHONPATH=os.pathsep.join(['', 'src', ROOT])))
    try:
        assert launcher.env['PYTHONPATH'] == os.pathsep.join([str(tmp_path / 'src'), ROOT])
        cmd = launcher.command(spec)
        with open(cmd[-1]) as fh:
            params = yaml.safe_load(fh)
        assert params['/sim_node']['ros__parameters']['robot_description'] == str(tmp_path / 'mine.urdf')
    finally:
        launcher.shutdown()


def _topic(spec):
    topic, typ = FIRST_OUTPUT[spec.executable]
    return (f'/{spec.name}/{topic[2:]}' if topic.startswith('~/') else topic), typ


def _cpu_seconds(pid):
    """user + system CPU time [s] of a live process (Linux /proc)."""
    try:
        with open(f'/proc/{pid}/stat') as fh:
            f = fh.read().rsplit(')', 1)[1].split()
    except OSError:
        return float('nan')
    return (int(f[11]) + int(f[12])) / os.sysconf('SC_CLK_TCK')


@pytest.mark.parametrize('robot', robot_names())
def test_nodes_start_without_compiling(robot, warm_cache, tmp_path, monkeypatch):
    _fake_package(str(tmp_path))
    monkeypatch.chdir(tmp_path)  # a robot_dynamics/ here must not be imported
    b = load_bringup(robot)
    # start-up is measured at normal scheduling: a config's SCHED_FIFO control path (irsbot2_t1)
    # on a machine too slow for its 1 kHz plant fills both cores and starves the observers at
    # normal priority (kinematics_node) for minutes; its real-time runs have their own tests
    for s in b.nodes:
        s.rt_priority = 0
    out = io.StringIO()
    launcher = Launcher(b, out=out, env=dict(os.environ, NUMBA_DEBUG_CACHE='1'))
    probe = Probe(None)
    first, count = {}, {s.name: 0 for s in b.nodes}

    def on_msg(name, msg):
        count[name] += 1
        if name not in first:  # arrival (wall) and the node's CPU time so far
            first[name] = (time.monotonic() - t0, _cpu_seconds(launcher.procs[name].pid))

    for spec in b.nodes:
        topic, typ = _topic(spec)
        probe.node.create_subscription(typ, topic, lambda m, n=spec.name: on_msg(n, m), DEEP)
    t0 = time.monotonic()
    launcher.start()
    try:
        # every node's first output; then a few more (a plant step after a command, the
        # controllers' next cycles) so that the steady-state calls run too
        t_end = time.monotonic() + WALL_BOUND + 10.0
        while time.monotonic() < t_end and min(count.values()) < 5 and launcher.poll() is None:
            time.sleep(0.05)
        dead = launcher.poll()
    finally:
        probe.close()
        launcher.shutdown()
    assert_no_process_left(launcher)
    log = out.getvalue()
    assert dead is None, f'{robot}: node {dead} died:\n{log[-3000:]}'
    print(
        f'{robot}: process start -> first output, wall [s] / node CPU [s]: '
        + ', '.join(f'{n} {w:.2f}/{c:.2f}' for n, (w, c) in first.items())
    )
    assert FAKE not in log
    compiled = sorted(
        {
            ln.split('] ', 1)[0] + ']'
            for ln in log.splitlines()
            if '[cache] data saved' in ln or '[cache] index saved' in ln
        }
    )
    assert not compiled, (
        f'{robot}: node(s) {compiled} compiled kernels at start (missing from '
        f'robot_dynamics/tools/warmup.py):\n' + '\n'.join(ln for ln in log.splitlines() if 'saved' in ln)[:3000]
    )
    assert min(count.values()) >= 5, f'{robot}: outputs per node within {WALL_BOUND + 10.0:g} s: {count}\n{log[-3000:]}'
    slow = {n: round(c, 2) for n, (w, c) in first.items() if not c <= START_BOUND}
    assert not slow, f'{robot}: more than {START_BOUND} s of CPU before the first output: {slow}'
    late = {n: round(w, 2) for n, (w, c) in first.items() if w > WALL_BOUND}
    assert not late, f'{robot}: first output later than {WALL_BOUND} s after the start: {late}'
