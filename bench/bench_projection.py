#!/usr/bin/env python3
"""Constrained forward dynamics timing: projection method (seed 002) vs Pinocchio.

For five_bar and slider_crank, on the same URDF and in the same run, microseconds per call of

* ``rd.constrained_forward_dynamics`` (public API: input checks, one compiled pass computing
  kinematics, loop terms, M, h, the SVD projector, qdd, F, lam, and the result object), for the
  variants Mc (default), Mc_sym and Mc_gamma;
* the compiled core alone (``_projection_kernels.cfd_qdd`` on pre-packed arrays, what the
  simulator calls at every RK4 stage);
* ``ConstrainedPlant.step`` (one simulator step: 4 RK4 stages + Newton position projection +
  velocity projection + the end-of-step dynamics and monitoring; informative);
* Pinocchio ``constraintDynamics`` (``initConstraintDynamics`` done once, proximal settings
  accuracy 1e-13, mu 1e-12), the loop exported as a CONTACT_3D constraint between the cut
  frames. The slider-crank's point-on-plane loop has no Pinocchio counterpart, so its
  Pinocchio model is the equivalent one with the slider as a prismatic joint along the rail
  and a CONTACT_3D pin joint at C (the 1 kg point mass at C split 0.5 / 0.5 between rod and
  slider): same qdd, checked before timing.

States are random closed configurations with admissible velocities; each timing is the best
and the median of ``--repeats`` repeats of a calibrated number of calls, after a warm-up (numba
compiles on the first call). Example::

    .venv/bin/python bench/bench_projection.py
    .venv/bin/python bench/bench_projection.py --repeats 9 --min-time 0.1
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
    sys.path.insert(0, ROOT)  # benchmark the source tree (as the tests do)

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.algorithms import _projection_kernels as PK  # noqa: E402
from robot_dynamics.algorithms import projection as pj  # noqa: E402


def parse_args(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog='\n\n'.join(__doc__.split('\n\n')[1:]),
    )
    ap.add_argument(
        '-r', '--repeats', type=int, default=7, help='timing repeats; best and median are reported (default: 7)'
    )
    ap.add_argument(
        '--min-time', type=float, default=0.05, help='minimum duration of one repeat in seconds (default: 0.05)'
    )
    ap.add_argument('--seed', type=int, default=0, help='random seed of the state')
    args = ap.parse_args(argv)
    if args.repeats < 1 or args.min_time <= 0:
        ap.error('--repeats must be >= 1, --min-time > 0')
    return args


def timeit(fn, repeats, min_time):
    """(best, median) seconds per call of fn."""
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        if time.perf_counter() - t0 >= min_time:
            break
        number *= 2
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times), statistics.median(times)


class PinModel:
    """Pinocchio counterpart of a robot_dynamics closed chain (see the module doc)."""

    def __init__(self, model):
        import pinocchio as pin

        self.pin = pin
        self.m = model
        pm = pin.buildModelFromUrdf(model.source)
        self.slider = None
        cms = pin.StdVec_RigidConstraintModel()
        if model.name == 'slider_crank':
            rod = pm.getJointId('rod_joint')
            Ir = pm.inertias[rod]
            pm.inertias[rod] = pin.Inertia(0.5 * Ir.mass, Ir.lever, 0.5 * Ir.inertia)
            rail = pm.frames[pm.getFrameId('rail')]
            jid = pm.addJoint(rail.parentJoint, pin.JointModelPX(), rail.placement, 'slider_x')
            pm.appendBodyToJoint(jid, pin.Inertia(0.5, np.zeros(3), np.zeros((3, 3))), pin.SE3.Identity())
            sl = pm.frames[pm.getFrameId('slider')]
            cms.append(
                pin.RigidConstraintModel(
                    pin.ContactType.CONTACT_3D,
                    pm,
                    sl.parentJoint,
                    sl.placement,
                    jid,
                    pin.SE3.Identity(),
                    pin.ReferenceFrame.LOCAL,
                )
            )
            self.slider = jid
        else:
            for lp in model.loops:
                fa = pm.frames[pm.getFrameId(lp.frame_a)]
                fb = pm.frames[pm.getFrameId(lp.frame_b)]
                cms.append(
                    pin.RigidConstraintModel(
                        pin.ContactType.CONTACT_3D,
                        pm,
                        fa.parentJoint,
                        fa.placement,
                        fb.parentJoint,
                        fb.placement,
                        pin.ReferenceFrame.LOCAL,
                    )
                )
        self.pm, self.pd, self.cms = pm, pm.createData(), cms
        self.cds = pin.StdVec_RigidConstraintData()
        for c in cms:
            self.cds.append(c.createData())
        pin.initConstraintDynamics(pm, self.pd, cms, self.cds)
        self.prox = pin.ProximalSettings(1e-13, 1e-12, 100)
        self.jid = [pm.getJointId(j) for j in model.joint_names]
        self.iv = np.array([pm.idx_vs[j] for j in self.jid])

    def state(self, q, qd, tau):
        pm = self.pm
        pq, v, t = np.zeros(pm.nq), np.zeros(pm.nv), np.zeros(pm.nv)
        for i, j in enumerate(self.jid):
            k = pm.idx_qs[j]
            if pm.nqs[j] == 2:
                pq[k], pq[k + 1] = np.cos(q[i]), np.sin(q[i])
            else:
                pq[k] = q[i]
        v[self.iv], t[self.iv] = qd, tau
        if self.slider is not None:  # slider-crank: x_C and its rate on the rail
            c1, c12, s1, s12 = np.cos(q[0]), np.cos(q[0] + q[1]), np.sin(q[0]), np.sin(q[0] + q[1])
            pq[pm.idx_qs[self.slider]] = c1 + c12
            v[pm.idx_vs[self.slider]] = -s1 * qd[0] - s12 * (qd[0] + qd[1])
        return pq, v, t

    def qdd(self, pq, v, t):
        return self.pin.constraintDynamics(self.pm, self.pd, pq, v, t, self.cms, self.cds, self.prox)


def main(argv=None):
    args = parse_args(argv)
    try:
        import pinocchio as pin
    except ImportError:
        sys.exit('pinocchio is not installed (pip install pin): it is the reference of this benchmark')
    import numba

    print(
        f'python {platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}, '
        f'pinocchio {pin.__version__}, {platform.machine()}'
    )
    print(f'{args.repeats} repeats (>= {args.min_time} s each), best / median [us per call]')
    rows = []
    for name in ('five_bar', 'slider_crank'):
        model = rd.load_model(os.path.join(ROOT, 'urdf', f'{name}.urdf'))
        rng = np.random.default_rng(args.seed)
        qi = model.reference_q()[model.independent_indices] + rng.uniform(-0.3, 0.3, len(model.independent))
        q = pj.assemble(model, qi).q
        qd = pj.project_velocity(model, q, rng.normal(size=model.nq))
        tau = rng.normal(size=model.nq)
        P = PinModel(model)
        pq, v, t = P.state(q, qd, tau)
        ours = rd.constrained_forward_dynamics(model, q, qd, tau)
        err = np.abs(np.asarray(P.qdd(pq, v, t))[P.iv] - ours.qdd).max()
        if err > 1e-8:
            sys.exit(f'{name}: qdd differs from Pinocchio by {err:.2e}: not benchmarking')
        pack = pj._pack(model)
        out = np.empty(model.nq)
        plant = rd.ConstrainedPlant(model, q, qd)
        cases = [
            ('ours constrained_forward_dynamics (Mc)', lambda: rd.constrained_forward_dynamics(model, q, qd, tau)),
            (
                'ours constrained_forward_dynamics (Mc_sym)',
                lambda: rd.constrained_forward_dynamics(model, q, qd, tau, 'Mc_sym'),
            ),
            (
                'ours constrained_forward_dynamics (Mc_gamma)',
                lambda: rd.constrained_forward_dynamics(model, q, qd, tau, 'Mc_gamma'),
            ),
            ('ours compiled core cfd_qdd (Mc)', lambda: PK.cfd_qdd(pack, q, qd, tau, 0, 0.0, pj.DEFAULT_EPS, out)),
            ('ours ConstrainedPlant.step (RK4 + proj.)', lambda: plant.step(tau)),
            ('pinocchio constraintDynamics', lambda: P.qdd(pq, v, t)),
        ]
        for _, fn in cases:  # warm-up (numba compiles on first call)
            for _ in range(3):
                fn()
        print()
        print(
            f'{name}: n = {model.nq}, m = {model.nconstraints} rows (rank {ours.rank}), '
            f'max |qdd ours - pinocchio| = {err:.1e}'
        )
        head = f'  {"":<46}{"best":>9}{"median":>9}{"/ pin":>8}'
        print(head)
        res = [(label, *timeit(fn, args.repeats, args.min_time)) for label, fn in cases]
        pin_best = res[-1][1]
        for label, b, med in res:
            print(f'  {label:<46}{b * 1e6:>9.2f}{med * 1e6:>9.2f}{b / pin_best:>8.2f}')
            rows.append((name, label, b, med, b / pin_best))
    print()
    print('ratio = best / best of Pinocchio constraintDynamics on the same robot.')
    return rows


if __name__ == '__main__':
    main()
