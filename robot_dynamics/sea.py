"""Series-elastic-actuated PKM plant (seed 004): the planar 3RRR SEA-PKM for ``sim_node``.

Registers the plant kind ``'sea'`` (:func:`robot_dynamics.plants.make_plant`). State: EE
position/velocity ``p, pd`` (the link side has 2 DOF; all arm angles follow from the closed-form
IK, so the loops stay closed exactly) and motor angles/velocities ``q_m, qd_m`` (3 each)::

    M_t(p) pdd + b(p, pd) = J_IK^T u,   u = K (q_m - theta_a) + D (qd_m - thetad_a)
    M_m qdd_m = tau - u - D_m qd_m

integrated with RK4 (``tau`` held over the step). ``q``/``qd`` are the model coordinates (9:
``armk_joint, armk_elbow, armk_motor``) as *measured*: with ``quantization`` > 0 [rad] the
positions are rounded to that step, and ``noise`` > 0 adds uniform noise in +-noise [rad] (seed
``seed``); velocities are then the backward difference of the measured positions over ``dt``
(what an encoder-based drive reports). ``true_q``/``true_qd`` are exact.
"""
from __future__ import annotations

import numpy as np

from .errors import InputError
from .pkm.planar_sea import Planar3RRR, Planar3RRRParams
from .plants import register_plant
from .sim import Plant, StepInfo

__all__ = ['SEAPlant', 'sea_params_from_model']


def sea_params_from_model(model):
    """Planar3RRRParams with the SEA data of the sidecar's ``actuators`` block (type ``sea``:
    stiffness, motor_inertia, damping); the geometry is the brief's assumed prototype."""
    seas = [a for a in model.actuators.values() if a.get('type') == 'sea']
    if len(seas) != 3:
        raise InputError(f"model '{model.name}': the sea plant needs 3 actuators of type 'sea' in "
                         f"the sidecar, found {len(seas)}")
    vals = {k: {float(a.get(k, d)) for a in seas} for k, d in
            (('stiffness', 30.0), ('motor_inertia', 0.02), ('damping', 0.0))}
    for k, v in vals.items():
        if len(v) != 1:
            raise InputError(f"model '{model.name}': the SEAs must share {k} (got {sorted(v)})")
    return Planar3RRRParams(stiffness=vals['stiffness'].pop(),
                            motor_inertia=vals['motor_inertia'].pop(), damping=vals['damping'].pop())


class SEAPlant(Plant):
    """RK4 plant of the planar 3RRR SEA-PKM (see module docstring). ``tau``: the motor torques
    (3,) in the order of ``model.actuated`` (the motor joints), or the full (9,) vector."""

    def __init__(self, model, q0=None, dt=1e-3, params=None, quantization=0.0, noise=0.0,
                 seed=0, substeps=1):
        self.model = model
        self.params = params or sea_params_from_model(model)
        self.pkm = Planar3RRR(self.params)
        self.dt = float(dt)
        self.substeps = int(substeps)
        self.quantization = float(quantization)
        self.noise = float(noise)
        self.rng = np.random.default_rng(seed)
        names = model.joint_names
        self.i_arm = np.array([names.index(f'arm{k}_joint') for k in (1, 2, 3)])
        self.i_elb = np.array([names.index(f'arm{k}_elbow') for k in (1, 2, 3)])
        self.i_mot = np.array([names.index(f'arm{k}_motor') for k in (1, 2, 3)])
        self.events = []
        self.q0 = model.reference_q() if q0 is None else np.asarray(q0, float)
        self.reset()

    # -------------------------------------------------------------- state <-> model coordinates
    def _p_from_q(self, q):
        th = np.stack([q[self.i_arm], q[self.i_elb]], -1)
        return self.pkm.tip(th)[2]

    def reset(self, q0=None, qd0=None, t0=0.0, p0=None, motor0=None):
        """Reset from model coordinates (EE from limb 3's arm angles; motors from q0) or from
        ``p0`` (2,) with ``motor0`` (3,) (default: spring-relaxed equilibrium at rest)."""
        q0 = self.q0 if q0 is None else np.asarray(q0, float)
        self.t = float(t0)
        self.p = self._p_from_q(q0) if p0 is None else np.asarray(p0, float).copy()
        self.pd = np.zeros(2)
        th = self.pkm.ik(self.p)
        if motor0 is not None:
            self.qm = np.asarray(motor0, float).copy()
        else:
            # motors at rest such that the springs hold the link side static (u = static ID)
            P = np.zeros((5, 2))
            P[0] = self.p
            u = self.pkm.inverse_dynamics_d2(P).u
            self.qm = th[:, 0] + u / self.params.stiffness
        self.qdm = np.zeros(3)
        self._prev_meas = None
        self._measure()
        self.last = self._info(np.zeros(self.model.nq))
        return self.last

    def set_state(self, p, pd, qm, qdm, t=None):
        """Set the exact state (EE p, pd (2,); motor qm, qdm (3,))."""
        self.p, self.pd = np.array(p, float), np.array(pd, float)
        self.qm, self.qdm = np.array(qm, float), np.array(qdm, float)
        if t is not None:
            self.t = float(t)
        self._prev_meas = None
        self._measure()

    def derivative(self, x, tau_m):
        """d/dt of x = (p, pd, qm, qdm) (10,) under motor torques tau_m (3,)."""
        P = self.params
        p, pd, qm, qdm = x[:2], x[2:4], x[4:7], x[7:10]
        Mt, b, J, th = self.pkm.task_space_dynamics(p, pd, return_theta=True)
        Mt, b, J, th = Mt[0], b[0], J[0], th[0]
        u = P.stiffness * (qm - th[:, 0]) + P.damping * (qdm - J @ pd)
        pdd = np.linalg.solve(Mt, J.T @ u - b)
        qddm = (tau_m - u - P.motor_damping * qdm) / P.motor_inertia
        return np.concatenate([pd, pdd, qdm, qddm])

    def step(self, tau=None, dt=None):
        tau_m = self.full_tau(tau)[self.i_mot]
        h = (self.dt if dt is None else float(dt)) / self.substeps
        x = np.concatenate([self.p, self.pd, self.qm, self.qdm])
        for _ in range(self.substeps):
            k1 = self.derivative(x, tau_m)
            k2 = self.derivative(x + 0.5 * h * k1, tau_m)
            k3 = self.derivative(x + 0.5 * h * k2, tau_m)
            k4 = self.derivative(x + h * k3, tau_m)
            x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            self.t += h
        self.p, self.pd, self.qm, self.qdm = x[:2], x[2:4], x[4:7], x[7:10]
        self._measure(h * self.substeps)
        self.last = self._info(self.full_tau(tau))
        return self.last

    # -------------------------------------------------------------- model coordinates
    def _true_state(self):
        """Exact (q, qd) in model coordinates: one planar ID call (IK positions and rates),
        memoised on the state (a step used to evaluate it four times: sensors + StepInfo)."""
        key = (self.p.tobytes(), self.pd.tobytes(), self.qm.tobytes(), self.qdm.tobytes())
        if getattr(self, '_true_key', None) != key:
            q, qd = np.zeros(self.model.nq), np.zeros(self.model.nq)
            P = np.zeros((5, 2))
            P[0], P[1] = self.p, self.pd
            th = self.pkm.inverse_dynamics_d2(P).theta
            q[self.i_arm], q[self.i_elb], q[self.i_mot] = th[0, :, 0], th[0, :, 1], self.qm
            qd[self.i_arm], qd[self.i_elb], qd[self.i_mot] = th[1, :, 0], th[1, :, 1], self.qdm
            self._true_key, self._true = key, (q, qd)
        return self._true

    @property
    def true_q(self):
        return self._true_state()[0].copy()

    @property
    def true_qd(self):
        return self._true_state()[1].copy()

    def _measure(self, h=None):
        """Sample the sensors once (after reset/set_state/step): quantised + noisy positions and
        their backward difference over the step ``h`` (exact velocities after a reset or when
        neither quantisation nor noise is set)."""
        q = self.true_q
        if self.quantization > 0 or self.noise > 0:
            if self.quantization > 0:
                q = np.round(q / self.quantization) * self.quantization
            if self.noise > 0:
                q = q + self.rng.uniform(-self.noise, self.noise, q.shape)
            qd = (q - self._prev_meas) / h if (h and self._prev_meas is not None) else self.true_qd
            self._prev_meas = q
        else:
            qd = self.true_qd
        self._meas = (q, qd)

    @property
    def q(self):
        """Measured positions (see the module docstring), sampled once per step."""
        return self._meas[0].copy()

    @property
    def qd(self):
        """Measured velocities: backward difference of the measured positions over the step."""
        return self._meas[1].copy()

    def hold_command(self, damping):
        """sim_node's ``hold: gravity`` for this plant: gravity is normal to the plane (no
        balancing torque needed), so the hold is ``-damping * qd_m`` on the motor joints (measured
        motor velocities): the motors brake and the spring-link oscillation is dissipated
        through them. Returns (nq,)."""
        tau = np.zeros(self.model.nq)
        tau[self.i_mot] = -float(damping) * self.qd[self.i_mot]
        return tau

    def _info(self, tau):
        n = self.model.nq
        z = np.zeros(n)
        return StepInfo(self.t, self.true_q, self.true_qd, z, tau, 0.0, 0, 0, np.inf, 0.0, 0.0,
                        0.0, z, np.zeros(0), 0, True, 0.0, 0.0, 0.0, 1, ())


def _factory(model, q0=None, dt=1e-3, **options):
    return SEAPlant(model, q0, dt=dt, **options)


register_plant('sea', _factory)
