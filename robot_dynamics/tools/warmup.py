"""Compile (and cache) every numerical kernel the nodes use: ``robot-dynamics warmup``.

The kernels are numba functions with ``cache=True``: each is compiled on its first call for the
argument types of that call and stored in the ``__pycache__`` of the copy of the package that
was imported (the installed one, or a source tree on ``PYTHONPATH``). A node started on a cold
cache compiles its kernels itself: 20-230 s per family (tree kinematics, projection, constraint
embedding, recursive 2nd-order ID (6 x 6 and general route), VDC/hydraulics, SEA), during which
it publishes nothing.

:func:`warmup` runs, for every robot config ``config/<robot>.yaml``, the core API calls that
each node of that config makes at run time, with the node's parameters from the config and the
same argument types and shapes (1-D float64 state vectors built from ``/joint_states``, Python
lists from ROS parameters ...), so that afterwards every node starts in seconds. It does not
import the node modules (they import rclpy): the calls are written here, one function per node
role (sim_node's plant kind, dynamics_node's law, ...), see ``_NODES``.

Extending: a new node or law gets a function here that calls the core API the way the node
does (arguments of the same types), registered in ``_NODES`` (by executable) or ``_LAWS``
(dynamics_node laws); sim_node builds any plant kind through the plant registry, so a new plant
is covered if its ``step``/``hold_command`` are all it needs. ``test/ros/test_startup.py`` starts
every node of every config after the warm-up and fails if one of them still compiles at start.

This module imports nothing heavy at import time (the command line lists the robots in its
help without loading numpy or numba).
"""

from __future__ import annotations

import os
import time

__all__ = ['warmup', 'warmup_robot', 'robot_names', 'WarmupError']


class WarmupError(RuntimeError):
    """One or more robots failed to warm up (the message names them and the error)."""


def robot_names():
    """Names of the robot configs (``config/<robot>.yaml``) that :func:`warmup` covers."""
    from robot_dynamics.parsers.data import data_path

    try:
        d = data_path('config')
    except FileNotFoundError:
        return []
    return sorted(f[:-5] for f in os.listdir(d) if f.endswith('.yaml'))


#: The task of the general 2nd-order PKM route (one kernel signature for every robot).
_GENERAL = '(general 2nd-order PKM route)'
#: The order of a parallel warm-up: the tasks that compile the kernel families the others share
#: (or the largest ones) first, so that two workers rarely compile the same family at once; the
#: other robots after them in the order given.
_FIRST = (
    'five_bar',
    _GENERAL,
    'hydraulic_boom',
    'irsbot2',
    'planar_3rrr_sea',
    'series_parallel_3dof',
)


def warmup(robots=None, progress=print, jobs=1):
    """Compile and cache the kernels of every node of the given robot configs (names of
    ``config/<robot>.yaml`` or paths of bringup configs, e.g. an imported robot's; default: all).

    ``progress(str)`` receives one line per task (nodes covered, seconds) and the total.
    ``jobs`` > 1: the work is split into tasks run by ``jobs`` worker processes (spawned: they
    import the same copy of the package, so they fill the same cache): one per robot, and the
    general 2nd-order PKM route (the largest kernel family) once if a node of the configs uses
    it, in the order of :data:`_FIRST`; a single robot's plant (sim_node) and its other nodes
    are two tasks. Returns {robot: seconds (its tasks' sum)}. Raises
    :class:`WarmupError` after trying every robot if any failed (unknown robot names too).
    """
    names = _robots_arg(robots)
    progress = progress or (lambda s: None)
    t0 = time.perf_counter()
    times, failed = {}, []
    jobs = max(1, int(jobs))
    if jobs == 1:
        tasks = [(r, None) for r in names]
    elif len(names) == 1:  # one robot: its plant and its other nodes side by side
        tasks = [(names[0], 'plant'), (names[0], 'nodes')]
    else:
        tasks = [(r, None) for r in names] + ([(_GENERAL, None)] if any(_uses_general_route(r) for r in names) else [])
        tasks.sort(key=lambda t: _FIRST.index(t[0]) if t[0] in _FIRST else len(_FIRST))
    general_route = jobs == 1 or len(names) == 1  # else the general route is a task of its own

    def report(k, task, res):
        robot, part = task
        label = f'{robot} ({part})' if part else robot
        covered, skipped, secs, err = res
        if err:
            failed.append(f'{label}: {err}')
            progress(f'[{k}/{len(tasks)}] {label}: FAILED: {err}')
            return
        if robot != _GENERAL:
            times[robot] = times.get(robot, 0.0) + secs
        note = f'; NOT covered (compile at their start): {", ".join(skipped)}' if skipped else ''
        progress(f'[{k}/{len(tasks)}] {label}: {", ".join(covered) or "-"} ({secs:.1f} s){note}')

    if jobs == 1:
        for k, task in enumerate(tasks, 1):
            report(k, task, _warm_one(*task, general_route))
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context('spawn')) as pool:
            futs = {pool.submit(_warm_one, *task, general_route): task for task in tasks}
            for k, f in enumerate(as_completed(futs), 1):
                try:
                    res = f.result()
                except Exception as exc:  # noqa: BLE001 - a worker died: report, go on
                    res = ([], [], 0.0, f'{type(exc).__name__}: {exc}')
                report(k, futs[f], res)
    progress(
        f'warmup: kernels of {len(times)} robot config(s) compiled and cached in '
        f'{time.perf_counter() - t0:.1f} s' + (f' ({jobs} jobs)' if jobs > 1 else '')
    )
    if failed:
        raise WarmupError('warmup failed for ' + '; '.join(failed))
    return times


def _uses_general_route(bringup):
    """Whether a node of the config (a Bringup or a robot name) runs the general 2nd-order PKM
    route: trajectory_node's ``mode: pkm_d2``, the SEA flatness law's ``sea_flatness: general``."""
    if isinstance(bringup, str):
        from robot_dynamics.ros.bringup import load_bringup

        bringup = load_bringup(bringup)
    return any(
        s.parameters.get('mode') == 'pkm_d2' or s.parameters.get('sea_flatness') == 'general' for s in bringup.nodes
    )


def _warm_one(robot, part=None, general_route=True):
    """(covered, skipped, seconds, error text or None) of one task: a robot's warm-up (``part``
    None: all of it, 'plant' or 'nodes', and ``general_route``: see :func:`warmup_robot`) or the
    general route's (robot = ``_GENERAL``)."""
    t1 = time.perf_counter()
    try:
        if robot == _GENERAL:
            from robot_dynamics.pkm import general

            general.warmup()
            covered, skipped = ['inverse_dynamics_d2_general'], []
        else:
            covered, skipped = warmup_robot(robot, part=part, general_route=general_route)
    except Exception as exc:  # noqa: BLE001 - reported by the caller
        return [], [], 0.0, f'{type(exc).__name__}: {exc}'
    return covered, skipped, time.perf_counter() - t1, None


def _robots_arg(names):
    known = robot_names()
    if names is None or len(names) == 0:
        return known
    names = [names] if isinstance(names, str) else list(names)
    bad = [n for n in names if n not in known and not (n.endswith('.yaml') and os.path.isfile(n))]
    if bad:
        raise WarmupError(f'unknown robot config(s) {bad} (known: {", ".join(known)})')
    return names


def warmup_robot(robot, part=None, general_route=True):
    """Run the core API calls of every (enabled) node of ``config/<robot>.yaml``.

    ``part``: None (every node), ``'plant'`` (sim_node only) or ``'nodes'`` (the others, with
    the kernels' own warm-ups). ``general_route``: also compile the general 2nd-order PKM route
    if a node of the config uses it. Returns (covered, skipped): node names warmed up, and nodes
    without a warm-up function.
    """
    import robot_dynamics as rd
    from robot_dynamics.ros.bringup import load_bringup

    b = load_bringup(robot)
    model = rd.load_model(b.urdf, loops=b.loops or None)
    ctx = {}  # what the first nodes produce for the later ones (state)
    covered, skipped = [], []
    specs = [s for s in b.nodes if part is None or (s.executable == 'sim_node') == (part == 'plant')]
    for spec in specs:  # config order: sim_node first
        fn = _NODES.get(spec.executable)
        if fn is None:
            skipped.append(spec.name)
            continue
        fn(model, spec.parameters, ctx)
        covered.append(spec.name)
    # the compiled kernels' own warm-ups (every specialisation their run-time paths use)
    exes = {s.executable for s in specs}
    if 'ik_node' in exes:
        from robot_dynamics.pkm import embedding

        embedding.warmup(model)
    if 'ip_controller' in exes:
        warmup_partitioning_kernels(model)
    if 'vdc_controller' in exes:
        warmup_hydraulic_kernels(model)
    if 'sea_controller' in exes:
        warmup_sea_kernels(model)
    if general_route and part != 'plant' and _uses_general_route(b):
        # the general 2nd-order PKM route (one kernel signature for every robot; this model's
        # data if it fits the route, else the five-bar's)
        from robot_dynamics.pkm import general

        general.warmup(model)
    return covered, skipped


# --------------------------------------------------------------------------- shared helpers
def _state(model, ctx):
    """(q, qd) as a node builds them from /joint_states (JointStateParser: float64 (n,))."""
    import numpy as np

    if 'q' in ctx:
        return ctx['q'].copy(), ctx['qd'].copy()
    return model.reference_q(), np.zeros(model.nv)


def _moving_frames(model):
    """A frame on the last moving body (the tool, usually) and one on the first: the loads of
    the plants take different routes for the tool body and the others (hydraulic plant)."""
    names = [f for i, f in enumerate(model.frame_names) if int(model.frame_parent[i]) >= 0]
    out = [f for f in ('tool', 'platform') if f in names][:1] or names[-1:]
    return out + [f for f in names[:1] if f not in out]


# --------------------------------------------------------------------------- sim_node
def _mujoco_twin(model, kind, q0, rate):
    """The plant on the MuJoCo backend too (``--backend mujoco``): its co-simulation kernels
    (hydraulic) compiled once; nothing when MuJoCo is not installed."""
    import numpy as np
    from robot_dynamics.plants.registry import make_plant

    try:
        import mujoco  # noqa: F401
    except ImportError:
        return
    plant = make_plant(kind, model, np.asarray(q0, float), dt=1.0 / rate, backend='mujoco')
    plant.step(None)
    plant.step(np.zeros(model.nv))


def _sim_node(model, p, ctx):
    """sim_node: plant construction, hold command, stepping, publishing, external loads."""
    import numpy as np
    from robot_dynamics.algorithms.projection import hold_command
    from robot_dynamics.plants.registry import make_plant

    m = model
    kind = p.get('plant', 'rigid')
    rate = float(p.get('rate', 1000.0))
    q0 = list(p.get('initial_positions', m.reference_q().tolist()))
    plant = make_plant(kind, m, np.asarray(q0, float), dt=1.0 / rate, backend=p.get('backend', 'rigid'))
    joints = list(p.get('joints', list(m.actuated)))
    idx = np.array([m.joint_index(j) for j in joints], dtype=np.int64)
    damping = float(p.get('hold_damping', 2.0))
    # hold (no command yet): the plant's own hold, or gravity balance, or zero (hydraulic)
    if hasattr(plant, 'hold_command'):
        tau = plant.hold_command(damping)
    elif kind == 'hydraulic' or p.get('hold', 'gravity') == 'zero':
        tau = np.zeros(m.nv)
    else:
        tau = hold_command(m, plant.q, plant.qd, damping)
    plant.step(tau)
    if kind == 'hydraulic' and p.get('backend', 'rigid') == 'rigid':
        _mujoco_twin(m, kind, q0, rate)
    # a command (Float64MultiArray -> list -> array) spread on the actuated joints
    cmd = np.asarray([0.0] * len(joints), float)
    tau = np.zeros(m.nv)
    tau[idx] = cmd
    for _ in range(2):
        plant.step(tau)
    _publish(plant)
    if getattr(plant, 'supports_external_wrench', False):
        ref = p.get('external_wrench_reference', 'local')
        w = np.array([1.0, 0.0, -1.0, 0.0, 0.01, 0.0], dtype=float)
        for frame in _moving_frames(m):
            plant.set_external_wrench(frame, w, ref)
            plant.step(tau)
            plant.set_external_wrench(frame, None)
        _publish(plant)
    ctx['q'], ctx['qd'] = np.asarray(plant.q, float), np.asarray(plant.qd, float)
    ctx['plant'] = plant


def _publish(plant):
    plant.q.tolist()
    plant.qd.tolist()
    if hasattr(plant, 'extra_states'):
        plant.extra_states()


# --------------------------------------------------------------------------- kinematics_node
def _kinematics_node(model, p, ctx):
    """kinematics_node: poses, twists, loop errors and cut-frame markers of the frames."""
    import robot_dynamics as rd
    from robot_dynamics.spatial.lie import matrix_to_quat_xyzw

    m = model
    q, qd = _state(m, ctx)
    default = [f for f in ('tool', 'tool0', 'ee', 'end_effector') if f in m.frame_names][:1] or [m.frame_names[-1]]
    frames = list(p.get('frames', default))
    T = rd.forward_kinematics(m, q, frames)
    for f in frames:
        matrix_to_quat_xyzw(T[f][:3, :3])
        rd.frame_velocity(m, q, qd, f, 'local_world_aligned')
    if m.loops:
        rd.loop_errors(m, q)
        rd.forward_kinematics(m, q, [f for lp in m.loops for f in (lp.frame_a, lp.frame_b)])
        rd.loop_residual(m, q)  # what `robot-dynamics demo` reports


# --------------------------------------------------------------------------- trajectory_node
def _trajectory_node(model, p, ctx):
    """trajectory_node: the analytic profile and its derivatives up to snap (mode pkm_d2: the
    platform motion through the general 2nd-order recursive inverse dynamics, tabulated)."""
    import numpy as np
    from robot_dynamics.control.trajectories import make_profile

    m = model
    mode = p.get('mode', 'joint')
    if mode == 'pkm_d2':
        # every profile (the Gough-Stewart's roll / pose_move included): the general route's
        # table the node builds at start (compiled kernel pkm/_general_kernels.py, a task of its
        # own in a parallel warm-up), then one grid and one interpolated sample
        from robot_dynamics.control.d2_feedforward import tabulated_d2_defaults, tabulated_d2_from_params

        d2 = tabulated_d2_from_params(
            m, p.get('profile', 'circle'), {k: p[k] for k in tabulated_d2_defaults(m) if k in p}
        )
        for t in (0.0, 0.5 * d2.h):
            d2.reference(t).q.tolist()
        return
    if mode == 'boom_task':
        from robot_dynamics.control.vdc import BoomTaskProfile

        prof = BoomTaskProfile(
            m,
            p.get('waypoints', [2.07152, 0.39253, 2.47152, 0.39253]),
            axes=p.get('task_axes', [0, 2]),
            loops=int(p.get('task_loops', 1)),
            leg_duration=float(p.get('leg_duration', 2.0)),
            start_delay=float(p.get('start_delay', 0.0)),
        )
        for t in (0.0, 0.5, 0.501):
            prof(t).tolist()
        return
    kind = p.get('profile', 'sinusoid' if mode == 'joint' else 'circle')
    if mode == 'joint':
        joints = list(p.get('joints', list(m.independent)))
        n = len(joints)
        q0 = m.reference_q()[[m.joint_index(j) for j in joints]]
        prm = dict(
            amplitude=p.get('amplitude', [0.3] * n),
            frequency=p.get('frequency', [0.25] * n),
            phase=p.get('phase', [0.0] * n),
            offset=p.get('offset', q0.tolist()),
            waypoints=p.get('waypoints', list(q0) * 2),
            durations=p.get('durations', [1.0]),
            n=n,
        )
    else:
        prm = dict(
            center=p.get('center', [0.0, 0.0, 0.0]),
            radius=p.get('radius', 0.05),
            frequency=p.get('frequency', 0.25),
            e1=p.get('e1', [1.0, 0.0, 0.0]),
            e2=p.get('e2', [0.0, 0.0, 1.0]),
            phase=p.get('phase', 0.0),
        )
    if kind == 'goals':  # seed 004: goal moves, the path checked by the SEA IK
        from robot_dynamics.pkm.planar_sea import Planar3RRR
        from robot_dynamics.plants.sea import sea_params_from_model
        from robot_dynamics.control.trajectories import GoalMoves

        pkm = Planar3RRR(sea_params_from_model(m))
        prof = GoalMoves(p.get('start', [0.0, 0.0, 0.0]), reachable=lambda pts: pkm.ik(pts[:, :2]))
        prof.goal(0.0, np.asarray(prof(0.0, order=0)[0]) + [0.001, 0.0, 0.0])
    else:
        prof = make_profile(kind, **prm)
    for t in (0.0, 0.01):
        prof(t, order=4)


# --------------------------------------------------------------------------- controller_node
def _controller_node(model, p, ctx):
    """controller_node / dynamics_node: the config's law in the control loop (prepare, one
    answered state, the safe command, cut wrenches of pidc)."""
    import numpy as np
    from robot_dynamics.control.laws import make_law
    from robot_dynamics.control.loop import ControlLoop

    m = model
    law = p.get('law', 'pidc')
    kw = dict(
        kp=float(p.get('kp', 100.0)), kd=float(p.get('kd', 20.0)), joints=[j for j in p.get('joints', []) if j] or None
    )
    if law in ('pidc', 'computed_torque'):
        kw.update(
            reference=p.get('reference', 'joint'),
            task_frame=p.get('task_frame', 'tool'),
            task_axes=list(p.get('task_axes', [0, 1, 2])),
        )
    elif law == 'sea_flatness':
        kw = dict(
            poles=float(p.get('poles', 30.0)),
            lambda_poles=float(p.get('lambda_poles', 30.0)),
            preload=float(p.get('preload', 0.0)),
            joints=kw['joints'],
        )
    obj = make_law(m, law, **kw)
    obj.prepare()
    loop = ControlLoop(obj, safe='hold')
    q, qd = _state(m, ctx)
    x = obj.current_coordinates(q) if hasattr(obj, 'current_coordinates') else q[obj.cmd_idx]
    k = len(obj.coords)
    if obj.reference_order > 2:  # a reference with derivatives (sea_flatness)
        loop.set_reference(None, stamp=0.0, derivs=np.vstack([x, np.zeros((obj.reference_order, k))]))
    else:
        loop.set_reference(x, np.zeros(k), np.zeros(k), stamp=0.0)
    if obj.needs_feedforward:
        loop.set_feedforward(np.zeros(len(obj.joints)), stamp=0.0)
    c, _ = loop.on_state(list(m.joint_names), q.tolist(), qd.tolist(), 0.001, 0.001)
    if c is not None and 'tau' in c.info and m.loops and bool(p.get('publish_wrenches', True)):
        obj.predicted_wrenches(c.state.q, c.state.qd, c.info['tau'])


# --------------------------------------------------------------------------- ik_node
def _ik_node(model, p, ctx):
    """ik_node: constraint-embedding IK (branch-tracked), task motion, task dynamics (+ load)."""
    import numpy as np
    from robot_dynamics.pkm.embedding import IKTracker

    tracker = IKTracker(
        model,
        scheme=p.get('scheme', 'nested'),
        kappa_warn=float(p.get('kappa_warn', 30.0)),
        tol=float(p.get('tol', 1e-10)),
        max_outer=int(p.get('max_outer', 20)),
    )
    pk = tracker.pkm
    comp = [{'x': 0, 'y': 1, 'z': 2}[c] for c in pk.task]
    x = np.asarray(pk.x_ref_full, float)[comp]  # as the node: (x, y, z)[comp] of the msg
    xd = np.array([0.01, 0.0, 0.0])[comp]
    xdd = np.array([0.0, 0.0, 0.01])[comp]
    for wrench in (None, np.array([0.0, 0.0, -10.0, 0.0, 0.0, 0.0])):
        sol, mo = tracker.step(x, xd, xdd)
        pk.task_dynamics(sol, xd, xdd, wrench, motion=mo)
    tracker.reset()


# --------------------------------------------------------------------------- ip_controller
def _ip_controller(model, p, ctx):
    """ip_controller: partitioned model, the law (lock efforts, re-join blend), run-time
    reconfiguration."""
    import numpy as np
    from robot_dynamics.control.inertia_partitioning import IPController
    from robot_dynamics.control.loop import Reference, State

    m = model
    q, qd = _state(m, ctx)
    ctrl = IPController(
        m,
        p.get('law', 'paper'),
        float(p.get('kp', 20.0)),
        float(p.get('kv', 20.0)),
        loop_map=p.get('loop_map', 'auto'),
        neglect_bodies=[s for s in p.get('neglect_bodies', ['']) if s],
        unlock_blend_time=float(p.get('unlock_blend_time', 2.0)),
    )
    pm = ctrl.pm

    def control(t):
        th = ctrl.current_coordinates(q)
        z = np.zeros_like(th)
        ctrl.update(State(t, q, qd, t), Reference(t, th, z, z), 1e-3).effort.tolist()

    control(0.001)
    # run-time reconfiguration (parameters): a locked DoF, a payload, the other law
    th = q[pm.loop_map.idx]
    pm.lock({pm.all_coords[0]: th[0]})
    control(0.002)
    ctrl.rejoin.mark(set(pm.locked))
    pm.unlock()
    pm.add_payload(1.0, np.diag([0.01, 0.01, 0.01]), [0.0, 0.0, 0.0], frame=p.get('payload_frame', 'tool'))
    law = ctrl.law
    for other in ('paper', 'pdplus'):
        ctrl.law = other
        control(0.003)
    ctrl.law = law
    pm.remove_body('payload')


# --------------------------------------------------------------------------- vdc_controller
def _vdc_controller(model, p, ctx):
    """vdc_controller: the law 'vdc' in the control loop (a state with the chamber pressures, a
    reference, the tool wrench, the safe command) and the diagnostics (tool points, V)."""
    import numpy as np
    from robot_dynamics.control.loop import ControlLoop
    from robot_dynamics.control.vdc import VDCController

    m = model
    rate = float(p.get('rate', 1000.0))
    law = VDCController(
        m,
        lam=float(p.get('lam', 5.0)),
        k_scale=float(p.get('k_scale', 10.0)),
        kf_pole=float(p.get('kf_pole', 50.0)),
        kx_ratio=float(p.get('kx_ratio', 1e4)),
        dt=1.0 / rate,
        dp_min=float(p.get('dp_min', 1e5)),
    )
    law.prepare()
    loop = ControlLoop(law, period=1.0 / rate, safe='zero')
    Q, Qd = _state(m, ctx)
    plant = ctx.get('plant')
    pres = {}
    if plant is not None and hasattr(plant, 'extra_states'):
        ex = plant.extra_states()
        for i, c in enumerate(ex['names']):
            pres[f'{c}/p_a'], pres[f'{c}/p_b'] = float(ex['pa'][i]), float(ex['pb'][i])
    else:
        pres = {n: (60e5 if n.endswith('p_a') else 40e5) for n in law.extra_names}
    names = list(m.joint_names) + list(pres)
    seg = [m.joint_index(j) for j in law.coords]
    k = len(seg)
    for i, t in enumerate((0.0, 0.001, 0.002)):
        loop.set_reference(Q[seg], np.zeros(k), np.zeros(k), stamp=t, names=law.coords)
        if i == 1:
            law.set_tool_wrench([0.0, 0.0, 100.0, 0.0, 0.0, 0.0], t)
        c, _ = loop.on_state(names, Q.tolist() + list(pres.values()), Qd.tolist() + [0.0] * len(pres), t, t)
        c.effort.tolist()
    st = law.st
    st.tool_pose(c.info['q'])
    st.tool_pose(c.info['segment_ref'][0])
    law.lyapunov()
    d = law.diag
    np.stack([d['fpr'], d['fp'], d['u'], d['saturated'].astype(float)], axis=1).ravel()
    loop.update(1.0)  # stale: the safe command
    loop.diagnostics()


# --------------------------------------------------------------------------- sea_controller
def _sea_controller(model, p, ctx):
    """sea_controller: controller_node with law sea_flatness (its kernels: sea.warmup below)."""
    _controller_node(model, {'law': 'sea_flatness', **p}, ctx)


# executable (config ``nodes.<name>.executable``) -> warm-up of the core calls of that node
_NODES = {
    'sim_node': _sim_node,
    'kinematics_node': _kinematics_node,
    'trajectory_node': _trajectory_node,
    'dynamics_node': _controller_node,
    'controller_node': _controller_node,
    'ik_node': _ik_node,
    'ip_controller': _ip_controller,
    'vdc_controller': _vdc_controller,
    'sea_controller': _sea_controller,
}


def warmup_sea_kernels(model=None):
    """Compile (or load from the numba cache) the kernels of the SEA plant and of the SEA
    flatness controller with the argument types used at run time: the plant step
    (:func:`_sea_rk4`, :func:`_sea_derivative`, :func:`_sea_ik_rates`), the controller step
    (:func:`robot_dynamics.control.flatness_sea._flatness_step`) and the planar ID
    (:meth:`Planar3RRR.inverse_dynamics_d2` with its :func:`_preload_batch`, used by the reset,
    the feed-forward law and trajectory_node's goal path check) and the reference routes.
    ``model``: default ``urdf/planar_3rrr_sea.urdf``. Returns the plant."""
    import numpy as np
    from robot_dynamics.plants.sea import SEAPlant
    from robot_dynamics.control.flatness_sea import SEAFlatnessController
    from robot_dynamics.control.trajectories import SinSquaredJerk

    if model is None:
        from robot_dynamics.parsers.data import data_path
        from robot_dynamics.parsers.urdf import load_model

        model = load_model(data_path('urdf/planar_3rrr_sea.urdf'))
    plant = SEAPlant(model, model.reference_q(), dt=1e-3)
    plant.step(np.zeros(model.nq))
    plant.step(np.zeros(3), dt=1e-3)
    x = np.concatenate([plant.p, plant.pd, plant.qm, plant.qdm])
    plant.derivative(x, np.zeros(3))
    plant._derivative_reference(x, np.zeros(3))
    plant.hold_command(0.1)
    ctrl = SEAFlatnessController(model, params=plant.params)
    yd = SinSquaredJerk(plant.p, plant.p + np.array([0.01, 0.0]), 0.3)(0.1)
    ctrl(plant.p, plant.pd, plant.qm, plant.qdm, yd, np.array([0.5, 0.0, 0.0]))
    ctrl(plant.p, plant.pd, plant.qm, plant.qdm, yd)
    ctrl._call_reference(plant.p, plant.pd, plant.qm, plant.qdm, yd)
    SEAFlatnessController(model, params=plant.params, feedforward_only=True)(plant.p, plant.pd, plant.qm, plant.qdm, yd)
    ctrl.pkm.ik(np.tile(plant.p, (21, 1)))
    return plant


def warmup_hydraulic_kernels(model=None):
    """Compile (or load from the numba cache) the kernels of the hydraulic boom with the
    argument types used at run time: the plant step (:func:`_rk4` and the recursion kernels of
    :mod:`robot_dynamics.algorithms.vdc`), the VDC controller step and the compiled task reference
    (:func:`robot_dynamics.algorithms.vdc._task_reference`). ``model``: default
    ``urdf/hydraulic_boom.urdf``."""
    import numpy as np
    from robot_dynamics.plants.hydraulic import HydraulicPlant
    from robot_dynamics.control.vdc import TaskReference, VDCController, quintic_legs

    if model is None:
        from robot_dynamics.parsers.data import data_path
        from robot_dynamics.parsers.urdf import load_model

        model = load_model(data_path('urdf/hydraulic_boom.urdf'))
    pl = HydraulicPlant(model)
    st = pl.st
    q0 = pl.qs
    ctrl = VDCController(st, pl.hp)
    ref = np.array([q0, np.zeros(pl.ns), np.zeros(pl.ns)])
    pl.step(ctrl.step(pl.qs, pl.qds, pl.pa, pl.pb, ref))
    if pl.ns >= 1 and pl.ns <= 3:
        axes = [0, 2, 1][: pl.ns]
        p0 = st.tool_pose(q0)[1][axes]
        TaskReference(st, lambda t: quintic_legs([p0, p0], [1.0], t), axes, q0)(0.5)


def warmup_partitioning_kernels(model=None):
    """Compile (or load from the numba cache) every kernel of the partitioning layer with the
    argument types used at run time: :func:`~robot_dynamics.algorithms._partitioning_kernels.partition_terms`,
    :func:`~robot_dynamics.algorithms._partitioning_kernels.numeric_loop_map` (only if the model has loops)
    and :func:`~robot_dynamics.algorithms._partitioning_kernels.ip_law` (both laws). ``model``: a
    :class:`~robot_dynamics.model.Model` (default ``urdf/series_parallel_3dof.urdf``)."""
    import numpy as np
    from robot_dynamics.algorithms.partitioning import PartitionedModel
    from robot_dynamics.control.inertia_partitioning import IPController

    if model is None:
        from robot_dynamics.parsers.data import data_path
        from robot_dynamics.parsers.urdf import load_model

        model = load_model(data_path('urdf/series_parallel_3dof.urdf'))
    kinds = ['auto'] + (['numeric'] if model.loops else [])
    for kind in kinds:
        pm = PartitionedModel(model, kind)
        th = pm.theta_of(model.reference_q())
        z = np.zeros(pm.k)
        for law in ('paper', 'pdplus'):
            IPController(pm, law).compute(th, z, th, z, z)


# ----------------------------------------------------------------------------- output map
