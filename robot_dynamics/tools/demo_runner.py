"""``robot-dynamics demo ROBOT``: run a robot's graph, record it, judge it, plot it (ROS side).

What is judged per robot: :mod:`robot_dynamics.tools.demos` (``DEMOS``). The graph is started with the
built-in launcher (its config's default timing), a :class:`~robot_dynamics.ros.recorder.Recorder`
in this process records it; the demo waits for the graph (never kills a node that is still
starting: it waits up to ``startup_timeout`` for the first command, and fails with a clear
message if none comes), records ``duration`` s, shuts the graph down and reports.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from robot_dynamics.tools.demos import DEMOS, DemoSpec, command_latency, scalar_error, summarise


def _say(*a):
    print(*a, flush=True)


def run_demo(
    robot,
    duration=None,
    outdir='out',
    plot=None,
    startup_timeout=300.0,
    timing=None,
    bag=None,
    backend=None,
    min_plant_time=None,
    video=True,
):
    """Run the demo of ``robot``; returns the exit status (0 = every bound met). ``bag``: also
    record every topic of the graph into this MCAP file. ``backend``: sim_node's multibody
    integrator ('rigid' | 'mujoco'; default the config's); the bound is the same on both.
    ``min_plant_time`` [s]: record at least that much plant time too (a lock-step graph whose
    pace depends on the machine; at most 20 x ``duration`` of wall time, then judged as is).
    ``video``: render the recorded ``/joint_states`` to ``OUTDIR/demo_<robot>.mp4`` and its key
    frame to ``OUTDIR/demo_<robot>_frame.png`` (:mod:`robot_dynamics.tools.video`): True
    (640x480, 30 fps), a dict of :func:`~robot_dynamics.tools.video.render_video` options
    (``size``, ``fps``), or False."""
    from robot_dynamics.ros.bringup import use_discovery_env

    use_discovery_env()  # this process's recorder, and the launcher's nodes, on loopback
    if 'ROS_DOMAIN_ID' not in os.environ:
        import random

        os.environ['ROS_DOMAIN_ID'] = str(random.SystemRandom().randint(1, 100))
    import robot_dynamics as rd
    from geometry_msgs.msg import PointStamped

    from robot_dynamics.ros.bringup import load_bringup
    from robot_dynamics.ros.launcher import Launcher
    from robot_dynamics.ros.recorder import recording

    b = load_bringup(robot, timing=timing, backend=backend)
    name = os.path.splitext(os.path.basename(robot))[0]  # a robot name or a config path
    spec = DEMOS.get(name) or DEMOS.get(b.robot) or DemoSpec('array', float('inf'))
    duration = duration or spec.duration
    model = rd.load_model(b.urdf, loops=b.loops or None)
    sim = next(s for s in b.nodes if s.executable == 'sim_node')
    ctl = next((s for s in b.nodes if s.name != 'sim_node' and 'controller' in s.parameters), None)
    cmd_topic = f'/{(ctl.parameters if ctl else sim.parameters).get("controller", "effort_controller")}/commands'
    pub_rate = float(sim.parameters.get('publish_rate', 100.0))
    ctl_state = b.control_state_topic()  # latency base when /joint_states is decimated
    os.makedirs(outdir, exist_ok=True)
    plot = plot or os.path.join(outdir, f'demo_{name}.png')
    logpath = os.path.join(outdir, f'demo_{name}.log')
    _say(
        f'demo: {name} ({b.timing}, backend {sim.parameters.get("backend", "rigid")}) graph ({", ".join(s.name for s in b.nodes)}) for {duration:g} s; '
        f'ROS_DOMAIN_ID={os.environ["ROS_DOMAIN_ID"]}, node logs -> {logpath}'
    )
    from robot_dynamics.ros.bringup import observer_priority

    with open(logpath, 'w') as logf, observer_priority(b.timing), recording(spec.frame, bag=bag) as rec:
        from std_msgs.msg import Float64MultiArray

        cmds = rec.subscribe('cmd', Float64MultiArray, cmd_topic)
        cst = rec.subscribe('cst', 'JointState', ctl_state) if ctl_state else None
        rtf = rec.subscribe('rtf', 'Float64', '/sim_node/real_time_factor')
        diag = rec.subscribe('diag', 'DiagnosticArray', '/diagnostics')
        err = rec.subscribe('err', 'Float64MultiArray', spec.topic) if spec.error != 'task' else None
        extra = {k: rec.subscribe(k, typ, topic) for k, (typ, topic) in spec.extra.items()}
        goal_pub = rec.publisher(PointStamped, spec.goal_topic) if spec.goals else None
        launcher = Launcher(b, out=logf).start()
        died = None
        t_start = time.monotonic()
        _say('  waiting for the graph (first command) ...')
        try:
            while not cmds and time.monotonic() - t_start < startup_timeout:
                time.sleep(0.1)
                died = launcher.poll()
                if died:
                    break
            if not cmds and not died:
                launcher.shutdown()
                _say(f'demo: FAILED: the graph sent no command within {startup_timeout:g} s; see {logpath}')
                return 1
            _say(f'  graph running after {time.monotonic() - t_start:.1f} s')
            t0 = time.monotonic()
            k_goal, t_goal = 0, -1e9

            def plant_time():  # goals are paced in plant time (stamps): lock-step too
                with rec.lock:
                    return rec.js[-1][0] if rec.js else 0.0

            p0 = plant_time()
            # goals: run until the last goal's period is over in plant time (at most 20 x duration)
            while not died and (
                time.monotonic() - t0 < duration
                or (
                    min_plant_time is not None
                    and plant_time() - p0 < min_plant_time
                    and time.monotonic() - t0 < 20 * duration
                )
                or (
                    goal_pub is not None
                    and (k_goal < len(spec.goals) or plant_time() - p0 < t_goal + spec.goal_period)
                    and time.monotonic() - t0 < 20 * duration
                )
            ):
                time.sleep(0.1)
                died = launcher.poll()
                el = time.monotonic() - t0
                pel = plant_time() - p0
                if goal_pub is not None and pel - t_goal >= spec.goal_period and k_goal < len(spec.goals):
                    _send_goal(goal_pub, spec.goals[k_goal])
                    k_goal, t_goal = k_goal + 1, pel
                if int(el * 10) % 20 == 0:
                    with rec.lock:
                        n = len(rec.js)
                    (
                        sys.stdout.write(f'\r  t = {el:5.1f} s, joint states received: {n}   ')
                        if sys.stdout.isatty()
                        else _say(f'  t = {el:5.1f} s, joint states received: {n}')
                    )
        except KeyboardInterrupt:
            _say('\n  interrupted')
        finally:
            if sys.stdout.isatty():
                print()
            launcher.shutdown()
        t_win = (t0, time.monotonic())
        with rec.lock:
            js = [j for j in rec.js if j[3] >= t0]
            C = [t for t, _ in cmds if t >= t0]
            S = [t for t, _ in cst if t >= t0] if cst is not None else None
            R = [m.data for t, m in rtf if t >= t0]
            E = [(t, m) for t, m in (err or []) if t >= t0]
            X = {k: [(t, m) for t, m in v if t >= t0] for k, v in extra.items()}
            # sim_node's own state -> command time (its answer_* diagnostics, real time only)
            answer = next(
                (
                    {kv.key: kv.value for kv in st.values}
                    for _, m in reversed(diag)
                    for st in m.status
                    if 'sim_node' in st.name and any(kv.key == 'answer_p99' for kv in st.values)
                ),
                None,
            )
    if died:
        _say(f'demo: FAILED: node {died[0]} exited with code {died[1]}; see {logpath}')
        return 1
    if video:
        video = dict(video) if isinstance(video, dict) else {}
        video.setdefault('path', os.path.join(outdir, f'demo_{name}.mp4'))
        video.setdefault('keyframe', os.path.join(outdir, f'demo_{name}_frame.png'))
    return _report(
        name,
        spec,
        model,
        b,
        js,
        C,
        R,
        E,
        X,
        rec,
        pub_rate,
        plot,
        t_win,
        (ctl_state, S) if S else None,
        answer,
        video=video or None,
    )


def _send_goal(pub, xy):
    from geometry_msgs.msg import PointStamped

    m = PointStamped()
    m.point.x, m.point.y = float(xy[0]), float(xy[1])
    pub.publish(m)


def _q_of(model, names, pos):
    q = model.reference_q()
    for n_, v in zip(names, pos):
        if n_ in model._joint_index:
            q[model.joint_index(n_)] = v
    return q


def _report(
    robot, spec, model, b, js, C, R, E, X, rec, pub_rate, plot, t_win, ctl_states=None, answer=None, video=None
):
    """``ctl_states``: (topic, arrivals) of the controller's own state topic (latency base);
    ``answer``: sim_node's diagnostics with its own state -> command figures (answer_p50/p99 [s]);
    ``video``: :func:`robot_dynamics.tools.video.render_video` options (``path``, ``keyframe``,
    ...) for the video of the recorded joint states, or None."""
    import robot_dynamics as rd

    ok, lines = True, []
    if len(js) < 10 or len(C) < 10:
        _say(f'demo: FAILED: too few messages in the window ({len(js)} joint states, {len(C)} commands)')
        return 1
    ja = np.array([j[3] for j in js])
    st = np.array([j[0] for j in js])
    rate = (len(st) - 1) / (ja[-1] - ja[0])
    res = max(
        float(np.abs(rd.loop_residual(model, _q_of(model, j[1], j[2]))).max(initial=0.0))
        for j in js[:: max(1, len(js) // 200)]
    )
    ca = np.array(C)
    lat = command_latency(np.array(ctl_states[1]) if ctl_states else ja, ca)
    lat_of = f' (states of {ctl_states[0]})' if ctl_states else ''
    rtf = float(np.mean(R)) if R else (st[-1] - st[0]) / (ja[-1] - ja[0])
    lines.append(
        f'  /joint_states {rate:.1f} Hz (configured {pub_rate:g}); every joint published '
        f'(passive: {model.passive}); max loop residual {res:.2e}'
    )
    lines.append(
        f'  real-time factor {rtf:.2f} ({b.timing}); commands {len(C) / (t_win[1] - t_win[0]):.1f} Hz, '
        f'state -> command at the recorder{lat_of} p50 {np.percentile(lat, 50) * 1e3:.2f} ms, '
        f'p99 {np.percentile(lat, 99) * 1e3:.2f} ms'
        + (
            f'; at the plant (sim_node, one hop each way) p50 {float(answer["answer_p50"]) * 1e3:.2f} ms, '
            f'p99 {float(answer["answer_p99"]) * 1e3:.2f} ms'
            if answer
            else ''
        )
    )
    if res > 1e-6:
        ok = False
        lines.append('  FAIL: published joints do not close the loops (residual > 1e-6)')
    # the robot's own metric
    if spec.error == 'task':
        t, e = rec.matched_task_error(axes=spec.axes)
        sel = t >= st[0]
        t, e = t[sel], e[sel]
        what = f'task-space tracking of {spec.frame}'
    else:
        t = np.array([a for a, _ in E])
        labels = None
        if E and E[0][1].layout.dim:
            labels = E[0][1].layout.dim[0].label
        e = np.array([scalar_error(spec, m.data, labels) for _, m in E])
        what = f'tracking error ({spec.topic})'
    emax, erms, n = summarise(spec, t, e)
    good = n > 0 and emax <= spec.bound
    ok &= good
    lines.append(
        f'  {what}: after {spec.settle:g} s max {emax * spec.scale:.4g} {spec.unit}, RMS '
        f'{erms * spec.scale:.4g} {spec.unit} ({n} samples); bound {spec.bound * spec.scale:g} '
        f'{spec.unit}: {"met" if good else "MISSED"}'
    )
    P = None
    if 'cyl' in X and X['cyl']:
        m0 = X['cyl'][0][1]
        ip = [i for i, nm in enumerate(m0.name) if nm.endswith('/p_a') or nm.endswith('/p_b')]
        P = (
            np.array([t for t, _ in X['cyl']]),
            np.array([[m.position[i] for i in ip] for _, m in X['cyl']]) / 1e5,
            [m0.name[i] for i in ip],
        )
        lines.append(f'  chamber pressures {P[1].min():.1f} .. {P[1].max():.1f} bar')
    if spec.lam_bound is not None:
        L = [(t_, m) for t_, m in X.get('lam', []) if m.layout.dim]
        lab = L[0][1].layout.dim[0].label.split(',') if L else []
        if 'lambda' in lab:
            tl = np.array([t_ for t_, _ in L])
            lam, lam_d = (np.array([m.data[lab.index(k)] for _, m in L]) for k in ('lambda', 'lambda_d'))
            late = tl >= tl[0] + spec.settle
            dev = float(np.abs(lam - lam_d)[late].max()) if late.any() else float('nan')
            good = bool(dev <= spec.lam_bound)
            ok &= good
            lines.append(
                f'  spring preload lambda {lam.min():.3f} .. {lam.max():.3f} N m (set-point '
                f'{lam_d[-1]:g}); after {spec.settle:g} s max |lambda - lambda_d| {dev:.3g}; bound '
                f'{spec.lam_bound:g}: {"met" if good else "MISSED"}'
            )
        else:
            ok = False
            lines.append('  FAIL: no lambda received (/sea_controller/diagnostics)')
    for ln in lines:
        _say(ln)
    try:
        _plot(plot, robot, spec, t, e, ca, lat, R, P, rec)
        _say(f'  wrote {plot}')
    except Exception as exc:  # noqa: BLE001 - a missing plot must not hide the verdict
        _say(f'  (plot not written: {exc})')
    if video:
        _video(model, js, video)
    _say(f'demo: {"OK" if ok else "FAILED"}')
    return 0 if ok else 1


def _video(model, js, options):
    """Render the recorded joint states (plant time) to the video and key frame of ``options``."""
    from robot_dynamics.tools.video import render_video

    t = np.array([j[0] for j in js])
    order = np.argsort(t, kind='stable')
    t = t[order]
    Q = np.array([_q_of(model, js[k][1], js[k][2]) for k in order])
    keep = np.concatenate([[True], np.diff(t) > 0])  # one sample per stamp
    try:
        v = render_video(model, t[keep], Q[keep], progress=lambda s: _say(f'  {s}'), **options)
    except Exception as exc:  # noqa: BLE001 - a missing video must not hide the verdict
        _say(f'  (video not written: {exc})')
        return
    _say(
        f'  wrote {v.path} ({v.frames} frames, {v.size[0]}x{v.size[1]} at {v.fps:g} fps; rendered '
        f'{v.frames / max(v.render_s, 1e-9):.0f} frames/s offscreen ({v.backend}), encoded in {v.encode_s:.1f} s)'
    )
    if v.keyframe:
        _say(f'  wrote {v.keyframe} (key frame)')
    for note in v.notes:
        _say(f'  video: {note}')


def _plot(path, robot, spec, t, e, ca, lat, R, P, rec):
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
    if len(t):
        ax[0].semilogy(t - t[0], np.maximum(e, 1e-12) * spec.scale, lw=0.8)
        ax[0].axhline(spec.bound * spec.scale, color='r', ls='--', lw=0.8, label='bound')
        ax[0].axvline(spec.settle, color='k', ls=':', lw=0.8, label='judged from')
        ax[0].legend(fontsize=8)
    ax[0].set_xlabel('t [s]')
    ax[0].set_ylabel(f'tracking error [{spec.unit}]')
    ax[0].set_title(f'{robot}: tracking (separate processes, DDS)')
    if spec.error == 'task':
        with rec.lock:
            Pp = np.array([p for _, p in rec.pose])
            Rr = np.array([r for _, r in rec.ref])
        a0, a1 = spec.axes
        if len(Rr):
            ax[1].plot(Rr[:, a0], Rr[:, a1], 'k--', lw=1, label='reference')
        if len(Pp):
            ax[1].plot(Pp[:, a0], Pp[:, a1], lw=1.0, label=spec.frame)
        ax[1].set_xlabel(f'{"xyz"[a0]} [m]')
        ax[1].set_ylabel(f'{"xyz"[a1]} [m]')
        ax[1].axis('equal')
        ax[1].legend(fontsize=8)
        ax[1].set_title('task-space path')
    elif P is not None:
        for i, nm in enumerate(P[2]):
            ax[1].plot(P[0] - P[0][0], P[1][:, i], lw=0.8, label=nm)
        ax[1].set_xlabel('t [s]')
        ax[1].set_ylabel('pressure [bar]')
        ax[1].legend(fontsize=7)
        ax[1].set_title('chamber pressures')
    else:
        with rec.lock:
            cm = [(tt, np.array(m.data)) for tt, m in rec.topics.get('cmd', [])]
        if cm:
            T = np.array([c[0] for c in cm])
            ax[1].plot(T - T[0], np.array([c[1] for c in cm]), lw=0.8)
        ax[1].set_xlabel('t [s]')
        ax[1].set_ylabel('command [N m | N | V]')
        ax[1].set_title('actuator commands')
    if len(lat):
        ax[2].hist(lat * 1e3, bins=50)
    ax[2].set_xlabel('state -> command at the recorder [ms]')
    ax[2].set_ylabel('count')
    ax[2].set_title('latency' + (f'; real-time factor {np.mean(R):.2f}' if R else ''))
    from robot_dynamics.tools.plotting import save_figure

    save_figure(fig, ax, path)
