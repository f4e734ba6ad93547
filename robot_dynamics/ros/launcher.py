"""Built-in launcher: start a robot's nodes as separate processes (no ``ros2 launch`` needed).

Reads the same ``config/<robot>.yaml`` as ``launch/<robot>.launch.py`` (via
:func:`robot_dynamics.ros.bringup.load_bringup`), starts each node with
``python -m robot_dynamics.ros.<exe> --ros-args -r __node:=<name> --params-file <tmp>``,
forwards every output line prefixed with ``[<node>]``, and shuts everything down cleanly on
Ctrl-C, SIGTERM or SIGHUP (terminal closed), when the optional duration is over, or as soon as
one node dies (then the exit status is non-zero and the culprit is named).

Stopping (see docs/launch_and_safety.md):

* **Escalation with deadlines**: SIGINT to every node; whatever still runs after
  ``sigterm_timeout`` s (default 5) gets SIGTERM; whatever still runs ``sigkill_timeout`` s
  (default 2) later gets SIGKILL. Each node runs in its own session/process group and the
  signal goes to the group. A second Ctrl-C (or SIGTERM/SIGHUP) during the shutdown skips
  the rest of the current wait (the next signal is sent at once); no traceback.
* **Nodes never outlive the launcher**, whatever kills it: every node gets a parent-death
  signal (``prctl(PR_SET_PDEATHSIG, SIGTERM)``, Linux) and a small watchdog process (started
  first, stdlib only) learns every node's process group through a pipe; when the pipe closes
  without the launcher's goodbye (the launcher was SIGKILLed or crashed), the watchdog sends
  SIGTERM (to groups without the parent-death signal), waits ``sigkill_timeout`` s and SIGKILLs
  whatever is left, then exits.
* **DDS on loopback by default**: unless the launcher's environment widens discovery
  (``ROS_AUTOMATIC_DISCOVERY_RANGE`` other than LOCALHOST, ``ROS_STATIC_PEERS``) or brings its
  own Fast DDS configuration, the nodes get the package's Fast DDS loopback profile
  (``FASTDDS_DEFAULT_PROFILES_FILE``, with ``ROS_AUTOMATIC_DISCOVERY_RANGE=SYSTEM_DEFAULT``):
  discovery and every UDP socket on 127.0.0.1; see
  :func:`robot_dynamics.ros.bringup.discovery_env`. The launcher prints which applies.

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

import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import yaml

from robot_dynamics.ros.bringup import Bringup, describe_discovery, discovery_env

__all__ = ['Launcher', 'STOP_SIGNALS']

# signals that stop the launcher (and with it every node); a repeated one hurries the shutdown
STOP_SIGNALS = tuple(getattr(signal, s) for s in ('SIGINT', 'SIGTERM', 'SIGHUP') if hasattr(signal, s))
_SIG_TEXT = {signal.SIGINT: 'Ctrl-C', signal.SIGTERM: 'SIGTERM'}
if hasattr(signal, 'SIGHUP'):
    _SIG_TEXT[signal.SIGHUP] = 'SIGHUP (terminal closed?)'
_PR_SET_PDEATHSIG = 1
_REAP_WAIT = 2.0  # after SIGKILL: wait this long for the kernel to reap

# The watchdog (``python -I -c _WATCHDOG <sigkill_timeout>``, stdlib only). Protocol on its stdin,
# one line each: ``node <pgid> <1|0: has a parent-death signal>``, ``exit`` (launcher done, all
# nodes stopped). End of file without ``exit`` = the launcher died: stop the nodes.
_WATCHDOG = r"""
import os, signal, sys, time
for s in ('SIGINT', 'SIGHUP', 'SIGTERM', 'SIGPIPE'):
    signal.signal(getattr(signal, s), signal.SIG_IGN)
grace = float(sys.argv[1])
groups = {}
for line in sys.stdin:
    w = line.split()
    if w and w[0] == 'exit':
        sys.exit(0)
    if len(w) == 3 and w[0] == 'node':
        groups[int(w[1])] = w[2] == '1'

def alive(pgid):
    try:
        with open('/proc/%d/stat' % pgid) as fh:
            if fh.read().rsplit(')', 1)[1].split()[0] in 'ZX':
                return False
    except (OSError, IndexError):
        pass
    try:
        os.killpg(pgid, 0)
        return True
    except OSError:
        return False

def stop(sig, only=None):
    for g, pdeath in list(groups.items()):
        if only is None or pdeath == only:
            try:
                os.killpg(g, sig)
            except OSError:
                pass

stop(signal.SIGTERM, only=False)          # the others got SIGTERM from the kernel already
t_end = time.monotonic() + grace
while time.monotonic() < t_end:
    groups = {g: p for g, p in groups.items() if alive(g)}
    if not groups:
        sys.exit(0)
    time.sleep(0.05)
stop(signal.SIGKILL)
"""


def _pdeathsig_preexec(sig):
    """A ``preexec_fn`` giving the child ``sig`` when the thread that started it ends (the
    launcher's main thread: the launcher process), or None where ``prctl`` is unavailable."""
    if not sys.platform.startswith('linux'):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec():
        prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # the launcher died before prctl took effect
            os.kill(os.getpid(), int(sig))

    return preexec


def _blocking_stop_signals(then=None):
    """A ``preexec_fn`` that starts the child with SIGINT, SIGTERM and SIGHUP *blocked* (held
    pending, not lost), then runs ``then``. A node unblocks them once its flag-setting handlers
    are installed (:mod:`robot_dynamics.ros`, first import): a Ctrl-C while the interpreter
    itself still starts (its ``site`` imports) is then handled like any later one instead of
    raising ``KeyboardInterrupt`` there."""
    stops = [s for s in STOP_SIGNALS]

    def setup():
        signal.pthread_sigmask(signal.SIG_BLOCK, stops)
        if then is not None:
            then()

    return setup


def _check_timeout(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f'{name} must be a finite number of seconds >= 0, got {value!r}')
    return float(value)


class Launcher:
    """Start/stop the processes of a :class:`~robot_dynamics.ros.bringup.Bringup`.

    ``sigterm_timeout``: seconds between SIGINT and SIGTERM to a node that does not stop;
    ``sigkill_timeout``: seconds between SIGTERM and SIGKILL (also the watchdog's grace after
    the launcher died). ``env``: the nodes' environment (default ``os.environ``), to which
    :func:`~robot_dynamics.ros.bringup.discovery_env` of it is added (by default the loopback
    profile; ``discovery`` says what applies).
    ``watchdog``: start the watchdog process (default True).
    """

    def __init__(
        self, bringup: Bringup, out=None, python=None, env=None, sigterm_timeout=5.0, sigkill_timeout=2.0, watchdog=True
    ):
        self.bringup = bringup
        self.out = out or sys.stdout
        self.python = python or sys.executable
        self.sigterm_timeout = _check_timeout('sigterm_timeout', sigterm_timeout)
        self.sigkill_timeout = _check_timeout('sigkill_timeout', sigkill_timeout)
        self.env = dict(os.environ if env is None else env)
        self.env.setdefault('PYTHONUNBUFFERED', '1')
        self.env.update(discovery_env(self.env))
        self.discovery = describe_discovery(self.env)
        if self.env.get('PYTHONPATH') is not None:
            self.env['PYTHONPATH'] = os.pathsep.join(
                os.path.abspath(e) for e in self.env['PYTHONPATH'].split(os.pathsep) if e
            )
        self.procs = {}
        self._threads = []
        self._tmp = tempfile.TemporaryDirectory(prefix='robot_dynamics_launch_')
        self.cwd = self._tmp.name  # neutral working directory of the nodes
        self._lock = threading.Lock()
        self.failed = None
        self.use_watchdog = watchdog
        self.watchdog = None  # its Popen once started
        self.stop_signal = None  # the signal that stopped run(), if any
        self._stop = threading.Event()  # run(): stop requested (signal)
        self._hurry = threading.Event()  # shutdown(): skip the rest of the current wait
        self._stopping = False
        self._out_broken = False

    def _say(self, prefix, line):
        with self._lock:
            if self._out_broken:
                return
            try:
                self.out.write(f'[{prefix}] {line}\n')
                self.out.flush()
            except (OSError, ValueError):  # terminal gone (SIGHUP) or closed stream: keep going
                self._out_broken = True

    def _pump(self, name, stream):
        try:
            for line in iter(stream.readline, ''):
                self._say(name, line.rstrip('\n'))
        except (OSError, ValueError):
            pass
        finally:
            stream.close()

    def python_flags(self):
        """``['-P']`` if the node interpreter has it (Python >= 3.11: the working directory is
        not put on ``sys.path``), else ``[]`` (the neutral working directory still applies)."""
        if not hasattr(self, '_flags'):
            if self.python == sys.executable:
                new = sys.version_info >= (3, 11)
            else:
                try:
                    new = (
                        subprocess.run(
                            [self.python, '-c', 'import sys; print(sys.version_info >= (3, 11))'],
                            capture_output=True,
                            text=True,
                            timeout=30,
                            cwd=self.cwd,
                        ).stdout.strip()
                        == 'True'
                    )
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
                if isinstance(v, str) and v and '<' not in v and not os.path.isabs(v) and os.path.exists(v):
                    par[key] = os.path.abspath(v)  # relative to the caller's directory
        with open(pf, 'w') as fh:
            yaml.safe_dump(params, fh)
        from robot_dynamics.ros.bringup import process_prefix

        prefix = process_prefix(spec)
        return prefix + [self.python, *self.python_flags(), '-m', spec.module] + spec.ros_args(pf)

    def _popen(self, cmd, **kw):
        """A child process in its own session, line-buffered text, in the launcher's directory."""
        return subprocess.Popen(cmd, text=True, bufsize=1, cwd=self.cwd, start_new_session=True, **kw)

    def _start_watchdog(self):
        if not self.use_watchdog or self.watchdog is not None or not sys.platform.startswith('linux'):
            return
        try:
            cmd = [self.python, '-I', '-c', _WATCHDOG, repr(self.sigkill_timeout)]
            self.watchdog = self._popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
        except OSError as exc:
            self._say('launch', f'WARNING: no watchdog ({exc}); nodes rely on the parent-death signal')
            self.watchdog = None

    def _tell_watchdog(self, line):
        if self.watchdog is not None and self.watchdog.stdin and not self.watchdog.stdin.closed:
            try:
                self.watchdog.stdin.write(line + '\n')
                self.watchdog.stdin.flush()
            except (OSError, ValueError):
                pass

    def _stop_watchdog(self):
        if self.watchdog is None:
            return
        self._tell_watchdog('exit')
        try:
            self.watchdog.stdin.close()
        except (OSError, ValueError):
            pass
        try:
            self.watchdog.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            self.watchdog.kill()
            self.watchdog.wait()

    def start(self):
        """Start every node in config order (after the watchdog). Each node: own session and
        process group, stdin /dev/null, a parent-death SIGTERM when started from the main
        thread (a parent-death signal follows the creating thread), output forwarded."""
        self._start_watchdog()
        main = threading.current_thread() is threading.main_thread()
        preexec = _pdeathsig_preexec(signal.SIGTERM) if main else None
        ours = _blocking_stop_signals(preexec)  # (the package's nodes unblock them)
        if self.watchdog is not None:
            self._say('launch', f'watchdog (pid {self.watchdog.pid}); {self.discovery}')
        else:
            self._say('launch', self.discovery)
        b = self.bringup
        if b.ros_processes:  # ros2_control hardware: not ours to start
            self._say(
                'launch',
                f"hardware '{b.hardware}': controller_manager, its spawners and "
                f'robot_state_publisher (robot_description: {b.xacro} with '
                f'hardware:={"mock" if b.hardware == "mock" else "<ros2_control>"}) '
                f'need a ROS 2 installation and are not started by this launcher; '
                f'`ros2 launch robot_dynamics {b.robot}.launch.py '
                f'hardware:={b.hardware}` starts everything. Started here: '
                f'{", ".join(s.name for s in b.nodes)} (closure_node completes '
                f'measured_joint_states). The ROS 2 side:',
            )
            for p in b.ros_processes:
                self._say('launch', f'  {p.command()}')
        for spec in self.bringup.nodes:
            if self._stop.is_set():
                break  # a stop signal arrived while starting
            cmd = self.command(spec)
            p = self._popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=self.env,
                preexec_fn=ours if spec.module.startswith('robot_dynamics.ros.') else preexec,
            )
            self.procs[spec.name] = p
            self._tell_watchdog(f'node {p.pid} {int(preexec is not None)}')
            self._say('launch', f'started {spec.name} (pid {p.pid}): -m {spec.module} --ros-args ...')
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

    def _on_signal(self, signum, frame):
        """Handler of STOP_SIGNALS: the first requests a stop, later ones hurry the shutdown."""
        if not self._stopping and not self._stop.is_set():
            self.stop_signal = signum
            self._stop.set()
        else:
            self._hurry.set()

    def _install_handlers(self):
        """Install ``_on_signal`` for STOP_SIGNALS (main thread only); returns the old ones."""
        if threading.current_thread() is not threading.main_thread():
            return {}
        old = {}
        for s in STOP_SIGNALS:
            try:
                old[s] = signal.signal(s, self._on_signal)
            except (ValueError, OSError):
                pass
        return old

    @staticmethod
    def _restore_handlers(old):
        for s, h in old.items():
            try:
                signal.signal(s, h if h is not None else signal.SIG_DFL)
            except (ValueError, OSError):
                pass

    def shutdown(self, timeout=None):
        """Stop every live node: SIGINT, then SIGTERM after ``timeout`` (default
        ``sigterm_timeout``) s, then SIGKILL after ``sigkill_timeout`` s; wait for all. A stop
        signal received meanwhile (second Ctrl-C) sends the next signal at once. Idempotent."""
        first_wait = self.sigterm_timeout if timeout is None else _check_timeout('timeout', timeout)
        self._stopping = True
        old = self._install_handlers()
        try:
            live = {n: p for n, p in self.procs.items() if p.poll() is None}
            stages = ((signal.SIGINT, first_wait), (signal.SIGTERM, self.sigkill_timeout), (signal.SIGKILL, _REAP_WAIT))
            for k, (sig, wait) in enumerate(stages):
                if not live:
                    break
                if k:
                    self._say('launch', f'still running: {", ".join(live)}; sending {sig.name}')
                for p in live.values():
                    try:
                        os.killpg(p.pid, sig)
                    except (ProcessLookupError, PermissionError):
                        pass
                self._hurry.clear()
                t_end = time.monotonic() + wait
                while (
                    time.monotonic() < t_end
                    and not self._hurry.is_set()
                    and any(p.poll() is None for p in live.values())
                ):
                    self._hurry.wait(0.05)
                live = {n: p for n, p in live.items() if p.poll() is None}
                if live and self._hurry.is_set() and sig != signal.SIGKILL:
                    self._say('launch', 'stop signal again: not waiting any longer')
            if live:
                self._say(
                    'launch',
                    f'ERROR: could not stop {", ".join(live)} (pids {", ".join(str(p.pid) for p in live.values())})',
                )
            for t in self._threads:
                t.join(timeout=1.0)
            if not live:
                self._stop_watchdog()  # else: it stays and keeps trying (then exits)
            self._tmp.cleanup()
        finally:
            self._restore_handlers(old)

    def run(self, duration=None) -> int:
        """Start, supervise until Ctrl-C/SIGTERM/SIGHUP, ``duration`` s, or a node exits;
        return the status (1 if a node failed)."""
        old = self._install_handlers()
        t_end = None if duration is None else time.monotonic() + duration
        status = 0
        try:
            self.start()
            while not self._stop.is_set():
                ended = self.poll()
                if ended:
                    name, rc = ended
                    if rc != 0:
                        self.failed = name
                        self._say('launch', f'ERROR: node {name} exited with code {rc}; shutting down the other nodes')
                        status = 1
                    else:
                        self._say('launch', f'node {name} finished; shutting down')
                    break
                if t_end is not None and time.monotonic() >= t_end:
                    self._say('launch', f'duration of {duration} s reached; shutting down')
                    break
                self._stop.wait(0.05)
            if self._stop.is_set():
                self._say('launch', f'{_SIG_TEXT.get(self.stop_signal, "signal")}: shutting down')
        except KeyboardInterrupt:  # SIGINT before the handlers were installed
            self._say('launch', 'Ctrl-C: shutting down')
        finally:
            self.shutdown()
            self._restore_handlers(old)
        self._say('launch', 'all nodes stopped' + (' (failure)' if status else ''))
        return status
