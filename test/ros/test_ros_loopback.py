"""DDS stays on loopback: where the sockets of a node started by the package are bound.

A node process (one small rclpy node: publishes ``chatter``, echoes ``ping`` on ``pong``) is
started by the built-in launcher from an environment like a user's shell (no DDS variables):
the launcher adds :func:`robot_dynamics.ros.bringup.discovery_env` (the Fast DDS loopback
profile). Once the test process (the same profile, set by conftest) has exchanged messages with
it both ways (it is discovered), every UDP socket of the node process, read from
``/proc/<pid>/fd`` and ``/proc/<pid>/net/udp{,6}`` (and checked against ``ss -uanp`` where
``ss`` exists), must be bound to 127.x, and it has no TCP socket. The widening: with
``ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET`` the same node binds 0.0.0.0 and the LAN-like
address; that run happens inside a private network namespace (``unshare -rn``, a veth pair as
the LAN) so that its multicast discovery never reaches a real network (skipped with the
reason where such namespaces are not permitted). A node without the profile (LOCALHOST, as a
``ros2`` tool in a shell) and one with it talk to each other.
"""

import suite_paths
import ipaddress
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from robot_dynamics.ros.bringup import DISCOVERY_RANGE_VAR, FASTDDS_PROFILES_VAR, USER_DISCOVERY_VARS, Bringup, NodeSpec
from robot_dynamics.ros.launcher import Launcher

from ros_helpers import NETNS_LAN

pytestmark = pytest.mark.ros

ROOT = suite_paths.ROOT

NODE = textwrap.dedent('''
    """Test-only rclpy node: publishes chatter every 0.1 s, echoes ping on pong."""
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from std_msgs.msg import String
    rclpy.init()
    node = rclpy.create_node('loopback_probe')
    chatter = node.create_publisher(String, 'chatter', 10)
    pong = node.create_publisher(String, 'pong', 10)
    node.create_subscription(String, 'ping', pong.publish, 10)
    node.create_timer(0.1, lambda: chatter.publish(String(data='hi')))
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
''')

# sockets of a process (also run inside the network namespace, hence a string)
SOCKETS = textwrap.dedent(r'''
    import os, socket, struct

    def _addr(hexaddr):
        ip, port = hexaddr.split(':')
        raw = bytes.fromhex(ip)
        if len(raw) == 4:
            return socket.inet_ntop(socket.AF_INET, raw[::-1]), int(port, 16)
        words = b''.join(raw[i:i + 4][::-1] for i in range(0, 16, 4))   # 4 little-endian words
        return socket.inet_ntop(socket.AF_INET6, words), int(port, 16)

    def sockets(pid, proto='udp'):
        """[(local address, port)] of the ``proto`` ('udp' | 'tcp') sockets process ``pid``
        holds (its fds matched by inode against its network namespace's tables)."""
        inodes = set()
        for fd in os.listdir(f'/proc/{pid}/fd'):
            try:
                link = os.readlink(f'/proc/{pid}/fd/{fd}')
            except OSError:
                continue
            if link.startswith('socket:['):
                inodes.add(link[8:-1])
        out = []
        for table in (proto, proto + '6'):
            try:
                with open(f'/proc/{pid}/net/{table}') as fh:
                    rows = fh.read().splitlines()[1:]
            except OSError:
                continue
            out += [_addr(r.split()[1]) for r in rows if len(r.split()) > 9 and r.split()[9] in inodes]
        return sorted(out)
''')
exec(SOCKETS)  # noqa: S102 - defines sockets() here too


def _is_loopback(addr):
    return ipaddress.ip_address(addr).is_loopback


def _ss_sockets(pid, flag):
    """``ss -<flag>anp`` local addresses of process ``pid`` (None without ss)."""
    if not shutil.which('ss'):
        return None
    out = subprocess.run(['ss', f'-{flag}anpH'], capture_output=True, text=True, timeout=30).stdout
    found = []
    for line in out.splitlines():
        if f'pid={pid},' in line:
            host, port = line.split()[3].rsplit(':', 1)
            host = host.strip('[]').split('%')[0]
            found.append((host.replace('*', '0.0.0.0'), int(port)))
    return sorted(found)


def _user_shell(**user):
    """The test environment as a user's shell with no DDS variables, plus ``user``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in (DISCOVERY_RANGE_VAR, FASTDDS_PROFILES_VAR, *USER_DISCOVERY_VARS)
    }
    env.update(user)
    return env


class _ProbeSpec(NodeSpec):
    @property
    def module(self):
        return 'loopback_probe_node'


def _launcher(tmp_path, env):
    (tmp_path / 'loopback_probe_node.py').write_text(NODE)
    env = dict(
        env,
        PYTHONPATH=os.pathsep.join(
            [str(tmp_path), ROOT] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep) if p]
        ),
    )
    b = Bringup(
        robot='probe',
        urdf='',
        loops='',
        rviz='',
        source='<test>',
        nodes=[_ProbeSpec(name='loopback_probe', executable='sim_node')],
    )
    return Launcher(b, env=env, out=open(os.devnull, 'w'))


class _Peer:
    """This process's side: an rclpy node (conftest's DDS settings) that hears chatter and
    gets its pings echoed."""

    def __init__(self):
        import rclpy
        from std_msgs.msg import String

        self.rclpy, self.String = rclpy, String
        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx)
        self.node = rclpy.create_node('loopback_peer', context=self.ctx)
        self.chatter, self.pongs = [], []
        self.node.create_subscription(String, 'chatter', self.chatter.append, 10)
        self.node.create_subscription(String, 'pong', self.pongs.append, 10)
        self.ping = self.node.create_publisher(String, 'ping', 10)
        from rclpy.executors import SingleThreadedExecutor

        self.ex = SingleThreadedExecutor(context=self.ctx)
        self.ex.add_node(self.node)

    def exchange(self, poll, timeout=60.0):
        """Wait until chatter arrived and a ping came back (both directions); seconds taken.
        ``poll()``: None while the node process runs."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout and not (self.chatter and self.pongs):
            ended = poll()
            assert ended is None, f'the node exited: {ended}'
            self.ping.publish(self.String(data='ping'))
            self.ex.spin_once(timeout_sec=0.1)
        assert self.chatter and self.pongs, (
            f'no exchange with the node within {timeout} s (chatter {len(self.chatter)}, pongs {len(self.pongs)})'
        )
        return time.monotonic() - t0

    def close(self):
        self.ex.shutdown()
        self.node.destroy_node()
        self.rclpy.shutdown(context=self.ctx)


@pytest.fixture
def peer():
    p = _Peer()
    try:
        yield p
    finally:
        p.close()


def _check_loopback_only(pid):
    udp, tcp = sockets(pid, 'udp'), sockets(pid, 'tcp')
    assert udp, f'the node holds no UDP socket: {udp}'
    assert all(_is_loopback(a) for a, _ in udp), f'UDP sockets off loopback: {udp}'
    assert all(_is_loopback(a) for a, _ in tcp), f'TCP sockets off loopback: {tcp}'
    ss = _ss_sockets(pid, 'u')
    if ss is not None:
        assert ss == udp, (ss, udp)
    return udp, tcp


def test_default_node_binds_loopback_only(tmp_path, peer):
    """The launcher's default (a shell without DDS variables): every UDP socket of the node on
    127.0.0.1 (this machine's LAN address exists and is not bound), none on 0.0.0.0, no TCP;
    the node is discovered and talks both ways with this process (also on the profile)."""
    launcher = _launcher(tmp_path, _user_shell())
    assert launcher.env[DISCOVERY_RANGE_VAR] == 'SYSTEM_DEFAULT'
    assert launcher.env[FASTDDS_PROFILES_VAR] == os.path.join(ROOT, 'config', 'fastdds_loopback.xml')
    assert 'loopback only' in launcher.discovery
    try:
        launcher.start()
        dt = peer.exchange(launcher.poll)
        pid = launcher.procs['loopback_probe'].pid
        udp, tcp = _check_loopback_only(pid)
        print(f'node discovered in {dt:.1f} s; its UDP sockets: {udp}; TCP: {tcp}')
        # this process too (conftest's profile): the tests never leave loopback
        mine = sockets(os.getpid(), 'udp')
        assert mine and all(_is_loopback(a) for a, _ in mine), mine
    finally:
        launcher.shutdown(timeout=5.0)


def test_node_without_the_profile_talks_to_one_with_it(tmp_path, peer):
    """A node with ROS' LOCALHOST range and no profile (as a `ros2` tool in a shell that sets
    LOCALHOST; started directly, not by the launcher) and this process (the profile) discover
    each other and exchange messages; the LOCALHOST node's sockets are wider (0.0.0.0: what the
    profile removes)."""
    (tmp_path / 'loopback_probe_node.py').write_text(NODE)
    env = _user_shell(**{DISCOVERY_RANGE_VAR: 'LOCALHOST'})
    proc = subprocess.Popen(
        [sys.executable, str(tmp_path / 'loopback_probe_node.py')],
        env=env,
        cwd=str(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        peer.exchange(proc.poll)
        udp = sockets(proc.pid, 'udp')
        print(f'LOCALHOST node without the profile: {udp}')
        assert any(a == '0.0.0.0' for a, _ in udp), udp
    finally:
        proc.send_signal(2)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


NETNS_DRIVER = (
    SOCKETS
    + textwrap.dedent(r"""
    import json, os, subprocess, sys, time
    # inside `unshare -rn`: loopback up, a veth pair as the LAN (10.77.0.1 on lan0)
""")
    + NETNS_LAN
    + textwrap.dedent(r"""
    from robot_dynamics.ros.bringup import Bringup, NodeSpec
    from robot_dynamics.ros.launcher import Launcher

    class Spec(NodeSpec):
        @property
        def module(self):
            return 'loopback_probe_node'
    out = {}
    for mode in sys.argv[1:]:
        env = {k: v for k, v in os.environ.items()
               if k not in ('ROS_AUTOMATIC_DISCOVERY_RANGE', 'FASTDDS_DEFAULT_PROFILES_FILE')}
        if mode != 'unset':
            env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = mode
        b = Bringup(robot='probe', urdf='', loops='', rviz='', source='<netns>',
                    nodes=[Spec(name='loopback_probe', executable='sim_node')])
        launcher = Launcher(b, env=env, out=open(os.devnull, 'w'))
        try:
            launcher.start()
            time.sleep(4.0)                     # participant up, discovery announcements sent
            pid = launcher.procs['loopback_probe'].pid
            out[mode] = {'udp': sockets(pid, 'udp'), 'tcp': sockets(pid, 'tcp'),
                         'alive': launcher.poll() is None, 'discovery': launcher.discovery}
        finally:
            launcher.shutdown(timeout=5.0)
    print(json.dumps(out))
""")
)


def _netns_unavailable():
    if not sys.platform.startswith('linux') or not shutil.which('unshare') or not shutil.which('ip'):
        return 'needs Linux with unshare and ip (iproute2)'
    r = subprocess.run(
        ['unshare', '-rn', 'sh', '-c', 'ip link set lo up && ip link add a0 type veth peer name a1'],
        capture_output=True,
        text=True,
    )
    if r.returncode:
        return (
            'unprivileged user + network namespaces with a veth pair are not permitted here: '
            f'{(r.stderr or r.stdout).strip()[:200]}'
        )
    return None


def test_subnet_widens_the_sockets(tmp_path):
    """In a private network namespace with a LAN-like veth (10.77.0.1): by default the node's
    UDP sockets are on 127.0.0.1 only; with ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET (the user's
    widening) the same node binds 0.0.0.0 and the LAN address (its multicast stays in the
    namespace)."""
    why = _netns_unavailable()
    if why:
        pytest.skip(why)
    (tmp_path / 'loopback_probe_node.py').write_text(NODE)
    (tmp_path / 'netns_driver.py').write_text(NETNS_DRIVER)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(
            [str(tmp_path), ROOT] + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]
        ),
    )
    r = subprocess.run(
        ['unshare', '-rn', sys.executable, str(tmp_path / 'netns_driver.py'), 'unset', 'SUBNET'],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    print(json.dumps(res, indent=1))
    default, subnet = res['unset'], res['SUBNET']
    assert default['alive'] and subnet['alive'], res
    assert 'loopback only' in default['discovery'] and 'from the environment' in subnet['discovery']
    assert default['udp'] and all(_is_loopback(a) for a, _ in default['udp']), default
    assert not default['tcp'], default
    assert any(a == '0.0.0.0' for a, _ in subnet['udp']), subnet
    assert any(a == '10.77.0.1' for a, _ in subnet['udp']), subnet
