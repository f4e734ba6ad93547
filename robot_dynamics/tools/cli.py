"""``robot-dynamics``: command-line entry point.

Sub-commands::

    robot-dynamics info ROBOT            model summary (joints, loops, masses, frames)
    robot-dynamics check ROBOT           closure, DOF, actuation rank, which methods apply
    robot-dynamics id ROBOT [options]    inverse dynamics along an analytic trajectory
                                         (table + optional CSV/PNG)
    robot-dynamics demo [ROBOT]          closed-loop ROS 2 graph of the five-bar PKM: run,
                                         record, report tracking error (``demo --help``)
    robot-dynamics render ROBOT          a joint trajectory (CSV, or a sinusoid) rendered
                                         offscreen to an MP4 and a key-frame PNG
    robot-dynamics launch ROBOT          start the robot's ROS 2 nodes (config/ROBOT.yaml)
    robot-dynamics record [--bag F]      record the running graph's topics into an MCAP file
    robot-dynamics record --recover F    complete MCAP file from a truncated recording
    robot-dynamics import FILE           SDFormat / MJCF / URDF + frame-pair YAML -> URDF,
                                         loops sidecar and a starting config (``import --help``)
    robot-dynamics export mjcf ROBOT     MJCF file for MuJoCo and its viewer (``-o FILE.xml``)

ROBOT is a packaged robot name (``four_bar``, ``arm7``, ...: ``robot-dynamics info --list``)
or a path to a URDF file (its ``<stem>.loops.yaml`` sidecar is picked up; a xacro file
with ``--xacro``: xacro runs Python, so only for trusted files).
"""

from __future__ import annotations

import argparse
import glob
import logging
import os
import sys
import time

log = logging.getLogger('robot_dynamics')


class _LazyModule:
    """Imports a module on first attribute access: ``--help``, argument errors and
    ``info --list`` never load numpy (nor numba: ``import robot_dynamics`` is lazy too), so
    the command line answers in a fraction of a second; the commands use ``np`` as usual."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        import importlib

        return getattr(importlib.import_module(self._name), attr)


np = _LazyModule('numpy')


def packaged_robots():
    """Names of the robots shipped in ``urdf/``."""
    from robot_dynamics.parsers.data import data_path

    try:
        d = data_path('urdf')
    except FileNotFoundError:
        return []
    return sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(d, '*.urdf')))


def resolve_robot(name_or_path):
    """URDF path of a packaged robot name, or the path itself."""
    from robot_dynamics.parsers.data import data_path

    if os.path.exists(name_or_path):
        return name_or_path
    try:
        return data_path(f'urdf/{name_or_path}.urdf')
    except FileNotFoundError:
        raise SystemExit(
            f"robot-dynamics: '{name_or_path}' is neither a file nor a packaged "
            f'robot (known: {", ".join(packaged_robots())})'
        ) from None


def _load(args):
    import robot_dynamics as rd

    path = resolve_robot(args.robot)
    try:
        return rd.load_model(
            path,
            loops=getattr(args, 'loops', None),
            allow_xacro=getattr(args, 'xacro', False),
            root_joint=getattr(args, 'root_joint', None),
            strict=getattr(args, 'strict', False),
        )
    except rd.RobotDynamicsError as exc:
        raise SystemExit(f'robot-dynamics: {exc}') from None


def cmd_check(args):
    """Check a robot description before anything runs it (robot_dynamics.tools.check)."""
    import robot_dynamics as rd
    from robot_dynamics.tools.check import check_robot

    try:
        rep = check_robot(
            resolve_robot(args.robot),
            loops=args.loops,
            allow_xacro=args.xacro,
            root_joint=args.root_joint,
            strict=args.strict,
        )
    except rd.RobotDynamicsError as exc:
        raise SystemExit(f'robot-dynamics: {exc}') from None
    print(rep.text())
    return 0


def cmd_info(args):
    """Print a model summary."""
    if args.list or not args.robot:
        print('\n'.join(packaged_robots()))
        return 0
    m = _load(args)
    print(f'robot      {m.name}   ({m.source})')
    print(f'sidecar    {m.loops_source or "-"}')
    # where the package's data files of this robot were read (this copy's share directory: a
    # workspace's own files when it runs from a workspace)
    from robot_dynamics.ros.bringup import BringupError, config_path

    try:
        config = '-' if os.path.isfile(args.robot) else config_path(args.robot)
    except BringupError:  # a packaged URDF without a bringup config
        config = '-'
    print(f'config     {config}')
    print(f'gravity    {m.gravity.tolist()} m/s^2')
    print(f'joints     {len(m.joints)}, nq = {m.nq}, nv = {m.nv}', end='')
    multi = ', '.join(
        f'{j.name} ({j.kind}: q[{j.idx_q}:{j.idx_q + j.nq}], v[{j.idx_v}:{j.idx_v + j.nv}])' for j in m.multi_dof
    )
    print(f'; multi-DOF: {multi}' if multi else '')
    print('velocity coordinates (order of v, tau):')
    world = 'world' if m.frame_parent[m.frame_index(m.root_link)] >= 0 else m.root_link  # a floating root link
    for i, j in enumerate(m.joint_names):
        role = 'actuated' if j in m.actuated else 'passive'
        par = m.joint_names[m.parents[i]] if m.parents[i] >= 0 else world
        lim = f'[{m.lower[i]:+.3g}, {m.upper[i]:+.3g}]' if np.isfinite(m.lower[i]) else 'unbounded'
        print(
            f'  {i:2d} {j:24s} {m.joint_urdf_types[i]:10s} {role:8s} parent={par:18s} '
            f'axis={np.round(m.axes[i], 3).tolist()} {lim} body mass={m.mass[i]:.4g} kg'
        )
    print(f'loops      {len(m.loops)} ({m.nconstraints} constraint rows)')
    for lp in m.loops:
        if lp.coupling is not None:
            j, ref, k, c = lp.coupling
            print(f'  {lp.name}: coupling {j} = {k:g} * {ref} + {c:g} rows={list(lp.row_names)}')
        else:
            print(f'  {lp.name}: {lp.type} {lp.frame_a} <-> {lp.frame_b} rows={list(lp.row_names)}')
    if m.loops:
        from robot_dynamics.algorithms.constraints import loop_errors

        q = m.reference_q()
        errs = loop_errors(m, q)
        print(
            '  closure at reference_configuration: '
            + ', '.join(f'{k}: pos {v[0]:.2e} m, rot {v[1]:.2e} rad' for k, v in errs.items())
        )
    print(f'frames     {m.nframes}: {", ".join(m.frame_names)}')
    if m.mimic:
        print(f'mimic      {m.mimic}')
    return 0


def _trajectory(m, args):
    from robot_dynamics.control.trajectories import Sinusoid

    q0 = m.reference_q()
    amp = np.full(m.nq, args.amplitude)
    freq = np.full(m.nq, args.frequency) * (1.0 + 0.25 * np.arange(m.nq) / max(m.nq, 1))
    return Sinusoid(amp, freq, phase=0.0, offset=q0)


def cmd_id(args):
    """Inverse dynamics (tree RNEA) along an analytic sinusoidal joint trajectory."""
    import robot_dynamics as rd

    m = _load(args)
    traj = _trajectory(m, args)
    t = np.arange(0.0, args.duration + 1e-12, 1.0 / args.rate)
    x = traj(t, order=2)
    log.info('%s: %d joints, %d samples over %.3g s', m.name, m.nq, len(t), args.duration)
    rd.rnea(m, x[0][:1], x[1][:1], x[2][:1])  # compile (first call)
    t0 = time.perf_counter()
    tau = rd.rnea(m, x[0], x[1], x[2])  # one batched call
    dt = time.perf_counter() - t0
    if m.loops:
        print(
            f'note: {m.name} has {len(m.loops)} loop(s); this is the inverse dynamics of its '
            f'spanning tree (the closed-chain version is the projection module).'
        )
    print(
        f'inverse dynamics of {m.name} along a sinusoid (amplitude {args.amplitude} rad|m, '
        f'{args.frequency} Hz): {len(t)} samples in {dt * 1e3:.3f} ms '
        f'({dt / len(t) * 1e6:.2f} us/sample)'
    )
    step = max(1, len(t) // args.rows)
    header = 't [s]  ' + ' '.join(f'{j[:12]:>12s}' for j in m.joint_names)
    print(header)
    for k in range(0, len(t), step):
        print(f'{t[k]:6.3f} ' + ' '.join(f'{v:12.4f}' for v in tau[k]))
    print('peak |tau| per joint: ' + ', '.join(f'{j}={v:.3f}' for j, v in zip(m.joint_names, np.abs(tau).max(0))))
    if args.csv:
        os.makedirs(os.path.dirname(os.path.abspath(args.csv)), exist_ok=True)
        np.savetxt(
            args.csv,
            np.column_stack([t, x[0], tau]),
            delimiter=',',
            header='t,' + ','.join(f'q_{j}' for j in m.joint_names) + ',' + ','.join(f'tau_{j}' for j in m.joint_names),
            comments='',
        )
        print(f'wrote {args.csv}')
    if args.plot:
        _plot(args.plot, t, x[0], tau, m)
        print(f'wrote {args.plot}')
    return 0


def _plot(path, t, q, tau, m):
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 1, sharex=True, figsize=(9, 6))
    for i, j in enumerate(m.joint_names):
        ax[0].plot(t, q[:, i], label=j)
        ax[1].plot(t, tau[:, i], label=j)
    ax[0].set_ylabel('q [rad | m]')
    ax[1].set_ylabel('tau [N m | N]')
    ax[1].set_xlabel('t [s]')
    ax[0].set_title(f'{m.name}: inverse dynamics along the reference')
    ax[0].legend(fontsize=7, ncol=4)
    from robot_dynamics.tools.plotting import save_figure

    save_figure(fig, ax, path)


def cmd_demo(args):
    """Demo of a robot: its closed-loop ROS 2 graph run, recorded, judged and plotted.

    Starts config/<robot>.yaml (default five_bar) as separate processes (DDS on loopback), drives
    the robot's motion, records for ``--duration`` s, reports the robot's own metric against its
    bound (robot_dynamics.tools.demos.DEMOS) plus /joint_states rate, loop residual, real-time factor
    and command latency, writes out/demo_<robot>.png, renders the recorded joint states to
    out/demo_<robot>.mp4 and out/demo_<robot>_frame.png (unless ``--no-video``); exit status 1
    when a bound is missed.
    """
    from robot_dynamics.ros.bringup import BringupError, use_discovery_env

    use_discovery_env()  # DDS on loopback unless the user widened it (before any rclpy import)
    from robot_dynamics.tools.demo_runner import run_demo

    try:
        return run_demo(
            args.robot or 'five_bar',
            duration=args.duration,
            outdir=args.outdir,
            plot=args.plot,
            startup_timeout=args.startup_timeout,
            timing=args.timing,
            bag=args.bag,
            video=False if args.no_video else {'size': args.video_size, 'fps': args.video_fps},
            backend=args.backend,
        )
    except BringupError as exc:
        raise SystemExit(f'robot-dynamics demo: {exc}') from None


def _size(text):
    try:
        w, h = (int(x) for x in text.lower().split('x'))
        if w < 16 or h < 16:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected WIDTHxHEIGHT (at least 16x16), got {text!r}') from None
    return (w, h)


def _add_video_options(p, prefix=''):
    p.add_argument(
        f'--{prefix}size', type=_size, default=(640, 480), help='video size WIDTHxHEIGHT in pixels (default 640x480)'
    )
    p.add_argument(f'--{prefix}fps', type=float, default=30.0, help='video frames per second (default 30)')


def _render_trajectory(m, args):
    """(t, q) of ``render``: the CSV's joint columns, or a sinusoid of the independent joints;
    the loops closed from the independent joints at each sample."""
    from robot_dynamics.algorithms.projection import assemble

    q0 = m.reference_q()
    if args.csv:
        with open(args.csv, encoding='utf-8') as fh:
            header = [h.strip() for h in fh.readline().split(',')]
        data = np.atleast_2d(np.loadtxt(args.csv, delimiter=',', skiprows=1))
        if 't' not in header:
            raise SystemExit(f'robot-dynamics render: {args.csv} has no column t')
        t = data[:, header.index('t')]
        cols = {}
        for i, h in enumerate(header):
            name = h[2:] if h.startswith('q_') and h[2:] in m.joint_names else h
            if name in m.joint_names and m._joint_by_name[name].nq == 1:
                cols[m.joint_index(name)] = data[:, i]
        if not cols:
            raise SystemExit(f'robot-dynamics render: {args.csv} names none of the joints {m.joint_names}')
        given = sorted(cols)
        Qg = np.column_stack([cols[i] for i in given])
    else:
        t = np.arange(0.0, args.duration + 1e-12, 1.0 / max(args.fps, 1.0))
        names = m.independent or [j.name for j in m.joints if j.nq == 1]
        given = [m.joint_index(n) for n in names]
        amp = np.array(
            [args.amplitude if m.joint_urdf_types[i] != 'prismatic' else 0.1 * args.amplitude for i in given]
        )
        Qg = q0[given] + amp * np.sin(2 * np.pi * args.frequency * t[:, None] + np.arange(len(given)))
    Q = np.tile(q0, (len(t), 1))
    q = q0.copy()
    names = [m.joint_names[i] for i in given]
    for k in range(len(t)):
        q[given] = Qg[k]
        if m.loops:
            q = assemble(m, Qg[k], q_guess=q, fixed=names).q
        Q[k] = q
    return t, Q


def cmd_render(args):
    """Render a robot's joint trajectory offscreen (robot_dynamics.tools.video)."""
    import robot_dynamics as rd
    from robot_dynamics.tools.video import RenderError, render_video

    m = _load(args)
    try:
        t, Q = _render_trajectory(m, args)
    except rd.RobotDynamicsError as exc:
        raise SystemExit(f'robot-dynamics render: {exc}') from None
    out = args.out or os.path.join('out', f'render_{m.name}.mp4')
    png = args.png or os.path.splitext(out)[0] + '_frame.png'
    try:
        v = render_video(
            m,
            t,
            Q,
            out,
            keyframe=png,
            fps=args.fps,
            size=args.size,
            progress=print,
            gif=args.gif,
            gif_size=(320, round(320 * args.size[1] / args.size[0])) if args.gif else None,
        )
    except RenderError as exc:
        raise SystemExit(f'robot-dynamics render: {exc}') from None
    print(
        f'wrote {v.path} ({v.frames} frames, {v.size[0]}x{v.size[1]} at {v.fps:g} fps; rendered '
        f'{v.frames / max(v.render_s, 1e-9):.0f} frames/s offscreen ({v.backend}), encoded in {v.encode_s:.1f} s)'
    )
    print(f'wrote {v.keyframe} (key frame)')
    if args.gif:
        print(f'wrote {args.gif}')
    for note in v.notes:
        print(f'note: {note}')
    return 0


def cmd_record(args):
    """Record the graph running on this ROS domain into an MCAP file (rosbag2 layout), or with
    ``--recover`` make a complete MCAP file of a truncated recording (no ROS needed)."""
    from robot_dynamics.ros.mcap_bag import BagError

    if args.recover is not None:
        from robot_dynamics.ros.mcap_bag import recover

        try:
            info = recover(args.recover, out=args.out)
        except BagError as exc:
            raise SystemExit(f'robot-dynamics record --recover: {exc}') from None
        _print_recovery(info)
        return 0
    if args.out is not None:
        raise SystemExit('robot-dynamics record: --out goes with --recover (the recording is --bag)')
    from robot_dynamics.ros.bringup import use_discovery_env

    use_discovery_env()  # before bag_recorder imports rclpy
    from robot_dynamics.ros.bag_recorder import record

    try:
        record(args.bag, args.duration, args.topics)
    except BagError as exc:
        raise SystemExit(f'robot-dynamics record: {exc}') from None
    return 0


def _print_recovery(info):
    """Report of ``mcap_bag.recover``: what the input held, messages per topic, time span."""
    if info['complete']:
        state = 'complete file'
    else:
        state = f'no summary/footer; {info["bytes_read"]} of {info["bytes_total"]} bytes used, {info["stopped"]}'
    print(f'record --recover: {info["path"]} ({state})')
    for topic, n in sorted(info['counts'].items()):
        print(f'  {topic}: {n}')
    if info['skipped']:
        print(f'  ({info["skipped"]} messages of channels without a readable schema: left out)')
    if info['start_ns'] is None:
        span = 'no messages'
    else:
        t0, t1 = info['start_ns'] * 1e-9, info['end_ns'] * 1e-9
        start = time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(t0))
        span = f'log time {t0:.3f} .. {t1:.3f} s (from {start}, {t1 - t0:.3f} s)'
    print(f'record --recover: {info["messages"]} messages on {len(info["counts"])} topic(s), {span} -> {info["out"]}')


def cmd_warmup(args):
    """Compile (and cache) the numerical kernels of every node, so that nodes start quickly."""
    from robot_dynamics.tools.warmup import WarmupError, warmup

    try:
        warmup(args.robots or None, progress=lambda line: print(line, flush=True), jobs=args.jobs)
    except WarmupError as exc:
        print(f'robot-dynamics warmup: {exc}', file=sys.stderr)
        return 1
    return 0


def _launch_overrides(items):
    """``--param NODE.PARAM=VALUE`` list -> {node: {param: value}} (YAML values); SystemExit
    with a clear message on a malformed item (nothing has started yet)."""
    import re

    import yaml

    from robot_dynamics.ros.bringup import param_value_problem

    overrides = {}
    for item in items or []:
        try:
            node_key, value = item.split('=', 1)
            node, key = node_key.split('.', 1)
        except ValueError:
            raise SystemExit(f"robot-dynamics launch: --param expects NODE.PARAM=VALUE, got '{item}'") from None
        if not re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', node) or not re.fullmatch(
            r'[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*', key
        ):
            raise SystemExit(
                f"robot-dynamics launch: --param '{item}': '{node}' / '{key}' is not a valid ROS node / parameter name"
            )
        try:
            v = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise SystemExit(
                f"robot-dynamics launch: --param '{item}': the value is not YAML ({str(exc).splitlines()[0]})"
            ) from None
        why = param_value_problem(v)
        if why:
            raise SystemExit(f"robot-dynamics launch: --param '{item}': the value {why}")
        overrides.setdefault(node, {})[key] = v
    return overrides


def _config_text(name, model, res):
    """A starting bringup config of an imported robot (the shape of config/four_bar.yaml):
    the plant, the frames of the first loop, a small sinusoid about the reference
    configuration on the actuated joints and the projected-inverse-dynamics law. A model with
    multi-DOF joints (a floating base, ball joints) gets the passive plant (hold zero) and
    kinematics_node: the controllers and the trajectory node take one-DOF joints only."""
    import yaml

    joints = [j for j in model.actuated if j in model.joint_names][:6]
    q = model.reference_q()
    offset = [float(q[model.q_index(j)][0]) for j in joints]
    frames = [model.loops[0].frame_a, model.loops[0].frame_b] if model.loops else [model.root_link]
    cfg = {
        'robot': name,
        'urdf': f'../{name}.urdf',
        'loops': f'../{name}.loops.yaml',
        'nodes': {
            'sim_node': {
                'executable': 'sim_node',
                'parameters': {
                    'rate': 1000.0,
                    'publish_rate': 100.0,
                    'controller': 'effort_controller',
                    'command_timeout_periods': 3.0,
                    'hold': 'gravity',
                    'hold_damping': 0.5,
                },
            },
            'kinematics_node': {'executable': 'kinematics_node', 'parameters': {'frames': frames}},
            'trajectory_node': {
                'executable': 'trajectory_node',
                'parameters': {
                    'mode': 'joint',
                    'profile': 'sinusoid',
                    'joints': joints,
                    'amplitude': [0.1] * len(joints),
                    'frequency': [0.3] * len(joints),
                    'offset': offset,
                    'rate': 200.0,
                    'start_topic': 'effort_controller/commands',
                },
            },
            'dynamics_node': {
                'executable': 'controller_node',
                'parameters': {
                    'rate': 100.0,
                    'state_timeout': 0.1,
                    'law': 'pidc',
                    'controller': 'effort_controller',
                    'joints': joints,
                    'reference': 'joint',
                    'kp': 100.0,
                    'kd': 20.0,
                },
            },
        },
    }
    head = (
        f'# Starting bringup config of {name}, written by robot-dynamics import from {res.source}.\n'
        '# Paths are relative to this file. Tune the trajectory (joints, amplitude, offset) and\n'
        '# the gains before running: robot-dynamics launch <this file>.\n'
    )
    if model.multi_dof:
        multi = [j.name for j in model.multi_dof]
        sim = cfg['nodes']['sim_node']['parameters']
        sim['hold'] = 'zero'
        del sim['hold_damping']
        cfg['nodes'] = {k: cfg['nodes'][k] for k in ('sim_node', 'kinematics_node')}
        if model.root_link not in frames:  # the base's pose in the world too
            cfg['nodes']['kinematics_node']['parameters']['frames'] = [model.root_link, *frames]
        head = (
            f'# Starting bringup config of {name}, written by robot-dynamics import from {res.source}.\n'
            '# Paths are relative to this file: robot-dynamics launch <this file>.\n'
            f'# Multi-DOF joints {multi}: sim_node publishes the one-DOF joints on joint_states and\n'
            '# these on multi_dof_joint_states and /tf (parent link -> child link); kinematics_node\n'
            '# takes both. The controllers, ik_node, trajectory_node and closure_node take one-DOF\n'
            '# joints only: the graph is the passive plant (no command: hold zero) and its kinematics.\n'
        )

    class NoAliases(yaml.SafeDumper):
        def ignore_aliases(self, data):
            return True

    return head + yaml.dump(cfg, Dumper=NoAliases, sort_keys=False, default_flow_style=None, width=100)


def cmd_import(args):
    """Import an SDFormat / MJCF file or a URDF with a frame-pair YAML; write the URDF, the loops
    sidecar and a starting config; print what the importer decided."""
    import re

    import yaml

    import robot_dynamics as rd
    from robot_dynamics.parsers.importing import import_description, load_imported

    opts = {}
    if args.root_joint is not None:
        opts['root_joint'] = None if args.root_joint == 'fixed' else args.root_joint
    if args.cut:
        opts['cut'] = args.cut
    if args.actuated:
        opts['actuated'] = args.actuated
    if args.frame_pairs:
        opts['frame_pairs'] = args.frame_pairs
    if args.name:
        opts['name'] = args.name
    try:
        try:
            res = import_description(args.file, **opts)
        except TypeError as exc:  # an option this importer does not take
            given = {'cut': '--cut', 'actuated': '--actuated', 'root_joint': '--root-joint', 'name': '--name'}
            bad = [flag for k, flag in given.items() if k in opts and f"'{k}'" in str(exc)]
            raise SystemExit(
                f'robot-dynamics import: the importer of {os.path.basename(args.file)} does not take '
                f'{", ".join(bad) or "these options"}'
            ) from None
        model = load_imported(res)
    except rd.RobotDynamicsError as exc:
        raise SystemExit(f'robot-dynamics import: {exc}') from None
    name = re.sub(r'[^A-Za-z0-9_.-]+', '_', args.name or res.name) or 'robot'
    out = os.path.abspath(args.out)
    paths = {
        'urdf': os.path.join(out, f'{name}.urdf'),
        'loops': os.path.join(out, f'{name}.loops.yaml'),
        'config': os.path.join(out, 'config', f'{name}.yaml'),
    }
    exists = [p for p in paths.values() if os.path.exists(p)]
    if exists and not args.force:
        raise SystemExit(f'robot-dynamics import: {exists[0]} exists (--force overwrites)')
    os.makedirs(os.path.dirname(paths['config']), exist_ok=True)
    with open(paths['urdf'], 'w', encoding='utf-8') as fh:
        fh.write(res.urdf)
    notes = ''.join(f'#   {n}\n' for n in res.notes)
    with open(paths['loops'], 'w', encoding='utf-8') as fh:
        fh.write(f'# Loops of {name}, imported from {res.source}. The importer decided:\n{notes}')
        fh.write(yaml.safe_dump(res.sidecar, sort_keys=False, default_flow_style=None, width=100))
    with open(paths['config'], 'w', encoding='utf-8') as fh:
        fh.write(_config_text(name, model, res))
    print(f'imported {res.source}')
    for n in res.notes:
        print(f'  {n}')
    print(
        f'model: nq = {model.nq}, nv = {model.nv}, {len(model.loops)} loop(s): '
        + (', '.join(f'{lp.name} ({lp.type})' for lp in model.loops) or 'none')
    )
    print(f'actuated: {model.actuated}')
    print('wrote:')
    for p in paths.values():
        print(f'  {p}')
    print(f'next: robot-dynamics check {paths["urdf"]}')
    return 0


def _seconds(what, positive=False):
    """argparse type: a finite number of seconds (>= 0, or > 0 with ``positive``)."""
    import math

    def parse(text):
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f'{what}: not a number: {text!r}') from None
        if not math.isfinite(v) or v < 0 or (positive and v == 0):
            raise argparse.ArgumentTypeError(
                f'{what}: must be a finite number of seconds {"> 0" if positive else ">= 0"}, got {text!r}'
            )
        return v

    return parse


def cmd_export(args):
    """Write the robot as another format (``mjcf``: MuJoCo's, through the MuJoCo plant's spec)."""
    import robot_dynamics as rd
    from robot_dynamics.plants.mujoco_plant import mj_export

    model = _load(args)
    out = args.output or f'{model.name}.xml'
    if os.path.exists(out) and not args.force:
        raise SystemExit(f'robot-dynamics export: {out} exists (--force overwrites it)')
    try:
        mj_export(model, out, contact=args.contact)
    except rd.RobotDynamicsError as exc:
        raise SystemExit(f'robot-dynamics export: {exc}') from None
    loops = ', '.join(f'{lp.name} ({lp.type})' for lp in model.loops) or 'none'
    print(f'wrote {out}: MJCF of {model.name!r} ({model.nv} velocity coordinates; loops: {loops})')
    print(f'open it: python -m mujoco.viewer --mjcf={out}')
    return 0


def cmd_launch(args):
    """Start the nodes of config/<robot>.yaml as processes; supervise until Ctrl-C.

    Every argument (robot/config, --timing, --param names and values, --duration, the stop
    deadlines) is checked before any process starts."""
    from robot_dynamics.ros.bringup import BringupError, launch_flag, load_bringup
    from robot_dynamics.ros.launcher import Launcher

    overrides = _launch_overrides(args.param)
    try:
        b = load_bringup(
            args.robot,
            overrides,
            timing=args.timing,
            namespace=args.namespace,
            hardware=args.hardware,
            use_sim_time=launch_flag(args.use_sim_time),
            backend=args.backend,
        )
    except BringupError as exc:
        raise SystemExit(f'robot-dynamics launch: {exc}') from None
    if args.nodes:
        import dataclasses

        names = [s.name for s in b.nodes]
        unknown = [n for n in args.nodes if n not in names]
        if unknown:
            raise SystemExit(
                f'robot-dynamics launch: --nodes {unknown} are not nodes of {b.source} (its nodes: {names})'
            )
        b = dataclasses.replace(b, nodes=[s for s in b.nodes if s.name in args.nodes], ros_processes=[])
    deadlines = dict(sigterm_timeout=args.sigterm_timeout, sigkill_timeout=args.sigkill_timeout)
    if args.print:  # the launcher's own command lines (nice, -P, params)
        launcher = Launcher(b, **deadlines)
        try:
            print(f'# environment: {launcher.discovery}')
            for s in b.nodes:
                cmd = launcher.command(s)
                cmd[-1] = f'<{s.name}.yaml>'  # the temporary params file (parameters below)
                print(' '.join(cmd), s.parameters)
            for p in b.ros_processes:  # ros2_control: from a ROS 2 installation
                print(f'# not started by this launcher: {p.command()}')
        finally:
            launcher.shutdown()
        return 0
    return Launcher(b, **deadlines).run(duration=args.duration)


def _add_backend_option(p):
    from robot_dynamics.plants.registry import BACKENDS

    p.add_argument(
        '--backend',
        choices=list(BACKENDS),
        default=None,
        help="what integrates the multibody in sim_node: rigid (the package's closed-chain "
        "integrator) or mujoco (default: the robot's config, else rigid)",
    )


def _add_id_options(p, plot_default=None):
    p.add_argument('--duration', type=float, default=2.0, help='trajectory duration [s] (default 2)')
    p.add_argument('--rate', type=float, default=500.0, help='sample rate [Hz] (default 500)')
    p.add_argument('--amplitude', type=float, default=0.5, help='joint amplitude [rad|m] (default 0.5)')
    p.add_argument('--frequency', type=float, default=0.5, help='base frequency [Hz] (default 0.5)')
    p.add_argument('--rows', type=int, default=10, help='table rows to print (default 10)')
    p.add_argument('--csv', default=None, help='write t, q, tau to this CSV file')
    p.add_argument('--plot', default=plot_default, help='write a PNG plot to this path')
    p.add_argument('--loops', default=None, help='loop sidecar (default: <stem>.loops.yaml)')
    p.add_argument(
        '--xacro', action='store_true', help='expand a .xacro model (runs its Python expressions: trusted files only)'
    )
    p.add_argument(
        '--root-joint',
        choices=('free_flyer', 'planar'),
        default=None,
        help="put the root link on a joint named root_joint (a floating base; default: the sidecar's, else fixed)",
    )
    p.add_argument(
        '--strict',
        action='store_true',
        help='refuse what loads with a ModelWarning otherwise (non-physical inertias, a <limit> without lower/upper)',
    )


def _command(sub, func, name, **kw):
    """A sub-command ``name`` of the parser whose sub-parsers are ``sub``, run by ``func(args)``."""
    p = sub.add_parser(name, **kw)
    p.set_defaults(func=func)
    return p


def _add_model_options(p):
    """--loops, --xacro, --root-joint, --strict: how a robot description given by path is read."""
    p.add_argument('--loops', default=None, help='loop sidecar (default: <stem>.loops.yaml)')
    p.add_argument(
        '--xacro', action='store_true', help='expand a .xacro model (runs its Python expressions: trusted files only)'
    )
    p.add_argument(
        '--root-joint',
        choices=('free_flyer', 'planar'),
        default=None,
        help="put the root link on a joint named root_joint (a floating base; default: the sidecar's, else fixed)",
    )
    p.add_argument(
        '--strict',
        action='store_true',
        help='refuse what loads with a ModelWarning otherwise (non-physical inertias, a <limit> without lower/upper)',
    )


def build_parser():
    """The argparse parser of ``robot-dynamics``."""
    p = argparse.ArgumentParser(
        prog='robot-dynamics', description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument('-v', '--verbose', action='store_true', help='debug logging')
    sub = p.add_subparsers(dest='cmd', metavar='COMMAND')
    pi = _command(sub, cmd_info, 'info', help='model summary')
    pi.add_argument('robot', nargs='?', help='packaged robot name or URDF path')
    pi.add_argument('--list', action='store_true', help='list the packaged robots')
    _add_model_options(pi)
    pc = _command(sub, cmd_check, 'check', help='check a robot description: closure, DOF, actuation, methods')
    pc.add_argument('robot', help='packaged robot name or URDF path')
    _add_model_options(pc)
    pid = _command(sub, cmd_id, 'id', help='inverse dynamics along an analytic trajectory')
    pid.add_argument('robot', help='packaged robot name or URDF path')
    _add_id_options(pid)
    pd = _command(sub, cmd_demo, 'demo', help="run a robot's closed-loop ROS 2 demo (default five_bar)")
    pd.add_argument('robot', nargs='?', default=None, help='robot with a config (default five_bar)')
    pd.add_argument('--duration', type=float, default=None, help="run time [s] (default: the robot's)")
    pd.add_argument(
        '--timing',
        choices=['realtime', 'lockstep'],
        default=None,
        help="realtime or lockstep (default: the robot's config)",
    )
    _add_backend_option(pd)
    pd.add_argument('--outdir', default='out', help='directory for the log (default out/)')
    pd.add_argument(
        '--startup-timeout', type=float, default=300.0, help='max wait for the first joint state [s] (default 300)'
    )
    pd.add_argument('--plot', default=None, help='PNG plot path (default OUTDIR/demo_ROBOT.png)')
    pd.add_argument(
        '--bag',
        default=None,
        metavar='FILE.mcap',
        help='also record every topic of the graph into this MCAP file (rosbag2 layout: ros2 bag, Foxglove)',
    )
    pd.add_argument(
        '--no-video', action='store_true', help='do not render the video (OUTDIR/demo_ROBOT.mp4 + _frame.png)'
    )
    _add_video_options(pd, prefix='video-')
    pv = _command(
        sub,
        cmd_render,
        'render',
        help="render a robot's motion offscreen to an MP4 and a key-frame PNG",
        description='Render a joint trajectory of a robot offscreen (MuJoCo, MUJOCO_GL=egl by default) '
        'to an H.264 MP4 and a key-frame PNG. The trajectory is a CSV file with a header: a column t '
        '[s] and one column per joint named q_<joint> or <joint> (what `robot-dynamics id --csv` '
        'writes); joints it does not name keep their reference values and the loops are closed '
        'from them. Without --csv: a sinusoid of the independent joints, the loops closed at each '
        'frame.',
    )
    pv.add_argument('robot', help='packaged robot name or URDF path')
    pv.add_argument('--csv', default=None, help='trajectory CSV (t, q_<joint>, ...)')
    pv.add_argument('--out', default=None, help='MP4 path (default out/render_ROBOT.mp4)')
    pv.add_argument('--png', default=None, help='key-frame PNG path (default: the MP4 path with _frame.png)')
    pv.add_argument('--duration', type=float, default=4.0, help='sinusoid duration [s] (default 4)')
    pv.add_argument(
        '--amplitude', type=float, default=0.2, help='sinusoid amplitude [rad; a tenth of it in m] (default 0.2)'
    )
    pv.add_argument('--frequency', type=float, default=0.5, help='sinusoid frequency [Hz] (default 0.5)')
    pv.add_argument('--gif', default=None, help='also write an animated GIF (10 fps, 320 px wide)')
    _add_video_options(pv)
    _add_model_options(pv)
    pr = _command(
        sub,
        cmd_record,
        'record',
        help="record a running graph's topics into an MCAP file",
        description='Record the topics of the graph running on this ROS domain '
        '(ROS_DOMAIN_ID) into an MCAP file in the rosbag2 layout '
        '(ros2 bag info/play and Foxglove open it). Stops after '
        '--duration or on Ctrl-C, SIGTERM or SIGHUP, each of which '
        'closes the file completely (exit status 0). The data reaches '
        'the disk at least once a second, so a recorder killed outright '
        '(kill -9, power loss) loses at most the last second; '
        '--recover FILE then writes a complete copy of what the '
        'truncated file holds.',
    )
    pr.add_argument('--bag', default='out/run.mcap', help='MCAP file to write (default out/run.mcap)')
    pr.add_argument(
        '--duration',
        type=_seconds('--duration', positive=True),
        default=None,
        help='stop after this many seconds (default: Ctrl-C)',
    )
    pr.add_argument(
        '--topics',
        nargs='*',
        default=None,
        metavar='TOPIC',
        help='only these topics (default: all but /rosout and /parameter_events)',
    )
    pr.add_argument(
        '--recover',
        default=None,
        metavar='FILE',
        help='do not record: read the truncated MCAP file FILE (a recorder killed before '
        'closing it) up to its last complete chunk and write a complete MCAP file '
        'with the same schemas, channels and messages; prints the messages per '
        'topic and the time span. No ROS needed',
    )
    pr.add_argument(
        '--out',
        default=None,
        metavar='FILE2',
        help='with --recover: the file to write (default <stem>.recovered.mcap next '
        'to FILE; --out FILE repairs FILE in place)',
    )
    pim = _command(
        sub,
        cmd_import,
        'import',
        help='import an SDFormat / MJCF file or a URDF + frame-pair YAML (writes URDF, loops, config)',
        description='Import a robot description with closed loops: SDFormat (.sdf, .world), MJCF '
        '(.xml, .mjcf) or a URDF with the frame-pair YAML of toolbox-parallel-robots '
        '(--frame-pairs). Writes OUT/NAME.urdf (the spanning tree), OUT/NAME.loops.yaml (the loop '
        'sidecar) and OUT/config/NAME.yaml (a starting bringup config), and prints what the '
        'importer decided: the spanning tree, the cut joints and their loop types, the actuated '
        'joints, what it could not represent.',
        epilog='example:\n'
        '  robot-dynamics import cassie.sdf --out cassie_import\n'
        '  robot-dynamics check cassie_import/cassie.urdf\n'
        '  robot-dynamics import robot.urdf --frame-pairs robot.yaml --name five_bar --out fb',
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    pim.add_argument('file', help='.sdf / .world / .xml / .mjcf file, or a .urdf with --frame-pairs')
    pim.add_argument('--out', default='.', metavar='DIR', help='output directory (default: the current one)')
    pim.add_argument('--name', default=None, help="robot name and file stem (default: the model's name)")
    pim.add_argument(
        '--root-joint',
        choices=('free_flyer', 'planar', 'fixed'),
        default=None,
        help='root joint of a model that no joint attaches to the world (SDF default free_flyer; fixed: none)',
    )
    pim.add_argument('--cut', nargs='+', default=None, metavar='JOINT', help='joints to cut into loops (SDF)')
    pim.add_argument('--actuated', nargs='+', default=None, metavar='JOINT', help='actuated joints (SDF)')
    pim.add_argument('--frame-pairs', default=None, metavar='YAML', help='frame-pair YAML of a URDF')
    pim.add_argument('--force', action='store_true', help='overwrite existing output files')
    pex = _command(
        sub,
        cmd_export,
        'export',
        help='write a robot in another format (mjcf: for MuJoCo and its viewer)',
        description='Write the robot (URDF + loop sidecar) as an MJCF file that MuJoCo compiles '
        'and its viewer opens and simulates: the bodies, joints, limits and inertias of the '
        'description, the loops as equality constraints (virtual joints where MuJoCo has no '
        'equality for the loop type), a motor per actuated joint. See '
        'robot_dynamics.plants.mujoco_plant.',
        epilog='example:\n  robot-dynamics export mjcf five_bar -o five_bar.xml\n'
        '  python -m mujoco.viewer --mjcf=five_bar.xml',
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    pex.add_argument('format', choices=('mjcf',), help='output format')
    pex.add_argument('robot', help='packaged robot name or URDF path')
    pex.add_argument('-o', '--output', default=None, metavar='FILE', help='output file (default NAME.xml)')
    pex.add_argument('--contact', action='store_true', help='keep MuJoCo contacts on (off by default)')
    pex.add_argument('--force', action='store_true', help='overwrite an existing output file')
    _add_model_options(pex)
    from robot_dynamics.tools.warmup import robot_names

    pw = _command(
        sub,
        cmd_warmup,
        'warmup',
        help='compile and cache the numerical kernels (done by setup)',
        description='Compile and cache the numerical kernels that the nodes of the robot configs '
        'use (runs their core computations once), so that nodes start in seconds. '
        'Robots: ' + ', '.join(robot_names() or ['(no config found)']) + '.',
    )
    pw.add_argument(
        'robots', nargs='*', metavar='ROBOT', help='robot configs (names or config paths) to warm up (default: all)'
    )
    pw.add_argument(
        '--jobs',
        type=int,
        default=min(2, os.cpu_count() or 1),
        metavar='N',
        help='worker processes (default: 2, or 1 on a 1-CPU machine)',
    )
    pl = _command(
        sub,
        cmd_launch,
        'launch',
        help="start a robot's ROS 2 nodes (no ros2 launch needed)",
        description="Start a robot's ROS 2 nodes as processes (config/ROBOT.yaml) and supervise "
        'them. Ctrl-C, SIGTERM or SIGHUP stops them (SIGINT, then SIGTERM, then '
        'SIGKILL with the deadlines below; a second Ctrl-C hurries); the nodes also '
        'stop if the launcher is killed. DDS stays on loopback (discovery and every '
        'UDP socket on 127.0.0.1: the Fast DDS profile config/fastdds_loopback.xml) '
        'unless the environment widens it (ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET or '
        'ROS_STATIC_PEERS for a multi-machine robot) or sets its own '
        'FASTDDS_DEFAULT_PROFILES_FILE.',
    )
    pl.add_argument('robot', help='packaged robot name (config/ROBOT.yaml) or a bringup YAML path')
    pl.add_argument(
        '--duration', type=_seconds('--duration', positive=True), default=None, help='stop after this many seconds'
    )
    pl.add_argument(
        '--param',
        action='append',
        metavar='NODE.PARAM=VALUE',
        help='override a node parameter (YAML value), repeatable',
    )
    pl.add_argument(
        '--timing',
        choices=['realtime', 'lockstep'],
        default=None,
        help='realtime (wall clock, default) or lockstep (simulated time, deterministic)',
    )
    _add_backend_option(pl)
    from robot_dynamics.ros.bringup import HARDWARE

    pl.add_argument(
        '--hardware',
        choices=list(HARDWARE),
        default='sim',
        help='sim (default): sim_node is the plant; mock | ros2_control: '
        'closure_node + the controllers here, controller_manager from a ROS 2 '
        'installation (printed: this launcher cannot start it)',
    )
    pl.add_argument(
        '--use-sim-time',
        choices=['auto', 'true', 'false'],
        default='auto',
        help="auto (default): the timing's (lockstep: simulated time); true: every "
        "node on sim_node's /clock, also in real time",
    )
    pl.add_argument(
        '--namespace',
        default=None,
        metavar='NS',
        help="ROS namespace of every node (default the config's); topics are "
        'relative, so robots in two namespaces share a ROS domain',
    )
    pl.add_argument(
        '--nodes',
        nargs='+',
        default=None,
        metavar='NODE',
        help='start only these nodes of the config (names as in config/ROBOT.yaml): '
        'a robot spread over several machines, e.g. --nodes sim_node on the '
        'one with the drivers (docs/launch_and_safety.md)',
    )
    pl.add_argument(
        '--sigterm-timeout',
        type=_seconds('--sigterm-timeout'),
        default=5.0,
        metavar='S',
        help='stopping: seconds from SIGINT to SIGTERM for a node that does not stop (default 5)',
    )
    pl.add_argument(
        '--sigkill-timeout',
        type=_seconds('--sigkill-timeout'),
        default=2.0,
        metavar='S',
        help='stopping: seconds from SIGTERM to SIGKILL (default 2; also '
        "the watchdog's grace if the launcher itself is killed)",
    )
    pl.add_argument('--print', action='store_true', help='print the node commands and exit')
    return p


def main(argv=None):
    """Console-script entry point."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format='[%(levelname)s] %(name)s: %(message)s'
    )
    if not getattr(args, 'func', None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except KeyboardInterrupt:  # Ctrl-C outside a launcher's own handling: no traceback
        print('robot-dynamics: interrupted', file=sys.stderr)
        return 130


if __name__ == '__main__':
    sys.exit(main())
