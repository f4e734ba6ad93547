#!/usr/bin/env python3
"""(u, ud, udd) of the assumed Gough-Stewart platform (seed 004) along the roll motion:
microseconds per call, single sample and batched per sample, in the same run as

* ours, recursive (``rd.pkm.inverse_dynamics_d2``: public API incl. input checks) and the
  compiled kernel alone (``pkm_id_d2_batch`` on pre-packed arrays), each with the closed-form
  limb IK (default for the decoupled U-P-S legs) and with the Newton IK forced
  (``ik='newton'`` / ik_mode 2), side by side (``--ik`` restricts to one of them);
* (a1) finite differences of our own first-order inverse dynamics: u at a 5-point stencil
  (one batched kernel call per sample; ud, udd from the stencil);
* (a2) finite differences of the projection-method inverse dynamics (seed 002,
  ``rd.projected_inverse_dynamics`` on the 21-DOF tree with 15 constraints, 5 calls);
* the general route (``rd.pkm.general.inverse_dynamics_d2_general``, any serial-limb PKM from
  URDF + sidecar), numpy (``route='numpy'``: batched Newton IK from the reference
  configuration) and compiled (default: numba kernel, per sample; cold, warm-started, and the
  :class:`GeneralID2Data` workspace; batched also with ``threads=2``: two parallel chunks
  joined to the sequential result; and "(u, ud, udd) only": ``jik_derivatives=False``, the
  rows of J_IK', J_IK'' not formed) on the same Gough-Stewart motion and on the translational
  3-UPU test robot (test/data/tripteron_3upu.urdf, a smooth x-y-z motion)
  (``--only-general``: just these rows and the compiled 6x6 rows to compare);
* (b) Pinocchio: ``pinocchio.rnea`` on the same 21-DOF spanning tree (the limb inverse dynamics
  part only, no constraint elimination: a lower bound of a Pinocchio-based first-order ID).
  Pinocchio has no 2nd-order time derivatives of the ID; 5 calls are what an FD of it costs.

Example::

    .venv/bin/python bench/bench_recursive.py [--batch 1000] [--repeats 5] [--ik both|closed|newton] [--only-general]
"""

import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.pkm import _recursive_kernels as RK  # noqa: E402
from robot_dynamics.pkm.gough_stewart import RollMotion  # noqa: E402
from robot_dynamics.pkm.recursive import (
    inverse_dynamics_d2,
    inverse_dynamics_d2_full,  # noqa: E402
    limb_to_tree,
    limbs_from_model,
)


def timeit(f, repeats, min_time=0.05):
    f()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        dt = time.perf_counter() - t0
        if dt > min_time:
            break
        n *= 2
    res = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        res.append((time.perf_counter() - t0) / n)
    return min(res), statistics.median(res)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--batch', type=int, default=1000)
    ap.add_argument('--repeats', type=int, default=5)
    ap.add_argument(
        '--ik',
        choices=('both', 'closed', 'newton'),
        default='both',
        help='limb IK of the "ours" rows: closed form, Newton forced, or both',
    )
    ap.add_argument(
        '--only-general', action='store_true', help='only the general-route rows (and the compiled rows to compare)'
    )
    a = ap.parse_args()
    model = rd.load_model(os.path.join(ROOT, 'urdf', 'gough_stewart.urdf'))
    lim = limbs_from_model(model)
    roll = RollMotion()
    t1 = 0.13
    args1 = roll(t1)
    ts = np.linspace(0, 1, a.batch, endpoint=False)
    argsB = roll(ts)
    rows = []

    def add(name, f, per=1):
        b, m = timeit(f, a.repeats)
        rows.append((name, b / per * 1e6, m / per * 1e6))

    general_rows(a, model, args1, argsB, add)
    if a.only_general:
        from robot_dynamics.pkm.recursive import ID2Data

        add(
            'compiled 6x6 route (inverse_dynamics_d2): Gough-Stewart, single call',
            lambda: inverse_dynamics_d2(model, *args1),
        )
        d2data = ID2Data(model)
        d2data(*args1)
        add('compiled 6x6 route: Gough-Stewart, ID2Data single call (warm-started)', lambda: d2data(*args1))
        add(
            f'compiled 6x6 route: Gough-Stewart, batch {a.batch}, per sample',
            lambda: inverse_dynamics_d2(model, *argsB),
            a.batch,
        )
        return report(rows)
    iks = {'both': ('closed', 'newton'), 'closed': ('closed',), 'newton': ('newton',)}[a.ik]
    api_ik = {'closed': 'auto', 'newton': 'newton'}
    # kernel ik_mode: 1 closed form (+ block inverse of J_t), 2 the same with Newton IK forced
    modes = {'closed': lim.ik_mode, 'newton': np.where(lim.ik_mode == 1, 2, 0).astype(np.int64)}
    lbl = {'closed': 'closed-form IK', 'newton': 'Newton IK'}
    for ik in iks:
        add(
            f'ours: inverse_dynamics_d2, single call ({lbl[ik]})',
            lambda ik=ik: inverse_dynamics_d2(model, *args1, ik=api_ik[ik]),
        )
    for ik in iks:
        add(
            f'ours: inverse_dynamics_d2, batch {a.batch}, per sample ({lbl[ik]})',
            lambda ik=ik: inverse_dynamics_d2(model, *argsB, ik=api_ik[ik]),
            a.batch,
        )
    # the per-period workspace (Model/Data split): what a controller calls every period
    from robot_dynamics.pkm.recursive import ID2Data

    d2data = ID2Data(model)
    d2data(*args1)
    add('ours: ID2Data (workspace, warm-started), single call (closed-form IK)', lambda: d2data(*args1))
    # compiled kernel alone
    X, V, Vd, Vdd, Vddd = argsB
    R = np.ascontiguousarray(X[:, :3, :3])
    p = np.ascontiguousarray(X[:, :3, 3])
    VT = np.ascontiguousarray(np.stack([V, Vd, Vdd, Vddd], 1))
    S = len(ts)
    out = (
        np.empty((S, 5, 6, 6)),
        np.empty((S, 3, 6)),
        np.empty((S, 3, 6)),
        np.empty((S, 3, 6, 6)),
        np.empty(S, np.int64),
    )

    def kern(k, mode):
        RK.pkm_id_d2_batch(
            lim.BR,
            lim.Bp,
            lim.X,
            lim.M,
            lim.act,
            lim.gravity,
            R[k : k + 1],
            p[k : k + 1],
            VT[k : k + 1],
            lim.th_ref,
            1e-13,
            30,
            *(o[:1] for o in out),
            mode,
            lim.ik_geom,
        )

    for ik in iks:
        add(f'ours: compiled kernel, single sample ({lbl[ik]})', lambda ik=ik: kern(13, modes[ik]))
    for ik in iks:
        add(
            f'ours: compiled kernel, batch {S}, per sample ({lbl[ik]})',
            lambda ik=ik: RK.pkm_id_d2_batch(
                lim.BR,
                lim.Bp,
                lim.X,
                lim.M,
                lim.act,
                lim.gravity,
                R,
                p,
                VT,
                lim.th_ref,
                1e-13,
                30,
                *out,
                modes[ik],
                lim.ik_geom,
            ),
            S,
        )
    # (a1) FD of our own u: 5-point stencil, one batched call
    h = 1e-3
    st = t1 + h * np.arange(-2, 3)
    argsS = roll(st)
    add('(a1) FD of our u (5-point stencil, batched)', lambda: inverse_dynamics_d2(model, *argsS))
    # (a2) FD of the projection-method ID (5 calls)
    rr = inverse_dynamics_d2_full(model, *argsS)
    qs = limb_to_tree(lim, rr.theta[:, 0], model.nq)
    qds = limb_to_tree(lim, rr.theta[:, 1], model.nq)
    thdd = rr.theta_a[:, 2]

    def proj():
        for k in range(5):
            rd.projected_inverse_dynamics(model, qs[k], qds[k], thdd[k])

    add('(a2) FD of projection-method ID (5 calls)', proj)
    try:
        import pinocchio as pin

        pm = pin.buildModelFromUrdf(os.path.join(ROOT, 'urdf', 'gough_stewart.urdf'))
        pdata = pm.createData()
        order = [model.joint_index(pm.names[j]) for j in range(1, pm.njoints)]
        qp, vp = qs[:, order], qds[:, order]
        ap_ = limb_to_tree(lim, rr.theta[:, 2], model.nq)[:, order]

        def pino():
            for k in range(5):
                pin.rnea(pm, pdata, qp[k], vp[k], ap_[k])

        add('(b) Pinocchio rnea on the 21-DOF tree x 5 (FD stencil, no elimination)', pino)
        add('(b) Pinocchio rnea on the 21-DOF tree, one call', lambda: pin.rnea(pm, pdata, qp[2], vp[2], ap_[2]))
    except ImportError:
        rows.append(('(b) Pinocchio not installed', float('nan'), float('nan')))
    report(rows)


def report(rows):
    print(
        f'# {platform.processor() or platform.machine()}, python {platform.python_version()}, '
        f'numpy {np.__version__}; paper: 0.75 ms/call (MATLAB, i7-4810MQ)'
    )
    print(f'{"what":92s} {"best us":>10s} {"median us":>10s}')
    for name, b, m in rows:
        print(f'{name:92s} {b:10.2f} {m:10.2f}')


def general_rows(a, model, args1, argsB, add):
    """The general route: numpy (``route='numpy'``) and compiled (the default: the numba kernel
    of pkm/_general_kernels.py), Gough-Stewart (same motion as the compiled 6x6 rows) and the
    translational 3-UPU of test/data (x, y, z sinusoids, 4 derivatives analytic). Rows: the
    public function (single call: Newton from the reference configuration; batch: every
    sample from it, or ``warm_start=True``: each from the previous sample) and the workspace
    :class:`GeneralID2Data` (single call warm-started from its previous call; ``batch``)."""
    from robot_dynamics.pkm.general import GeneralID2Data, inverse_dynamics_d2_general

    upu = rd.load_model(os.path.join(ROOT, 'test', 'data', 'tripteron_3upu.urdf'))
    ts = np.linspace(0, 1, a.batch, endpoint=False)
    comps = [(0.03, 5.0, 0.0), (0.025, 6.9, 0.4), (0.02, 4.4, 1.0)]
    P = np.zeros((len(ts), 5, 3))
    P[:, 0, 2] = 0.4
    for c, (A, w, ph) in enumerate(comps):
        for k in range(5):
            P[:, k, c] += A * w**k * np.sin(w * ts + ph + k * np.pi / 2)
    upu1 = tuple(P[13, k] for k in range(5))
    upuB = tuple(P[:, k] for k in range(5))
    B = a.batch
    for nm, m, one, bat in (('Gough-Stewart', model, args1, argsB), ('3-UPU (test/data)', upu, upu1, upuB)):
        f = inverse_dynamics_d2_general
        add(f'general route, numpy: {nm}, single call', lambda: f(m, *one, route='numpy'))
        add(f'general route, numpy: {nm}, batch {B}, per sample', lambda: f(m, *bat, route='numpy'), B)
        add(f'general route, compiled: {nm}, single call (Newton from the reference)', lambda: f(m, *one))
        data = GeneralID2Data(m)
        data(*one)
        add(f'general route, compiled: {nm}, GeneralID2Data single call (warm-started)', lambda: data(*one))
        add(f'general route, compiled: {nm}, batch {B}, per sample (each from the reference)', lambda: f(m, *bat), B)
        add(
            f'general route, compiled: {nm}, batch {B}, per sample (warm_start=True)',
            lambda: f(m, *bat, warm_start=True),
            B,
        )
        add(f'general route, compiled: {nm}, GeneralID2Data.batch {B}, per sample', lambda: data.batch(*bat), B)
        add(
            f'general route, compiled: {nm}, batch {B}, per sample (warm_start=True, threads=2)',
            lambda: f(m, *bat, warm_start=True, threads=2),
            B,
        )
        add(
            f'general route, compiled: {nm}, GeneralID2Data.batch {B} threads=2, per sample',
            lambda: data.batch(*bat, threads=2),
            B,
        )
        add(
            f'general route, compiled: {nm}, (u, ud, udd) only: batch {B}, per sample (warm_start)',
            lambda: f(m, *bat, warm_start=True, jik_derivatives=False),
            B,
        )
        add(
            f'general route, compiled: {nm}, (u, ud, udd) only: batch {B} threads=2, per sample',
            lambda: f(m, *bat, warm_start=True, jik_derivatives=False, threads=2),
            B,
        )


if __name__ == '__main__':
    main()
