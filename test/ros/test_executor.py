"""The executor every node spins in (``make_executor``) and the callback guard under it."""

import io
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor

from robot_dynamics.ros._common import guarded, make_executor


def test_make_executor_kinds(monkeypatch):
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        ex = make_executor(context=ctx)
        assert type(ex).__name__ == 'EventsExecutor'
        monkeypatch.setattr(sys, 'stderr', io.StringIO())  # faulthandler needs a real file
        assert type(make_executor(context=ctx)).__name__ == 'EventsExecutor'
        assert isinstance(sys.stderr, io.StringIO)
        monkeypatch.setenv('ROBOT_DYNAMICS_EXECUTOR', 'single')
        assert isinstance(make_executor(context=ctx), SingleThreadedExecutor)
        monkeypatch.setenv('ROBOT_DYNAMICS_EXECUTOR', 'bogus')
        with pytest.raises(ValueError, match='ROBOT_DYNAMICS_EXECUTOR'):
            make_executor(context=ctx)
    finally:
        rclpy.shutdown(context=ctx)


@pytest.mark.parametrize('kind', ['events', 'single'])
def test_guarded_timer_runs_without_timer_info_and_survives_errors(kind):
    """The EventsExecutor hands a TimerInfo to a ``*args`` callback (the guard's wrapper): the
    guard drops it, so the wrapped callback sees its own signature; an exception is counted
    and the timer keeps running."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node('guard_test', context=ctx)
    calls = []

    def tick():
        calls.append(time.monotonic())
        if len(calls) % 2:
            raise RuntimeError('every other tick fails')

    node.create_timer(0.01, guarded(node, tick, 'tick'))
    ex = make_executor(kind, context=ctx)
    ex.add_node(node)
    t_end = time.monotonic() + 0.5
    try:
        while time.monotonic() < t_end and len(calls) < 10:
            ex.spin_once(timeout_sec=0.05)
    finally:
        node.destroy_node()
        rclpy.shutdown(context=ctx)
    assert len(calls) >= 10
    assert node.callback_errors >= 5


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM])
def test_spin_node_ends_on_signal(tmp_path, sig):
    """A node spun by ``spin_node`` (EventsExecutor, spin_once loop) exits 0 within 2 s of
    SIGINT or SIGTERM, its timer running until then."""
    script = tmp_path / 'node.py'
    script.write_text(
        textwrap.dedent("""
        import sys
        from rclpy.node import Node
        from robot_dynamics.ros._common import guarded, spin_node
        class N(Node):
            def __init__(self):
                super().__init__('spin_test')
                self.create_timer(0.01, guarded(self, self.tick, 'tick'))
                self.n = 0
            def tick(self):
                self.n += 1
                if self.n == 20:
                    print('ticking', flush=True)
        sys.exit(spin_node(N))
    """)
    )
    env = dict(os.environ, ROS_LOG_DIR=str(tmp_path))  # (conftest's loopback DDS)
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert p.stdout.readline().strip() == 'ticking'
        t0 = time.monotonic()
        p.send_signal(sig)
        code = p.wait(timeout=5.0)
        assert time.monotonic() - t0 < 2.0
        assert code == 0
    finally:
        if p.poll() is None:
            p.kill()


def test_keyboard_interrupt_inside_a_callback_shuts_the_context_down():
    """Ctrl-C raising KeyboardInterrupt while a guarded callback runs (e.g. inside a publish,
    as seen at the end of a demo) must not escape to the executor (which logs it as a FATAL
    exception in a callback): the guard shuts the node's context down, so spin_node's loop ends
    and the node exits 0."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node('kbd_test', context=ctx)

    def cb(msg):
        raise KeyboardInterrupt

    try:
        assert guarded(node, cb, 'cb')(object()) is None
        assert not ctx.ok()
        assert getattr(node, 'callback_errors', 0) == 0  # not counted as a callback error
    finally:
        node.destroy_node()
        if ctx.ok():
            rclpy.shutdown(context=ctx)
