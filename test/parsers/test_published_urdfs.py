"""Every URDF of ``example-robot-data`` that Pinocchio loads loads here, with Pinocchio's tree
dynamics.

All ``*.urdf`` files below the package's ``robots`` directory (fixed base, as the file states
it; the floating-base ones with a free-flyer root are test/algorithms/test_floating_base.py).
For each file Pinocchio (``buildModelFromUrdf``, meshes never opened) loads, ``rd.load_model``
loads it too (a :class:`rd.ModelWarning` for the published non-physical inertias is allowed)
and, at 3 random configurations, RNEA, CRBA, forward dynamics and the placement of every link
frame equal Pinocchio's. Joints are mapped by name (q and v slices); a ``continuous`` joint is
one angle here and (cos, sin) in Pinocchio. A file Pinocchio refuses is refused here too, with
a :class:`rd.ModelError` naming the file.
"""

import glob
import os
import warnings

import numpy as np
import pytest

import example_robot_data as erd
import robot_dynamics as rd

pin = pytest.importorskip('pinocchio')

ROBOTS = erd.getModelPath('talos_data/robots/talos_reduced.urdf')
FILES = sorted(os.path.relpath(f, ROBOTS) for f in glob.glob(os.path.join(ROBOTS, '**', '*.urdf'), recursive=True))
TOL = 1e-9


def test_the_whole_collection_is_found():
    assert len(FILES) >= 50, FILES
    for name in ('talos_reduced.urdf', 'solo12.urdf', 'panda.urdf', 'tiago_dual.urdf', 'allegro_left_hand.urdf'):
        assert any(f.endswith('/' + name) for f in FILES), name


def _pin(path):
    try:
        return pin.buildModelFromUrdf(path)
    except (ValueError, RuntimeError):  # (pinocchio's exception for an unreadable URDF)
        return None


def _maps(m, pm):
    """Per our joint: (our q slice, our v slice, Pinocchio idx_q, idx_v, nq, continuous?)."""
    out = []
    for jt in m.joints:
        assert pm.existJointName(jt.name), jt.name
        pj = pm.joints[pm.getJointId(jt.name)]
        assert pj.nv == jt.nv, jt
        cont = jt.nq == 1 and pj.nq == 2  # continuous: (cos q, sin q)
        assert cont or pj.nq == jt.nq, jt
        out.append((jt.q_slice, jt.v_slice, pj.idx_q, pj.idx_v, pj.nq, cont))
    return out


def _to_pin(maps, q, x, nq, nv):
    """Our (q, [x ...]) -> Pinocchio's q and per-velocity arrays."""
    qp, xp = np.zeros(nq), [np.zeros(nv) for _ in x]
    for qs, vs, iq, iv, pnq, cont in maps:
        qp[iq : iq + pnq] = [np.cos(q[qs][0]), np.sin(q[qs][0])] if cont else q[qs]
        for a, b in zip(xp, x):
            a[iv : iv + vs.stop - vs.start] = b[vs]
    return qp, xp


def _perm(maps, nv):
    """Index array p: our v = Pinocchio's v[p]."""
    p = np.empty(nv, int)
    for _, vs, _, iv, _, _ in maps:
        p[vs] = np.arange(iv, iv + vs.stop - vs.start)
    return p


def _rel(x, y):
    return np.abs(x - y).max() / max(1.0, np.abs(y).max())


@pytest.mark.parametrize('rel', FILES)
def test_loads_and_tree_dynamics_match_pinocchio(rel):
    path = os.path.join(ROBOTS, rel)
    pm = _pin(path)
    if pm is None:  # refused here as well, naming the file
        with pytest.raises(rd.ModelError) as exc:
            rd.load_model(path, loops=False)
        assert str(exc.value).startswith(path + ': '), exc.value
        return
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter('always')
        m = rd.load_model(path, loops=False)
    for w in rec:  # only the documented warning, naming the file
        assert issubclass(w.category, rd.ModelWarning) and str(w.message).startswith(path + ': '), (rel, w)
    assert m.nv == pm.nv, rel
    body = {f.name for f in pm.frames if f.type == pin.FrameType.BODY}
    assert set(m.frame_names) == body, rel
    pd = pm.createData()
    if m.nv == 0:
        return
    maps = _maps(m, pm)
    pv = _perm(maps, m.nv)
    rng = np.random.default_rng(sum(map(ord, rel)))
    for _ in range(3):
        q = m.random_configuration(rng)
        v, a, tau = (rng.standard_normal(m.nv) for _ in range(3))
        qp, (vp, ap, tp) = _to_pin(maps, q, (v, a, tau), pm.nq, pm.nv)
        assert _rel(rd.rnea(m, q, v, a), pin.rnea(pm, pd, qp, vp, ap)[pv]) <= TOL, rel
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        M = rd.crba(m, q)
        assert _rel(M, Mp[np.ix_(pv, pv)]) <= TOL, rel
        # link frame placements (each frame of ours is a BODY frame of Pinocchio)
        pin.framesForwardKinematics(pm, pd, qp)
        T = rd.forward_kinematics(m, q)
        for name in m.frame_names:
            oMf = pd.oMf[pm.getFrameId(name, pin.BODY)]
            assert _rel(T[name][:3, :3], oMf.rotation) <= TOL and _rel(T[name][:3, 3], oMf.translation) <= TOL, name
        # forward dynamics: relative in the accelerations where M is well conditioned, else in
        # effort space (the residual over ||M|| ||qdd|| + ||tau - h||: hands with gram-scale
        # finger links reach cond(M) 1e10, and joint space then carries cond * eps)
        try:
            qdd = rd.forward_dynamics(m, q, v, tau)
        except rd.SingularMassMatrixError as exc:
            assert np.linalg.eigvalsh(M).min() <= 1e-12 * np.abs(M).max(), (rel, exc)
            continue
        qdd_p = pin.aba(pm, pd, qp, vp, tp)[pv]
        b = tau - rd.rnea(m, q, v, np.zeros(m.nv))
        scale = np.abs(M).sum(axis=1).max() * np.abs(qdd).max() + np.abs(b).max()
        assert np.abs(M @ (qdd - qdd_p)).max() <= 1e-12 * scale, rel
        if np.linalg.cond(M) < 1e6:
            assert _rel(qdd, qdd_p) <= TOL, rel


def test_strict_refuses_the_published_non_physical_inertias_and_names_the_link():
    """The same files under ``strict=True``: those that warned are refused (the message names
    the file and a link or joint), the others load unchanged."""
    refused = 0
    for rel in FILES:
        path = os.path.join(ROBOTS, rel)
        if _pin(path) is None:
            continue
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter('always')
            m = rd.load_model(path, loops=False)
        try:
            ms = rd.load_model(path, loops=False, strict=True)
        except rd.ModelError as exc:
            assert rec, (rel, exc)
            assert str(exc).startswith(path + ': '), exc
            assert exc.element.startswith(("link '", "joint '")) and 'strict=True' in str(exc), exc
            refused += 1
            continue
        assert not rec, rel
        np.testing.assert_array_equal(ms.inertia_com, m.inertia_com)
    assert refused >= 10
