"""Closed-form (geometric) IK of the decoupled U-P-S limbs in the recursive 2nd-order inverse
dynamics (seed 004): detection, equality with the Newton IK, FK residual, branch tracking,
singular/ambiguous statuses and the Newton fall-back of limbs that are not decoupled.

Accuracy: the Newton reference runs with tol = 1e-15 (the closed form's own FK residual is
~1e-16); angles are compared in absolute terms, the higher derivatives and u, ud, udd relative to
the largest magnitude of each quantity (their scale is 1 ... 2e3).
"""

import suite_paths
import os

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.pkm import _recursive_kernels as RK
from robot_dynamics.pkm import gough_stewart as gs
from robot_dynamics.pkm.recursive import (
    PKMLimbs,
    PKMSingularityError,
    decoupled_ik_geometry,
    inverse_dynamics_d2_full,
    limbs_from_model,
)

HERE = suite_paths.TEST_DIR
URDF = os.path.join(HERE, '..', 'urdf', 'gough_stewart.urdf')
ROLL = gs.RollMotion()
NEWTON = dict(ik='newton', tol=1e-15, max_iter=40)


@pytest.fixture(scope='module')
def model():
    return rd.load_model(URDF)


@pytest.fixture(scope='module')
def lim(model):
    return limbs_from_model(model)


def _fk(lim, l, th):
    CR = np.empty((lim.N, 3, 3))
    Cp = np.empty((lim.N, 3))
    RK.limb_fk(lim.BR[l], lim.Bp[l], lim.X[l], np.array(th, float), CR, Cp, np.empty((3, 3)), np.empty(3))
    return CR[-1], Cp[-1]


def _rel(a, b):
    """max |a - b| / max |b| over all entries."""
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


def _compare(ra, rb, ang=1e-12, rel=1e-12):
    """Closed form (ra) vs Newton (rb): joint angles absolute, the rest relative."""
    assert np.max(np.abs(ra.theta[:, 0] - rb.theta[:, 0])) <= ang
    for k in range(1, 5):
        assert _rel(ra.theta[:, k], rb.theta[:, k]) <= rel, k
    for a, b in ((ra.u, rb.u), (ra.ud, rb.ud), (ra.udd, rb.udd), (ra.J_IK, rb.J_IK)):
        assert _rel(a, b) <= rel


def _copy_limbs(lim, X=None):
    out = PKMLimbs(
        lim.BR,
        lim.Bp,
        lim.X if X is None else X,
        lim.M,
        lim.act,
        lim.tree_index,
        lim.limb_names,
        lim.order,
        lim.platform,
        lim.gravity,
        lim.model_name + '*',
    )
    return out


def test_detection(lim):
    """Every GSP leg is detected as decoupled; the geometry is the brief's (U centre a_k, S
    centre b_k on the platform, prismatic along the leg)."""
    assert list(lim.ik_mode) == [1] * 6, lim.ik_info
    g = gs.gsp_geometry()
    G = lim.ik_geom
    # limb order of PKMLimbs: loops leg1..leg5, then the platform limb (leg 6)
    for l in range(6):
        np.testing.assert_allclose(G[l, RK.IKG_A : RK.IKG_A + 3], g['a'][l], atol=1e-15)
        np.testing.assert_allclose(G[l, RK.IKG_CL : RK.IKG_CL + 3], g['b'][l], atol=1e-15)
        n = G[l, RK.IKG_N : RK.IKG_N + 3]
        np.testing.assert_allclose(n, g['E'][l][:, 2], atol=1e-15)
        np.testing.assert_allclose(G[l, RK.IKG_PC : RK.IKG_PC + 3], g['l0'][l] * n, atol=1e-15)
    # generic: the same numbers from the raw arrays
    mode, geom, info = decoupled_ik_geometry(lim.BR, lim.Bp, lim.X)
    assert list(mode) == [1] * 6 and np.array_equal(geom, G)


def test_roll_closed_form_equals_newton(model, lim):
    ts = np.linspace(0.0, 1.0, 200, endpoint=False)
    args = ROLL(ts)
    ra = inverse_dynamics_d2_full(model, *args)
    rb = inverse_dynamics_d2_full(model, *args, **NEWTON)
    _compare(ra, rb)
    # FK residual of the closed-form limb coordinates
    X = args[0]
    res = max(
        max(np.max(np.abs(R - X[s, :3, :3])), np.max(np.abs(p - X[s, :3, 3])))
        for s in range(0, len(ts), 7)
        for l in range(6)
        for R, p in [_fk(lim, l, ra.theta[s, 0, l])]
    )
    assert res <= 1e-12, res
    # the default IK (closed form) reproduces the Newton results of the previous kernel:
    # brief regression values (test_recursive_id) are unchanged
    np.testing.assert_allclose(ra.theta_a[:, 0], gs.leg_lengths(X[:, :3, :3], X[:, :3, 3]), atol=1e-14)


def _random_poses(n, seed=4):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        ax = rng.normal(size=3)
        ax /= np.linalg.norm(ax)
        T = np.eye(4)
        T[:3, :3] = rd.lie.exp_so3(ax * rng.uniform(0.0, 0.35))
        T[:3, 3] = [0.0, 0.0, 0.2] + rng.uniform(-0.03, 0.03, 3)
        out.append((T, *rng.normal(size=(4, 6))))
    return out


def test_random_poses_closed_form_equals_newton(model, lim):
    """>= 100 random reachable platform poses with random twist derivatives, each solved from
    the reference configuration (no warm start from a neighbour)."""
    n_ok = 0
    worst = np.zeros(3)
    for T, V, Vd, Vdd, Vddd in _random_poses(130):
        try:
            rb = inverse_dynamics_d2_full(model, T, V, Vd, Vdd, Vddd, **NEWTON)
        except PKMSingularityError:  # outside the joint limits / workspace
            continue
        ra = inverse_dynamics_d2_full(model, T, V, Vd, Vdd, Vddd)
        wrap = lambda r: type(r)(*(np.asarray(x)[None] for x in r))  # noqa: E731
        _compare(wrap(ra), wrap(rb))
        for l in range(6):
            R, p = _fk(lim, l, ra.theta[0, l])
            worst[0] = max(worst[0], np.max(np.abs(R - T[:3, :3])), np.max(np.abs(p - T[:3, 3])))
        worst[1] = max(worst[1], np.max(np.abs(ra.theta[0] - rb.theta[0])))
        worst[2] = max(worst[2], _rel(ra.udd, rb.udd))
        n_ok += 1
    assert n_ok >= 100, n_ok
    assert worst[0] <= 1e-12 and worst[1] <= 1e-12 and worst[2] <= 1e-12, worst


def _branch_b(th):
    """The other U branch of a GSP leg (orthogonal U e1, e2; S = R(e1) R(e2) R(n)): the U turned
    by pi about the leg axis, the S compensating: (t1 + pi, pi - t2, t3, -t4, -t5, t6 - pi)."""
    t = np.array(th, float)
    return np.array([t[0] + np.pi, np.pi - t[1], t[2], -t[3], -t[4], t[5] - np.pi])


def test_branch_follows_warm_start(model, lim):
    X, *V = ROLL(0.13)
    PR, Pp = X[:3, :3].copy(), X[:3, 3].copy()
    thA = inverse_dynamics_d2_full(model, X, *V).theta[0, 0]
    thB = _branch_b(thA)
    R, p = _fk(lim, 0, thB)
    assert np.max(np.abs(R - PR)) < 1e-14 and np.max(np.abs(p - Pp)) < 1e-14  # a solution
    # seeded near branch B, the closed form stays in B (and so does Newton)
    for seed in (thB + 0.05, thB - 0.05):
        th = seed.copy()
        assert RK.limb_ik_cf_th(lim.ik_geom[0], PR, Pp, th) == 0
        np.testing.assert_allclose(th, thB, rtol=0, atol=1e-13)
    # seeded with the U of branch B but the S of branch A: the S choice is not determined by
    # the warm start -> reported (6), th left unchanged; likewise a U seed midway
    for seed in (np.r_[thB[:3], thA[3:]], np.r_[thA[0] + np.pi / 2, np.pi / 2, thA[2:]]):
        th = seed.copy()
        assert RK.limb_ik_cf_th(lim.ik_geom[0], PR, Pp, th) == 6
        assert np.array_equal(th, seed)
    # through the API, along the roll: limb 0 started in branch B stays there at every sample
    # (branch B violates the URDF's +-1.2 rad gimbal limits: limbs without the limit check)
    free = _copy_limbs(lim)
    ts = np.linspace(0.0, 1.0, 100, endpoint=False)
    args = ROLL(ts)
    guess = lim.th_ref.copy()
    guess[0] = _branch_b(np.zeros(6))
    rB = inverse_dynamics_d2_full(free, *args, theta_guess=guess)
    rA = inverse_dynamics_d2_full(free, *args)
    for s in range(len(ts)):
        np.testing.assert_allclose(rB.theta[s, 0, 0], _branch_b(rA.theta[s, 0, 0]), atol=1e-12)
    np.testing.assert_allclose(rB.theta[:, :, 1:], rA.theta[:, :, 1:], atol=1e-12)
    _compare(rB, inverse_dynamics_d2_full(free, *args, theta_guess=guess, **NEWTON))
    # same leg line and an axisymmetric cylinder/piston: the same actuator forces
    for a, b in ((rA.u, rB.u), (rA.ud, rB.ud), (rA.udd, rB.udd)):
        assert _rel(b, a) < 1e-12
    # a warm start between the branches is reported through the API (status 6)
    mid = lim.th_ref.copy()
    mid[0, :2] = [np.pi / 2, np.pi / 2]
    with pytest.raises(PKMSingularityError) as e:
        inverse_dynamics_d2_full(model, *args, theta_guess=mid)
    assert e.value.status[0] == 6 and 'ambiguous' in str(e.value)


@pytest.mark.parametrize('k', [1, 4])
def test_singular_u_or_s_reported(lim, k):
    """U (t2 = pi/2: leg along the first U axis) or S (t5 = pi/2: gimbal lock) exactly at its
    singular configuration: status 2, th unchanged; 1e-6 rad away the closed form is exact to
    the conditioning (~1e-16 / 1e-6)."""
    th0 = np.array([0.1, -0.2, 0.01, 0.15, 0.2, -0.1])
    th0[k] = np.pi / 2
    R, p = _fk(lim, 2, th0)
    th = th0 + 0.01
    assert RK.limb_ik_cf_th(lim.ik_geom[2], R, p, th) == 2
    np.testing.assert_array_equal(th, th0 + 0.01)
    th0[k] -= 1e-6
    R, p = _fk(lim, 2, th0)
    th = th0 + 0.01
    assert RK.limb_ik_cf_th(lim.ik_geom[2], R, p, th) == 0
    assert np.max(np.abs(th - th0)) < 1e-8
    R2, p2 = _fk(lim, 2, th)
    assert np.max(np.abs(R2 - R)) < 1e-14 and np.max(np.abs(p2 - p)) < 1e-14


def test_not_decoupled_falls_back_to_newton(model, lim):
    """An S axis moved off the S centre: limb 2 is not decoupled -> Newton for that limb, closed
    form for the others; the results equal the all-Newton run. A prismatic axis tilted off the
    leg line is still decoupled (generic closed form) and equals Newton too."""
    ts = np.linspace(0.0, 1.0, 40, endpoint=False)
    args = ROLL(ts)
    X = lim.X.copy()
    w = X[2, 4, 3:]
    off = np.cross(w, [0.3, -0.5, 0.8])
    X[2, 4, :3] += 1e-3 * np.cross(off, w)  # axis moved by 1 mm: v = -w x q
    pert = _copy_limbs(lim, X)
    assert list(pert.ik_mode) == [1, 1, 0, 1, 1, 1]
    assert 'do not meet' in pert.ik_info[2]
    ra = inverse_dynamics_d2_full(pert, *args)
    rb = inverse_dynamics_d2_full(pert, *args, **NEWTON)
    _compare(ra, rb)
    # the decoupled limbs are unaffected by the change of limb 2
    r0 = inverse_dynamics_d2_full(lim, *args)
    np.testing.assert_allclose(ra.theta[:, :, [0, 1, 3, 4, 5]], r0.theta[:, :, [0, 1, 3, 4, 5]], rtol=0, atol=0)
    assert np.max(np.abs(ra.theta[:, 0, 2] - r0.theta[:, 0, 2])) > 1e-5
    # prismatic direction tilted by ~0.05 rad off the leg line (limb 3): still closed form
    X = lim.X.copy()
    X[3, 2, :3] += [0.03, -0.04, 0.0]
    X[3, 2, :3] /= np.linalg.norm(X[3, 2, :3])
    tilt = _copy_limbs(lim, X)
    assert list(tilt.ik_mode) == [1] * 6
    _compare(inverse_dynamics_d2_full(tilt, *args), inverse_dynamics_d2_full(tilt, *args, **NEWTON))
    # ... and then a leg shorter than the distance from the U centre to the prismatic line has
    # no solution: status 1 (S centre placed on the U centre), th unchanged
    G = tilt.ik_geom[3]
    PR = np.eye(3)
    Pp = G[RK.IKG_A : RK.IKG_A + 3] - G[RK.IKG_CL : RK.IKG_CL + 3]
    th = np.full(6, 0.1)
    assert RK.limb_ik_cf_th(G, PR, Pp, th) == 1 and np.all(th == 0.1)


def test_ik_option_and_structure_reasons(model, lim):
    X, *V = ROLL(0.3)
    with pytest.raises(rd.InputError):
        inverse_dynamics_d2_full(model, X, *V, ik='bogus')
    # the reasons for a non-decoupled limb are named
    Xs = lim.X.copy()
    Xs[1, 1, 3:] = Xs[1, 0, 3:]  # U axes parallel
    assert 'parallel' in decoupled_ik_geometry(lim.BR, lim.Bp, Xs)[2][1]
    Xs = lim.X.copy()
    Xs[1, 2] = Xs[1, 3]  # joint 3 revolute: R R R R R R
    assert 'RRRRRR' in decoupled_ik_geometry(lim.BR, lim.Bp, Xs)[2][1]
