"""MJCF import (robot_dynamics.parsers.mjcf) through MuJoCo's compiler, checked against MuJoCo's
compiled model (placements, cut-frame anchors, mass matrix and bias forces) and Pinocchio's own
MJCF parser (rnea / crba, constraint anchors), and a four-bar written as URDF + sidecar by hand,
as MJCF, and as the files the import writes: the same constrained forward dynamics."""

import os
import threading

import mujoco
import numpy as np
import pinocchio as pin
import pytest
import yaml

import robot_dynamics as rd
from robot_dynamics.parsers.importing import ImportResult, load_imported
from robot_dynamics.parsers.mjcf import import_mjcf

DATA = os.path.join(os.path.dirname(__file__), '..', 'data', 'mjcf')
ROOT = os.path.join(os.path.dirname(__file__), '..', '..')
MIX = os.path.join(DATA, 'closed_chain_mix.xml')
FOUR_BAR = os.path.join(DATA, 'four_bar_connect.xml')
ROBOTIQ = os.path.join(DATA, 'robotiq_2f85.xml')  # MuJoCo Menagerie's 2F-85, meshes removed

J = mujoco.mjtJoint
# a site-based weld and an inactive body-based connect
SITE_WELD = (
    '<mujoco><compiler angle="degree"/><worldbody>'
    '<body name="A" pos="0 0 1"><joint name="a" axis="0 1 0"/><geom size="0.1"/>'
    '<site name="sa" pos="0.3 0.1 0" euler="10 20 30"/>'
    '<body name="B" pos="0.5 0 0"><joint name="b" axis="1 0 0"/><joint name="c" type="slide" axis="0 0 1"/>'
    '<geom size="0.1"/><site name="sb" pos="0.1 0 0.2" euler="5 0 0"/></body></body></worldbody>'
    '<equality><weld name="w" site1="sa" site2="sb"/>'
    '<connect name="off" body1="A" body2="B" anchor="0 0 0" active="false"/></equality></mujoco>'
)


def _imported(path):
    res = import_mjcf(path)
    return res, load_imported(res), mujoco.MjModel.from_xml_path(str(path))


@pytest.fixture(scope='module')
def mix():
    return _imported(MIX)


@pytest.fixture(scope='module', params=[MIX, ROBOTIQ], ids=['mix', 'robotiq_2f85'])
def any_model(request):
    return _imported(request.param)


def _maps(model, mj):
    """(q_of(qpos) -> our q, P: our v index of each MuJoCo dof)."""
    P = np.zeros(mj.nv, dtype=np.int64)
    for j in range(mj.njnt):
        jt, d = model.joint(mj.joint(j).name), int(mj.jnt_dofadr[j])
        nd = {J.mjJNT_FREE: 6, J.mjJNT_BALL: 3}.get(int(mj.jnt_type[j]), 1)
        P[d : d + nd] = np.arange(jt.idx_v, jt.idx_v + nd)

    def q_of(qpos):
        q = np.zeros(model.nq)
        for j in range(mj.njnt):
            jt, a, t = model.joint(mj.joint(j).name), int(mj.jnt_qposadr[j]), int(mj.jnt_type[j])
            if t == J.mjJNT_FREE:
                q[jt.idx_q : jt.idx_q + 7] = np.r_[qpos[a : a + 3], qpos[a + 4 : a + 7], qpos[a + 3]]
            elif t == J.mjJNT_BALL:
                q[jt.idx_q : jt.idx_q + 4] = np.r_[qpos[a + 1 : a + 4], qpos[a]]
            else:
                q[jt.idx_q] = qpos[a] - mj.qpos0[a]
        return q

    return q_of, P


def _eq_name(mj, e):
    """The loop name the import gives equality e."""
    kind = {mujoco.mjtEq.mjEQ_CONNECT: 'connect', mujoco.mjtEq.mjEQ_WELD: 'weld'}.get(int(mj.eq_type[e]), 'joint')
    return mj.eq(e).name or f'{kind}{e}'


def _random_qpos(mj, rng):
    qpos = mj.qpos0.copy()
    for j in range(mj.njnt):
        a, t = int(mj.jnt_qposadr[j]), int(mj.jnt_type[j])
        if t in (J.mjJNT_FREE, J.mjJNT_BALL):
            k = a + 3 if t == J.mjJNT_FREE else a
            if t == J.mjJNT_FREE:
                qpos[a : a + 3] = rng.uniform(-1, 1, 3)
            quat = rng.normal(size=4)
            qpos[k : k + 4] = quat / np.linalg.norm(quat)
        else:
            qpos[a] = rng.uniform(-1.5, 1.5)
    return qpos


def _pose(T):
    return T[:3, 3], T[:3, :3]


def test_notes_name_the_decisions(mix):
    res, model, _ = mix
    assert isinstance(res, ImportResult) and res.name == 'closed_chain_mix' and res.source == MIX
    text = '\n'.join(res.notes)
    for words in (
        "'knee_strut' (connect by sites 'ankle' and 'strut_tip') -> spherical loop",
        "'shank_torso' (connect by bodies 'shank' and 'torso') -> spherical loop",
        "'flap_lock' (weld by bodies 'flap' and 'torso') -> weld loop",
        'torquescale 3',
        "-> coupling loop 'gear'",
        "actuator 'knee_servo': position servo (kp 100)",
        "actuator 'hip_x_motor': motor (force), gear 50",
        "joint 'root': free -> URDF floating joint",
        'armature 0.01 dropped',
        '8 geoms',
    ):
        assert words in text, words
    assert res.sidecar['joint_types'] == {'strut_ball': 'spherical'}
    assert res.sidecar['actuated'] == ['hip_x', 'knee', 'pinion_joint']
    assert [lp.type for lp in model.loops] == ['spherical', 'spherical', 'weld', 'coupling']
    assert model.loops[3].coupling == ('wheel_joint', 'pinion_joint', -0.5, 0.1)
    assert model.joint('root').kind == 'free_flyer' and model.joint('strut_ball').kind == 'spherical'
    assert model.nq == mj_nq(mix) and model.nv == mix[2].nv


def mj_nq(mix):
    return mix[2].nq


def test_placements_and_anchors_agree_with_mujoco(any_model):
    """Every body frame and every cut frame at qpos0 and at random qpos: our forward kinematics
    against MuJoCo's mj_kinematics (xpos / xmat, site_xpos / site_xmat, the equality anchors)."""
    _, model, mj = any_model
    q_of, _ = _maps(model, mj)
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(11)
    for k in range(4):
        d.qpos[:] = mj.qpos0 if k == 0 else _random_qpos(mj, rng)
        mujoco.mj_kinematics(mj, d)
        T = rd.forward_kinematics(model, q_of(d.qpos))
        for b in range(1, mj.nbody):
            p, R = _pose(T[mj.body(b).name])
            np.testing.assert_allclose(p, d.xpos[b], rtol=0, atol=1e-12)
            np.testing.assert_allclose(R, d.xmat[b].reshape(3, 3), rtol=0, atol=1e-12)
        X = lambda b: (d.xpos[b], d.xmat[b].reshape(3, 3))  # noqa: E731
        for e in range(mj.neq):
            data, o1, o2 = mj.eq_data[e], int(mj.eq_obj1id[e]), int(mj.eq_obj2id[e])
            if int(mj.eq_type[e]) == mujoco.mjtEq.mjEQ_JOINT:
                continue
            name = _eq_name(mj, e)
            pa, Ra = _pose(T[f'{name}_a'])
            pb, Rb = _pose(T[f'{name}_b'])
            if int(mj.eq_objtype[e]) == mujoco.mjtObj.mjOBJ_SITE:
                want = [(d.site_xpos[o], d.site_xmat[o].reshape(3, 3)) for o in (o1, o2)]
            elif int(mj.eq_type[e]) == mujoco.mjtEq.mjEQ_CONNECT:
                want = [(X(o)[0] + X(o)[1] @ data[3 * i : 3 * i + 3], None) for i, o in enumerate((o1, o2))]
            else:  # weld: body1's relpose meets body2's anchor
                rel = np.zeros(9)
                mujoco.mju_quat2Mat(rel, data[6:10])
                want = [
                    (X(o1)[0] + X(o1)[1] @ data[3:6], X(o1)[1] @ rel.reshape(3, 3)),
                    (X(o2)[0] + X(o2)[1] @ data[0:3], X(o2)[1]),
                ]
            for (p, R), (wp, wR) in zip(((pa, Ra), (pb, Rb)), want):
                np.testing.assert_allclose(p, wp, rtol=0, atol=1e-12)
                if wR is not None:
                    np.testing.assert_allclose(R, wR, rtol=0, atol=1e-12)
    # MuJoCo's own constraint residual (efc_pos, position rows of each connect / weld) is the
    # separation of our cut frames
    d.qpos[:] = _random_qpos(mj, rng)
    mujoco.mj_forward(mj, d)
    T = rd.forward_kinematics(model, q_of(d.qpos))
    checked = 0
    for lp in model.loops:
        if lp.coupling is not None:
            continue
        e = next(k for k in range(mj.neq) if _eq_name(mj, k) == lp.name)
        rows = np.flatnonzero((d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY) & (d.efc_id == e))
        np.testing.assert_allclose(d.efc_pos[rows[:3]], T[lp.frame_a][:3, 3] - T[lp.frame_b][:3, 3], rtol=0, atol=1e-12)
        checked += 1
    assert checked == sum(lp.coupling is None for lp in model.loops) > 0
    # body-based connects and welds are closed at qpos0 (MuJoCo computes their second anchor there)
    errs = rd.loop_errors(model, q_of(mj.qpos0))
    closed = {'shank_torso', 'flap_lock'} if mj.nbody == 9 else {'connect0', 'connect1', 'joint2'}
    assert max(max(errs[n]) for n in closed) < 1e-12
    if mj.nbody == 9:
        assert errs['knee_strut'][0] > 1e-3  # the site-based one is not


def test_mass_matrix_and_bias_agree_with_mujoco(any_model):
    """M and C qd + g against MuJoCo's (armature removed; MuJoCo's free-joint linear velocity is
    in the world frame: qvel = T v)."""
    _, model, mj = any_model
    free = int(mj.jnt_type[0]) == J.mjJNT_FREE
    q_of, P = _maps(model, mj)
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(5)
    assert np.sum(mj.body_mass[mj.body_weldid != 0]) == pytest.approx(np.sum(model.mass), rel=1e-14)
    for _ in range(4):
        d.qpos[:] = _random_qpos(mj, rng)
        v = rng.normal(size=model.nv)
        q = q_of(d.qpos)
        Rm = np.zeros(9)
        mujoco.mju_quat2Mat(Rm, d.qpos[3:7] if free else [1.0, 0, 0, 0])
        Rm = Rm.reshape(3, 3)
        T = np.eye(mj.nv)
        if free:
            T[:3, :3] = Rm
        vm = v[P]  # our v in MuJoCo's dof order (free joint: body-frame linear velocity)
        d.qvel[:] = T @ vm
        mujoco.mj_forward(mj, d)
        Mf = np.zeros((mj.nv, mj.nv))
        mujoco.mj_fullM(mj, d, Mf)
        Mf -= np.diag(mj.dof_armature)
        M_ours = T.T @ Mf @ T
        Tdot_v = np.zeros(mj.nv)
        if free:
            Tdot_v[:3] = Rm @ np.cross(vm[3:6], vm[:3])
        h_ours = T.T @ (d.qfrc_bias + Mf @ Tdot_v)
        M = rd.crba(model, q)
        h = rd.nonlinear_effects(model, q, v)
        np.testing.assert_allclose(M[np.ix_(P, P)], M_ours, rtol=0, atol=1e-12 * np.abs(M_ours).max())
        np.testing.assert_allclose(h[P], h_ours, rtol=0, atol=1e-12 * np.abs(h_ours).max())


def _explicit_inertials(path, out):
    """The MJCF at path with every body's compiled inertia written as an explicit <inertial>
    (Pinocchio's MJCF parser does not derive inertias from geoms), saved to out."""
    spec = mujoco.MjSpec.from_file(str(path))
    mj = spec.compile()
    for body in spec.bodies[1:]:
        i = mj.body(body.name).id
        body.mass, body.ipos, body.iquat, body.inertia = (
            mj.body_mass[i],
            mj.body_ipos[i],
            mj.body_iquat[i],
            mj.body_inertia[i],
        )
        body.fullinertia = [np.nan] * 6
        body.explicitinertial = True
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    out.write_text(spec.to_xml())
    return str(out)


def test_rnea_crba_and_constraints_agree_with_pinocchio(tmp_path):
    """Pinocchio's own MJCF parser on the same file (inertias explicit): crba (armature
    removed) and rnea at random states, and the world placements of the anchors of its
    constraint models."""
    path = _explicit_inertials(MIX, tmp_path / 'mix_explicit.xml')
    mj = mujoco.MjModel.from_xml_path(path)
    model = load_imported(import_mjcf(path))
    q_of, P = _maps(model, mj)
    pm = pin.buildModelFromMJCF(path)
    pd = pm.createData()
    rng = np.random.default_rng(9)

    def q_pin(qpos):
        q = qpos.copy()
        q[3:7] = np.r_[qpos[4:7], qpos[3]]
        for j in range(mj.njnt):
            if int(mj.jnt_type[j]) == J.mjJNT_BALL:
                a = int(mj.jnt_qposadr[j])
                q[a : a + 4] = np.r_[qpos[a + 1 : a + 4], qpos[a]]
        return q

    for _ in range(4):
        qpos = _random_qpos(mj, rng)
        q, qp = q_of(qpos), q_pin(qpos)
        v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T - np.diag(pm.armature)
        tau_p = pin.rnea(pm, pd, qp, v[P], a[P]) - pm.armature * a[P]
        M = rd.crba(model, q)[np.ix_(P, P)]
        tau = rd.rnea(model, q, v, a)[P]
        np.testing.assert_allclose(M, Mp, rtol=0, atol=1e-9 * np.abs(Mp).max())
        np.testing.assert_allclose(tau, tau_p, rtol=0, atol=1e-9 * np.abs(tau_p).max())
    if not hasattr(pin, 'buildModelsFromMJCF'):
        return
    pm, cms = pin.buildModelsFromMJCF(path, contacts=True, geometry_types=[])
    pd = pm.createData()
    qpos = _random_qpos(mj, rng)
    pin.forwardKinematics(pm, pd, q_pin(qpos))
    T = rd.forward_kinematics(model, q_of(qpos))
    loops = [lp for lp in model.loops if lp.coupling is None]
    assert len(cms) == len(loops)
    # in the torso frame: Pinocchio's free-flyer composes the body's MJCF pose with q
    root = np.linalg.inv(T['torso'])
    for cm, lp in zip(cms, loops):
        pairs = ((cm.joint1_id, cm.joint1_placement, lp.frame_a), (cm.joint2_id, cm.joint2_placement, lp.frame_b))
        for jid, X, frame in pairs:
            W = pd.oMi[1].actInv(pd.oMi[jid] * X)
            ours = root @ T[frame]
            np.testing.assert_allclose(ours[:3, 3], W.translation, rtol=0, atol=1e-12)
            if lp.type == 'weld':
                np.testing.assert_allclose(ours[:3, :3], W.rotation, rtol=0, atol=1e-12)


def test_four_bar_in_three_forms(tmp_path):
    """The four-bar by hand (urdf/four_bar.urdf + sidecar, revolute cut), as MJCF with a connect
    (spherical cut, q offset by the joints' ref), and as the URDF + sidecar files the import
    writes: the same constrained forward dynamics to 1e-12 (relative)."""
    hand = rd.load_model(os.path.join(ROOT, 'urdf', 'four_bar.urdf'))
    res = import_mjcf(FOUR_BAR)
    imported = load_imported(res)
    (tmp_path / 'four_bar_mj.urdf').write_text(res.urdf)
    (tmp_path / 'four_bar_mj.loops.yaml').write_text(yaml.safe_dump(res.sidecar))
    written = rd.load_model(tmp_path / 'four_bar_mj.urdf')
    assert written.loops_source == str(tmp_path / 'four_bar_mj.loops.yaml')
    assert imported.joint_names == hand.joint_names == written.joint_names
    assert imported.actuated == ['crank_joint'] and [lp.type for lp in imported.loops] == ['spherical']
    ref = hand.reference_q()
    np.testing.assert_allclose(rd.loop_residual(imported, np.zeros(3)), 0.0, atol=1e-15)
    rng = np.random.default_rng(2)
    A = rd.constraint_jacobian(hand, ref)
    for _ in range(4):
        qd, tau = rng.normal(size=3), rng.normal(size=3)
        qd -= np.linalg.pinv(A) @ (A @ qd)
        want = rd.constrained_forward_dynamics(hand, ref, qd, tau).qdd
        scale = np.abs(want).max()
        for m in (imported, written):
            got = rd.constrained_forward_dynamics(m, ref - ref, qd, tau).qdd
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * scale)
        # the tree alone moves differently: the comparison sees the loop
        assert np.abs(rd.forward_dynamics(imported, np.zeros(3), qd, tau) - want).max() > 1e-3 * scale


@pytest.mark.parametrize(
    'body, element, words',
    [
        (
            '<tendon><fixed name="t"><joint joint="a" coef="1"/></fixed></tendon>'
            '<equality><tendon name="te" tendon1="t"/></equality>',
            "equality 'te' <tendon>",
            'no counterpart',
        ),
        (
            '<equality><joint name="poly" joint1="a" joint2="b" polycoef="0 1 0.5 0 0"/></equality>',
            "equality 'poly' <joint polycoef>",
            'nonlinear polycoef terms',
        ),
        ('<equality><joint name="lock" joint1="a"/></equality>', "equality 'lock' <joint>", 'locks the joint'),
    ],
)
def test_unsupported_equalities_are_refused_naming_them(tmp_path, body, element, words):
    path = tmp_path / 'bad.xml'
    path.write_text(
        '<mujoco><worldbody><body name="A"><joint name="a"/><geom size="0.1"/>'
        '<body name="B" pos="1 0 0"><joint name="b"/><geom size="0.1"/></body></body></worldbody>' + body + '</mujoco>'
    )
    with pytest.raises(rd.ModelError) as ei:
        import_mjcf(path)
    assert ei.value.source == str(path) and ei.value.element == element and words in str(ei.value)


def test_malformed_file_names_file_and_mujoco_message(tmp_path):
    path = tmp_path / 'broken.xml'
    path.write_text('<mujoco><worldbody><body name="A"><joint type="hinge" axis="0 0 0"/></body></worldbody></mujoco>')
    with pytest.raises(rd.ModelError) as ei:
        import_mjcf(path)
    assert str(ei.value).startswith(f'{path}: MuJoCo cannot compile it: ') and 'axis' in str(ei.value).lower()
    with pytest.raises(rd.ModelError, match='no such MJCF file'):
        import_mjcf(tmp_path / 'missing.xml')


def test_load_imported_errors_name_the_imported_file():
    res = import_mjcf(FOUR_BAR)
    bad = ImportResult(res.name, res.urdf.replace('coupler_rocker_b', 'x', 1), res.sidecar, [], res.source)
    with pytest.raises(rd.ModelError) as ei:
        load_imported(bad)
    assert str(ei.value).startswith(f'{FOUR_BAR} (imported URDF): ')
    side = {**res.sidecar, 'actuated': ['crank']}
    with pytest.raises(rd.LoopSpecError) as ei:
        load_imported(ImportResult(res.name, res.urdf, side, [], res.source))
    assert str(ei.value).startswith(f'{FOUR_BAR} (imported sidecar): actuated[0]: ')


def test_robotiq_2f85_linkages_and_coupling():
    """MuJoCo Menagerie's 2F-85: two body-based connects close the finger linkages, the joint
    equality couples the drivers, the tendon actuator drives both drivers; 3 degrees of freedom."""
    res, model, _ = _imported(ROBOTIQ)
    assert [(lp.name, lp.type) for lp in model.loops] == [
        ('connect0', 'spherical'),
        ('connect1', 'spherical'),
        ('joint2', 'coupling'),
    ]
    assert model.loops[2].coupling == ('right_driver_joint', 'left_driver_joint', 1.0, 0.0)
    assert model.actuated == ['right_driver_joint', 'left_driver_joint']
    text = '\n'.join(res.notes)
    assert "fixed tendon 'split' = 0.5 'right_driver_joint' + 0.5 'left_driver_joint'" in text
    assert 'stiffness 0.05 dropped' in text and '6 contact excludes' in text
    q = np.zeros(model.nq)
    A = rd.constraint_jacobian(model, q)
    assert model.nv - np.linalg.matrix_rank(A, tol=1e-9) == 3
    # a closed configuration: drivers and spring links at 0.3 rad, the rest assembled; the
    # mirrored fingers take the same joint values
    guess = np.zeros(model.nq)
    held = ['left_driver_joint', 'left_spring_link_joint', 'right_spring_link_joint']
    for j in held:
        guess[model.joint_index(j)] = 0.3
    qa = rd.assemble(model, q_guess=guess, fixed=held).q
    np.testing.assert_allclose(rd.loop_residual(model, qa), 0.0, atol=1e-12)
    for part in ('driver', 'coupler', 'follower'):
        right, left = (qa[model.joint_index(f'{side}_{part}_joint')] for side in ('right', 'left'))
        assert right == pytest.approx(left, abs=1e-9) and (part == 'driver' or abs(right) > 1e-3)


def test_site_weld_is_the_site_frames_and_inactive_equalities_are_skipped(tmp_path):
    """A site-based weld holds the two site frames together (MuJoCo ignores relpose there):
    MuJoCo's efc_pos position rows are the separation of our cut frames, and the relative
    rotation of the cut frames is that of the sites; an inactive equality is only noted."""
    path = tmp_path / 'site_weld.xml'
    path.write_text(SITE_WELD)
    res, model, mj = _imported(path)
    assert [lp.name for lp in model.loops] == ['w'] and "equality 'off' (connect): inactive" in '\n'.join(res.notes)
    d = mujoco.MjData(mj)
    for qpos in ([0.0, 0.0, 0.0], [0.3, -0.2, 0.1]):
        d.qpos[:] = qpos
        mujoco.mj_forward(mj, d)
        T = rd.forward_kinematics(model, np.array(qpos))
        rows = np.flatnonzero(d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY)
        np.testing.assert_allclose(d.efc_pos[rows[:3]], T['w_a'][:3, 3] - T['w_b'][:3, 3], rtol=0, atol=1e-12)
        Rs = d.site_xmat[0].reshape(3, 3).T @ d.site_xmat[1].reshape(3, 3)
        np.testing.assert_allclose(T['w_a'][:3, :3].T @ T['w_b'][:3, :3], Rs, rtol=0, atol=1e-12)
        assert np.abs(d.efc_pos[rows[:3]]).max() > 0.1
    assert len(import_mjcf(path, drop_inactive=False).sidecar['loops']) == 2


def _in_fresh_thread(fn, seconds=60):
    """fn() in a new thread (MuJoCo's stuck state after a reader failure is per thread): its
    result, or an AssertionError when it has not returned within the time."""
    out = {}

    def run():
        try:
            out['value'] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            out['error'] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f'{fn.__name__} did not return within {seconds} s'
    if 'error' in out:
        raise out['error']
    return out.get('value')


BLANK_ANCHOR = (
    '<mujoco><worldbody><body name="A"><joint name="a"/><geom size="0.1"/>'
    '<body name="B" pos="1 0 0"><joint name="b"/><geom size="0.1"/></body></body></worldbody>\n'
    '<equality><connect name="pin" body1="A" body2="B" anchor=" "/></equality></mujoco>'
)


def test_blank_connect_anchor_is_refused_before_mujoco_reads_it(tmp_path):
    """MuJoCo's XML reader fails on a blank connect anchor without a message, and then
    MjModel.from_xml_path never returns in that thread: the import names the connect itself
    (in the file and in an included one) and MuJoCo keeps working in the thread."""
    bad = tmp_path / 'blank_anchor.xml'
    bad.write_text(BLANK_ANCHOR)
    top = tmp_path / 'top.xml'
    top.write_text('<mujoco><include file="blank_anchor.xml"/></mujoco>')

    def sequence():
        msgs = []
        for path in (bad, top):
            with pytest.raises(rd.ModelError) as ei:
                import_mjcf(path)
            msgs.append(str(ei.value))
        mujoco.MjModel.from_xml_path(FOUR_BAR)  # MuJoCo still compiles in this thread
        return msgs

    direct, included = _in_fresh_thread(sequence)
    assert direct.startswith(f"{bad}: equality 'pin' <connect anchor> (line 2): empty anchor"), direct
    assert included.startswith(f"{top}: included file '{bad}': equality 'pin' <connect anchor> (line 2)"), included


def test_empty_equality_site_is_refused_naming_the_equality(tmp_path):
    """An empty site2 makes MuJoCo's compiler say only 'eq_obj2id out of bounds'."""
    path = tmp_path / 'empty_site.xml'
    path.write_text(SITE_WELD.replace('site2="sb"', 'site2=""'))
    with pytest.raises(rd.ModelError) as ei:
        import_mjcf(path)
    assert str(ei.value).startswith(f"{path}: equality 'w' <weld site2> (line 1): empty site2 (a site name expected)")


def test_import_compiles_after_mujoco_reader_failed_in_the_thread():
    """After MuJoCo's reader failed without a message (here: MuJoCo called directly on a blank
    connect anchor), MjModel.from_xml_string / from_xml_path hang in that thread; the import
    compiles through MjSpec, which still works there."""

    def sequence():
        with pytest.raises(RuntimeError, match='unknown exception'):
            mujoco.MjModel.from_xml_string(BLANK_ANCHOR)
        return load_imported(import_mjcf(FOUR_BAR)).nq

    assert _in_fresh_thread(sequence) == 3
