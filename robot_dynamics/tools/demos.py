"""Per-robot demos: what each robot's closed-loop graph is judged by (ROS-free part).

``robot-dynamics demo ROBOT`` starts ``config/<ROBOT>.yaml`` (its default timing), records the
topics named here from a recorder node, drives the motion the robot needs (goals for the SEA
robot), then reports the robot's own metric against a stated bound plus what every graph is
judged by (``/joint_states`` rate against the configured one, loop-closure residual of the
published joints, the plant's real-time factor, state -> command latency at the recorder) and
writes ``out/demo_<robot>.png``. The exit status is non-zero when a bound is missed.

Each :class:`DemoSpec` names the error signal (topic and how to read a scalar from it), its unit
and bound, and the time after which the bound applies (the start-up transient before it is
plotted, not judged). Bounds are the steady-state errors measured on this 2-core machine times a
margin for a loaded machine (see docs/ros_interfaces.md, "Demos").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ['DemoSpec', 'DEMOS', 'scalar_error', 'summarise', 'command_latency']


@dataclass
class DemoSpec:
    """How a robot's demo is run and judged.

    ``error``: 'task' (tool pose of kinematics_node vs trajectory_node's reference pose, matched
    by stamp, world ``axes``), 'array' (``topic`` Float64MultiArray: max |first ``n`` entries|,
    n = half the array by default, i.e. e of [e, ed]) or 'labelled' (``topic`` with
    ``layout.dim[0].label``: max | fields starting with ``prefix`` |). ``unit``/``scale`` for
    printing, ``bound`` in SI, judged after ``settle`` s of the recorded window.
    """

    error: str
    bound: float
    unit: str = 'mm'
    scale: float = 1e3
    topic: str = '/dynamics_node/tracking_error'
    prefix: str = ''
    n: int | None = None
    frame: str = 'tool'
    axes: tuple = (0, 2)
    settle: float = 3.0
    duration: float = 12.0
    goals: list = field(default_factory=list)  # SEA: [(x, y), ...] sent in turn
    goal_period: float = 1.5
    goal_topic: str = '/goal'  # trajectory_node profile goals (PointStamped)
    lam_bound: float | None = None  # SEA: max |lambda - lambda_d| after settle
    extra: dict = field(default_factory=dict)  # name -> (msg type name, topic) recorded too


DEMOS = {
    'five_bar': DemoSpec('task', 15e-3, duration=12.0),
    'four_bar': DemoSpec('array', 0.05, unit='rad', scale=1.0),
    'slider_crank': DemoSpec('array', 0.05, unit='rad', scale=1.0),
    'irsbot2': DemoSpec('task', 5e-3),
    'irsbot2_t1': DemoSpec('task', 5e-3, settle=0.3, duration=14.0),  # real time (lock-step ~0.16x)
    'series_parallel_3dof': DemoSpec(
        'labelled', 5e-3, unit='rad|m', scale=1.0, topic='/ip_controller/diagnostics', prefix='e_'
    ),
    'hydraulic_boom': DemoSpec(
        'labelled',
        10e-3,
        topic='/vdc_controller/diagnostics',
        prefix='e_tcp',
        settle=1.0,
        duration=12.0,
        extra={'cyl': ('JointState', '/hydraulics/cylinder_states')},
    ),
    # goals to trajectory_node (/goal), sea_controller = law sea_flatness in the control loop;
    # lambda (spring preload) from the labelled /sea_controller/diagnostics
    'planar_3rrr_sea': DemoSpec(
        'array',
        10e-3,
        topic='/sea_controller/tracking_error',
        n=2,
        settle=0.5,
        duration=8.0,
        goals=[(0.05, 0.0), (-0.05, 0.0), (0.0, 0.04), (0.0, 0.0)],
        lam_bound=2.0,  # lock-step 0.04; real time ~1 N m (delays); < 40 % of 5 N m
        extra={'lam': ('Float64MultiArray', '/sea_controller/diagnostics')},
    ),
    'gough_stewart': DemoSpec('array', 1e-4, settle=0.5, duration=6.0),
}


def scalar_error(spec, msg_data, labels=None):
    """Scalar tracking error of one message (see :class:`DemoSpec`)."""
    d = np.asarray(msg_data, float)
    if spec.error == 'labelled':
        names = (labels or '').split(',')
        idx = [i for i, nm in enumerate(names) if nm.startswith(spec.prefix) and i < len(d)]
        return float(np.abs(d[idx]).max()) if idx else float('nan')
    n = spec.n if spec.n is not None else max(1, len(d) // 2)
    return float(np.abs(d[:n]).max()) if len(d) else float('nan')


def summarise(spec, t, e):
    """(max, rms, n) of the error after ``settle`` s of its own time axis."""
    t, e = np.asarray(t, float), np.asarray(e, float)
    ok = np.isfinite(e)
    t, e = t[ok], e[ok]
    if not len(t):
        return float('nan'), float('nan'), 0
    late = e[t >= t[0] + spec.settle]
    if not len(late):
        return float('nan'), float('nan'), 0
    return float(late.max()), float(np.sqrt(np.mean(late**2))), len(late)


def command_latency(state_arrivals, command_arrivals):
    """State -> command latency [s] seen by an observer: for each command, its arrival minus
    the arrival of the newest state before it (both sorted, same clock). Commands before the
    first state are dropped. Includes the transport hops to the observer, so it is an upper
    bound of the controller's own state -> command time."""
    ja = np.asarray(state_arrivals, float)
    ca = np.asarray(command_arrivals, float)
    k = np.searchsorted(ja, ca, side='right') - 1  # a state at the same instant counts
    return (ca - ja[np.clip(k, 0, None)])[k >= 0]
