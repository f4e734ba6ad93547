"""bag_recorder: record a running graph's topics into an MCAP file (rosbag2 layout).

    robot-dynamics record [--bag out/run.mcap] [--duration S] [--topics T ...]

Every ``scan_period`` s the node looks up the graph's topics (all of them, or those named in
``topics``; never ``/rosout``, ``/parameter_events``) and subscribes each new one without
decoding (``raw=True``: the CDR bytes go straight to :class:`~robot_dynamics.mcap_bag.McapBagWriter`),
with the reliability and durability its publishers offer (a latched ``/robot_description`` is
recorded too). Log time = receive time on the node's clock. ``ros2 bag info out/run.mcap``,
``ros2 bag play out/run.mcap`` and Foxglove open the file directly.
"""
import argparse
import importlib
import os
import sys
import threading
import time

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from robot_dynamics.mcap_bag import McapBagWriter

SKIP = ('/rosout', '/parameter_events')


def message_class(type_name):
    """'sensor_msgs/msg/JointState' -> the rclpy message class."""
    pkg, _, name = type_name.split('/')
    return getattr(importlib.import_module(f'{pkg}.msg'), name)


class BagRecorder(Node):
    """Subscribes the graph's topics as they appear and writes every message to ``path``."""

    def __init__(self, path, topics=None, scan_period=1.0, context=None, name='bag_recorder'):
        super().__init__(name, context=context)
        self.writer = McapBagWriter(path)
        self.path = self.writer.path
        self.wanted = [t if t.startswith('/') else '/' + t for t in topics] if topics else None
        self.subs = {}
        self.lock = threading.Lock()
        self.scan()
        self.timer = self.create_timer(scan_period, self.scan)

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
            qos = QoSProfile(depth=1000,
                             reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE)
            self.subs[topic] = self.create_subscription(
                cls, topic, lambda data, t=topic, ty=typ: self._write(t, ty, data), qos, raw=True)
            self.get_logger().info(f'recording {topic} ({typ})')

    def _write(self, topic, typ, data):
        with self.lock:
            if not self.writer.closed:
                self.writer.write(topic, typ, data, self.get_clock().now().nanoseconds)

    def close(self):
        """Finish the file; returns {topic: count}."""
        with self.lock:
            return self.writer.close()


def record(path, duration=None, topics=None, out=sys.stdout):
    """Record the graph on this ROS domain into ``path`` until ``duration`` s or Ctrl-C. DDS
    on loopback unless the environment widens it (:func:`~robot_dynamics.bringup.use_discovery_env`)."""
    from robot_dynamics.bringup import use_discovery_env
    use_discovery_env()
    import rclpy
    from robot_dynamics.nodes._common import make_executor
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = BagRecorder(path, topics=topics, context=ctx)
    # the SingleThreadedExecutor: a recorder in a thread of the caller's process (next to
    # other contexts) lost messages with the EventsExecutor (graph tests, 2026-11-24)
    ex = make_executor('single', context=ctx)
    ex.add_node(node)
    t0, last = time.monotonic(), 0.0
    print(f'record: {node.path} (ROS_DOMAIN_ID={os.environ.get("ROS_DOMAIN_ID", "0")}); '
          f'Ctrl-C to stop', file=out, flush=True)
    try:
        while duration is None or time.monotonic() - t0 < duration:
            ex.spin_once(timeout_sec=0.1)
            if time.monotonic() - last >= 5.0:
                last = time.monotonic()
                n = sum(node.writer.counts.values())
                print(f'  t = {last - t0:6.1f} s: {n} messages on {len(node.writer.counts)} topic(s)',
                      file=out, flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        counts = node.close()
        node.destroy_node()
        rclpy.shutdown(context=ctx)
    for t, n in sorted(counts.items()):
        print(f'  {t}: {n}', file=out)
    print(f'record: {sum(counts.values())} messages on {len(counts)} topic(s) -> {node.path}', file=out)
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
