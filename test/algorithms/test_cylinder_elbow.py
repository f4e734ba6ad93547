"""Inertia partitioning (seed 000) on a robot given only as data: test/data/cylinder_elbow_3dof
(URDF + loops sidecar, a scalene cylinder-driven elbow, so the numeric loop map is used).
Cross-checks of the partitioned terms against the projection engine (seed 002) along a smooth
motion, and the inverse output map (Cartesian tool references -> minimal coordinates) against
an independent closed-form forward kinematics, finite differences, and the paper's closed-form
inverse of eq. (42) on series_parallel_3dof."""

import suite_paths
import os

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.errors import InputError, UnknownNameError
from robot_dynamics.algorithms.partitioning import (
    CartesianReference,
    NumericLoopMap,
    OutputMap,
    OutputMapError,
    PartitionedModel,
)

HERE = suite_paths.TEST_DIR
URDF = os.path.join(HERE, 'data', 'cylinder_elbow_3dof.urdf')
# geometry written into the URDF (independent of the package's kinematics)
SHOULDER = (0.15, 0.45)  # shoulder offset on the turntable (radial, height) [m]
L1, L2 = 1.1, 0.95  # elbow on the upper arm, tool on the forearm [m]
A_PIV, B_MNT, C0 = np.array([0.55, -0.14]), np.array([0.28, -0.10]), 0.34


@pytest.fixture(scope='module')
def model():
    return rd.load_model(URDF)


@pytest.fixture(scope='module')
def pm(model):
    return PartitionedModel(model)


def _motion(t):
    """Smooth minimal-coordinate motion (theta, thetad, thetadd) inside the stroke range."""
    c, a, w = np.array([0.2, 0.35, 0.22]), np.array([0.9, 0.45, 0.16]), np.array([0.7, 1.1, 0.9])
    return (c + a * np.sin(w * t), a * w * np.cos(w * t), -a * w * w * np.sin(w * t))


def test_loads_and_check_reports_partitioning(model):
    from robot_dynamics.tools.check import check_robot

    assert model.independent == ['base_yaw', 'shoulder_pitch', 'cylinder_delta']
    assert set(model.passive) == {'elbow_psi', 'cylinder_barrel_angle', 'cylinder_rod_angle'}
    assert np.abs(rd.loop_residual(model, model.reference_q())).max() < 1e-12
    row = [r for r in check_robot(URDF).methods if r[0].startswith('inertia partitioning')][0]
    assert row[1], row
    assert 'loop map numeric' in row[2], row


def test_partitioned_terms_equal_projection_engine(model, pm):
    """Along a smooth motion: gravity -Q_g, each column of Gamma and the Coriolis force C thd of
    the partition equal the projection engine's projected inverse dynamics (seed 002) split the
    same way (thetadd = 0 / unit / thd = 0), and the full Gamma thdd + C thd - Q_g too, to 1e-8
    relative; the loop is closed, dGamma is the time derivative of Gamma along the motion."""
    assert isinstance(pm.loop_map, NumericLoopMap)
    worst = {}

    def rec(k, a, b):
        worst[k] = max(worst.get(k, 0.0), np.abs(a - b).max() / max(1.0, np.abs(b).max()))

    z = np.zeros(3)
    for t in np.linspace(0.0, 6.0, 13):
        th, thd, thdd = _motion(t)
        T = pm.terms(th)
        assert np.abs(rd.loop_residual(model, T.q)).max() < 1e-10

        def pid(v, a):
            return rd.projected_inverse_dynamics(model, T.q, T.G @ v, a).tau_actuated

        g = pid(z, z)
        rec('gravity', -T.Qg, g)
        rec('Gamma', T.Gamma, np.array([pid(z, e) - g for e in np.eye(3)]).T)
        cor = np.einsum('mab,m,b->a', T.dGamma, thd, thd) - 0.5 * T.grad_quadratic(thd)
        rec('coriolis', cor, pid(thd, z) - g)
        rec('total', pm.inverse_dynamics(th, thd, thdd), pid(thd, thdd))
        # Gamma_dot = sum_m dGamma[m] thd_m against a central difference in time (h = 1e-4 s:
        # the numeric loop map closes to ~1e-12, which limits the difference to ~1e-7)
        h = 1e-4
        fd = (pm.terms(_motion(t + h)[0]).Gamma - pm.terms(_motion(t - h)[0]).Gamma) / (2 * h)
        rec('Gamma_dot (FD)', T.Gamma_dot(thd), fd)
    print('relative deviation from the projection engine:', {k: f'{v:.2e}' for k, v in worst.items()})
    for k in ('gravity', 'Gamma', 'coriolis', 'total'):
        assert worst[k] < 1e-8, (k, worst[k])
    assert worst['Gamma_dot (FD)'] < 5e-6, worst


def test_Gamma_equals_pinocchio_crba(model, pm):
    """Oracle: Gamma = Gᵀ M G with M the tree mass matrix of Pinocchio (test oracle only)."""
    pin = pytest.importorskip('pinocchio')
    pmod = pin.buildModelFromUrdf(URDF)
    pdata = pmod.createData()
    names = [pmod.names[i] for i in range(1, pmod.njoints)]
    perm = [pmod.joints[pmod.getJointId(nm)].idx_v for nm in model.joint_names]
    for t in (0.0, 1.7, 4.2):
        T = pm.terms(_motion(t)[0])
        qp = np.zeros(pmod.nq)
        for j, nm in enumerate(names):
            jm, v = pmod.joints[j + 1], T.q[model.joint_index(nm)]
            if jm.nq == 2:  # continuous joints are (cos, sin) in Pinocchio
                qp[jm.idx_q : jm.idx_q + 2] = [np.cos(v), np.sin(v)]
            else:
                qp[jm.idx_q] = v
        Mp = pin.crba(pmod, pdata, qp)
        Mp = (np.triu(Mp) + np.triu(Mp, 1).T)[np.ix_(perm, perm)]
        assert np.abs(T.Gamma - T.G.T @ Mp @ T.G).max() < 1e-9 * np.abs(T.Gamma).max()


def test_compiled_terms_equal_numpy_route(pm):
    for t in (0.3, 2.1):
        th = _motion(t)[0]
        a, b = pm.terms(th), pm.terms_reference(th)
        for f in ('q', 'G', 'H', 'Gamma', 'dGamma', 'Qg'):
            x, y = getattr(a, f), getattr(b, f)
            assert np.abs(x - y).max() < 1e-10 * max(1.0, np.abs(y).max()), f


# ----------------------------------------------------------------------------- output map
def _tool_closed_form(theta):
    """Tool position from the URDF's numbers alone: elbow angle from the cylinder length by the
    planar loop (bisection on |d + R(psi) b| = l0 + delta on the assembly branch), then the
    serial chain (vertical plane at azimuth phi)."""
    phi, th, delta = theta
    d = np.array([L1, 0.0]) - A_PIV
    c = C0 + delta

    def f(psi):
        R = np.array([[np.cos(psi), -np.sin(psi)], [np.sin(psi), np.cos(psi)]])
        return np.linalg.norm(d + R @ B_MNT) - c

    lo, hi = -2.549, 0.593  # c increases monotonically between the dead centres
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    psi = 0.5 * (lo + hi)
    r = SHOULDER[0] + L1 * np.cos(th) + L2 * np.cos(th + psi)
    z = SHOULDER[1] + L1 * np.sin(th) + L2 * np.sin(th + psi)
    return np.array([r * np.cos(phi), r * np.sin(phi), z])


def test_output_map_forward_and_inverse(model):
    om = OutputMap(model)
    rng = np.random.default_rng(5)
    worst_fk = worst_ik = worst_x = 0.0
    for _ in range(8):
        th = np.array([rng.uniform(-2.5, 2.5), rng.uniform(-0.5, 1.0), rng.uniform(0.05, 0.4)])
        x, J, _ = om.forward(th)
        worst_fk = max(worst_fk, np.abs(x - _tool_closed_form(th)).max())
        # Jacobian against central differences of the forward map
        h = 1e-6
        Jfd = np.array([(om.forward(th + h * e)[0] - om.forward(th - h * e)[0]) / (2 * h) for e in np.eye(3)]).T
        assert np.abs(J - Jfd).max() < 1e-7 * max(1.0, np.abs(J).max())
        guess = th + rng.normal(scale=0.05, size=3)
        th2 = om.inverse(x, guess)
        worst_ik = max(worst_ik, np.abs(th2 - th).max())
        worst_x = max(worst_x, np.abs(om.forward(th2)[0] - x).max())
    print(f'forward vs closed form {worst_fk:.2e} m; inverse(forward) {worst_ik:.2e}; forward(inverse) {worst_x:.2e} m')
    assert worst_fk < 1e-9 and worst_ik < 1e-9 and worst_x < 1e-9


def _path():
    """Rest-to-rest tool path (sin² pick-and-place: 0.1 m out, 0.25 m sideways, 0.1 m down, lifted 0.1 m on the way)."""
    from robot_dynamics.control.trajectories import Sin2PickPlace

    return Sin2PickPlace([1.93699718, 0.0, 0.32728215], [0.1, 0.25, -0.1], [0.0, 0.0, 0.4], 0.2)


def test_cartesian_reference_derivatives(model):
    """theta_d, thetad_d, thetadd_d of a tool path: the forward map reproduces the path's
    position, velocity (J thd) and acceleration (J thdd + Jdot thd) to 1e-9, and the rates
    equal central differences of the positions (and of the rates) in time."""
    ref = CartesianReference(model, _path())
    om = OutputMap(model)
    path = _path()
    worst = np.zeros(3)
    worst_fd = np.zeros(2)
    h = 1e-4
    for t in np.linspace(0.0, 5.0, 11):
        r = ref(t)
        P = path(t, order=2)
        x, J, b = om.forward(r[0], r[1])
        worst = np.maximum(
            worst, [np.abs(x - P[0]).max(), np.abs(J @ r[1] - P[1]).max(), np.abs(J @ r[2] + b - P[2]).max()]
        )
        rp, rm = ref(t + h), ref(t - h)
        fd1, fd2 = (rp[0] - rm[0]) / (2 * h), (rp[1] - rm[1]) / (2 * h)
        worst_fd = np.maximum(worst_fd, [np.abs(fd1 - r[1]).max(), np.abs(fd2 - r[2]).max()])
    print(f'forward map vs path (x, xd, xdd): {worst}; FD (thd, thdd): {worst_fd}')
    assert np.all(worst < 1e-9), worst
    assert np.all(worst_fd < 1e-6), worst_fd
    # rest-to-rest: at t = 0 the reference is at rest
    r0 = ref(0.0)
    assert np.abs(r0[1]).max() < 1e-12


def test_output_map_equals_paper_closed_form_inverse():
    """series_parallel_3dof: the Newton inverse equals the closed-form inverse of eq. (42)
    (brief 000, A8) once the base offset p_B1F1 (which (42) ignores) is added back."""
    from robot_dynamics.control.inertia_partitioning import fk_paper

    m = rd.load_model(rd.data_path('urdf/series_parallel_3dof.urdf'))
    om = OutputMap(m)
    L, L0, l0, p_b = 2.0, 0.35, 0.425, np.array([0.0, 0.206, 0.075])
    rng = np.random.default_rng(3)
    worst = 0.0
    for _ in range(5):
        phi, th, de = rng.uniform(-2, 2), rng.uniform(-0.5, 1.0), rng.uniform(0.02, 0.22)
        zeta = 2 * np.arcsin((l0 + de) / (2 * L0)) - np.pi
        x42 = fk_paper(phi, th, zeta)
        c, s = np.cos(phi), np.sin(phi)
        x = x42 + np.array([c * p_b[0] - s * p_b[1], s * p_b[0] + c * p_b[1], p_b[2]])
        # closed-form inverse of (42) (A8)
        r, D = np.hypot(x42[0], x42[1]), np.linalg.norm(x42)
        z = -2 * np.arccos(D / (2 * L))
        theta_cf = np.array([np.arctan2(x42[1], x42[0]), np.arctan2(x42[2], r) + z / 2, L0 / L * D - l0])
        worst = max(worst, np.abs(om.inverse(x, [phi + 0.05, th - 0.05, 0.12]) - theta_cf).max())
    assert worst < 1e-9, worst


def test_output_map_errors(model):
    om = OutputMap(model)
    th0 = model.reference_q()[model.independent_indices]
    with pytest.raises(OutputMapError) as e:  # 5 m away: beyond the 2 m reach
        om.inverse([5.0, 0.0, 0.0], th0)
    assert e.value.reason == 'unreachable' and 'out of reach' in str(e.value)
    with pytest.raises(OutputMapError) as e:  # on the base axis: phi undefined
        om.inverse([0.0, 0.0, 1.0], th0)
    assert e.value.reason == 'singular'
    with pytest.raises(OutputMapError) as e:  # straight up: shoulder beyond its 1.4 rad
        om.inverse([0.15, 0.0, 2.5], th0)
    assert e.value.reason == 'limits' and 'shoulder_pitch' in str(e.value)
    # a failed target leaves the solver usable
    x = om.forward(th0)[0]
    assert np.abs(om.inverse(x, th0) - th0).max() < 1e-9
    with pytest.raises(InputError):
        om.inverse([1.0, 0.0])
    with pytest.raises(InputError):
        om.reference(x, [0.0, np.nan, 0.0], [0.0, 0.0, 0.0])
    with pytest.raises(InputError):
        OutputMap(model, axes=(0, 2)).inverse([1.0, 0.3])
    with pytest.raises(UnknownNameError):
        OutputMap(model, frame='no_such_frame')
