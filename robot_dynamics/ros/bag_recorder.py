"""bag_recorder: record a running graph's topics into an MCAP file (rosbag2 layout).

    robot-dynamics record [--bag out/run.mcap] [--duration S] [--topics T ...]
    robot-dynamics record --recover FILE [--out FILE2]

Every ``scan_period`` s the node looks up the graph's topics (all of them, or those named in
``topics``; never ``/rosout``, ``/parameter_events``) and subscribes each new one without
decoding (``raw=True``: the CDR bytes go straight to :class:`~robot_dynamics.ros.mcap_bag.McapBagWriter`),
with the reliability and durability its publishers offer (a latched ``/robot_description`` is
recorded too). Log time = receive time on the node's clock. ``ros2 bag info out/run.mcap``,
``ros2 bag play out/run.mcap`` and Foxglove open the file directly.

Stopping: Ctrl-C (SIGINT), SIGTERM and SIGHUP all end ``record()`` the same way (the handlers
only set a flag; the loop sees it within 0.1 s): the file is closed with its summary and
footer, the counts are printed, the exit status is 0. The writer puts the data on disk at least
once a second (``flush_period``; a timer keeps to it between messages), so a recorder killed
outright (``kill -9``) loses at most the last second: ``--recover`` makes the file whole again.
"""

import argparse
import importlib
import os
import signal
import sys
import threading
import time

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from robot_dynamics.ros.mcap_bag import McapBagWriter

SKIP = ('/rosout', '/parameter_events')
STOP_SIGNALS = ('SIGINT', 'SIGTERM', 'SIGHUP')
FLUSH_CHECK_PERIOD = 0.2  # s between the timer's flush_if_due checks (flush_period: 1 s)


def message_class(type_name):
    """'sensor_msgs/msg/JointState' -> the rclpy message class."""
    pkg, _, name = type_name.split('/')
    return getattr(importlib.import_module(f'{pkg}.msg'), name)


class BagRecorder(Node):
    """Subscribes the graph's topics as they appear and writes every message to ``path``.

    ``flush_period`` [s] and ``fsync``: see :class:`~robot_dynamics.ros.mcap_bag.McapBagWriter` (the
    chunk in progress reaches the file at least every ``flush_period`` s)."""

    def __init__(
        self, path, topics=None, scan_period=1.0, context=None, name='bag_recorder', flush_period=1.0, fsync=True
    ):
        super().__init__(name, context=context)
        self.writer = McapBagWriter(path, flush_period=flush_period, fsync=fsync)
        self.path = self.writer.path
        self.wanted = [t if t.startswith('/') else '/' + t for t in topics] if topics else None
        self.subs = {}
        self.lock = threading.Lock()
        self.scan()
        self.timer = self.create_timer(scan_period, self.scan)
        # the writer flushes on a write once flush_period s have passed; this timer flushes
        # early enough that no flush comes later, messages or not
        self.flush_timer = self.create_timer(FLUSH_CHECK_PERIOD, self.flush_if_due)

    def scan(self):
        """Subscribe every new topic of interest (called by the timer; call it to force one)."""
        for topic, types in self.get_topic_names_and_types():
            if topic in self.subs or topic in SKIP or (self.wanted and topic not in self.wanted):
                continue
            typ = types[0]
            try:
                cls = message_class(typ)
            except (ImportError, AttributeError, ValueError):
                self.get_logger().warning(f'{topic}: type {typ} not importable, not recorded')
                self.subs[topic] = None
                continue
            pubs = self.get_publishers_info_by_topic(topic)
            if not pubs:
                continue
            latched = all(p.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in pubs)
            reliable = all(p.qos_profile.reliability == ReliabilityPolicy.RELIABLE for p in pubs)
            qos = QoSProfile(
                depth=1000,
                reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
                durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
            )
            self.subs[topic] = self.create_subscription(
                cls, topic, lambda data, t=topic, ty=typ: self._write(t, ty, data), qos, raw=True
            )
            self.get_logger().info(f'recording {topic} ({typ})')

    def _write(self, topic, typ, data):
        with self.lock:
            if not self.writer.closed:
                self.writer.write(topic, typ, data, self.get_clock().now().nanoseconds)

    def flush_if_due(self):
        """Write the chunk in progress to disk if the next check (``FLUSH_CHECK_PERIOD`` s on)
        would come more than ``flush_period`` s after the last flush."""
        with self.lock:
            self.writer.flush_if_due(ahead=FLUSH_CHECK_PERIOD)

    def close(self):
        """Finish the file; returns {topic: count}."""
        with self.lock:
            return self.writer.close()


class _StopSignals:
    """Handlers of SIGINT, SIGTERM and SIGHUP that only note the signal (``self.signum``), so
    that the recording loop ends and closes the file; ``restore()`` puts the previous handlers
    back. Nothing is installed outside the main thread (Python allows handlers only there)."""

    def __init__(self):
        self.signum = None
        self.old = {}
        if threading.current_thread() is not threading.main_thread():
            return
        for name in STOP_SIGNALS:
            sig = getattr(signal, name, None)
            if sig is not None:
                self.old[sig] = signal.signal(sig, self._note)

    def _note(self, signum, frame):
        if self.signum is None:
            self.signum = signum

    def name(self):
        return signal.Signals(self.signum).name if self.signum is not None else None

    def restore(self):
        for sig, old in self.old.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
        self.old = {}


def _say(text, out):
    """Print to ``out``; a terminal that hung up (SIGHUP) or a closed pipe is not an error."""
    try:
        print(text, file=out, flush=True)
    except (OSError, ValueError):
        pass


def record(path, duration=None, topics=None, out=sys.stdout):
    """Record the graph on this ROS domain into ``path`` until ``duration`` s, Ctrl-C, SIGTERM
    or SIGHUP; the file is complete (summary, footer) in every case. Returns {topic: count}.
    DDS on loopback unless the environment widens it (:func:`~robot_dynamics.ros.bringup.use_discovery_env`)."""
    from robot_dynamics.ros.bringup import use_discovery_env

    use_discovery_env()
    import rclpy
    from robot_dynamics.ros._common import make_executor

    stop = _StopSignals()  # before rclpy.init: a signal during start-up counts too
    try:
        ctx = rclpy.Context()
        rclpy.init(context=ctx)  # (a context of its own: rclpy installs no handlers)
        try:
            node = BagRecorder(path, topics=topics, context=ctx)
        except BaseException:
            rclpy.shutdown(context=ctx)
            raise
        # the SingleThreadedExecutor: a recorder in a thread of the caller's process (next to
        # other contexts) lost messages with the EventsExecutor
        ex = make_executor('single', context=ctx)
        ex.add_node(node)
        t0, last = time.monotonic(), 0.0
        _say(f'record: {node.path} (ROS_DOMAIN_ID={os.environ.get("ROS_DOMAIN_ID", "0")}); Ctrl-C to stop', out)
        try:
            while stop.signum is None and (duration is None or time.monotonic() - t0 < duration):
                ex.spin_once(timeout_sec=0.1)
                if time.monotonic() - last >= 5.0:
                    last = time.monotonic()
                    n = sum(node.writer.counts.values())
                    _say(f'  t = {last - t0:6.1f} s: {n} messages on {len(node.writer.counts)} topic(s)', out)
        finally:
            counts = node.close()
            node.destroy_node()
            rclpy.shutdown(context=ctx)
    finally:
        stop.restore()
    if stop.signum is not None:
        _say(f'record: {stop.name()}: bag closed', out)
    for t, n in sorted(counts.items()):
        _say(f'  {t}: {n}', out)
    _say(f'record: {sum(counts.values())} messages on {len(counts)} topic(s) -> {node.path}', out)
    return counts


def main(argv=None):
    """Entry point of ``robot-dynamics record``."""
    ap = argparse.ArgumentParser(prog='robot-dynamics record', description=__doc__.split('\n\n')[0])
    ap.add_argument('--bag', default='out/run.mcap', help='MCAP file to write (default out/run.mcap)')
    ap.add_argument('--duration', type=float, default=None, help='stop after this many seconds')
    ap.add_argument('--topics', nargs='*', default=None, help='only these topics (default: all)')
    a = ap.parse_args(argv)
    record(a.bag, a.duration, a.topics)
    return 0
