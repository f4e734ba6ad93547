"""The built-in launcher's stop guarantees and DDS confinement (docs/launch_and_safety.md).

Most tests run the real :class:`~robot_dynamics.ros.launcher.Launcher` in a separate "launcher"
process (a small driver script, so that it can be SIGHUPed / SIGKILLed) over test-only fake
nodes (plain Python, no ROS: they print ``ready``, log the signals they get and can ignore
SIGINT and/or SIGTERM like a hung node). Every child's PID comes from the launcher's output
(``started NAME (pid N)``, ``watchdog (pid N)``); "gone" = no such process (or a zombie) with
the start time recorded while it ran. Deadlines are bounded (a few seconds each).
"""

import suite_paths
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from robot_dynamics.ros.bringup import (
    DISCOVERY_RANGE_VAR,
    FASTDDS_PROFILES_VAR,
    USER_DISCOVERY_VARS,
    Bringup,
    BringupError,
    NodeSpec,
    describe_discovery,
    discovery_env,
    load_bringup,
    loopback_profile,
)
from robot_dynamics.ros.launcher import Launcher

from ros_helpers import NETNS_LAN

ROOT = suite_paths.ROOT

FAKE_NODE = textwrap.dedent('''
    """Test-only node: prints ready, logs signals, ignores those in its 'ignore' parameter."""
    import signal, sys, time
    import yaml
    pf = sys.argv[sys.argv.index('--params-file') + 1]
    with open(pf) as fh:
        params = next(iter(yaml.safe_load(fh).values()))['ros__parameters']
    ignore = params.get('ignore', [])

    def say(*a):
        try:
            print(*a, flush=True)
        except OSError:          # the launcher is gone (broken pipe): a hung node stays hung
            pass

    def on_signal(signum, frame):
        name = signal.Signals(signum).name
        say('got', name)
        if name not in ignore:
            sys.exit(0)
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, on_signal)
    say('ready')
    while True:
        if params.get('chatty'):
            say('tick')
        time.sleep(0.05)
''')

DRIVER = textwrap.dedent('''
    """A launcher process over fake nodes: argv[1] = JSON {nodes: {name: params}, launcher: {...}}."""
    import json, sys
    from robot_dynamics.ros.bringup import Bringup, NodeSpec
    from robot_dynamics.ros.launcher import Launcher

    class FakeSpec(NodeSpec):
        @property
        def module(self):
            return 'fake_node'

    cfg = json.loads(sys.argv[1])
    nodes = [FakeSpec(name=n, executable='sim_node', parameters=p) for n, p in cfg['nodes'].items()]
    b = Bringup(robot='fake', urdf='', loops='', rviz='', nodes=nodes, source='<test>')
    sys.exit(Launcher(b, **cfg.get('launcher', {})).run(duration=cfg.get('duration')))
''')


class FakeSpec(NodeSpec):
    @property
    def module(self):
        return 'fake_node'


def _start_time(pid):
    """Start time (clock ticks since boot) of a live, non-zombie process, else None."""
    try:
        with open(f'/proc/{pid}/stat') as fh:
            f = fh.read().rsplit(')', 1)[1].split()
    except OSError:
        return None
    return None if f[0] in 'ZX' else int(f[19])


def _gone(pid, start):
    return _start_time(pid) != start


def _wait_gone(procs, deadline):
    """Seconds until every (pid, start) in ``procs`` is gone; AssertionError after ``deadline``."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < deadline:
        if all(_gone(p, s) for p, s in procs.values()):
            return time.monotonic() - t0
        time.sleep(0.02)
    left = [n for n, (p, s) in procs.items() if not _gone(p, s)]
    raise AssertionError(f'still running after {deadline} s: {left}')


def _kill_leftovers(procs):
    for pid, start in procs.values():
        if not _gone(pid, start):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass


@pytest.fixture
def fake_env(tmp_path):
    """Environment for a launcher process over fake nodes (their module on PYTHONPATH)."""
    (tmp_path / 'fake_node.py').write_text(FAKE_NODE)
    (tmp_path / 'driver.py').write_text(DRIVER)
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        [str(tmp_path), ROOT] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep) if p]
    )
    return tmp_path, env


class LauncherProcess:
    """The driver in its own session (signals reach it alone, as from a terminal); its output
    is read in a thread; ``wait_ready`` collects the children's PIDs."""

    def __init__(self, tmp_path, env, nodes, launcher=None, duration=None):
        cfg = {'nodes': nodes, 'launcher': launcher or {}, 'duration': duration}
        self.names = list(nodes)
        self.proc = subprocess.Popen(
            [sys.executable, str(tmp_path / 'driver.py'), json.dumps(cfg)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=str(tmp_path),
            start_new_session=True,
        )
        self.lines = []
        self.lock = threading.Lock()
        self.children = {}
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for line in iter(self.proc.stdout.readline, ''):
                with self.lock:
                    self.lines.append(line.rstrip('\n'))
        except (OSError, ValueError):  # the test closed the pipe (terminal gone)
            pass

    def text(self):
        with self.lock:
            return '\n'.join(self.lines)

    def wait_for(self, what, timeout=30.0):
        t_end = time.monotonic() + timeout
        while time.monotonic() < t_end:
            if what in self.text():
                return
            if self.proc.poll() is not None:
                time.sleep(0.2)
                if what in self.text():
                    return
                break
            time.sleep(0.02)
        raise AssertionError(f'no {what!r} in the launcher output:\n{self.text()[-3000:]}')

    def wait_ready(self, timeout=30.0):
        for n in self.names:
            self.wait_for(f'[{n}] ready', timeout)
        for line in self.text().splitlines():
            for key, label in (('] started ', None), ('watchdog (pid ', 'watchdog')):
                if key in line and '(pid ' in line:
                    name = label or line.split('] started ', 1)[1].split(' ', 1)[0]
                    pid = int(line.split('(pid ', 1)[1].split(')', 1)[0])
                    self.children[name] = (pid, _start_time(pid))
        assert set(self.names) | {'watchdog'} <= set(self.children), self.text()
        assert all(s is not None for _, s in self.children.values()), self.children
        return self.children

    def cleanup(self):
        _kill_leftovers(self.children)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.fixture
def launch(fake_env):
    made = []

    def make(nodes, **kw):
        lp = LauncherProcess(*fake_env, nodes, **kw)
        made.append(lp)
        return lp

    yield make
    for lp in made:
        lp.cleanup()


HUNG = {'ignore': ['SIGINT', 'SIGTERM']}


def test_sighup_with_the_terminal_gone_stops_every_node(launch):
    """Closing the terminal: SIGHUP and no more output possible (the pipe is closed)."""
    lp = launch({'a': {'chatty': True}, 'b': {}}, launcher={'sigterm_timeout': 3.0})
    kids = lp.wait_ready()
    lp.proc.send_signal(signal.SIGHUP)
    lp.proc.stdout.close()  # the terminal is gone: writes fail
    dt = _wait_gone(kids, 6.0)
    lp.proc.wait(timeout=5)
    print(f'SIGHUP: every child gone after {dt:.2f} s')


def test_sighup_is_reported_and_clean(launch):
    lp = launch({'a': {}, 'b': {}})
    kids = lp.wait_ready()
    lp.proc.send_signal(signal.SIGHUP)
    assert lp.proc.wait(timeout=10) == 0
    _wait_gone(kids, 2.0)
    lp.wait_for('all nodes stopped', 5.0)
    out = lp.text()
    assert 'SIGHUP' in out and '[a] got SIGINT' in out and 'Traceback' not in out, out


def test_sigterm_of_the_launcher_stops_every_node(launch):
    lp = launch({'a': {}, 'b': {}})
    kids = lp.wait_ready()
    lp.proc.send_signal(signal.SIGTERM)
    assert lp.proc.wait(timeout=10) == 0
    dt = _wait_gone(kids, 2.0)
    assert 'SIGTERM: shutting down' in lp.text()
    print(f'SIGTERM: every child gone after {dt:.2f} s')


def test_sigkill_of_the_launcher_stops_every_node(launch):
    """SIGKILL cannot be handled: the parent-death signal (SIGTERM) stops the nodes."""
    lp = launch({'a': {}, 'b': {}, 'c': {}})
    kids = lp.wait_ready()
    lp.proc.kill()
    dt = _wait_gone(kids, 3.0)
    print(f'SIGKILL of the launcher: every child gone after {dt:.2f} s')


def test_sigkill_of_the_launcher_with_a_hung_node(launch):
    """A node that ignores SIGINT and SIGTERM is SIGKILLed by the watchdog after
    ``sigkill_timeout``."""
    lp = launch({'ok': {}, 'hung': HUNG}, launcher={'sigkill_timeout': 1.0})
    kids = lp.wait_ready()
    lp.proc.kill()
    t0 = time.monotonic()
    dt_ok = _wait_gone({'ok': kids['ok']}, 3.0)
    _wait_gone(kids, 4.0)
    dt = time.monotonic() - t0
    assert dt >= 0.9  # the hung node got its grace, then SIGKILL
    print(f'SIGKILL of the launcher: ok node gone after {dt_ok:.2f} s, hung node and watchdog after {dt:.2f} s')


def test_hung_node_is_escalated_with_deadlines(launch):
    lp = launch({'ok': {}, 'hung': HUNG}, launcher={'sigterm_timeout': 1.0, 'sigkill_timeout': 1.0})
    kids = lp.wait_ready()
    t0 = time.monotonic()
    lp.proc.send_signal(signal.SIGINT)
    assert lp.proc.wait(timeout=10) == 0
    dt = time.monotonic() - t0
    _wait_gone(kids, 1.0)
    lp.wait_for('all nodes stopped', 5.0)
    out = lp.text()
    assert '[hung] got SIGINT' in out and '[hung] got SIGTERM' in out
    assert 'still running: hung; sending SIGTERM' in out and 'still running: hung; sending SIGKILL' in out
    assert 'Traceback' not in out
    assert 1.9 < dt < 5.0, dt  # 1 s after SIGINT: SIGTERM, 1 s later: SIGKILL
    print(f'hung node: SIGINT -> SIGTERM -> SIGKILL, launcher done after {dt:.2f} s')


def test_double_ctrl_c_is_clean_and_quick(launch):
    """Ctrl-C, then Ctrl-C again while a node hangs: the next signal at once, no traceback."""
    lp = launch({'ok': {}, 'hung': {'ignore': ['SIGINT']}}, launcher={'sigterm_timeout': 60.0})
    kids = lp.wait_ready()
    lp.proc.send_signal(signal.SIGINT)
    lp.wait_for('[hung] got SIGINT', 10.0)
    t0 = time.monotonic()
    lp.proc.send_signal(signal.SIGINT)
    assert lp.proc.wait(timeout=10) == 0
    dt = _wait_gone(kids, 2.0)
    lp.wait_for('all nodes stopped', 5.0)
    out = lp.text()
    assert 'stop signal again' in out and '[hung] got SIGTERM' in out
    assert 'Traceback' not in out and 'KeyboardInterrupt' not in out, out
    assert time.monotonic() - t0 < 5.0  # not the 60 s deadline
    print(f'double Ctrl-C: every child gone {dt:.2f} s after the second one')


def test_triple_ctrl_c_kills_a_node_that_ignores_everything(launch):
    lp = launch({'hung': HUNG}, launcher={'sigterm_timeout': 60.0, 'sigkill_timeout': 60.0})
    kids = lp.wait_ready()
    lp.proc.send_signal(signal.SIGINT)
    lp.wait_for('[hung] got SIGINT', 10.0)
    lp.proc.send_signal(signal.SIGINT)
    lp.wait_for('[hung] got SIGTERM', 10.0)
    lp.proc.send_signal(signal.SIGINT)
    assert lp.proc.wait(timeout=10) == 0
    _wait_gone(kids, 2.0)
    assert 'Traceback' not in lp.text()


def test_a_failing_node_stops_the_others(launch):
    """A node that dies (SIGKILLed here): status 1, the others stopped."""
    lp = launch({'a': {}, 'b': {}})
    kids = lp.wait_ready()
    os.kill(kids['a'][0], signal.SIGKILL)
    assert lp.proc.wait(timeout=10) == 1
    _wait_gone(kids, 2.0)
    assert 'ERROR: node a exited with code -9' in lp.text()


# ---------------------------------------------------------------------------- in-process checks


def _fake_bringup(*names, **params):
    return Bringup(
        robot='fake',
        urdf='',
        loops='',
        rviz='',
        source='<test>',
        nodes=[FakeSpec(name=n, executable='sim_node', parameters=dict(params)) for n in names],
    )


def _environ(pid):
    with open(f'/proc/{pid}/environ', 'rb') as fh:
        return dict(kv.split('=', 1) for kv in fh.read().decode().split('\0') if '=' in kv)


def _user_shell(env, **user):
    """``env`` as a user's shell with nothing DDS-related set, plus ``user``."""
    env = {k: v for k, v in env.items() if k not in _DDS_VARS}
    env.update(user)
    return env


_DDS_VARS = (DISCOVERY_RANGE_VAR, FASTDDS_PROFILES_VAR, 'RMW_IMPLEMENTATION', *USER_DISCOVERY_VARS)
LOOPBACK = {DISCOVERY_RANGE_VAR: 'SYSTEM_DEFAULT', FASTDDS_PROFILES_VAR: loopback_profile()}


@pytest.mark.parametrize(
    'user, expected',
    [
        (None, LOOPBACK),
        ('', LOOPBACK),
        ('LOCALHOST', LOOPBACK),
        ('SUBNET', {DISCOVERY_RANGE_VAR: 'SUBNET', FASTDDS_PROFILES_VAR: None}),
    ],
)
def test_nodes_get_loopback_dds_unless_the_user_widens_it(fake_env, user, expected):
    tmp_path, env = fake_env
    env = _user_shell(env, **({} if user is None else {DISCOVERY_RANGE_VAR: user}))
    launcher = Launcher(_fake_bringup('a'), out=open(os.devnull, 'w'), env=env)
    try:
        launcher.start()
        child = _environ(launcher.procs['a'].pid)
        assert {k: child.get(k) for k in expected} == expected
        assert ('loopback only' in launcher.discovery) == (user != 'SUBNET'), launcher.discovery
        assert ('from the environment' in launcher.discovery) == (user == 'SUBNET')
    finally:
        launcher.shutdown(timeout=2.0)
    assert launcher.procs['a'].poll() is not None


def test_loopback_profile_is_package_data(monkeypatch):
    """config/fastdds_loopback.xml: found from the source tree (data_path), installed to
    share/robot_dynamics/config by setup.py (config/ is mirrored), and kept minimal: transports
    and discovery locators, no QoS."""
    import xml.etree.ElementTree as ET

    path = loopback_profile()
    assert path == os.path.join(ROOT, 'config', 'fastdds_loopback.xml') and os.path.isfile(path)
    ns = {'f': 'http://www.eprosima.com'}
    root = ET.parse(path).getroot()
    profiles = root.find('f:profiles', ns)
    assert [c.tag.split('}')[1] for c in profiles] == ['transport_descriptors', 'participant']
    part = profiles.find('f:participant', ns)
    assert part.get('is_default_profile') == 'true'
    rtps = part.find('f:rtps', ns)
    assert rtps.find('f:useBuiltinTransports', ns).text == 'false'
    kinds = {
        d.find('f:transport_id', ns).text: d.find('f:type', ns).text
        for d in profiles.find('f:transport_descriptors', ns)
    }
    assert sorted(kinds.values()) == ['SHM', 'UDPv4']
    assert [t.text for t in rtps.find('f:userTransports', ns)] == list(kinds)  # SHM first
    udp = next(d for d in profiles.find('f:transport_descriptors', ns) if d.find('f:type', ns).text == 'UDPv4')
    assert [i.get('name') for i in udp.iter('{http://www.eprosima.com}interface')] == ['127.0.0.1']
    addresses = [a.text for a in rtps.find('f:builtin', ns).iter('{http://www.eprosima.com}address')]
    assert addresses == ['127.0.0.1', '127.0.0.1']  # metatraffic unicast, initial peer
    assert not list(root.iter('{http://www.eprosima.com}qos'))
    xsd = os.path.join(sys.prefix, 'share', 'fastdds', 'fastdds_profiles.xsd')
    if os.path.isfile(xsd):  # the Fast DDS wheel's schema
        from lxml import etree

        schema = etree.XMLSchema(etree.parse(xsd))
        assert schema.validate(etree.parse(path)), schema.error_log
    import runpy

    import setuptools

    kwargs = {}
    monkeypatch.setattr(setuptools, 'setup', lambda **kw: kwargs.update(kw))
    monkeypatch.chdir(ROOT)
    runpy.run_path(os.path.join(ROOT, 'setup.py'))
    assert 'config/fastdds_loopback.xml' in dict(kwargs['data_files'])['share/robot_dynamics/config']


R, PF = DISCOVERY_RANGE_VAR, FASTDDS_PROFILES_VAR


@pytest.mark.parametrize(
    'user, added',
    [
        ({}, LOOPBACK),  # the default
        ({R: ''}, LOOPBACK),
        ({R: 'LOCALHOST'}, LOOPBACK),
        ({'RMW_IMPLEMENTATION': 'rmw_fastrtps_cpp'}, LOOPBACK),
        ({'RMW_IMPLEMENTATION': 'rmw_fastrtps_dynamic_cpp', R: 'LOCALHOST'}, LOOPBACK),
        ({R: 'SUBNET'}, {}),  # widened by the user
        ({R: 'SYSTEM_DEFAULT'}, {}),
        ({R: 'OFF'}, {}),
        ({R: 'SUBNET', 'ROS_STATIC_PEERS': 'robot-pc'}, {}),
        ({'ROS_STATIC_PEERS': '192.168.1.20;robot-pc'}, {R: 'LOCALHOST'}),  # peers: not cut off
        ({R: 'LOCALHOST', 'ROS_STATIC_PEERS': 'robot-pc'}, {}),
        ({'ROS_DISCOVERY_SERVER': '127.0.0.1:11811'}, {R: 'LOCALHOST'}),
        ({'ROS2_EASY_MODE': '192.168.1.20'}, {R: 'LOCALHOST'}),
        ({PF: '/home/me/my_fastdds.xml'}, {R: 'LOCALHOST'}),  # the user's own profile
        ({PF: '/home/me/my_fastdds.xml', R: 'LOCALHOST'}, {}),
        ({'RMW_IMPLEMENTATION': 'rmw_cyclonedds_cpp'}, {R: 'LOCALHOST'}),  # not Fast DDS
        ({'RMW_IMPLEMENTATION': 'rmw_zenoh_cpp', R: 'LOCALHOST'}, {}),
        ({'RMW_IMPLEMENTATION': 'rmw_cyclonedds_cpp', R: 'SUBNET'}, {}),
    ],
)
def test_discovery_env_table(user, added):
    assert discovery_env(user) == added
    # idempotent: the environment it makes asks for nothing more
    assert discovery_env({**user, **added}) == {}


def test_discovery_env_without_the_profile_file(monkeypatch):
    """A missing config/fastdds_loopback.xml (a broken install) never means SYSTEM_DEFAULT
    without the profile: discovery on loopback as before, and the launcher says why."""
    from robot_dynamics.ros import bringup

    monkeypatch.setattr(bringup, 'loopback_profile', lambda: '')
    assert discovery_env({}) == {R: 'LOCALHOST'}
    assert discovery_env({R: 'LOCALHOST'}) == {}
    assert 'fastdds_loopback.xml not found' in describe_discovery({R: 'LOCALHOST'})


def test_describe_discovery():
    assert 'DDS on loopback only' in describe_discovery(LOOPBACK)
    assert 'from the environment' in describe_discovery({R: 'SUBNET'})
    text = describe_discovery({R: 'LOCALHOST', 'ROS_STATIC_PEERS': 'robot-pc'})
    assert 'not confined' in text and 'ROS_STATIC_PEERS is set' in text
    text = describe_discovery({R: 'LOCALHOST', 'RMW_IMPLEMENTATION': 'rmw_cyclonedds_cpp'})
    assert 'RMW_IMPLEMENTATION=rmw_cyclonedds_cpp' in text


def test_launch_files_confine_discovery_unless_set(monkeypatch):
    """launch_ros Nodes get additional_env = discovery_env of the launch's environment: the
    loopback profile by default, nothing when it widens the range (stub launch_ros: no ROS
    installation here)."""
    import types

    made = []

    class Node:
        def __init__(self, **kw):
            self.kwargs = kw
            made.append(self)

    mod = types.ModuleType('launch_ros.actions')
    mod.Node = Node
    monkeypatch.setitem(sys.modules, 'launch_ros', types.ModuleType('launch_ros'))
    monkeypatch.setitem(sys.modules, 'launch_ros.actions', mod)
    import robot_dynamics.ros.bringup as bringup

    monkeypatch.setattr(bringup, 'ros_package_installed', lambda pkg: True)  # (no ROS install here)
    from robot_dynamics.ros.bringup import node_actions

    for environ in ({}, {DISCOVERY_RANGE_VAR: 'LOCALHOST'}):
        actions = node_actions('four_bar', 'realtime', True, environ=environ)
        assert actions and all(a.kwargs['additional_env'] == LOOPBACK for a in actions)
    actions = node_actions('four_bar', 'realtime', True, environ={DISCOVERY_RANGE_VAR: 'SUBNET'})
    assert all('additional_env' not in a.kwargs for a in actions)


def test_demo_and_record_apply_the_loopback_dds(monkeypatch):
    """`robot-dynamics demo` / `record` set the loopback profile in their own environment (the
    in-process recorder's participant, and the demo's launcher's nodes) before rclpy is
    imported; a process that already holds UDP sockets (maybe a participant made without the
    profile) gets LOCALHOST only, never SYSTEM_DEFAULT without the profile; a user's range wins."""
    from robot_dynamics.ros import bringup
    from robot_dynamics.tools import cli
    from robot_dynamics.tools import demo_runner
    from robot_dynamics.ros import bag_recorder

    seen = []
    note = lambda *a, **k: seen.append({k: os.environ.get(k) for k in (R, PF)}) or 0  # noqa: E731
    monkeypatch.setattr(demo_runner, 'run_demo', note)
    monkeypatch.setattr(bag_recorder, 'record', note)
    for var in (R, PF):
        monkeypatch.delenv(var, raising=False)
    for sockets in (False, True):
        monkeypatch.setattr(bringup, '_process_has_udp_socket', lambda s=sockets: s)
        for argv in (['demo', 'five_bar'], ['record', '--duration', '1']):
            for var in (R, PF):
                monkeypatch.delenv(var, raising=False)
            assert cli.main(argv) == 0
    monkeypatch.setenv(R, 'SUBNET')
    assert cli.main(['demo', 'five_bar']) == 0
    assert seen == [LOOPBACK, LOOPBACK, {R: 'LOCALHOST', PF: None}, {R: 'LOCALHOST', PF: None}, {R: 'SUBNET', PF: None}]


def test_process_has_udp_socket():
    import socket
    from robot_dynamics.ros.bringup import _process_has_udp_socket

    r = subprocess.run(
        [
            sys.executable,
            '-c',
            'from robot_dynamics.ros.bringup import _process_has_udp_socket as f; '
            'import socket; a = f(); s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); '
            's.bind(("127.0.0.1", 0)); print(a, f())',
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.stdout.split() == ['False', 'True'], r.stderr[-2000:]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(('127.0.0.1', 0))
        assert _process_has_udp_socket()


@pytest.mark.parametrize(
    'argv, message',
    [
        (['no_such_robot'], 'no bringup config'),
        (['four_bar', '--param', 'dynamics_node.kp'], 'expects NODE.PARAM=VALUE'),
        (['four_bar', '--param', 'nobody.kp=1.0'], "node 'nobody' is not in this config"),
        (['four_bar', '--param', 'dynamics_node.kp=[1, 2.5]'], 'mixes types'),
        (['four_bar', '--param', 'dynamics_node.kp={a: 1}'], 'must be a scalar or a list'),
        (['four_bar', '--param', 'dynamics_node.kp='], 'has no value'),
        (['four_bar', '--param', 'dynamics_node.kp=[1'], 'not YAML'),
        (['four_bar', '--param', 'dynamics node.kp=1'], 'not a valid ROS node'),
    ],
)
def test_invalid_launch_arguments_fail_before_any_process(monkeypatch, argv, message):
    from robot_dynamics.tools import cli

    def no_process(*a, **k):
        raise AssertionError('a process was started')

    monkeypatch.setattr(subprocess, 'Popen', no_process)
    with pytest.raises(SystemExit, match=message):
        cli.main(['launch', *argv])


@pytest.mark.parametrize(
    'argv',
    [
        ['--timing', 'sometimes'],
        ['--duration', '-1'],
        ['--duration', 'nan'],
        ['--sigterm-timeout', '-2'],
        ['--sigkill-timeout', 'inf'],
    ],
)
def test_invalid_launch_options_are_usage_errors(monkeypatch, capsys, argv):
    from robot_dynamics.tools import cli

    monkeypatch.setattr(subprocess, 'Popen', lambda *a, **k: pytest.fail('a process was started'))
    with pytest.raises(SystemExit) as ei:
        cli.main(['launch', 'four_bar', *argv])
    assert ei.value.code == 2
    assert argv[0] in capsys.readouterr().err


def test_override_of_a_disabled_node_is_named(tmp_path):
    import yaml

    cfg = tmp_path / 'r.yaml'
    cfg.write_text(
        yaml.safe_dump(
            {
                'robot': 'four_bar',
                'urdf': os.path.join(ROOT, 'urdf/four_bar.urdf'),
                'nodes': {'k': {'executable': 'kinematics_node'}, 'off': {'executable': 'sim_node', 'enabled': False}},
            }
        )
    )
    with pytest.raises(BringupError, match="'off' is disabled"):
        load_bringup(str(cfg), overrides={'off': {'rate': 1.0}})


def test_launcher_rejects_bad_deadlines():
    for bad in (-1.0, float('nan'), 'x', True):
        with pytest.raises(ValueError, match='sigterm_timeout'):
            Launcher(_fake_bringup('a'), sigterm_timeout=bad)


# ----------------------------------------------------------------- DDS traffic in a namespace

NETNS_SCRIPT = (
    textwrap.dedent(r'''
    """Inside `unshare -rn`: a veth pair (a LAN-like second interface), a raw-socket counter of
    RTPS frames leaving through it, the launcher over one small rclpy node for a few seconds."""
    import json, os, socket, subprocess, sys, threading, time
    from robot_dynamics.ros.bringup import Bringup, NodeSpec
    from robot_dynamics.ros.launcher import Launcher
''')
    + NETNS_LAN
    + textwrap.dedent(r"""
    count = {'rtps': 0, 'frames': 0, 'rtps_on_lo': 0}
    stop = False

    def sniff(ifname, key, frames=None):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))   # ETH_P_ALL
        s.bind((ifname, 0))
        s.settimeout(0.2)
        while not stop:
            try:
                frame = s.recv(65535)
            except socket.timeout:
                continue
            if frames:
                count[frames] += 1
            if b'RTPS' in frame:
                count[key] += 1
    threads = [threading.Thread(target=sniff, args=('lan1', 'rtps', 'frames'), daemon=True),
               threading.Thread(target=sniff, args=('lo', 'rtps_on_lo'), daemon=True)]
    for t in threads:
        t.start()

    class Spec(NodeSpec):
        @property
        def module(self):
            return 'rclpy_node'
    b = Bringup(robot='fake', urdf='', loops='', rviz='', source='<netns>',
                nodes=[Spec(name='talker', executable='sim_node')])
    # a user's shell: no range, no Fast DDS profile (conftest's is dropped)
    env = {k: v for k, v in os.environ.items()
           if k not in ('ROS_AUTOMATIC_DISCOVERY_RANGE', 'FASTDDS_DEFAULT_PROFILES_FILE')}
    if sys.argv[1] != 'unset':
        env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = sys.argv[1]
    launcher = Launcher(b, env=env, out=open(os.devnull, 'w'))
    status = launcher.run(duration=float(sys.argv[2]))
    stop = True
    for t in threads:
        t.join()
    print(json.dumps(dict(count, status=status)))
""")
)

RCLPY_NODE = textwrap.dedent("""
    import rclpy
    from std_msgs.msg import String
    rclpy.init()
    node = rclpy.create_node('talker')
    pub = node.create_publisher(String, 'chatter', 10)
    node.create_timer(0.2, lambda: pub.publish(String(data='hi')))
    try:
        rclpy.spin(node)
    except Exception:
        pass
""")


def _netns_unavailable():
    if not sys.platform.startswith('linux') or not shutil.which('unshare') or not shutil.which('ip'):
        return 'needs Linux with unshare and ip (iproute2)'
    r = subprocess.run(
        [
            'unshare',
            '-rn',
            'sh',
            '-c',
            'ip link add a0 type veth peer name a1 && python3 -c "import socket; '
            's = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); s.close()"',
        ],
        capture_output=True,
        text=True,
    )
    if r.returncode:
        return (
            'unprivileged user + network namespaces with a veth pair and a raw socket are '
            f'not permitted here: {(r.stderr or r.stdout).strip()[:200]}'
        )
    return None


@pytest.mark.ros
def test_default_launch_sends_no_discovery_traffic_off_loopback(tmp_path):
    """A launch in a private network namespace with a second (LAN-like) interface: 0 RTPS
    frames leave through it by default; with ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET (the control
    run: the counter does see discovery) they do."""
    why = _netns_unavailable()
    if why:
        pytest.skip(why)
    (tmp_path / 'netns_check.py').write_text(NETNS_SCRIPT)
    (tmp_path / 'rclpy_node.py').write_text(RCLPY_NODE)
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        [str(tmp_path), ROOT] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep) if p]
    )
    counts = {}
    for mode in ('unset', 'SUBNET'):
        r = subprocess.run(
            ['unshare', '-rn', sys.executable, str(tmp_path / 'netns_check.py'), mode, '6'],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        counts[mode] = json.loads(r.stdout.strip().splitlines()[-1])
        assert counts[mode]['status'] == 0, counts
    print(f'RTPS frames on the second interface in 6 s: {counts}')
    assert counts['SUBNET']['rtps'] > 0, f'the control run saw no discovery: {counts}'
    assert counts['unset']['rtps_on_lo'] > 0, f'the node did no discovery at all: {counts}'
    assert counts['unset']['rtps'] == 0, counts


# ----------------------------------------------------------------------- the real graph


@pytest.mark.ros
def test_real_graph_dies_with_a_sigkilled_launcher():
    """`robot-dynamics launch four_bar` (real nodes), SIGKILL of the launcher once the graph
    runs: every node and the watchdog gone within the deadline."""
    proc = subprocess.Popen(
        [sys.executable, '-m', 'robot_dynamics.tools.cli', 'launch', 'four_bar'],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines, kids = [], {}
    threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, '')), daemon=True).start()
    try:
        nodes = [s.name for s in load_bringup('four_bar').nodes]
        t_end = time.monotonic() + 120.0  # every node has logged (its model, ...)
        while time.monotonic() < t_end and not all(any(ln.startswith(f'[{n}]') for ln in list(lines)) for n in nodes):
            assert proc.poll() is None, ''.join(lines)[-3000:]
            time.sleep(0.1)
        time.sleep(2.0)
        for ln in list(lines):
            if '(pid ' in ln:
                pid = int(ln.split('(pid ', 1)[1].split(')', 1)[0])
                kids[ln.split('] ', 1)[1].split(' (pid', 1)[0]] = (pid, _start_time(pid))
        assert len(kids) == 5, (kids, ''.join(lines)[-3000:])  # 4 nodes + the watchdog
        proc.kill()
        dt = _wait_gone(kids, 5.0)
        print(f'real four_bar graph: every node gone {dt:.2f} s after SIGKILL of the launcher')
    finally:
        _kill_leftovers(kids)
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
