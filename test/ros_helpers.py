"""Helpers for the real-process ROS 2 tests: a probe node and a graph runner.

``Probe(model)`` records the standard topics of a robot graph (joint states, hold flag,
tracking error, tool pose, reference pose, loop residual, markers) with arrival times in its
own rclpy context, spun in a thread; ``probe.subscribe(attr, msg_type, topic)`` records any
other topic into ``probe.<attr>``. ``run_graph(robot_or_config, body)`` starts the nodes with
the built-in launcher, waits for the controller output, runs ``body(launcher, probe, model,
out)`` and checks that no node died and that no process is left behind.
"""

import io
import os
import threading
import time

import numpy as np
import pytest
import rclpy
from geometry_msgs.msg import PoseStamped
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray
from std_srvs.srv import SetBool
from visualization_msgs.msg import MarkerArray

import robot_dynamics as rd
from robot_dynamics.ros.bringup import load_bringup, observer_priority
from robot_dynamics.ros.launcher import Launcher
from robot_dynamics.ros._common import QOS_COMMAND, make_executor

DEEP = QoSProfile(depth=2000, reliability=ReliabilityPolicy.RELIABLE)


class Probe:
    """A test-side node recording the graph's topics with arrival times."""

    def __init__(self, model):
        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx)
        self.node = rclpy.create_node('probe', context=self.ctx)
        self.ex = make_executor('single', context=self.ctx)  # see recorder.py
        self.ex.add_node(self.node)
        self.model = model
        self.lock = threading.Lock()
        self.js, self.hold, self.err, self.pose, self.ref = [], [], [], [], []
        self.residual, self.markers = [], []
        n = self.node
        # deep reliable queues: the probe may process callbacks in bursts, nothing is lost
        deep = DEEP
        n.create_subscription(JointState, 'joint_states', lambda m: self._rec(self.js, m), deep)
        n.create_subscription(Bool, '/sim_node/holding', lambda m: self._rec(self.hold, m), deep)
        n.create_subscription(
            Float64MultiArray, '/dynamics_node/tracking_error', lambda m: self._rec(self.err, m), deep
        )
        n.create_subscription(PoseStamped, '/kinematics_node/tool/pose', lambda m: self._rec(self.pose, m), deep)
        n.create_subscription(PoseStamped, 'reference/pose', lambda m: self._rec(self.ref, m), deep)
        n.create_subscription(
            Float64MultiArray, '/kinematics_node/loop_residual', lambda m: self._rec(self.residual, m), deep
        )
        n.create_subscription(MarkerArray, '/kinematics_node/markers', lambda m: self._rec(self.markers, m), deep)
        self._cmd_pub = None
        self.enable = n.create_client(SetBool, '/dynamics_node/enable')
        self._stop = False
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    @property
    def cmd_pub(self):
        """A publisher on the plant's command topic, made on first use: while it exists next to
        a controller's, sim_node holds (one owner per command topic); :meth:`drop_cmd_pub`."""
        if self._cmd_pub is None:
            self._cmd_pub = self.node.create_publisher(Float64MultiArray, '/effort_controller/commands', QOS_COMMAND)
        return self._cmd_pub

    def drop_cmd_pub(self):
        if self._cmd_pub is not None:
            self.node.destroy_publisher(self._cmd_pub)
            self._cmd_pub = None

    def subscribe(self, attr, msg_type, topic, qos=DEEP):
        """Record ``topic`` into the list ``self.<attr>`` as (arrival time, msg)."""
        setattr(self, attr, [])
        self.node.create_subscription(msg_type, topic, lambda m: self._rec(getattr(self, attr), m), qos)

    def _rec(self, lst, msg):
        with self.lock:
            lst.append((time.monotonic(), msg))

    def _spin(self):
        while not self._stop:
            self.ex.spin_once(timeout_sec=0.05)

    def wait_for(self, cond, timeout, what):
        t_end = time.monotonic() + timeout
        while time.monotonic() < t_end:
            if cond():
                return
            time.sleep(0.05)
        raise AssertionError(f'timed out after {timeout} s waiting for {what}')

    def wait_logged(self, cond, timeout, what, out, keys=('js', 'err', 'pose')):
        """``wait_for``; on a time-out the message adds the message counts of ``keys`` and the
        tail of the nodes' logs ``out``."""
        try:
            self.wait_for(cond, timeout, what)
        except AssertionError as exc:
            with self.lock:
                counts = {k: len(getattr(self, k)) for k in keys}
            raise AssertionError(f'{exc}; received {counts}\n{out.getvalue()[-4000:]}') from None

    def call_enable(self, value):
        assert self.enable.wait_for_service(timeout_sec=15.0), 'dynamics_node/enable not available'
        fut = self.enable.call_async(SetBool.Request(data=value))
        self.wait_for(fut.done, 10.0, 'enable service response')
        return time.monotonic()

    def close(self):
        self._stop = True
        self.thread.join(timeout=2.0)
        self.node.destroy_node()
        rclpy.shutdown(context=self.ctx)


class SpunNode:
    """A test-side rclpy node in its own context, spun in a background thread from creation
    until :meth:`close` (``.node`` is the rclpy node)."""

    def __init__(self, name):
        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx)
        self.node = rclpy.create_node(name, context=self.ctx)
        self.ex = make_executor('single', context=self.ctx)  # see recorder.py
        self.ex.add_node(self.node)
        self._stop = False
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self):
        while not self._stop:
            self.ex.spin_once(timeout_sec=0.02)

    def close(self):
        self._stop = True
        self.thread.join(timeout=2.0)
        self.node.destroy_node()
        rclpy.shutdown(context=self.ctx)


def run_graph(robot, body, ready=None, timeout=60.0, overrides=None, setup=None, timing=None):
    """Start ``robot``'s graph (config name or path; ``overrides`` {node: {param: value}}),
    call ``setup(probe)`` before the nodes start (subscriptions, clients), wait for ``ready()``
    (default: dynamics_node's tracking error flowing), run ``body(launcher, probe, model,
    out)``, check no node died, shut down and check no process is left. ``timing``: 'realtime'
    or 'lockstep' (default: the config's). Returns the logs."""
    b = load_bringup(robot, overrides=overrides, timing=timing)
    out = io.StringIO()
    launcher = Launcher(b, out=out)
    model = rd.load_model(b.urdf)
    with observer_priority(b.timing):  # the probe as the real-time control path
        probe = Probe(model)
        if setup is not None:
            setup(probe)
        launcher.start()
        try:
            probe.wait_for(ready or (lambda: len(probe.err) > 10), timeout, f'{robot}: graph ready')
            body(launcher, probe, model, out)
            dead = launcher.poll()
            assert dead is None, f'node {dead} died:\n{out.getvalue()[-3000:]}'
        finally:
            probe.close()
            launcher.shutdown()
    assert_no_process_left(launcher)
    return out.getvalue()


def assert_no_process_left(launcher):
    """After shutdown every node process has exited and is gone."""
    for name, p in launcher.procs.items():
        assert p.poll() is not None, f'{name} still running'
        with pytest.raises(ProcessLookupError):
            os.kill(p.pid, 0)


def stamp_matched_xz_error(poses, refs, tol=None):
    """Tool error in the x-z plane of each pose against the reference at its stamp (the sample
    of that stamp, else interpolated between the samples around it, at most ``tol`` s apart,
    default 1.5 sample periods: robot_dynamics.control.trajectories.reference_at_stamps; poses without one
    are skipped).

    poses, refs: lists of (stamp [s], geometry_msgs/Point). Returns an array of
    |(x, z) - (x_ref, z_ref)| [m].
    """
    from robot_dynamics.control.trajectories import reference_at_stamps

    if not poses or not refs:
        return np.zeros(0)
    P = np.array([[p.x, p.z] for _, p in poses])
    R = reference_at_stamps([t for t, _ in poses], [t for t, _ in refs], [[r.x, r.z] for _, r in refs], max_gap=tol)
    ok = np.all(np.isfinite(R), axis=1)
    return np.hypot(*(P[ok] - R[ok]).T)


def set_params(node, target, values):
    """Set parameters one by one through the node's SetParameters service; {name: result}."""
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    cli = node.create_client(SetParameters, f'{target}/set_parameters')
    assert cli.wait_for_service(timeout_sec=10.0)
    out = {}
    for name, v in values.items():
        if isinstance(v, str):
            pv = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=v)
        else:
            pv = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=float(v))
        fut = cli.call_async(SetParameters.Request(parameters=[Parameter(name=name.strip(), value=pv)]))
        t_end = time.monotonic() + 10.0
        while not fut.done() and time.monotonic() < t_end:
            time.sleep(0.02)
        assert fut.done(), f'set {name}: no answer'
        out[name.strip()] = fut.result().results[0]
    return out


#: Python lines (top level of a script run inside ``unshare -rn``): loopback up and a veth pair
#: standing for a LAN (10.77.0.1/24 on lan0, multicast, default route); defines ``sh(*cmd)``
NETNS_LAN = """
def sh(*cmd):
    subprocess.run(cmd, check=True)
sh('ip', 'link', 'set', 'lo', 'up')
sh('ip', 'link', 'add', 'lan0', 'type', 'veth', 'peer', 'name', 'lan1')
sh('ip', 'addr', 'add', '10.77.0.1/24', 'dev', 'lan0')
sh('ip', 'link', 'set', 'lan0', 'multicast', 'on', 'up')
sh('ip', 'link', 'set', 'lan1', 'up')
sh('ip', 'route', 'add', 'default', 'dev', 'lan0')
"""
