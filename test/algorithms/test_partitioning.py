"""Inertia partitioning in minimal coordinates (seed 000): closed forms of brief 000, loop maps,
derivatives, gravity, and the equivalence with independent routes (tree CRBA, Pinocchio,
projection-method inverse dynamics of seed 002, the numeric loop map)."""

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.algorithms.partitioning import (
    LoopMapDomainError,
    NumericLoopMap,
    PartitionedModel,
    PartitioningError,
    TreeLoopMap,
    TriangleLoopMap,
    christoffel,
    coriolis_vector,
    model_with_body,
    spatial_inertia,
    triangle_zeta,
)

URDF = rd.data_path('urdf/series_parallel_3dof.urdf')
NEG = ['cylinder_barrel', 'cylinder_piston', 'cylinder_rod_eye']
L0, l0 = 0.35, 0.425


@pytest.fixture(scope='module')
def model():
    return rd.load_model(URDF)


@pytest.fixture(scope='module')
def paper(model):
    """The paper's model: cylinder massless (the URDF's regularising masses neglected)."""
    return PartitionedModel(model, neglect_bodies=NEG)


@pytest.fixture(scope='module')
def full(model):
    """Every URDF body (what the spanning-tree routes see)."""
    return PartitionedModel(model)


def _states(n, seed):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        th = np.array([rng.uniform(-3, 3), rng.uniform(-0.8, 1.2), rng.uniform(0.0, 0.25)])
        yield th, rng.normal(size=3), rng.normal(size=3)


# ----------------------------------------------------------------------------- loop map
def test_triangle_map_closed_forms():
    z, z1, z2 = triangle_zeta(0.0, L0, l0)
    assert z == pytest.approx(-1.836673, abs=1e-6)
    assert z1 == pytest.approx(3.595733, abs=1e-6)
    assert z2 == pytest.approx(4.93959, abs=1e-5)
    for d in np.linspace(-0.4, 0.27, 25):
        c = l0 + d
        z, z1, z2 = triangle_zeta(d, L0, l0)
        assert z == pytest.approx(-np.arccos(c * c / (2 * L0 * L0) - 1), abs=1e-12)  # (39)
        assert z1 == pytest.approx(c / (L0**2 * np.sqrt(1 - (c * c / (2 * L0**2) - 1) ** 2)), rel=1e-9)  # (40)
        h = 1e-6
        assert z1 == pytest.approx(
            (triangle_zeta(d + h, L0, l0)[0] - triangle_zeta(d - h, L0, l0)[0]) / (2 * h), rel=1e-7
        )
        assert z2 == pytest.approx(
            (triangle_zeta(d + h, L0, l0)[1] - triangle_zeta(d - h, L0, l0)[1]) / (2 * h), rel=1e-6
        )
        assert -np.pi < z < 0


@pytest.mark.parametrize('delta', [0.275, 0.3, -0.425, -1.0])
def test_delta_outside_admissible_range_raises(paper, delta):
    with pytest.raises(LoopMapDomainError, match='cylinder_delta') as ei:
        paper.terms(np.array([0.0, 0.0, delta]))
    assert isinstance(ei.value, rd.RobotDynamicsError)
    assert ei.value.joint == 'cylinder_delta'


def test_non_finite_theta_is_input_error(paper):
    with pytest.raises(rd.InputError, match='finite'):
        paper.terms(np.array([0.0, 0.0, np.nan]))


def test_loop_closure_and_cylinder_length(model, paper):
    rng = np.random.default_rng(1)
    for d in rng.uniform(-0.3, 0.27, 20):
        th = np.array([rng.uniform(-3, 3), rng.uniform(-1, 1), d])
        q = paper.loop_map.evaluate(th).q
        assert np.abs(rd.loop_residual(model, q)).max() < 1e-12
        T = rd.forward_kinematics(model, q, ['cylinder_barrel', 'link2_mount', 'link1', 'link2'])
        # mounts at L0 from the elbow on both links, distance = cylinder length l0 + delta
        elbow = T['link2'][:3, 3]
        assert np.linalg.norm(T['cylinder_barrel'][:3, 3] - elbow) == pytest.approx(L0, abs=1e-12)
        assert np.linalg.norm(T['link2_mount'][:3, 3] - elbow) == pytest.approx(L0, abs=1e-12)
        assert np.linalg.norm(T['link2_mount'][:3, 3] - T['cylinder_barrel'][:3, 3]) == pytest.approx(l0 + d, abs=1e-12)


def test_numeric_map_equals_closed_form(model):
    cf, nm = TriangleLoopMap(model), NumericLoopMap(model)
    for th, _, _ in _states(5, 2):
        a, b = cf.evaluate(th), nm.evaluate(th)
        assert np.abs(a.q - b.q).max() < 1e-11
        assert np.abs(a.G - b.G).max() < 1e-9
        assert np.abs(a.H - b.H).max() < 1e-7 * max(1, np.abs(a.H).max())


def test_closed_form_map_G_H_by_finite_differences(model):
    cf = TriangleLoopMap(model)
    h = 1e-6
    for th, _, _ in _states(4, 3):
        r = cf.evaluate(th)
        for k in range(3):
            e = np.eye(3)[k] * h
            assert np.abs((cf.evaluate(th + e).q - cf.evaluate(th - e).q) / (2 * h) - r.G[:, k]).max() < 1e-7
            assert np.abs((cf.evaluate(th + e).G - cf.evaluate(th - e).G) / (2 * h) - r.H[:, :, k]).max() < 1e-6 * max(
                1, np.abs(r.H).max()
            )


def test_wrong_resolver_signs_rejected(model):
    import copy

    bad = copy.copy(model)
    bad.submechanisms = copy.deepcopy(model.submechanisms)
    bad.submechanisms[0]['parameters']['base_angle_signs'] = [-1.0, 1.0]
    with pytest.raises(PartitioningError, match='does not close the loops'):
        TriangleLoopMap(bad)


# ----------------------------------------------------------------------------- closed forms
def test_brief_closed_forms(paper):
    for th, _, _ in _states(10, 4):
        t = paper.terms(th)
        z1 = triangle_zeta(th[2], L0, l0)[1]
        assert t.bodies == ['base_link', 'link1', 'link2']
        assert np.abs(t.Gamma_i[0] - np.diag([0.789, 0, 0])).max() < 1e-12
        assert t.Gamma_i[1][1, 1] == pytest.approx(77.98092, abs=1e-10)
        assert t.Gamma_i[2][2, 2] == pytest.approx(87.82092 * z1**2, rel=1e-12)
        assert np.abs(t.dGamma[0]).max() < 1e-9  # dGamma/dphi = 0
        assert abs(t.Qg[0]) < 1e-9  # no gravity torque on the base yaw
        for Gi in t.Gamma_i:  # PSD, symmetric
            assert np.abs(Gi - Gi.T).max() < 1e-9
            assert np.linalg.eigvalsh(Gi).min() > -1e-9
        assert np.linalg.matrix_rank(t.Gamma_i[0], tol=1e-9) == 1
        assert np.linalg.eigvalsh(t.Gamma).min() > 0


def test_brief_regression_values(paper):
    t = paper.terms(np.zeros(3))
    assert (
        np.abs(
            t.Gamma - [[265.4056, 7.8856, -28.3042], [7.8856, 340.3867, -198.1728], [-28.3042, -198.1728, 1135.4624]]
        ).max()
        < 1e-4
    )
    assert np.abs(t.Qg - [0, -1581.2367, -576.8659]).max() < 1e-4
    t = paper.terms(np.array([0.3, 0.2, 0.1]))
    assert (
        np.abs(
            t.Gamma - [[294.6569, 14.4771, -35.1331], [14.4771, 437.2700, -447.3155], [-35.1331, -447.3155, 1638.6411]]
        ).max()
        < 1e-4
    )
    assert np.abs(t.Qg - [0, -1661.7085, -194.9200]).max() < 1e-4


# ----------------------------------------------------------------------------- derivatives
def test_dGamma_Christoffel_and_gravity(paper):
    h = 1e-6
    for th, thd, _ in _states(5, 5):
        t = paper.terms(th)
        fd = np.array([(paper.terms(th + h * e).Gamma - paper.terms(th - h * e).Gamma) / (2 * h) for e in np.eye(3)])
        assert np.abs(fd - t.dGamma).max() < 1e-6 * np.abs(t.dGamma).max()
        C = christoffel(t.dGamma, thd)
        assert np.abs(C @ thd - coriolis_vector(t.dGamma, thd)).max() < 1e-9 * max(1, np.abs(C).max())
        N = t.Gamma_dot(thd) - 2 * C
        assert np.abs(N + N.T).max() < 1e-10 * max(1, np.abs(N).max())
        dV = np.array(
            [(paper.terms(th + h * e).potential - paper.terms(th - h * e).potential) / (2 * h) for e in np.eye(3)]
        )
        assert np.abs(t.Qg + dV).max() < 1e-6 * np.abs(t.Qg).max()


def test_Gamma_dot_along_a_trajectory(paper):
    th0, thd, _ = next(_states(1, 6))
    h = 1e-6
    t = paper.terms(th0)
    fd = (paper.terms(th0 + h * thd).Gamma - paper.terms(th0 - h * thd).Gamma) / (2 * h)
    assert np.abs(fd - t.Gamma_dot(thd)).max() < 1e-6 * np.abs(fd).max()


# ----------------------------------------------------------------------------- independent routes
def test_body_jacobians_equal_tree_kinematics(model, full):
    for th, _, _ in _states(3, 7):
        t = full.terms(th)
        for b, J in zip(t.bodies, t.J):
            Jt = rd.frame_jacobian(model, t.q, b, 'local') @ t.G
            assert np.abs(J - Jt).max() < 1e-12


def test_Gamma_equals_projected_crba_and_pinocchio(model, full):
    pin = pytest.importorskip('pinocchio')
    pmod = pin.buildModelFromUrdf(URDF)
    pdata = pmod.createData()
    names = [pmod.names[i] for i in range(1, pmod.njoints)]
    # continuous joints are (cos, sin) in Pinocchio: build its q from ours
    for th, _, _ in _states(4, 8):
        t = full.terms(th)
        M = rd.crba(model, t.q)
        assert np.abs(t.Gamma - t.G.T @ M @ t.G).max() < 1e-10 * np.abs(t.Gamma).max()
        qp = np.zeros(pmod.nq)
        for j, nm in enumerate(names):
            jm = pmod.joints[j + 1]
            v = t.q[model.joint_index(nm)]
            if jm.nq == 2:
                qp[jm.idx_q : jm.idx_q + 2] = [np.cos(v), np.sin(v)]
            else:
                qp[jm.idx_q] = v
        Mp = pin.crba(pmod, pdata, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        perm = [pmod.joints[pmod.getJointId(nm)].idx_v for nm in model.joint_names]
        Mp = Mp[np.ix_(perm, perm)]
        assert np.abs(t.Gamma - t.G.T @ Mp @ t.G).max() < 1e-9 * np.abs(t.Gamma).max()


def test_inverse_dynamics_equals_projection_method(model, full):
    """Gamma thdd + C thd - Qg = the seed 002 projected inverse dynamics on the spanning tree
    with the loop constraint (actuated joints = minimal coordinates), to 1e-9."""
    worst = 0.0
    for th, thd, thdd in _states(10, 9):
        t = full.terms(th)
        tau_ip = full.inverse_dynamics(th, thd, thdd)
        r = rd.projected_inverse_dynamics(model, t.q, t.G @ thd, thdd)
        assert r.controllable
        worst = max(worst, np.abs(tau_ip - r.tau_actuated).max() / max(1, np.abs(tau_ip).max()))
        # and the open-chain route of brief 000 par. 8.10: Gᵀ RNEA(q, G thd, G thdd + H(thd, thd))
        qdd = t.G @ thdd + np.einsum('nab,a,b->n', t.H, thd, thd)
        tau_open = t.G.T @ rd.rnea(model, t.q, t.G @ thd, qdd)
        assert np.abs(tau_ip - tau_open).max() < 1e-9 * max(1, np.abs(tau_ip).max())
    assert worst < 1e-9, worst


def test_gravity_equals_tree_gravity(model, full):
    for th, _, _ in _states(3, 10):
        t = full.terms(th)
        assert np.abs(t.Qg + t.G.T @ rd.gravity_torques(model, t.q)).max() < 1e-9


@pytest.mark.parametrize('robot', ['four_bar', 'slider_crank', 'five_bar'])
def test_numeric_map_other_robots_vs_projection(robot):
    """Any robot of the model: numeric loop map; inverse dynamics = projection method."""
    m = rd.load_model(rd.data_path(f'urdf/{robot}.urdf'))
    pm = PartitionedModel(m)
    assert isinstance(pm.loop_map, NumericLoopMap)
    rng = np.random.default_rng(11)
    q0 = m.reference_q()
    th0 = q0[m.independent_indices]
    for _ in range(3):
        th = th0 + 0.05 * rng.normal(size=pm.k)
        thd, thdd = rng.normal(size=pm.k), rng.normal(size=pm.k)
        t = pm.terms(th)
        assert np.abs(rd.loop_residual(m, t.q)).max() < 1e-10
        r = rd.projected_inverse_dynamics(m, t.q, t.G @ thd, thdd, actuated=m.independent)
        tau = pm.inverse_dynamics(th, thd, thdd)
        assert np.abs(tau - r.tau_actuated).max() < 1e-8 * max(1, np.abs(tau).max())
        h = 1e-6
        fd = np.array([(pm.terms(th + h * e).Gamma - pm.terms(th - h * e).Gamma) / (2 * h) for e in np.eye(pm.k)])
        assert np.abs(fd - t.dGamma).max() < 1e-5 * max(1, np.abs(t.dGamma).max())


def test_tree_map_equals_crba():
    m = rd.load_model(rd.data_path('urdf/arm7.urdf'))
    pm = PartitionedModel(m)
    assert isinstance(pm.loop_map, TreeLoopMap)
    q = m.random_configuration(12)
    qd = np.random.default_rng(12).normal(size=m.nq)
    t = pm.terms(q)
    assert np.abs(t.Gamma - rd.crba(m, q)).max() < 1e-10
    assert np.abs(pm.inverse_dynamics(q, qd, qd) - rd.rnea(m, q, qd, qd)).max() < 1e-9


def test_spatial_inertia_kinetic_energy():
    rng = np.random.default_rng(13)
    m, c = 3.0, rng.normal(size=3)
    A = rng.normal(size=(3, 3))
    Ic = A @ A.T + np.eye(3)
    M = spatial_inertia(m, c, Ic)
    assert np.abs(M - M.T).max() < 1e-14 and np.linalg.eigvalsh(M).min() > 0
    v, w = rng.normal(size=3), rng.normal(size=3)
    vc = v + np.cross(w, c)
    assert 0.5 * np.r_[v, w] @ M @ np.r_[v, w] == pytest.approx(0.5 * m * vc @ vc + 0.5 * w @ Ic @ w)


def test_external_wrench_power(model, paper):
    th, thd, _ = next(_states(1, 14))
    t = paper.terms(th)
    W = np.array([1.0, -2.0, 3.0, 0.1, 0.2, -0.3])
    Q = paper.wrench_force(t, 'tool', W, 'local')
    V = rd.frame_velocity(model, t.q, t.G @ thd, 'tool', 'local')
    assert Q @ thd == pytest.approx(W @ V, rel=1e-12)


# ----------------------------------------------------------------------------- reconfiguration
def test_payload_adds_exactly_its_gamma(model, paper):
    pm = paper.copy()
    Ip = np.diag([0.01, 0.02, 0.03])
    th = np.array([0.2, 0.4, 0.15])
    before = pm.terms(th)
    pm.add_payload(5.0, Ip, com=(0.05, 0, 0))
    after = pm.terms(th)
    Jf = pm.frame_jacobian(after, 'tool')
    assert np.abs(after.Gamma - before.Gamma - Jf.T @ spatial_inertia(5.0, [0.05, 0, 0], Ip) @ Jf).max() < 1e-10
    assert np.abs(after.Gamma_i[:3] - before.Gamma_i).max() == 0.0
    # the same payload merged into the plant model (another route) gives the same Gamma, Qg
    other = PartitionedModel(model_with_body(model, 'tool', 5.0, (0.05, 0, 0), Ip), neglect_bodies=NEG)
    o = other.terms(th)
    assert np.abs(o.Gamma - after.Gamma).max() < 1e-10 and np.abs(o.Qg - after.Qg).max() < 1e-9
    pm.remove_body('payload')
    assert np.abs(pm.terms(th).Gamma - before.Gamma).max() < 1e-12


def test_set_body_params_changes_only_that_body(paper):
    pm = paper.copy()
    th = np.array([0.1, 0.3, 0.1])
    a = pm.terms(th)
    pm.set_body_params('link2', mass=70.0)
    b = pm.terms(th)
    assert np.abs(b.Gamma_i[:2] - a.Gamma_i[:2]).max() == 0.0
    assert np.abs(b.Gamma_i[2] - a.Gamma_i[2]).max() > 1.0
    with pytest.raises(rd.UnknownNameError):
        pm.set_body_params('nope', mass=1.0)


def test_lock_dof_is_selection(paper):
    pm = paper.copy()
    th = np.array([0.4, 0.3, 0.12])
    a = pm.terms(th)
    pm.lock({'shoulder_theta': 0.3})
    assert pm.coords == ['base_phi', 'cylinder_delta']
    b = pm.terms(th[[0, 2]])
    P = np.eye(3)[[0, 2]]
    assert np.abs(b.Gamma - P @ a.Gamma @ P.T).max() < 1e-10
    assert np.abs(b.dGamma - np.einsum('ia,mab,jb->mij', P, a.dGamma[[0, 2]], P)).max() < 1e-9
    assert np.abs(b.Qg - P @ a.Qg).max() < 1e-10
    assert np.abs(b.J - a.J @ P.T).max() < 1e-12  # J_new = J_old Pᵀ (eq. 23)
    with pytest.raises(PartitioningError):
        pm.lock({'base_phi': 0.0, 'cylinder_delta': 0.1})
    pm.unlock()
    assert pm.k == 3


# ----------------------------------------------------------------------------- compiled paths
@pytest.fixture(scope='module')
def full_numeric(model):
    """The series-parallel arm forced onto the numeric (Newton) loop map."""
    return PartitionedModel(model, 'numeric')


def test_numeric_path_equals_closed_form_path(model, full, full_numeric):
    """Gamma, dGamma, Qg, the Jacobians and the controller torques of the compiled numeric
    loop map equal those of the closed-form triangle to ~1e-9 (both laws)."""
    from robot_dynamics.control.inertia_partitioning import IPController

    assert isinstance(full_numeric.loop_map, NumericLoopMap)
    assert isinstance(full.loop_map, TriangleLoopMap)
    ctrl = {
        (law, k): IPController(pm, law)
        for law in ('paper', 'pdplus')
        for k, pm in (('cf', full), ('num', full_numeric))
    }
    for th, thd, thdd in _states(8, 21):
        a, b = full.terms(th), full_numeric.terms(th)
        for f in ('q', 'G', 'H', 'J', 'dJ', 'Gamma_i', 'Gamma', 'dGamma', 'Qg', 'R', 'p'):
            x, y = getattr(a, f), getattr(b, f)
            assert np.abs(x - y).max() < 1e-9 * max(1, np.abs(x).max()), f
        assert b.potential == pytest.approx(a.potential, rel=1e-12, abs=1e-9)
        assert np.abs(rd.loop_residual(model, b.q)).max() < 1e-12
        th_d = th + 0.01
        for law in ('paper', 'pdplus'):
            o1 = ctrl[law, 'cf'].compute(th, thd, th_d, thd * 0.9, thdd)
            o2 = ctrl[law, 'num'].compute(th, thd, th_d, thd * 0.9, thdd)
            assert np.abs(o1.Q - o2.Q).max() < 1e-9 * max(1, np.abs(o1.Q).max())
            for f in ('V', 'Vdot', 'lyapunov_margin', 'cond'):
                assert getattr(o2, f) == pytest.approx(getattr(o1, f), rel=1e-9, abs=1e-9), f


def test_numeric_path_inverse_dynamics_equals_projection_method(model, full_numeric):
    """test_inverse_dynamics_equals_projection_method on the numeric loop map."""
    worst = 0.0
    for th, thd, thdd in _states(10, 9):
        t = full_numeric.terms(th)
        tau = full_numeric.inverse_dynamics(th, thd, thdd)
        r = rd.projected_inverse_dynamics(model, t.q, t.G @ thd, thdd)
        worst = max(worst, np.abs(tau - r.tau_actuated).max() / max(1, np.abs(tau).max()))
        qdd = t.G @ thdd + np.einsum('nab,a,b->n', t.H, thd, thd)
        tau_open = t.G.T @ rd.rnea(model, t.q, t.G @ thd, qdd)
        assert np.abs(tau - tau_open).max() < 1e-9 * max(1, np.abs(tau).max())
    assert worst < 1e-9, worst


@pytest.mark.parametrize('kind', ['closed_form', 'numeric'])
def test_compiled_terms_equal_numpy_reference(model, kind):
    """The compiled PartitionedModel.terms (and the compiled numeric loop map) equal the numpy
    reference routes, with and without neglected bodies, a payload and a locked coordinate."""
    pm = PartitionedModel(model, kind, neglect_bodies=NEG)
    cases = [pm]
    pl = pm.copy()
    pl.add_payload(3.0, np.diag([0.01, 0.02, 0.03]), com=(0.05, 0.01, 0))
    cases.append(pl)
    lk = pl.copy()
    lk.lock({'shoulder_theta': 0.3})
    cases.append(lk)
    for c in cases:
        for th, _, _ in _states(4, 22):
            th = th[c.sel]
            a, b = c.terms(th), c.terms_reference(th)
            for f in ('q', 'G', 'H', 'J', 'dJ', 'Gamma_i', 'Gamma', 'dGamma', 'Qg', 'R', 'p'):
                x, y = getattr(a, f), getattr(b, f)
                assert np.abs(x - y).max() < 1e-12 * max(1, np.abs(y).max()), f
            assert a.potential == pytest.approx(b.potential, rel=1e-13, abs=1e-12)
    if kind == 'numeric':
        lm = pm.loop_map
        for th, _, _ in _states(4, 23):
            a = lm.evaluate(th)
            sa = lm.margin(th)  # cached from the evaluation
            b = lm.evaluate_reference(th)
            sb = np.linalg.svd(rd.constraint_terms(model, b.q).A[:, lm.dep], compute_uv=False)[
                len(lm.dep) - 1
            ]  # numpy route
            assert np.abs(a.q - b.q).max() < 1e-14
            assert np.abs(a.G - b.G).max() < 1e-12
            assert np.abs(a.H - b.H).max() < 1e-12 * max(1, np.abs(b.H).max())
            assert sa == pytest.approx(sb, rel=1e-12)
