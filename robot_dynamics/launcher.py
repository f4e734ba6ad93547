"""Built-in launcher: start a robot's nodes as separate processes (no ``ros2 launch`` needed).

Reads the same ``config/<robot>.yaml`` as ``launch/<robot>.launch.py`` (via
:func:`robot_dynamics.bringup.load_bringup`), starts each node with
``python -m robot_dynamics.nodes.<exe> --ros-args -r __node:=<name> --params-file <tmp>``,
forwards every output line prefixed with ``[<node>]``, and shuts everything down cleanly
(SIGINT, then SIGTERM, then SIGKILL) on Ctrl-C / SIGTERM, when the optional duration is over,
or as soon as one node dies (then the exit status is non-zero and the culprit is named).

Which ``robot_dynamics`` the nodes run: always the one the launcher's interpreter imports by
its ``sys.path`` (the installed package, or a source tree put on ``PYTHONPATH`` on purpose, as
the test suite does), never a ``robot_dynamics/`` that happens to be in the current directory
(e.g. a clone of the repository, whose numba cache is not the warmed-up one): the nodes run in
a neutral working directory (the launcher's temp dir) and, on Python >= 3.11, with ``python -P``
(no working directory on ``sys.path``). Relative ``PYTHONPATH`` entries are made absolute (they
keep their meaning) and empty ones (= the working directory) are dropped; relative paths in the
``robot_description``/``loops`` parameters are made absolute too.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import yaml

from .bringup import Bringup

__all__ = ['Launcher']


class Launcher:
    """Start/stop the processes of a :class:`~robot_dynamics.bringup.Bringup`."""

    def __init__(self, bringup: Bringup, out=None, python=None, env=None):
        self.bringup = bringup
        self.out = out or sys.stdout
        self.python = python or sys.executable
        self.env = dict(os.environ if env is None else env)
        self.env.setdefault('PYTHONUNBUFFERED', '1')
        if self.env.get('PYTHONPATH') is not None:
            self.env['PYTHONPATH'] = os.pathsep.join(
                os.path.abspath(e) for e in self.env['PYTHONPATH'].split(os.pathsep) if e)
        self.procs = {}
        self._threads = []
        self._tmp = tempfile.TemporaryDirectory(prefix='robot_dynamics_launch_')
        self.cwd = self._tmp.name          # neutral working directory of the nodes
        self._lock = threading.Lock()
        self.failed = None

    def _say(self, prefix, line):
        with self._lock:
            self.out.write(f'[{prefix}] {line}\n')
            self.out.flush()

    def _pump(self, name, stream):
        for line in iter(stream.readline, ''):
            self._say(name, line.rstrip('\n'))
        stream.close()

    def python_flags(self):
        """``['-P']`` if the node interpreter has it (Python >= 3.11: the working directory is
        not put on ``sys.path``), else ``[]`` (the neutral working directory still applies)."""
        if not hasattr(self, '_flags'):
            if self.python == sys.executable:
                new = sys.version_info >= (3, 11)
            else:
                try:
                    new = subprocess.run([self.python, '-c', 'import sys; print(sys.version_info >= (3, 11))'],
                                         capture_output=True, text=True, timeout=30,
                                         cwd=self.cwd).stdout.strip() == 'True'
                except (OSError, subprocess.SubprocessError):
                    new = False
            self._flags = ['-P'] if new else []
        return list(self._flags)

    def command(self, spec):
        """The command line of one node (params file written to a temp dir); run it with
        ``cwd=self.cwd`` and ``env=self.env``."""
        pf = os.path.join(self._tmp.name, f'{spec.name}.yaml')
        params = spec.params_yaml()
        for p in params.values():
            par = p['ros__parameters']
            for key in ('robot_description', 'loops'):
                v = par.get(key)
                if isinstance(v, str) and v and '<' not in v and not os.path.isabs(v) \
                        and os.path.exists(v):
                    par[key] = os.path.abspath(v)          # relative to the caller's directory
        with open(pf, 'w') as fh:
            yaml.safe_dump(params, fh)
        prefix = ['nice', '-n', str(spec.nice)] if spec.nice and shutil.which('nice') else []
        return prefix + [self.python, *self.python_flags(), '-m', spec.module] + spec.ros_args(pf)

    def start(self):
        """Start every node in config order."""
        for spec in self.bringup.nodes:
            cmd = self.command(spec)
            self._say('launch', f'starting {spec.name}: -m {spec.module} --ros-args ...')
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 bufsize=1, env=self.env, cwd=self.cwd, start_new_session=True)
            self.procs[spec.name] = p
            t = threading.Thread(target=self._pump, args=(spec.name, p.stdout), daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def poll(self):
        """Name and return code of the first node that has exited, or None."""
        for name, p in self.procs.items():
            rc = p.poll()
            if rc is not None:
                return name, rc
        return None

    def shutdown(self, timeout=5.0):
        """SIGINT every live node, then SIGTERM, then SIGKILL; wait for all."""
        live = [p for p in self.procs.values() if p.poll() is None]
        for sig, wait in ((signal.SIGINT, timeout), (signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
            for p in live:
                if p.poll() is None:
                    try:
                        os.killpg(p.pid, sig)
                    except ProcessLookupError:
                        pass
            t_end = time.monotonic() + wait
            while time.monotonic() < t_end and any(p.poll() is None for p in live):
                time.sleep(0.05)
            live = [p for p in live if p.poll() is None]
            if not live:
                break
        for t in self._threads:
            t.join(timeout=1.0)
        self._tmp.cleanup()

    def run(self, duration=None) -> int:
        """Start, supervise until Ctrl-C/SIGTERM, ``duration`` s, or a node exits; return status."""
        stop = threading.Event()
        old = signal.signal(signal.SIGTERM, lambda *a: stop.set()) \
            if threading.current_thread() is threading.main_thread() else None
        self.start()
        t_end = None if duration is None else time.monotonic() + duration
        status = 0
        try:
            while not stop.is_set():
                ended = self.poll()
                if ended:
                    name, rc = ended
                    if rc != 0:
                        self.failed = name
                        self._say('launch', f'ERROR: node {name} exited with code {rc}; '
                                            f'shutting down the other nodes')
                        status = 1
                    else:
                        self._say('launch', f'node {name} finished; shutting down')
                    break
                if t_end is not None and time.monotonic() >= t_end:
                    self._say('launch', f'duration of {duration} s reached; shutting down')
                    break
                time.sleep(0.05)
        except KeyboardInterrupt:
            self._say('launch', 'Ctrl-C: shutting down')
        finally:
            self.shutdown()
            if old is not None:
                signal.signal(signal.SIGTERM, old)
        self._say('launch', 'all nodes stopped' + (' (failure)' if status else ''))
        return status
