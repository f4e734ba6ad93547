"""recorder: a node that records a running graph's state and reference (for the demo).

Subscribes ``joint_states``, ``/kinematics_node/<frame>/pose``, ``reference/pose`` and
``/dynamics_node/tracking_error`` and keeps (stamp, value) samples. Used by
``robot-dynamics demo`` in its own process next to the launched nodes.
"""

import gc
import threading
import time
from contextlib import contextmanager

import numpy as np
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray


def _t(stamp):
    return stamp.sec + 1e-9 * stamp.nanosec


class Recorder(Node):
    """Records the topics of a running graph (thread-safe lists of samples)."""

    def __init__(self, frame='tool', context=None):
        super().__init__('recorder', context=context)
        deep = QoSProfile(depth=2000, reliability=ReliabilityPolicy.RELIABLE)
        self.lock = threading.Lock()
        self.js, self.pose, self.ref, self.err = [], [], [], []
        self.create_subscription(JointState, 'joint_states', self.on_js, deep)
        self.create_subscription(
            PoseStamped, f'/kinematics_node/{frame}/pose', lambda m: self._pose(self.pose, m), deep
        )
        self.create_subscription(PoseStamped, 'reference/pose', lambda m: self._pose(self.ref, m), deep)
        self.create_subscription(Float64MultiArray, '/dynamics_node/tracking_error', self.on_err, deep)
        self.topics = {}
        self._deep = deep

    def subscribe(self, key, msg_type, topic):
        """Record any topic: ``self.topics[key]`` = [(arrival time.monotonic(), msg), ...].
        ``msg_type``: a message class or its name ('JointState', 'Float64MultiArray', 'Float64',
        'PointStamped', 'DiagnosticArray')."""
        if isinstance(msg_type, str):
            from diagnostic_msgs.msg import DiagnosticArray
            from geometry_msgs.msg import PointStamped
            from std_msgs.msg import Float64

            msg_type = {
                'JointState': JointState,
                'Float64MultiArray': Float64MultiArray,
                'Float64': Float64,
                'PointStamped': PointStamped,
                'DiagnosticArray': DiagnosticArray,
            }[msg_type]
        lst = self.topics.setdefault(key, [])

        def cb(m):
            with self.lock:
                lst.append((time.monotonic(), m))

        self.create_subscription(msg_type, topic, cb, self._deep)
        return lst

    def publisher(self, msg_type, topic):
        """A publisher of this node (e.g. goals for a controller)."""
        from robot_dynamics.ros._common import QOS_COMMAND

        return self.create_publisher(msg_type, topic, QOS_COMMAND)

    def on_js(self, m):
        with self.lock:
            self.js.append((_t(m.header.stamp), list(m.name), np.array(m.position), time.monotonic()))

    def _pose(self, lst, m):
        p = m.pose.position
        with self.lock:
            lst.append((_t(m.header.stamp), np.array([p.x, p.y, p.z])))

    def on_err(self, m):
        with self.lock:
            self.err.append((time.time(), np.array(m.data)))

    def matched_task_error(self, axes=(0, 2), max_dt=None):
        """(t, |x - x_ref|) of the recorded tool poses against the reference at the pose's stamp
        (the sample of that stamp, else interpolated between the samples around it when they
        are at most ``max_dt`` apart, default 1.5 sample periods:
        :func:`robot_dynamics.control.trajectories.reference_at_stamps`)."""
        from robot_dynamics.control.trajectories import reference_at_stamps

        with self.lock:
            poses, refs = list(self.pose), list(self.ref)
        if not poses or not refs:
            return np.zeros(0), np.zeros(0)
        t = np.array([p[0] for p in poses])
        x = np.array([p[1] for p in poses])
        r = reference_at_stamps(t, [q[0] for q in refs], [q[1] for q in refs], max_gap=max_dt)
        ok = np.all(np.isfinite(r), axis=1)
        ax = list(axes)
        return t[ok], np.linalg.norm((x[ok] - r[ok])[:, ax], axis=1)


@contextmanager
def recording(frame='tool', bag=None):
    """A :class:`Recorder` spun in a background thread in its own rclpy context.

    ``with recording('tool') as rec: ...`` (used by ``robot-dynamics demo``); the node, its
    executor thread and the context are shut down on exit. ``bag``: an MCAP file path; a
    :class:`~robot_dynamics.ros.bag_recorder.BagRecorder` in the same executor records every
    topic of the graph into it (``rec.bag``), finished on exit.
    """
    import rclpy
    from robot_dynamics.ros._common import make_executor

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    rec = Recorder(frame, context=ctx)
    # the SingleThreadedExecutor: a recorder in a thread of the caller's process (next to
    # other contexts) lost messages with the EventsExecutor (graph tests)
    ex = make_executor('single', context=ctx)
    ex.add_node(rec)
    rec.bag = None
    if bag:
        from robot_dynamics.ros.bag_recorder import BagRecorder

        rec.bag = BagRecorder(bag, context=ctx)
        ex.add_node(rec.bag)
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ex.spin_once(timeout_sec=0.05)

    th = threading.Thread(target=spin, daemon=True)
    # no cyclic garbage collection while recording: the recorder keeps every message, and a full
    # collection walks them all (tens of ms after a few seconds at 1 kHz, growing), while the
    # graph's messages queue and their arrival times, the latency figures, come out late
    # (bench_loop's probe: 22, 57, 92 ms every ~7 s, 2.3 ms max without)
    gc_on = gc.isenabled()
    gc.collect()
    gc.disable()
    th.start()
    try:
        yield rec
    finally:
        stop.set()
        th.join(timeout=2)
        if gc_on:
            gc.enable()
        if rec.bag is not None:
            counts = rec.bag.close()
            print(
                f'demo: recorded {sum(counts.values())} messages on {len(counts)} topic(s) into {rec.bag.path}',
                flush=True,
            )
            rec.bag.destroy_node()
        rec.destroy_node()
        rclpy.shutdown(context=ctx)
