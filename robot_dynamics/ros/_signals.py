"""Stop signals of a node process as a flag instead of ``KeyboardInterrupt`` (standard library only:
imported before anything heavy, see :mod:`robot_dynamics.ros`).

SIGINT (Ctrl-C in a terminal), SIGTERM (``kill``, systemd, docker, ``ros2 launch``'s
escalation) and SIGHUP (a closed terminal) set :data:`STOP` ``['signal']``. Installed before
``rclpy.init``, rclpy's own handlers (which shut the context down and wake the executor) call
these after theirs, so nothing raises inside a callback that C++ is running (the
EventsExecutor aborts the process with ``pybind11::error_already_set: KeyboardInterrupt``
there) nor in the middle of an import or a kernel compilation.
"""

import os
import signal
import sys

#: the stop request of this process: ``{'signal': None | signal number}``
STOP = {'signal': None}
_installed = []


def _on_signal(signum, frame):
    STOP['signal'] = signum


def quiet_signals(signals=None):
    """Install the flag-setting handler for ``signals`` (default SIGINT, SIGTERM, SIGHUP; only
    from the main thread); returns :data:`STOP`."""
    sigs = list(signals or (signal.SIGINT, signal.SIGTERM, signal.SIGHUP))
    for sig in sigs:
        try:
            signal.signal(sig, _on_signal)
            _installed.append(sig)
        except (ValueError, OSError):  # not the main thread: leave them alone
            pass
    if _installed:
        # the built-in launcher starts a node with them blocked (pending until now, see
        # robot_dynamics.ros.launcher): from here on they reach the handler
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [s for s in sigs if s in _installed])
    return STOP


# the node modules of robot_dynamics.ros (each one executable of setup.py's console_scripts)
NODES = (
    'closure_node',
    'controller_node',
    'dynamics_node',
    'ik_node',
    'ip_controller',
    'kinematics_node',
    'sea_controller',
    'sim_node',
    'trajectory_node',
    'vdc_controller',
)


def runs_a_node(argv=None, node_dir=None):
    """Whether this process was started to run one of the package's nodes: ``python -m
    robot_dynamics.ros.<node>`` (the built-in launcher) or a console script named after a node
    module (``ros2 run robot_dynamics <node>``, ``lib/robot_dynamics/<node>``)."""
    argv = list(getattr(sys, 'orig_argv', sys.argv) if argv is None else argv)
    if node_dir is None:
        nodes = set(NODES)
    else:
        nodes = {f[:-3] for f in os.listdir(node_dir) if f.endswith('.py') and not f.startswith('_')}
    if '-m' in argv:
        k = argv.index('-m') + 1
        mod = argv[k] if k < len(argv) else ''
        return mod.startswith('robot_dynamics.ros.') and mod.rsplit('.', 1)[1] in nodes
    script = next((a for a in argv[1:] if not a.startswith('-')), '')
    return os.path.basename(script) in nodes
