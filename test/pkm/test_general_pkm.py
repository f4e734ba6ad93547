"""General route of the 2nd-order PKM inverse dynamics (robot_dynamics.pkm.general), read from
URDF + loops sidecar, checked against independent routes:

* u against the projection engine (seed 002, projected_inverse_dynamics: minimum-norm actuation
  of the constrained tree dynamics) on the same motion;
* ud, udd against 6th-order central differences of u, ud along smooth task trajectories;
* = the compiled 6x6 route on the Gough-Stewart platform, = PlanarID2 (pkm/planar_sea.py) on
  the planar 3RRR SEA-PKM;
on three robots written only as URDF + sidecar (test/data/tripteron_3upu: translational 3-UPU
with universal cuts; test/data/planar_3rpr_xz: planar 3-RPR in the vertical x-z plane, revolute
cuts; test/data/rps_3: 3-RPS with spherical cuts, task = a tool point above the platform, the
platform rotation dependent), the Gough-Stewart (spherical cuts) and the 3RRR (revolute cuts, redundant actuation)."""

import suite_paths
import dataclasses
import os

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.errors import InputError
from robot_dynamics.pkm.general import general_pkm, inverse_dynamics_d2_general
from robot_dynamics.pkm.recursive import (
    PKMSingularityError,
    PKMStructureError,
    inverse_dynamics_d2,
    inverse_dynamics_d2_full,
)
from robot_dynamics.pkm.planar_sea import Planar3RRR, Planar3RRRParams
from robot_dynamics.control.trajectories import SinSquaredJerk

HERE = suite_paths.TEST_DIR
URDF = os.path.join(os.path.dirname(HERE), 'urdf')
DATA = os.path.join(HERE, 'data')


def _model(path):
    return rd.load_model(path)


@pytest.fixture(scope='module')
def upu():
    return _model(os.path.join(DATA, 'tripteron_3upu.urdf'))


@pytest.fixture(scope='module')
def rpr():
    return _model(os.path.join(DATA, 'planar_3rpr_xz.urdf'))


@pytest.fixture(scope='module')
def rps():
    return _model(os.path.join(DATA, 'rps_3.urdf'))


@pytest.fixture(scope='module')
def gs():
    return _model(os.path.join(URDF, 'gough_stewart.urdf'))


@pytest.fixture(scope='module')
def rrr():
    return _model(os.path.join(URDF, 'planar_3rrr_sea.urdf'))


def _sines(t, x0, comps):
    """Task x(t) = x0 + sum A sin(w t + ph) per component, derivatives 0..4: (S, 5, d)."""
    t = np.atleast_1d(np.asarray(t, float))
    out = np.zeros((len(t), 5, len(x0)))
    out[:, 0] = x0
    for c, (A, w, ph) in enumerate(comps):
        for k in range(5):
            out[:, k, c] += A * w**k * np.sin(w * t + ph + k * np.pi / 2)
    return out


TRAJ = {
    'upu': (np.array([0.0, 0.0, 0.40]), [(0.03, 5.0, 0.0), (0.025, 6.9, 0.4), (0.02, 4.4, 1.0)]),
    'rpr': (np.array([0.0, 0.6, 0.0]), [(0.04, 5.0, 0.0), (0.03, 6.3, 0.5), (0.15, 4.0, 0.2)]),
    'rps': (np.array([0.0, 0.0, 0.52]), [(0.02, 5.0, 0.0), (0.02, 6.1, 0.7), (0.02, 4.4, 0.3)]),
}


def _roll(t):
    """Gough-Stewart roll of the brief (par. 4.1): pose and body twist derivatives."""
    t = np.atleast_1d(np.asarray(t, float))
    A, w = 0.5, 2 * np.pi
    th = [
        -A * np.cos(w * t) + A - 0.5,
        A * w * np.sin(w * t),
        A * w**2 * np.cos(w * t),
        -A * w**3 * np.sin(w * t),
        -A * w**4 * np.cos(w * t),
    ]
    X = np.tile(np.eye(4), (len(t), 1, 1))
    c, s = np.cos(th[0]), np.sin(th[0])
    X[:, 1, 1], X[:, 1, 2], X[:, 2, 1], X[:, 2, 2] = c, -s, s, c
    X[:, 2, 3] = 0.2
    V = [np.zeros((len(t), 6)) for _ in range(4)]
    for k in range(4):
        V[k][:, 3] = th[k + 1]
    return (X, *V)


def _args(name, t):
    if name == 'gs':
        return _roll(t)
    P = _sines(t, *TRAJ[name])
    return tuple(P[:, k] for k in range(5))


def _rel(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


def test_structure_read_from_the_sidecar(upu, rpr, rps, gs, rrr):
    p = general_pkm(upu)
    assert p.delta == 3 and p.task == ['x', 'y', 'z'] and [lb.N for lb in p.limbs] == [5, 5, 5]
    p = general_pkm(rpr)
    assert p.delta == 3 and p.task == ['x', 'z', 'ry'] and [lb.N for lb in p.limbs] == [3, 3, 3]
    p = general_pkm(rps)  # tool point above the platform: its rotation is dependent
    assert p.delta == 3 and p.task == ['x', 'y', 'z'] and [lb.N for lb in p.limbs] == [5, 5, 5]
    p = general_pkm(gs)
    assert p.delta == 6 and p.task == 'pose' and [lb.N for lb in p.limbs] == [6] * 6
    p = general_pkm(rrr)  # SEA: link-side arm joints actuated, motor rotors excluded
    assert p.delta == 2 and p.task == ['x', 'y'] and [lb.N for lb in p.limbs] == [3, 3, 2]
    assert p.actuated == ['arm1_joint', 'arm2_joint', 'arm3_joint']
    assert p.rotor_joints == ['arm1_motor', 'arm2_motor', 'arm3_motor']


def test_general_equals_compiled_on_gough_stewart(gs):
    t = np.linspace(0.0, 1.0, 9)
    r1 = inverse_dynamics_d2_full(gs, *_roll(t))
    r2 = inverse_dynamics_d2_general(gs, *_roll(t))
    for a, b in ((r2.u, r1.u), (r2.ud, r1.ud), (r2.udd, r1.udd), (r2.theta_a, r1.theta_a)):
        assert _rel(a, b) < 1e-10, _rel(a, b)
    # dispatch: 'auto' takes the compiled route here, 'general' forces the numpy route
    u_a = inverse_dynamics_d2(gs, *_roll(0.3))
    u_g = inverse_dynamics_d2(gs, *_roll(0.3), route='general')
    for a, b in zip(u_g, u_a):
        assert _rel(a, b) < 1e-10


@pytest.mark.parametrize('g', [(0.0, -9.81, 0.0), (0.0, 0.0, -9.81)])
def test_general_equals_planar_id2_on_3rrr_urdf(rrr, g):
    traj = SinSquaredJerk([-0.05, 0.0], [0.05, 0.0], 0.5)
    P = np.moveaxis(traj(np.linspace(0.01, 0.49, 9)), 0, 1)  # (S, 5, 2)
    ref = Planar3RRR(dataclasses.replace(Planar3RRRParams(), gravity=g)).inverse_dynamics_d2(P)
    r = inverse_dynamics_d2_general(rrr, *(P[:, k] for k in range(5)), gravity=np.array(g))
    for a, b in ((r.u, ref.u), (r.ud, ref.ud), (r.udd, ref.udd)):
        assert _rel(a, b) < 1e-10, _rel(a, b)
    # limb angles (arm, elbow) per limb equal PlanarID2's theta
    th = np.stack([r.theta[:, :, o : o + 2] for o in general_pkm(rrr).offsets[:3]], 2)
    np.testing.assert_allclose(th, ref.theta, atol=1e-9)
    # the auto dispatch reaches the general route for this model
    u = inverse_dynamics_d2(rrr, P[3, 0], P[3, 1], P[3, 2], P[3, 3], P[3, 4], gravity=np.array(g))
    np.testing.assert_allclose(u[0], ref.u[3], rtol=1e-10)


@pytest.mark.parametrize('name', ['upu', 'rpr', 'rps', 'gs', 'rrr'])
def test_u_equals_projection_engine(name, request):
    model = request.getfixturevalue(name)
    p = general_pkm(model)
    if name == 'rrr':
        traj = SinSquaredJerk([-0.05, 0.0], [0.05, 0.0], 0.5)
        P = np.moveaxis(traj(np.array([0.1, 0.27, 0.4])), 0, 1)
        args = tuple(P[:, k] for k in range(5))
    else:
        args = _args(name, np.array([0.1, 0.27, 0.4]))
    r = inverse_dynamics_d2_general(model, *args)
    q_ref = model.reference_q()
    act = p.actuated + p.rotor_joints  # rotors: free, unloaded bodies (tau 0)
    for s in range(3):
        q = p.tree_q(r.theta[s, 0], q_ref)
        qd = p.tree_q(r.theta[s, 1], np.zeros(model.nq))
        qdd = p.tree_q(r.theta[s, 2], np.zeros(model.nq))
        assert np.max(np.abs(rd.loop_residual(model, q))) < 1e-10
        pid = rd.projected_inverse_dynamics(model, q, qd, u=qdd, actuated=act)
        assert pid.controllable and pid.residual < 1e-8
        tau = pid.tau_actuated[: len(p.actuated)]
        assert _rel(r.u[s], tau) < 1e-8, (s, r.u[s], tau)


_W6 = np.array([-1 / 60, 3 / 20, -3 / 4, 0, 3 / 4, -3 / 20, 1 / 60])


@pytest.mark.parametrize('name', ['upu', 'rpr', 'rps', 'rrr'])
def test_derivatives_against_finite_differences(name, request):
    model = request.getfixturevalue(name)
    ts = np.array([0.07, 0.21, 0.38])
    h = 1e-3
    grid = (ts[:, None] + h * np.arange(-3, 4)[None, :]).ravel()
    if name == 'rrr':
        traj = SinSquaredJerk([-0.05, 0.0], [0.05, 0.0], 0.5)
        P = np.moveaxis(traj(grid), 0, 1)
        args = tuple(P[:, k] for k in range(5))
        g = np.array([0.0, -9.81, 0.0])
    else:
        args = _args(name, grid)
        g = None
    r = inverse_dynamics_d2_general(model, *args, gravity=g)
    k = lambda a: a.reshape(len(ts), 7, *a.shape[1:])  # noqa: E731
    d = lambda a: np.einsum('j,sj...->s...', _W6, k(a)) / h  # noqa: E731
    c = lambda a: k(a)[:, 3]  # noqa: E731
    for lo, hi in ((r.u, r.ud), (r.ud, r.udd)):
        assert _rel(d(lo), c(hi)) < 1e-8, _rel(d(lo), c(hi))
    for o in range(4):  # limb joints, orders 1..4
        assert _rel(d(r.theta[:, o]), c(r.theta[:, o + 1])) < 1e-8, o


def test_redundant_u_is_least_norm(rrr):
    """3RRR: u lies in range(J_IK) (least norm), and J_IK^T u = w at every order."""
    traj = SinSquaredJerk([-0.05, 0.0], [0.05, 0.0], 0.5)
    P = np.moveaxis(traj(np.array([0.13, 0.3])), 0, 1)
    r = inverse_dynamics_d2_general(rrr, *(P[:, k] for k in range(5)))
    J = r.J_IK[:, 0]
    n = np.cross(J[:, :, 0], J[:, :, 1])
    assert np.max(np.abs(np.einsum('si,si->s', n, r.u))) < 1e-12 * np.max(np.abs(r.u))
    np.testing.assert_allclose(np.einsum('sij,si->sj', J, r.u), r.w[:, 0], rtol=1e-12, atol=1e-12)


def test_static_equilibrium_matches_gravity(upu, rpr):
    """No motion: ud = udd = 0 and u balances gravity (projection route at the reference)."""
    for m, x0 in ((upu, TRAJ['upu'][0]), (rpr, TRAJ['rpr'][0])):
        z = np.zeros(3)
        r = inverse_dynamics_d2_general(m, x0, z, z, z, z)
        assert np.max(np.abs(r.ud)) < 1e-12 and np.max(np.abs(r.udd)) < 1e-12
        pid = rd.projected_inverse_dynamics(m, m.reference_q(), np.zeros(m.nq), u=np.zeros(m.nq))
        np.testing.assert_allclose(r.u, pid.tau_actuated, rtol=1e-9)
        assert np.max(np.abs(r.u)) > 1.0  # gravity does load the legs


def test_errors_name_model_and_cause(upu, rpr, tmp_path):
    ur5 = _model(os.path.join(DATA, 'ur5.urdf'))
    with pytest.raises(PKMStructureError, match='no loops'):
        general_pkm(ur5)
    with pytest.raises(PKMStructureError, match='tripteron_3upu.*do not parametrise'):
        general_pkm(upu, task=['x', 'y', 'rz'])
    with pytest.raises(PKMStructureError, match="loop 'leg1_rp' is 'revolute'"):
        inverse_dynamics_d2(rpr, *_args('rpr', 0.1), route='compiled')
    with pytest.raises(
        PKMSingularityError,
        match=r"planar_3rpr_xz.*joint limits.*joint 'leg\w*' = [-\d.e]+, outside its limits \[[-\d.e]+, [-\d.e]+\]",
    ):
        inverse_dynamics_d2_general(rpr, np.array([3.0, 0.6, 0.0]), *([np.zeros(3)] * 4))
    rrr = _model(os.path.join(URDF, 'planar_3rrr_sea.urdf'))
    with pytest.raises(PKMSingularityError, match='planar_3rrr_sea.*did not converge') as ei:
        inverse_dynamics_d2_general(rrr, np.array([[0.0, 0.0], [1.0, 0.0]]), *([np.zeros((2, 2))] * 4))
    assert list(ei.value.samples) == [1]
    with pytest.raises(InputError):
        inverse_dynamics_d2_general(rpr, np.zeros(4), *([np.zeros(3)] * 4))
    with pytest.raises(InputError):
        inverse_dynamics_d2_general(rpr, np.array([0.0, np.nan, 0.0]), *([np.zeros(3)] * 4))
    with pytest.raises(InputError, match='route'):
        inverse_dynamics_d2(rpr, *_args('rpr', 0.1), route='fast')
    # a limb that branches is refused by name
    src = open(os.path.join(DATA, 'planar_3rpr_xz.urdf')).read()
    extra = (
        '  <link name="dangle"><inertial><origin xyz="0 0 0"/><mass value="0.1"/><inertia ixx="1e-4" '
        'ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>\n'
        '  <joint name="dangle_j" type="revolute"><parent link="leg1_cyl"/><child link="dangle"/>'
        '<origin xyz="0 0 0"/><axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>\n'
    )
    (tmp_path / 'branchy.urdf').write_text(src.replace('</robot>', extra + '</robot>'))
    y = open(os.path.join(DATA, 'planar_3rpr_xz.loops.yaml')).read()
    (tmp_path / 'branchy.loops.yaml').write_text(y)
    with pytest.raises(PKMStructureError, match="planar_3rpr_xz.*'leg1_r' has 2 child joints"):
        general_pkm(rd.load_model(str(tmp_path / 'branchy.urdf')))


@pytest.mark.parametrize('name', ['four_bar', 'five_bar'])
def test_shipped_planar_linkages(name):
    """The shipped four-bar (1 DOF) and five-bar (2 DOF) read as PKM with a point platform
    (tip frame of the loop): u = projection engine, ud/udd = finite differences."""
    m = _model(os.path.join(URDF, name + '.urdf'))
    p = general_pkm(m)
    x0 = p.task_value(p.fk(p.theta_ref[None])[-1][:, -1])[0]
    ts = np.array([0.1, 0.3])
    h = 1e-3
    grid = (ts[:, None] + h * np.arange(-3, 4)[None, :]).ravel()
    P = _sines(grid, x0, [(0.01, 3.0, 0.1), (0.008, 4.0, 0.5)][: p.delta])
    r = inverse_dynamics_d2_general(m, *(P[:, k] for k in range(5)))
    k = lambda a: a.reshape(len(ts), 7, *a.shape[1:])  # noqa: E731
    d = lambda a: np.einsum('j,sj...->s...', _W6, k(a)) / h  # noqa: E731
    c = lambda a: k(a)[:, 3]  # noqa: E731
    assert _rel(d(r.u), c(r.ud)) < 1e-8 and _rel(d(r.ud), c(r.udd)) < 1e-8
    for s in (3, 10):
        q = p.tree_q(r.theta[s, 0], m.reference_q())
        qd = p.tree_q(r.theta[s, 1], np.zeros(m.nq))
        qdd = p.tree_q(r.theta[s, 2], np.zeros(m.nq))
        pid = rd.projected_inverse_dynamics(m, q, qd, u=qdd, actuated=p.actuated)
        assert _rel(r.u[s], pid.tau_actuated) < 1e-8


@pytest.mark.parametrize('name', ['tripteron_3upu', 'planar_3rpr_xz', 'rps_3'])
def test_check_lists_the_general_route(name):
    from robot_dynamics.tools.check import check_robot

    rep = check_robot(os.path.join(DATA, name + '.urdf'))
    facts = dict(rep.facts)
    assert facts['degrees of freedom'].startswith('3 ')
    assert float(facts['closure at reference'].split()[0]) < 1e-12
    meth, ok, detail = rep.methods[2]
    assert meth.startswith('recursive 2nd-order ID') and ok, detail
    assert 'general route' in detail and '3 DOF' in detail


@pytest.mark.parametrize(
    'ltype',
    [
        'spherical',
        'point',
        'universal',
        'revolute',
        'prismatic',
        'cylindrical',
        'planar',
        'point_on_line',
        'point_on_plane',
        'weld',
    ],
)
def test_virtual_cut_joints_span_the_loop_freedom(ltype):
    """The virtual joints of each cut type span exactly the relative twists the loader's
    constraint rows (robot_dynamics.parsers.sidecar.loop_rows) leave free, at a closed cut with a generic
    relative orientation (frame_b rotated about the axis for the axis-symmetric types)."""
    from robot_dynamics.parsers.sidecar import loop_rows
    from robot_dynamics.model import Loop
    from robot_dynamics.pkm.general import _virtual

    rng = np.random.default_rng(7)
    k = rng.normal(size=3)
    k /= np.linalg.norm(k)
    a1 = np.cross(k, [1.0, 0, 0])
    a1 /= np.linalg.norm(a1)
    Ta = np.eye(4)
    Ta[:3, 3] = rng.normal(size=3)
    Tb = Ta.copy()  # universal: b rotated about a1
    if ltype == 'universal':
        c, s = np.cos(0.3), np.sin(0.3)
        K = np.array([[0, -a1[2], a1[1]], [a1[2], 0, -a1[0]], [-a1[1], a1[0], 0]])
        Tb[:3, :3] = np.eye(3) + s * K + (1 - c) * K @ K
    a2_b = Tb[:3, :3].T @ np.cross(k, a1)  # second axis given in frame_b
    axis = None if ltype in ('spherical', 'point', 'universal', 'weld') else k
    axes = np.array([a1, a2_b]) if ltype == 'universal' else None
    pos, rot, _ = loop_rows(ltype, axis=axis, axes=None if axes is None else (a1, Ta[:3, :3].T @ Tb[:3, :3] @ a2_b))
    lp = Loop(name='cut', type=ltype, frame_a='a', frame_b='b', axis=axis, axes=axes)
    Xs = np.array(_virtual(lp, Ta, Tb)).reshape(-1, 6)
    rows = np.vstack(
        [
            np.hstack([pos, np.zeros((len(pos), 3))]),
            np.array([np.r_[np.zeros(3), np.cross(u, w)] for u, w in rot]).reshape(-1, 6),
        ]
    )
    assert len(Xs) == 6 - np.linalg.matrix_rank(rows)
    if len(Xs):
        assert np.linalg.matrix_rank(Xs) == len(Xs)
        assert np.max(np.abs(rows @ Xs.T)) < 1e-12


def test_loop_written_from_the_platform_side(tmp_path, rpr):
    """A cut joint whose frame_a is on the platform (sides exchanged) gives the same u."""
    src = open(os.path.join(DATA, 'planar_3rpr_xz.loops.yaml')).read()
    old = 'frame_a: leg1_tip, frame_b: platform_b1'
    assert old in src
    (tmp_path / 'swapped.loops.yaml').write_text(src.replace(old, 'frame_a: platform_b1, frame_b: leg1_tip'))
    (tmp_path / 'swapped.urdf').write_text(open(os.path.join(DATA, 'planar_3rpr_xz.urdf')).read())
    m = rd.load_model(str(tmp_path / 'swapped.urdf'))
    args = _args('rpr', np.array([0.1, 0.3]))
    a = inverse_dynamics_d2_general(m, *args)
    b = inverse_dynamics_d2_general(rpr, *args)
    for x, y in ((a.u, b.u), (a.ud, b.ud), (a.udd, b.udd)):
        assert _rel(x, y) < 1e-12
