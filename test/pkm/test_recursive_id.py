"""Recursive 2nd-order PKM inverse dynamics (seed 004) on the assumed Gough-Stewart platform.

Independent routes: high-order finite differences in time, the projection-method inverse
dynamics (seed 002) on the 21-DOF spanning tree with 15 constraints, the tree energy (power
balance), the closed-form leg lengths, and the brief's regression table (par. 5.3).
"""

import suite_paths
import math
import re
import os

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.pkm import gough_stewart as gs
from robot_dynamics.pkm.recursive import (
    PKMSingularityError,
    PKMStructureError,
    inverse_dynamics_d2,
    inverse_dynamics_d2_full,
    limb_to_tree,
    limbs_from_model,
    task_space_dynamics,
)

HERE = suite_paths.TEST_DIR
URDF = os.path.join(HERE, '..', 'urdf', 'gough_stewart.urdf')


@pytest.fixture(scope='module')
def model():
    return rd.load_model(URDF)


ROLL = gs.RollMotion()

# brief par. 5.3 (assumed GSP, roll, gravity on)
TABLE = {
    0.0: dict(
        tha=[0.030795, -0.032295, -0.038420, -0.010189, 0.012691, 0.045983],
        u=[2.257980, 7.492812, 6.336530, 3.784057, 5.761575, 3.992158],
        ud=[0.0] * 6,
        udd=[189.2793, -190.4224, -86.5791, 87.4576, -54.3601, 6.1308],
    ),
    0.125: dict(
        tha=[0.022333, -0.023158, -0.028940, -0.007658, 0.008913, 0.032567],
        u=[3.362135, 6.365246, 5.788155, 4.281281, 5.400029, 4.142117],
        ud=[13.14252, -13.62205, -7.17749, 5.66659, -4.80221, 3.43547],
        udd=[-2.63974, -1.58380, -17.82534, -9.99705, -9.07065, 46.54990],
    ),
    0.25: dict(
        tha=[0.0] * 6,
        u=[4.838579, 4.838579, 4.857449, 4.847711, 4.847711, 4.857449],
        ud=[10.81745, -10.81745, -7.18176, 3.78167, -3.78167, 7.18176],
        udd=[4.81607, 4.81607, 11.13693, 2.77853, 2.77853, 11.13693],
    ),
}


def _tokens(text):
    """Whitespace-separated tokens of an XML attribute/text; numbers as floats."""
    out = []
    for tok in (text or '').split():
        try:
            out.append(float(tok))
        except ValueError:
            out.append(tok)
    return out


def _xml_tree(el):
    return {
        'tag': el.tag,
        'attrib': {k: _tokens(v) for k, v in el.attrib.items()},
        'text': _tokens(el.text),
        'children': [_xml_tree(c) for c in el],
    }


def _assert_same(a, b, where='$'):
    """Same structure (keys, lengths, strings, types) exactly; floats to rtol 1e-12 (the last
    digits of the generated numbers differ between CPUs: libm, FMA)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), f'{where}: keys {list(a)} != {list(b)}'
        for k in a:
            _assert_same(a[k], b[k], f'{where}.{k}')
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), f'{where}: {a!r} != {b!r}'
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f'{where}[{i}]')
    elif isinstance(a, float) or isinstance(b, float):
        assert all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)), f'{where}: {a!r} != {b!r}'
        assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-14), f'{where}: {a!r} != {b!r}'
    else:
        assert type(a) is type(b) and a == b, f'{where}: {a!r} != {b!r}'


def test_urdf_files_match_generator():
    """The shipped files are what the generator writes (parsed: structure exactly, numbers to
    rtol 1e-12, not character by character)."""
    import xml.etree.ElementTree as ET

    import yaml

    with open(URDF) as f:
        _assert_same(_xml_tree(ET.fromstring(f.read())), _xml_tree(ET.fromstring(gs.gough_stewart_urdf())))
    with open(URDF.replace('.urdf', '.loops.yaml')) as f:
        _assert_same(yaml.safe_load(f.read()), yaml.safe_load(gs.gough_stewart_sidecar()))


def test_urdf_comparison_tolerates_last_digits_only():
    import xml.etree.ElementTree as ET

    a = '<robot name="r"><link name="l1"><origin xyz="0.1 0.30000000000000004 0"/></link></robot>'
    b = '<robot name="r"><link name="l1"><origin xyz="0.1 0.3 0"/></link></robot>'
    _assert_same(_xml_tree(ET.fromstring(a)), _xml_tree(ET.fromstring(b)))
    for bad in (
        b.replace('0.3 ', '0.3001 '),
        b.replace('l1', 'l2'),
        b.replace(' 0"', '"'),
        b.replace('<origin', '<inertial'),
    ):
        with pytest.raises(AssertionError):
            _assert_same(_xml_tree(ET.fromstring(a)), _xml_tree(ET.fromstring(bad)))
    _assert_same({'a': [1.0, 'x']}, {'a': [1.0 + 1e-15, 'x']})
    with pytest.raises(AssertionError):
        _assert_same({'a': [1, 'x']}, {'a': [1, 'y']})


def test_topology(model):
    assert model.nq == 21 and model.nconstraints == 15
    lim = limbs_from_model(model)
    assert (lim.L, lim.N) == (6, 6)
    assert list(lim.act) == [2] * 6
    # 15 independent constraints at the home pose: rank A = 15
    _, A, _ = rd.constraint_terms(model, model.reference_q(), np.zeros(21))
    assert np.linalg.matrix_rank(A, 1e-9) == 15


@pytest.mark.parametrize('t', sorted(TABLE))
def test_regression_table(model, t):
    r = inverse_dynamics_d2_full(model, *ROLL(t))
    ref = TABLE[t]
    np.testing.assert_allclose(r.theta_a[0], ref['tha'], atol=6e-7)
    np.testing.assert_allclose(r.u, ref['u'], atol=6e-7)
    np.testing.assert_allclose(r.ud, ref['ud'], atol=6e-6)
    np.testing.assert_allclose(r.udd, ref['udd'], atol=6e-5)


def test_regression_extra(model):
    r = inverse_dynamics_d2_full(model, *ROLL(0.125))
    np.testing.assert_allclose(r.theta_a[3], [3.387699, -4.871187, -0.651599, -0.114320, 2.600238, 8.229589], atol=6e-7)
    np.testing.assert_allclose(r.theta_a[4], [55.7783, -70.7667, -120.3269, -24.4562, 25.1113, 89.2984], atol=6e-5)
    u0 = inverse_dynamics_d2(model, *ROLL(0.0), gravity=np.zeros(3))[0]
    np.testing.assert_allclose(u0, [-1.018725, 1.051138, 0.751874, -0.219281, 0.151113, -0.652724], atol=6e-7)


def test_static_home(model):
    X = np.eye(4)
    X[:3, 3] = [0, 0, 0.2]
    z = np.zeros(6)
    u, ud, udd = inverse_dynamics_d2(model, X, z, z, z, z)
    np.testing.assert_allclose(u, 4.843154, atol=6e-7)
    assert np.max(np.abs(ud)) < 1e-12 and np.max(np.abs(udd)) < 1e-12
    # equals the gravity torques mapped by the projection method (independent route)
    pid = rd.projected_inverse_dynamics(model, model.reference_q(), np.zeros(21), np.zeros(6))
    np.testing.assert_allclose(pid.tau_actuated, u, rtol=1e-10)


def _fd(f, t, h):
    """6th-order central difference of f at t."""
    c = [(-3, -1 / 60), (-2, 3 / 20), (-1, -3 / 4), (1, 3 / 4), (2, -3 / 20), (3, 1 / 60)]
    return sum(w * f(t + k * h) for k, w in c) / h


def test_derivatives_vs_finite_differences(model):
    ts = np.array([0.05, 0.13, 0.31, 0.5, 0.77])
    h = 2e-3
    grid = (ts[:, None] + h * np.arange(-3, 4)[None, :]).ravel()
    r = inverse_dynamics_d2_full(model, *ROLL(grid))  # one batched call
    k = lambda a: a.reshape(len(ts), 7, *a.shape[1:])  # noqa: E731
    w = np.array([-1 / 60, 3 / 20, -3 / 4, 0, 3 / 4, -3 / 20, 1 / 60])
    d = lambda a: np.einsum('j,sj...->s...', w, k(a)) / h  # noqa: E731
    c = lambda a: k(a)[:, 3]  # noqa: E731
    for lo, hi in ((r.u, r.ud), (r.ud, r.udd), (r.theta_a[:, 2], r.theta_a[:, 3]), (r.theta_a[:, 3], r.theta_a[:, 4])):
        err = np.abs(d(lo) - c(hi))
        scale = np.max(np.abs(c(hi)))
        assert np.max(err / scale) < 1e-6, np.max(err / scale)
    # all limb joints, orders 1..4
    for o in range(4):
        err = np.max(np.abs(d(r.theta[:, o]) - c(r.theta[:, o + 1])))
        assert err < 1e-6 * np.max(np.abs(c(r.theta[:, o + 1]))), (o, err)


def test_projection_method_equality(model):
    lim = limbs_from_model(model)
    for t in (0.0, 0.13, 0.4, 0.71):
        r = inverse_dynamics_d2_full(model, *ROLL(t))
        q = limb_to_tree(lim, r.theta[0], 21)
        qd = limb_to_tree(lim, r.theta[1], 21)
        qdd = limb_to_tree(lim, r.theta[2], 21)
        assert np.linalg.norm(rd.loop_residual(model, q)) < 1e-12
        pid = rd.projected_inverse_dynamics(model, q, qd, r.theta_a[2])
        assert pid.controllable
        np.testing.assert_allclose(pid.u, qdd, atol=1e-9)  # same joint accelerations
        np.testing.assert_allclose(pid.tau_actuated, r.u, rtol=0, atol=1e-8)


def test_power_balance(model):
    lim = limbs_from_model(model)
    h = 1e-4

    def energy(t):
        r = inverse_dynamics_d2_full(model, *ROLL(t))
        q = limb_to_tree(lim, r.theta[0], 21)
        qd = limb_to_tree(lim, r.theta[1], 21)
        return rd.kinetic_energy(model, q, qd) + rd.potential_energy(model, q)

    for t in (0.13, 0.6):
        r = inverse_dynamics_d2_full(model, *ROLL(t))
        P = r.u @ r.theta_a[1]
        dE = _fd(energy, t, h)
        assert abs(P - dE) < 1e-8, (P, dE)
        if t == 0.13:
            assert abs(P - 0.38944966) < 1e-8


def test_symmetry_of_roll(model):
    T = ROLL.period
    perm = [1, 0, 5, 4, 3, 2]  # mirror pairs (1,2), (3,6), (4,5)
    for t in (0.05, 0.1):
        a = inverse_dynamics_d2_full(model, *ROLL(t))
        b = inverse_dynamics_d2_full(model, *ROLL(T / 2 - t))
        np.testing.assert_allclose(b.u, a.u[perm], atol=1e-10)
        np.testing.assert_allclose(b.ud, -a.ud[perm], atol=1e-9)
        np.testing.assert_allclose(b.udd, a.udd[perm], atol=1e-8)


def test_ik_closed_form_and_batch_equals_single(model):
    ts = np.linspace(0, 1, 11)
    X, *V = ROLL(ts)
    r = inverse_dynamics_d2_full(model, X, *V)
    np.testing.assert_allclose(r.theta_a[:, 0], gs.leg_lengths(X[:, :3, :3], X[:, :3, 3]), atol=1e-12)
    for i in (0, 4, 10):
        s = inverse_dynamics_d2_full(model, X[i], *(v[i] for v in V))
        for a, b in ((r.u[i], s.u), (r.ud[i], s.ud), (r.udd[i], s.udd)):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)  # IK start differs


def test_linearity_and_task_space_mass_matrix(model):
    X, V, Vd, Vdd, Vddd = ROLL(0.3)
    Mt, b, J = task_space_dynamics(model, X, V)
    assert np.allclose(Mt, Mt.T, atol=1e-12) and np.all(np.linalg.eigvalsh(Mt) > 0)
    r = inverse_dynamics_d2_full(model, X, V, Vd, Vdd, Vddd)
    np.testing.assert_allclose(r.w[0], Mt @ Vd + b, atol=1e-10)
    np.testing.assert_allclose(J.T @ r.u, r.w[0], atol=1e-10)
    # wd is affine in Vdd, wdd in Vddd, with the same M_t
    e = np.array([0.3, -0.2, 0.1, 0.5, 1.0, -0.7])
    r2 = inverse_dynamics_d2_full(model, X, V, Vd, Vdd + e, Vddd)
    np.testing.assert_allclose(r2.w[1] - r.w[1], Mt @ e, atol=1e-9)
    r3 = inverse_dynamics_d2_full(model, X, V, Vd, Vdd, Vddd + 2 * e)
    np.testing.assert_allclose(r3.w[2] - r.w[2], Mt @ (2 * e), atol=1e-9)
    # against the projection method's task-space mass matrix: M_t = Lam^T M Lam with Lam from
    # the platform twist (independent formulation)
    lim = limbs_from_model(model)
    q = limb_to_tree(lim, r.theta[0], 21)
    Mq = rd.crba(model, q)
    Lam = np.zeros((21, 6))
    for k in range(6):
        ek = np.zeros(6)
        ek[k] = 1.0
        rk = inverse_dynamics_d2_full(model, X, ek, np.zeros(6), np.zeros(6), np.zeros(6))
        Lam[:, k] = limb_to_tree(lim, rk.theta[1], 21)
    np.testing.assert_allclose(Lam.T @ Mq @ Lam, Mt, atol=1e-10)


def test_errors(model):
    X, V, Vd, Vdd, Vddd = ROLL(0.1)
    with pytest.raises(rd.InputError):
        inverse_dynamics_d2(model, X[:3], V, Vd, Vdd, Vddd)
    with pytest.raises(rd.InputError):
        inverse_dynamics_d2(model, X, V[:5], Vd, Vdd, Vddd)
    with pytest.raises(rd.InputError):
        inverse_dynamics_d2(model, X, V * np.nan, Vd, Vdd, Vddd)
    far = X.copy()
    far[:3, 3] = [0, 0, 5.0]  # unreachable: the legs cannot be 5 m long
    with pytest.raises(PKMSingularityError):
        inverse_dynamics_d2(model, far, V, Vd, Vdd, Vddd)
    with pytest.raises(PKMStructureError):
        limbs_from_model(rd.load_model(os.path.join(HERE, '..', 'urdf', 'five_bar.urdf')))
    assert issubclass(PKMStructureError, rd.RobotDynamicsError)


def test_a_pose_beyond_the_leg_stroke_names_the_joint_and_its_limits(model):
    """Status 5 (IK solution outside the URDF limits): the message names the joint, its value
    and its limits, in the batch entry and in the one-sample workspace alike; the value is the
    closed-form leg length minus the reference length (independent route)."""
    from robot_dynamics.pkm.recursive import ID2Data

    X = np.eye(4)
    X[2, 3] = 0.35  # 0.15 m above the home pose: the legs beyond their +-0.1 m stroke
    z = np.zeros(6)
    msgs = []
    for call in (lambda: inverse_dynamics_d2(model, X, z, z, z, z), lambda: ID2Data(model)(X, z, z, z, z)):
        with pytest.raises(PKMSingularityError) as ei:
            call()
        assert list(ei.value.status) == [5]
        got = re.search(r"joint '(leg\d_p)' = ([-\d.e]+), outside its limits \[(-0.1), (0.1)\]", str(ei.value))
        assert got, str(ei.value)
        msgs.append(got.groups())
    assert msgs[0] == msgs[1]
    name, value = msgs[0][0], float(msgs[0][1])
    i = model.joint_index(name)
    assert (model.lower[i], model.upper[i]) == (-0.1, 0.1)
    # the leg extension (the prismatic coordinate) by the closed form; legs in limb order
    ext = gs.leg_lengths(X[:3, :3], X[:3, 3])
    assert value == pytest.approx(ext[int(name[3]) - 1], abs=1e-6)
    assert value > 0.1


def test_id2data_workspace_equals_the_batch_entry_and_rejects_bad_input():
    """ID2Data (one sample per call, preallocated, warm-started) gives the batch entry's numbers
    bit for bit along the roll, and the same errors."""
    from robot_dynamics.errors import InputError
    from robot_dynamics.pkm.gough_stewart import RollMotion
    from robot_dynamics.pkm.recursive import ID2Data, PKMSingularityError, inverse_dynamics_d2_full

    m = rd.load_model(rd.data_path('urdf/gough_stewart.urdf'))
    Xs = RollMotion()(np.linspace(0.0, 1.0, 101))
    full = inverse_dynamics_d2_full(m, *Xs)
    d = ID2Data(m)
    for k in range(101):
        u = d(*[a[k] for a in Xs])
        np.testing.assert_array_equal(u, np.stack([full.u[k], full.ud[k], full.udd[k]]))
        np.testing.assert_array_equal(d.theta_a, full.theta_a[k])
    X = [a[10].copy() for a in Xs]
    bad = [x.copy() for x in X]
    bad[0][:3, :3] *= 1.01
    with pytest.raises(InputError, match='orthonormal'):
        d(*bad)
    bad = [x.copy() for x in X]
    bad[2][0] = np.nan
    with pytest.raises(InputError, match='non-finite'):
        d(*bad)
    with pytest.raises(InputError, match='shape|\\(6,\\)'):
        d(X[0], X[1][:5], X[2], X[3], X[4])
    far = [x.copy() for x in X]
    far[0][:3, 3] = [0.0, 0.0, 5.0]  # 5 m above the base: out of reach
    with pytest.raises(PKMSingularityError):
        d(*far)
