"""Shared helpers of the projection-method tests (seed 002): robots, admissible states, the
slider-crank closed forms of brief 002 par. 4.2 and the Pinocchio export of our loops."""

import os

import numpy as np

import robot_dynamics as rd
from robot_dynamics.algorithms import projection as pj

HERE = os.path.dirname(os.path.abspath(__file__))
URDF = os.path.join(os.path.dirname(HERE), 'urdf')
G = 9.81


def urdf(name):
    return os.path.join(URDF, f'{name}.urdf')


_MODELS = {}


def model(name, loops=None):
    """Cached model of urdf/<name>.urdf (with its sidecar, or the given loops dict)."""
    if loops is not None:
        return rd.load_model(urdf(name), loops=loops)
    if name not in _MODELS:
        _MODELS[name] = rd.load_model(urdf(name))
    return _MODELS[name]


def sidecar(name):
    import yaml

    with open(os.path.join(URDF, f'{name}.loops.yaml'), encoding='utf-8') as fh:
        return yaml.safe_load(fh)


def admissible_state(m, rng, spread=0.3, speed=1.0):
    """Random closed q (independent coordinates near the reference) and qd in N(A)."""
    qi = m.reference_q()[m.independent_indices] + rng.uniform(-spread, spread, len(m.independent))
    q = pj.assemble(m, qi).q
    qd = pj.project_velocity(m, q, speed * rng.normal(size=m.nq))
    return q, qd


# ----------------------------------------------------------------- slider-crank (m = l = 1)
def sc_M(q):
    c2 = np.cos(q[1])
    return np.array([[3 + 2 * c2, 1 + c2], [1 + c2, 1.0]])


def sc_h(q, qd):
    s2, c1, c12 = np.sin(q[1]), np.cos(q[0]), np.cos(q[0] + q[1])
    return np.array([-s2 * (qd[1] ** 2 + 2 * qd[0] * qd[1]) + G * (c12 + 2 * c1), s2 * qd[0] ** 2 + G * c12])


def sc_A(q):
    c1, c12 = np.cos(q[0]), np.cos(q[0] + q[1])
    return np.array([[c1 + c12, c12]])


def sc_lambda(theta, thetad):
    """Multiplier of the free (f = 0) motion on branch I, brief eq. of par. 4.2 (sign (19))."""
    s = np.sin(theta)
    return -(G * (1 + 6 * s * s) - 2 * thetad**2 * s) / (1 + 4 * s * s)


def sc_reduced_rhs(t, y, f=(0.0, 0.0)):
    """Reduced ODE on branch I: (1 + 4 s^2) th'' + 4 s c th'^2 + g c = f1 - 2 f2."""
    th, w = y
    s, c = np.sin(th), np.cos(th)
    return [w, (f[0] - 2 * f[1] - 4 * s * c * w * w - G * c) / (1 + 4 * s * s)]


# ----------------------------------------------------------------- Pinocchio export
class PinClosedChain:
    """Pinocchio model of the SAME urdf with each loop exported as a point constraint.

    A revolute (or spherical) cut of a planar mechanism becomes one CONTACT_3D
    RigidConstraintModel between the two cut frames (placements from the frames' parent
    joints, LOCAL). Continuous joints have nq = 2 (cos, sin) in Pinocchio.
    """

    def __init__(self, m):
        import pinocchio as pin

        self.pin = pin
        self.m = m
        self.pm = pin.buildModelFromUrdf(m.source)
        self.pd = self.pm.createData()
        self.jid = [self.pm.getJointId(j) for j in m.joint_names]
        self.iv = np.array([self.pm.idx_vs[j] for j in self.jid])
        self.cms = pin.StdVec_RigidConstraintModel()
        for lp in m.loops:
            assert lp.type in ('revolute', 'spherical', 'point', 'point3d'), lp.type
            Fa = self.pm.frames[self.pm.getFrameId(lp.frame_a)]
            Fb = self.pm.frames[self.pm.getFrameId(lp.frame_b)]
            self.cms.append(
                pin.RigidConstraintModel(
                    pin.ContactType.CONTACT_3D,
                    self.pm,
                    Fa.parentJoint,
                    Fa.placement,
                    Fb.parentJoint,
                    Fb.placement,
                    pin.ReferenceFrame.LOCAL,
                )
            )
        self.cds = pin.StdVec_RigidConstraintData()
        for c in self.cms:
            self.cds.append(c.createData())
        pin.initConstraintDynamics(self.pm, self.pd, self.cms, self.cds)
        self.prox = pin.ProximalSettings(1e-13, 1e-12, 100)

    def q(self, q):
        qq = np.zeros(self.pm.nq)
        for i, j in enumerate(self.jid):
            k = self.pm.idx_qs[j]
            if self.pm.nqs[j] == 2:
                qq[k], qq[k + 1] = np.cos(q[i]), np.sin(q[i])
            else:
                qq[k] = q[i]
        return qq

    def v(self, v):
        out = np.zeros(self.pm.nv)
        out[self.iv] = v
        return out

    def forward(self, q, qd, tau):
        """(qdd, F) in our joint order and sign convention (M qdd + h = tau - F)."""
        pin = self.pin
        a = pin.constraintDynamics(self.pm, self.pd, self.q(q), self.v(qd), self.v(tau), self.cms, self.cds, self.prox)
        J = pin.getConstraintsJacobian(self.pm, self.pd, self.cms, self.cds)
        F = -(J.T @ self.pd.lambda_c)
        return np.array(a)[self.iv], F[self.iv]
