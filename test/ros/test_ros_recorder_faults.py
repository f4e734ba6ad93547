"""Recordings that survive the end of the recorder: signals, ``kill -9`` and ``--recover``.

* unit (ROS-free): McapBagWriter puts a finished chunk on disk once ``flush_period`` s of its
  (injected) clock have passed, on a write or on ``flush_if_due`` (early by the caller's check
  period); a copy of the file's bytes taken at any moment without ``close()`` (what
  ``kill -9`` leaves), and any shorter prefix of it (a write cut short), gives back through
  ``recover`` every message up to the last complete chunk, byte for byte, with the same
  schemas and channels, and the default reader reads the result; errors name the file;
  ``--recover`` prints the counts and writes in place with ``--out``.
* graph: ``robot-dynamics record`` as its own process next to a 200 Hz JointState publisher in
  this process (no robot graph). SIGTERM, SIGHUP and SIGINT after ~3 s: exit status 0, a
  complete file that the default reader reads, holding what was published once the recorder
  had subscribed. ``kill -9`` after ~5 s: ``--recover`` restores the messages up to the last
  flush (at most 1 s before the kill, plus a margin for a loaded machine).
"""

import os
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time

import pytest
from mcap.reader import make_reader

from robot_dynamics.tools import cli
from robot_dynamics.ros.mcap_bag import BagError, McapBagWriter, recover

TOPIC = '/recorder_fault_states'
RATE = 200.0  # Hz of the test publisher
MARGIN = 1.3  # s: the flush period (1 s) plus scheduling on a loaded machine


class FakeClock:
    """A settable clock [s] for the writer's flush period."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def cdr_string(text):
    """CDR bytes (little endian) of a std_msgs/msg/String: what a raw subscription hands over."""
    b = text.encode() + b'\0'
    return b'\x00\x01\x00\x00' + struct.pack('<I', len(b)) + b


def messages(path):
    """[(topic, log_time, publish_time, sequence, data)] by the default mcap reader."""
    with open(path, 'rb') as f:
        return [
            (c.topic, m.log_time, m.publish_time, m.sequence, bytes(m.data))
            for _, c, m in make_reader(f).iter_messages()
        ]


def snapshot(src, dst, nbytes=None):
    """Copy the bytes that are in ``src`` on disk now (the first ``nbytes``): what a process
    killed at this moment leaves, while its writer stays open."""
    with open(src, 'rb') as f:
        data = f.read()
    with open(dst, 'wb') as f:
        f.write(data if nbytes is None else data[:nbytes])
    return len(data)


# -- ROS-free: the writer and recover ----------------------------------------------------------


def test_writer_flushes_a_chunk_once_a_second_of_its_clock(tmp_path):
    clock = FakeClock()
    path = tmp_path / 'run.mcap'
    w = McapBagWriter(path, flush_period=1.0, fsync=False, clock=clock)
    head = path.stat().st_size
    assert head > 8  # magic + header on disk from the start
    for k in range(50):  # 0.0 .. 0.98 s: nothing due yet
        clock.t = 0.02 * k
        w.write('/a', 'std_msgs/msg/String', cdr_string(f'm{k}'), 10**9 + k)
    assert path.stat().st_size == head and w.flushes == 0
    clock.t = 1.0
    w.write('/a', 'std_msgs/msg/String', cdr_string('m50'), 10**9 + 50)  # due: this write flushes
    assert w.flushes == 1
    snapshot(path, tmp_path / 'cut.mcap')
    info = recover(tmp_path / 'cut.mcap')
    assert info['counts'] == {'/a': 51} and not info['complete']
    assert [d for *_, d in messages(info['out'])] == [cdr_string(f'm{k}') for k in range(51)]
    # a pause in the messages: flush_if_due (the recorder's timer) writes what waits
    w.write('/a', 'std_msgs/msg/String', cdr_string('m51'), 10**9 + 51)
    clock.t = 1.5
    assert not w.flush_if_due() and not w.flush_if_due(ahead=0.2)
    clock.t = 1.85  # a check every 0.2 s: the next one is late
    assert not w.flush_if_due()
    assert w.flush_if_due(ahead=0.2) and w.flushes == 2
    snapshot(path, tmp_path / 'cut2.mcap')
    assert recover(tmp_path / 'cut2.mcap')['counts'] == {'/a': 52}
    assert w.close() == {'/a': 52}
    assert len(messages(path)) == 52
    assert not w.flush_if_due()  # closed: nothing to do, no error


def test_recover_gives_back_everything_up_to_the_last_finished_chunk(tmp_path):
    clock = FakeClock()
    path = tmp_path / 'run.mcap'
    w = McapBagWriter(path, flush_period=1.0, fsync=False, clock=clock)
    written, flushed = [], [(path.stat().st_size, 0)]  # (bytes on disk, messages in them)
    snaps = []
    for k in range(400):  # 4 s at 100 Hz, two topics, two types
        clock.t = k / 100
        if k % 4 == 3:
            rec = ('/cmd', 'std_msgs/msg/Float64', b'\x00\x01\x00\x00' + struct.pack('<d', 0.5 * k))
        else:
            rec = ('/log', 'std_msgs/msg/String', cdr_string(f'line {k} ' + 'x' * (k % 17)))
        n_before = w.flushes
        w.write(rec[0], rec[1], rec[2], 10**9 * 1000 + 10**7 * k, 10**9 * 1000 + 10**7 * k - 5)
        written.append((rec[0], 10**9 * 1000 + 10**7 * k, 10**9 * 1000 + 10**7 * k - 5, rec[2]))
        if w.flushes != n_before:
            flushed.append((path.stat().st_size, len(written)))
        if k in (5, 99, 100, 101, 250, 399):  # "kill -9" here: copy what is on disk
            snaps.append((k, snapshot(path, tmp_path / f'kill_{k}.mcap')))
    assert len(flushed) == 4  # at 1, 2, 3 s (+ the header)
    for k, size in snaps:
        info = recover(tmp_path / f'kill_{k}.mcap')
        n = max(m for s, m in flushed if s <= size)
        assert size == max(s for s, _ in flushed if s <= size)  # only whole flushes reach the disk
        assert info['messages'] == n, (k, info)
        got = messages(info['out'])
        # byte for byte, in order: topic, log time, publish time, data (sequence: per topic)
        assert [(t, lt, pt, d) for t, lt, pt, _, d in got] == written[:n]
        assert info['out'] == str(tmp_path / f'kill_{k}.recovered.mcap')
        if n:
            assert info['start_ns'] == written[0][1] and info['end_ns'] == written[n - 1][1]
    # a cut anywhere (a write cut short): the messages of the chunks complete before the cut
    full = flushed[-1][0]
    cuts = list(range(flushed[0][0], full, 997)) + [s for s, _ in flushed] + [s - 1 for s, _ in flushed[1:]]
    for cut in cuts:
        snapshot(path, tmp_path / 'cut.mcap', cut)
        info = recover(tmp_path / 'cut.mcap', out=tmp_path / 'cut_out.mcap')
        lo = max(m for s, m in flushed if s <= cut)
        hi = min((m for s, m in flushed if s > cut), default=lo)
        assert lo <= info['messages'] <= hi, (cut, lo, hi, info)
        if cut in [s for s, _ in flushed]:
            assert info['messages'] == lo
        got = messages(tmp_path / 'cut_out.mcap')
        assert [(t, lt, pt, d) for t, lt, pt, _, d in got] == written[: info['messages']]
        assert info['stopped'] and not info['complete']
    w.close()
    # the complete file: a plain copy, same schemas and channels
    info = recover(path)
    assert info['complete'] and info['messages'] == 400
    assert info['counts'] == {'/log': 300, '/cmd': 100}
    with open(path, 'rb') as f:
        s0 = make_reader(f).get_summary()
    with open(info['out'], 'rb') as f:
        r = make_reader(f)
        s1 = r.get_summary()
        assert r.get_header().profile == 'ros2'
    assert sorted((s.name, s.encoding, s.data) for s in s0.schemas.values()) == sorted(
        (s.name, s.encoding, s.data) for s in s1.schemas.values()
    )
    assert sorted((c.topic, c.message_encoding, tuple(c.metadata.items())) for c in s0.channels.values()) == sorted(
        (c.topic, c.message_encoding, tuple(c.metadata.items())) for c in s1.channels.values()
    )
    assert messages(info['out']) == messages(path)


def test_recover_errors_in_place_and_command_line(tmp_path, capsys):
    with pytest.raises(BagError, match='no_such.mcap: no such file'):
        recover(tmp_path / 'no_such.mcap')
    (tmp_path / 'empty.mcap').write_bytes(b'')
    with pytest.raises(BagError, match=r'empty.mcap: not an MCAP file \(empty file\)'):
        recover(tmp_path / 'empty.mcap')
    (tmp_path / 'notes.txt').write_text('not a bag at all\n')
    with pytest.raises(BagError, match='notes.txt: not an MCAP file'):
        recover(tmp_path / 'notes.txt')
    with pytest.raises(SystemExit) as exc:
        cli.main(['record', '--recover', str(tmp_path / 'notes.txt')])
    msg = str(exc.value.code)
    assert 'notes.txt' in msg and 'not an MCAP file' in msg and '\n' not in msg
    # a truncated file repaired in place through the command line
    clock = FakeClock()
    path = tmp_path / 'bag' / 'run.mcap'
    w = McapBagWriter(path, flush_period=1.0, fsync=False, clock=clock)
    for k in range(30):
        clock.t = k / 10
        w.write('/chatter', 'std_msgs/msg/String', cdr_string(f'{k}'), (5 + k) * 10**8)
    cut = tmp_path / 'bag' / 'cut.mcap'
    snapshot(path, cut)
    w.close()
    with pytest.raises(Exception):  # the default reader fails on the cut file
        messages(cut)
    assert cli.main(['record', '--recover', str(cut), '--out', str(cut)]) == 0
    out = capsys.readouterr().out
    # flushed at 1 s and 2 s of the writer's clock: messages 0..20, log times 0.5 .. 2.5 s
    assert '  /chatter: 21' in out and 'no summary/footer' in out, out
    assert '21 messages on 1 topic(s)' in out and '2.000 s' in out and str(cut) in out, out
    assert len(messages(cut)) == 21
    assert sorted(os.listdir(tmp_path / 'bag')) == ['cut.mcap', 'run.mcap']  # no temporary left
    with pytest.raises(SystemExit, match='--out goes with --recover'):
        cli.main(['record', '--out', str(cut)])


# -- graph: the recorder process next to a publisher -------------------------------------------


class StatePublisher:
    """JointState on ``TOPIC`` at ``RATE`` Hz from a thread, header stamp = wall time [ns];
    ``sent``: (stamp ns, a subscriber was matched when it was published)."""

    def __init__(self):
        import rclpy
        from sensor_msgs.msg import JointState

        self._rclpy, self._msg = rclpy, JointState
        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx)
        self.node = rclpy.create_node('recorder_fault_publisher', context=self.ctx)
        self.pub = self.node.create_publisher(JointState, TOPIC, 10)
        self.sent = []
        self.lock = threading.Lock()
        self._run = True
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        k, t0 = 0, time.monotonic()
        while self._run:
            m = self._msg()
            now = time.time_ns()
            m.header.stamp.sec, m.header.stamp.nanosec = divmod(now, 10**9)
            m.name = ['j1', 'j2']
            m.position = [float(k), -1.0]
            matched = self.pub.get_subscription_count() > 0
            self.pub.publish(m)
            with self.lock:
                self.sent.append((now, matched))
            k += 1
            time.sleep(max(0.0, t0 + k / RATE - time.monotonic()))

    def wait_matched(self, timeout=60.0):
        t_end = time.monotonic() + timeout
        while self.pub.get_subscription_count() == 0:
            assert time.monotonic() < t_end, f'the recorder did not subscribe {TOPIC} within {timeout} s'
            time.sleep(0.02)

    def published(self, until_ns):
        """Stamps [ns] published with a subscriber matched, up to ``until_ns``."""
        with self.lock:
            return [t for t, matched in self.sent if matched and t <= until_ns]

    def close(self):
        self._run = False
        self.thread.join(timeout=2.0)
        self.node.destroy_node()
        self._rclpy.shutdown(context=self.ctx)


def stamps(path):
    """Header stamps [ns] of the JointStates in ``path`` (default reader + mcap_ros2)."""
    from mcap_ros2.decoder import DecoderFactory

    with open(path, 'rb') as f:
        r = make_reader(f, decoder_factories=[DecoderFactory()])
        return [
            m.header.stamp.sec * 10**9 + m.header.stamp.nanosec
            for _, c, _, m in r.iter_decoded_messages()
            if c.topic == TOPIC
        ]


def start_recorder(bag, cwd):
    return subprocess.Popen(
        [sys.executable, '-m', 'robot_dynamics.tools.cli', 'record', '--bag', str(bag), '--topics', TOPIC],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=str(cwd),
    )


def stop_recorder(pub, proc, signum, after):
    """Wait until the recorder subscribed, ``after`` s more, send ``signum``; returns
    (wall time of the signal [ns], return code, output)."""
    try:
        pub.wait_matched()
        time.sleep(after)
        t_sig = time.time_ns()
        proc.send_signal(signum)
        log, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return t_sig, proc.returncode, log


@pytest.mark.ros
@pytest.mark.parametrize('signame', ['SIGTERM', 'SIGHUP', 'SIGINT'])
def test_signal_closes_the_bag(tmp_path, signame):
    pytest.importorskip('rclpy')
    bag = tmp_path / 'run.mcap'
    proc = start_recorder(bag, tmp_path)
    pub = StatePublisher()
    try:
        t_sig, rc, log = stop_recorder(pub, proc, getattr(signal, signame), 3.0)
    finally:
        pub.close()
    assert rc == 0, log
    assert 'Traceback' not in log, log
    assert f'record: {signame}: bag closed' in log, log
    got = stamps(bag)  # the default reader: summary and footer there
    sent = pub.published(t_sig)
    assert all(b > a for a, b in zip(got, got[1:]))
    assert set(got) <= {t for t, _ in pub.sent}
    # everything published once the recorder had subscribed, but what was in flight at the
    # signal and the first messages of a match seen by the publisher before the subscriber
    assert len(got) >= 0.9 * len(sent) and len(sent) > 0.7 * 3.0 * RATE, (len(got), len(sent))
    assert f'{TOPIC}: {len(got)}' in log, log  # the counts printed are those in the file


@pytest.mark.ros
def test_kill_9_loses_at_most_the_last_second_and_recover_restores_the_rest(tmp_path):
    pytest.importorskip('rclpy')
    bag = tmp_path / 'run.mcap'
    proc = start_recorder(bag, tmp_path)
    pub = StatePublisher()
    try:
        t_kill, rc, log = stop_recorder(pub, proc, signal.SIGKILL, 5.0)
    finally:
        pub.close()
    assert rc == -signal.SIGKILL
    with pytest.raises(Exception):  # no summary/footer: the default reader fails
        stamps(bag)
    keep = tmp_path / 'killed.mcap'
    shutil.copy(bag, keep)
    r = subprocess.run(
        [sys.executable, '-m', 'robot_dynamics.tools.cli', 'record', '--recover', str(bag)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(tmp_path),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    recovered = tmp_path / 'run.recovered.mcap'
    got = stamps(recovered)
    sent = pub.published(t_kill)
    assert got and sent and len(sent) > 0.7 * 5.0 * RATE, (len(got), len(sent))
    lost_s = (sent[-1] - got[-1]) * 1e-9
    assert lost_s <= MARGIN, (lost_s, len(got), len(sent))
    assert len(got) >= len(sent) - MARGIN * RATE, (len(got), len(sent))
    assert f'{TOPIC}: {len(got)}' in r.stdout and 'no summary/footer' in r.stdout, r.stdout
    assert keep.read_bytes() == bag.read_bytes()  # the input is left as it was


if __name__ == '__main__':
    sys.exit(pytest.main([os.path.abspath(__file__), '-v']))
