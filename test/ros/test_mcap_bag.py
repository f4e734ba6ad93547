"""MCAP recording (rosbag2 layout): robot_dynamics.ros.mcap_bag writes, an independent reader
(mcap_ros2, which decodes CDR from the schema text alone) reads back.

* unit: messages serialised by rclpy (what a raw subscription hands over) written with
  McapBagWriter; every field decoded by mcap_ros2 equals the original (nested types,
  arrays, strings, a MarkerArray with 12 nested definitions); profile, schema names and
  encodings are rosbag2's; a type without a definition is a clear error.
* graph: ``robot-dynamics record`` in its own process next to the running five_bar graph;
  the bag holds /joint_states (every joint, stamps increasing, the same stamps the test's own
  subscriber received), the commands and the latched /robot_description.
"""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
from mcap.reader import make_reader  # noqa: E402
from mcap_ros2.decoder import DecoderFactory  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String  # noqa: E402
from visualization_msgs.msg import Marker, MarkerArray  # noqa: E402

from robot_dynamics.ros.mcap_bag import BagError, McapBagWriter, msg_definition  # noqa: E402


def read_bag(path):
    """{topic: [(log_time_ns, decoded message), ...]} by mcap + mcap_ros2 (schema-driven CDR)."""
    out = {}
    with open(path, 'rb') as f:
        r = make_reader(f, decoder_factories=[DecoderFactory()])
        for _, channel, message, msg in r.iter_decoded_messages():
            out.setdefault(channel.topic, []).append((message.log_time, msg))
    return out


def _js(k):
    m = JointState()
    m.header.stamp.sec, m.header.stamp.nanosec = 100 + k, 1000 * k
    m.header.frame_id = 'world'
    m.name = ['a', 'b', 'c']
    m.position = [0.1 * k, -1.5, 2.0e-9]
    m.velocity = [float('nan'), 1.0, 2.0]  # NaN survives (joint_state_broadcaster sends it)
    return m


def test_written_messages_decode_with_an_independent_reader(tmp_path):
    path = tmp_path / 'bag' / 'run.mcap'
    arr = Float64MultiArray(data=[1.0, -2.5, 3e100])
    arr.layout.dim = [MultiArrayDimension(label='x,y', size=2, stride=2)]
    mk = MarkerArray(markers=[Marker(ns='loops', id=3, type=Marker.SPHERE, text='cut')])
    mk.markers[0].pose.position.x = 0.25
    mk.markers[0].color.g = 1.0
    with McapBagWriter(path) as w:
        for k in range(5):
            w.write('/joint_states', 'sensor_msgs/msg/JointState', serialize_message(_js(k)), 10**9 * k)
        w.write('/cmd', 'std_msgs/msg/Float64MultiArray', serialize_message(arr), 5 * 10**9)
        w.write('/markers', 'visualization_msgs/msg/MarkerArray', serialize_message(mk), 6 * 10**9)
        w.write('/robot_description', 'std_msgs/msg/String', serialize_message(String(data='<robot/>')), 7)
    assert w.counts == {'/joint_states': 5, '/cmd': 1, '/markers': 1, '/robot_description': 1}
    with open(path, 'rb') as f:
        r = make_reader(f)
        header = r.get_header()
        summary = r.get_summary()
    assert header.profile == 'ros2'
    assert {s.name for s in summary.schemas.values()} == {
        'sensor_msgs/msg/JointState',
        'std_msgs/msg/Float64MultiArray',
        'visualization_msgs/msg/MarkerArray',
        'std_msgs/msg/String',
    }
    assert all(s.encoding == 'ros2msg' for s in summary.schemas.values())
    assert all(c.message_encoding == 'cdr' for c in summary.channels.values())
    got = read_bag(path)
    js = got['/joint_states']
    assert [t for t, _ in js] == [10**9 * k for k in range(5)]
    for k, (_, d) in enumerate(js):
        assert (d.header.stamp.sec, d.header.stamp.nanosec) == (100 + k, 1000 * k)
        assert d.header.frame_id == 'world' and list(d.name) == ['a', 'b', 'c']
        assert list(d.position) == [0.1 * k, -1.5, 2.0e-9]
        assert np.isnan(d.velocity[0]) and list(d.velocity[1:]) == [1.0, 2.0] and list(d.effort) == []
    c = got['/cmd'][0][1]
    assert list(c.data) == [1.0, -2.5, 3e100] and c.layout.dim[0].label == 'x,y'
    mm = got['/markers'][0][1].markers[0]
    assert (mm.ns, mm.id, mm.type, mm.text) == ('loops', 3, Marker.SPHERE, 'cut')
    assert mm.pose.position.x == 0.25 and mm.color.g == 1.0
    assert got['/robot_description'][0][1].data == '<robot/>'


def test_schema_text_and_errors(tmp_path):
    text = msg_definition('visualization_msgs/msg/MarkerArray')
    nested = [line[5:] for line in text.splitlines() if line.startswith('MSG: ')]
    assert len(nested) == len(set(nested)) >= 10
    assert {'visualization_msgs/Marker', 'std_msgs/Header', 'builtin_interfaces/Time', 'geometry_msgs/Pose'} <= set(
        nested
    )
    assert ('=' * 80 + '\nMSG: std_msgs/Header') in text
    with pytest.raises(BagError, match='no_such_msgs/msg/Thing'):
        msg_definition('no_such_msgs/msg/Thing')
    with pytest.raises(BagError, match='expected'):
        msg_definition('JointState')
    with pytest.raises(BagError, match='cannot write'):
        McapBagWriter(tmp_path)  # a directory, not a file


@pytest.mark.ros
def test_record_command_next_to_a_running_graph(tmp_path):
    from ros_helpers import run_graph

    bag = tmp_path / 'five_bar.mcap'
    seen = {}

    def body(launcher, probe, model, out):
        proc = subprocess.Popen(
            [sys.executable, '-m', 'robot_dynamics.tools.cli', 'record', '--bag', str(bag), '--duration', '6'],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=str(tmp_path),
        )
        try:
            log, _ = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        seen['log'] = log
        assert proc.returncode == 0, log
        with probe.lock:
            seen['stamps'] = {m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for _, m in probe.js}

    run_graph('five_bar', body)
    log = seen['log']
    assert 'record:' in log and str(bag) in log, log
    topics = read_bag(bag)
    assert {'/joint_states', '/effort_controller/commands', '/robot_description'} <= set(topics), sorted(topics)
    assert '/rosout' not in topics and '/parameter_events' not in topics
    js = topics['/joint_states']
    stamps = [d.header.stamp.sec * 10**9 + d.header.stamp.nanosec for _, d in js]
    # the recorder ran >= 3 s next to the 100 Hz states (it subscribes within its first scan):
    # at least half of them, the machine may be loaded (measured 275-330)
    assert len(js) > 150, len(js)
    assert all(b > a for a, b in zip(stamps, stamps[1:]))
    assert len(set(stamps) & seen['stamps']) > 0.8 * len(stamps)
    assert set(js[-1][1].name) == set(five_bar_joints())
    log_times = [t for t, _ in js]
    assert all(b >= a for a, b in zip(log_times, log_times[1:]))
    assert abs(log_times[-1] * 1e-9 - time.time()) < 120
    assert '<robot' in topics['/robot_description'][0][1].data
    assert all(len(m.data) == 2 for _, m in topics['/effort_controller/commands'])
    # the counts printed are the counts in the file
    assert f'/joint_states: {len(js)}' in log


def five_bar_joints():
    import robot_dynamics as rd

    return rd.load_model(rd.data_path('urdf/five_bar.urdf')).joint_names


if __name__ == '__main__':
    sys.exit(pytest.main([os.path.abspath(__file__), '-v']))
