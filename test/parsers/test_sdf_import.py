"""SDFormat import (robot_dynamics.parsers.sdf) of Cassie (example-robot-data) and of small files.

Independent routes:

* the SDF itself, read here with a few lines of lxml: at the SDF pose every link of the model
  is where the file puts it, every joint axis points where the file says, the centre of mass
  is the file's;
* Pinocchio's URDF parser on the exported URDF (its frames give the cut frames' placements)
  and its ``constraintDynamics`` with the loops as 3-D rigid constraints;
* Pinocchio's mass matrix, bias forces and frame Jacobians and accelerations in a dense
  null-space solve of the same rows as ours (``_pin_kkt``): the projected inverse dynamics
  and the accelerations all along a 2 s simulation;
* a passive simulation keeps the loops closed.
"""

import glob
import math
import os

import numpy as np
import pytest
from lxml import etree

import robot_dynamics as rd
from pin_oracle import to_pin_q
from robot_dynamics.algorithms import projection as pj
from robot_dynamics.parsers.importing import ImportResult, import_description, load_imported
from robot_dynamics.parsers.sdf import import_sdf

pin = pytest.importorskip('pinocchio')
erd = pytest.importorskip('example_robot_data')


def cassie_dir():
    root = os.path.dirname(erd.__file__)
    for up in range(1, 7):
        cand = os.path.join(root, *(['..'] * up), 'share', 'example-robot-data', 'robots', 'cassie_description')
        if os.path.isdir(cand):
            return os.path.normpath(os.path.join(cand, 'robots'))
    found = glob.glob(os.path.join(os.sep, '**', 'cassie_description', 'robots'), recursive=True)
    if not found:
        pytest.skip('Cassie (example-robot-data) not found')
    return found[0]


CASSIE = os.path.join(cassie_dir(), 'cassie_v2.sdf')


def rpy(v):
    return pin.rpy.rpyToMatrix(*v)


def sdf_links_and_joints(path):
    """Model-frame poses of the links (4x4) and the joints' model-frame axes and positions,
    read straight from a Cassie SDF (SDF 1.6: link poses in the model frame, joint poses in
    the child link, axes in the joint frame or, with use_parent_model_frame, the model frame)."""
    model = etree.parse(path).getroot().find('model')

    def pose(el):
        p = el.find('pose')
        v = [float(x) for x in p.text.split()] if p is not None and p.text else [0.0] * 6
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = rpy(v[3:]), v[:3]
        return T

    links = {lk.get('name'): pose(lk) for lk in model.findall('link')}
    joints = {}
    for j in model.findall('joint'):
        X = links[j.findtext('child').strip()] @ pose(j)
        ax = j.find('axis')
        a = np.array([float(x) for x in ax.findtext('xyz').split()])
        a /= np.linalg.norm(a)
        if (ax.findtext('use_parent_model_frame') or '').strip() not in ('1', 'true'):
            a = X[:3, :3] @ a
        joints[j.get('name')] = (j.get('type'), a, X[:3, 3])
    masses = {
        lk.get('name'): (float(lk.findtext('inertial/mass')), lk.find('inertial')) for lk in model.findall('link')
    }
    com = sum(m * (links[n] @ pose(el) @ [0, 0, 0, 1])[:3] for n, (m, el) in masses.items())
    return links, joints, com / sum(m for m, _ in masses.values()), sum(m for m, _ in masses.values())


@pytest.fixture(scope='module')
def cassie():
    res = import_sdf(CASSIE)
    return res, load_imported(res)


@pytest.fixture(scope='module')
def sdf_pose(cassie):
    """The SDF pose: the zero configuration, the pelvis at its model-frame pose."""
    _, m = cassie
    q = m.reference_q()
    q[:3] = sdf_links_and_joints(CASSIE)[0]['pelvis'][:3, 3]
    return q


def test_cassie_imports_both_legs_with_a_free_flyer_and_four_loops(cassie):
    res, m = cassie
    assert isinstance(res, ImportResult) and res.name == 'cassie' and res.source == CASSIE
    assert m.joints[0].name == 'root_joint' and m.joints[0].kind == 'free_flyer'
    assert (m.nq, m.nv) == (29, 28)
    loops = {lp.name: lp.type for lp in m.loops}
    for side in ('left', 'right'):
        # the Achilles rod hangs on the heel spring (a joint in its own direction), its ball
        # joint at the hip closes; the plantar rod's ball joint on the foot closes a planar
        # four-bar: the row normal to its plane is redundant
        assert loops[f'{side}-pitch-rod-joint'] == 'spherical'
        assert loops[f'{side}-plantar-foot-joint'] == 'point_on_line'
        for j in ('roll-op', 'yaw-op', 'pitch-op', 'knee-op', 'knee-shin-joint', 'foot-op'):
            assert f'{side}-{j}' in m.joint_names
    assert len(m.loops) == 4
    text = '\n'.join(res.notes)
    assert 'spanning tree: 22 joint(s)' in text and "'pelvis'" in text and 'free_flyer' in text
    assert 'left-plantar-foot-joint' in text and 'point_on_line' in text


def test_links_and_joint_axes_at_the_sdf_pose_are_the_files(cassie, sdf_pose):
    _, m = cassie
    links, joints, com, mass = sdf_links_and_joints(CASSIE)
    T = rd.forward_kinematics(m, sdf_pose)
    for name, X in links.items():
        assert np.abs(T[name] - X).max() <= 1e-12, name
    from robot_dynamics.algorithms.kinematics import joint_placements

    Rw, pw = joint_placements(m, sdf_pose)
    checked = 0
    for name, (jt, a, p) in joints.items():
        if name not in m.joint_names:
            continue
        i = m.v_index(name).start  # axes and placements are per velocity coordinate
        assert jt in ('revolute', 'prismatic')
        assert np.abs(Rw[i] @ m.axes[i] - a).max() <= 1e-12, name
        assert np.abs(pw[i] - p).max() <= 1e-12, name
        checked += 1
    assert checked == 22
    assert abs(m.mass.sum() - mass) <= 1e-12 * mass
    pm, pd = _pinocchio(cassie)[:2]
    assert np.abs(pin.centerOfMass(pm, pd, _to_pin(m, pm, sdf_pose)) - com).max() <= 1e-12


@pytest.mark.filterwarnings('ignore::robot_dynamics.errors.ModelWarning')  # its rotors' inertias
def test_axes_in_the_model_frame_of_the_sdf_with_gearboxes():
    # cassie.sdf gives its axes in the model frame (SDF 1.6 use_parent_model_frame)
    path = os.path.join(cassie_dir(), 'cassie.sdf')
    m = load_imported(import_sdf(path))
    links, joints, _, _ = sdf_links_and_joints(path)
    q = m.reference_q()
    q[:3] = links['pelvis'][:3, 3]
    T = rd.forward_kinematics(m, q)
    assert all(np.abs(T[n] - X).max() <= 1e-12 for n, X in links.items())
    from robot_dynamics.algorithms.kinematics import joint_placements

    Rw, pw = joint_placements(m, q)
    tree = [n for n in joints if n in m.joint_names]
    assert len(tree) == 32  # the one-DOF joints of the tree (the ball joints are spherical)
    for name in tree:
        i = m.v_index(name).start
        assert np.abs(Rw[i] @ m.axes[i] - joints[name][1]).max() <= 1e-12, name
        assert np.abs(pw[i] - joints[name][2]).max() <= 1e-12, name


def test_the_sdf_pose_is_closed_and_assembly_keeps_it(cassie, sdf_pose):
    _, m = cassie
    assert max(max(e) for e in rd.loop_errors(m, sdf_pose).values()) <= 1e-15
    a = rd.assemble(m, q_guess=sdf_pose, fixed='none')
    assert a.residual <= 1e-12 and np.abs(a.q - sdf_pose).max() <= 1e-12
    # the rank of the closure: 10 independent rows (3 + 3 + 2 + 2), 28 - 10 = 18 DOF
    assert np.linalg.matrix_rank(rd.constraint_jacobian(m, sdf_pose), tol=1e-9) == 10


_to_pin = to_pin_q


_PIN = {}


def _pinocchio(cassie, tmp=None):
    """Pinocchio's model of the exported URDF (free-flyer root) and the loops as 3-D rigid
    constraints between the cut frames, which its URDF parser places (fixed joints -> frames)."""
    res, m = cassie
    if 'model' not in _PIN:
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'cassie.urdf')
            with open(path, 'w') as fh:
                fh.write(res.urdf)
            pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
        assert [pm.names[i] for i in range(1, pm.njoints)] == [j.name for j in m.joints]
        cms = pin.StdVec_RigidConstraintModel()
        for lp in m.loops:
            sides = []
            for f in (lp.frame_a, lp.frame_b):
                fr = pm.frames[pm.getFrameId(f)]
                sides += [fr.parentJoint, fr.placement]
            assert lp.type in ('spherical', 'point_on_line')
            cms.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, *sides, pin.ReferenceFrame.LOCAL))
        pd = pm.createData()
        cds = pin.StdVec_RigidConstraintData([c.createData() for c in cms])
        pin.initConstraintDynamics(pm, pd, cms, cds)
        _PIN['model'] = (pm, pd, cms, cds)
    return _PIN['model']


def _states(m, q0, n, seed=1):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        q = q0.copy()
        q[:7] = m.joints[0].model.random(rng)
        q[7:] += rng.uniform(-0.02, 0.02, m.nq - 7)
        q = pj.assemble(m, q_guess=q, fixed='none').q
        qd = pj.project_velocity(m, q, rng.standard_normal(m.nv))
        out.append((q, qd, rng.standard_normal(m.nv)))
    return out


def test_constrained_forward_dynamics_equals_pinocchio_constraint_dynamics(cassie, sdf_pose):
    _, m = cassie
    pm, pd, cms, cds = _pinocchio(cassie)
    # The point_on_line loops leave out the row normal to the plantar four-bar's plane, which
    # Pinocchio's CONTACT_3D keeps: exactly redundant on the left leg; on the right leg the
    # file's rounded numbers tilt the plane by a few 1e-10, so that row's gradient is ~1e-10.
    # The proximal solver with mu = 1e-2 converges on the well-conditioned directions
    # (Delassus eigenvalues >= 7e-3, rate mu / (g + mu) per iteration) and moves the multiplier
    # of that one by at most 200 |r| / mu: it stays unforced, as in the imported model.
    # Its convergence rate on the others falls with sigma_min(A): the states are near the SDF
    # pose, where sigma_min(A) >= 5e-4 (at 1e-4 its 200 iterations leave errors of 1e-1).
    prox = pin.ProximalSettings(1e-13, 1e-2, 200)
    for q, qd, tau in _states(m, sdf_pose, 4):
        assert max(max(e) for e in rd.loop_errors(m, q).values()) <= 1e-12
        assert np.linalg.svd(rd.constraint_jacobian(m, q), compute_uv=False)[-1] >= 5e-4
        res = rd.constrained_forward_dynamics(m, q, qd, tau)
        a = pin.constraintDynamics(pm, pd, _to_pin(m, pm, q), qd, tau, cms, cds, prox)
        assert np.abs(res.qdd - a).max() <= 1e-9 * np.abs(a).max()
        # the constraint forces projected on the joints, -J^T lambda (M a + h = tau - F);
        # relative to the generalized forces that balance them
        F_pin = -pin.getConstraintsJacobian(pm, pd, cms, cds).T @ pd.lambda_c
        h = pin.nle(pm, pm.createData(), _to_pin(m, pm, q), qd)
        scale = max(np.abs(tau).max(), np.abs(h).max(), np.abs(F_pin).max())
        assert np.abs(res.F - F_pin).max() <= 1e-9 * scale
        # and the tree alone: Pinocchio's ABA on the exported URDF
        a_tree = pin.aba(pm, pm.createData(), _to_pin(m, pm, q), qd, tau)
        assert np.abs(rd.forward_dynamics(m, q, qd, tau) - a_tree).max() <= 1e-9 * np.abs(a_tree).max()


def _pin_kkt(cassie, q, qd, tau):
    """Pinocchio's terms in a dense null-space solve of the constrained dynamics: ``M`` (crba)
    and ``h`` (nle) of the exported URDF, and the loops' rows ``D R_a^T (p_b - p_a) = 0`` (the
    constrained directions D of each loop in its frame a: all three for a spherical loop, the
    two in-plane ones for a point_on_line loop, whose points may slide apart along the line)
    from the cut frames' world Jacobians and their classical accelerations at ``qdd = 0``:
    with ``d = p_b - p_a`` the rows' rate is ``D R_a^T (d' - w_a x d)`` and their acceleration
    ``D R_a^T (d'' - 2 w_a x d' + w_a x (w_a x d) - alpha_a x d)``. Returns (qdd, M, h, N)
    with N an orthonormal basis of the rows' null space (10 rows of full rank)."""
    _, m = cassie
    pm = _pinocchio(cassie)[0]
    d = pm.createData()
    qp = _to_pin(m, pm, q)
    M = pin.crba(pm, d, qp)
    M = np.triu(M) + np.triu(M, 1).T
    h = pin.nle(pm, d, qp, qd)
    pin.forwardKinematics(pm, d, qp, qd, np.zeros(pm.nv))
    pin.computeJointJacobians(pm, d, qp)
    pin.updateFramePlacements(pm, d)
    J, g = [], []
    for lp in m.loops:
        assert len(lp.rot_pairs) == 0 and lp.coupling is None
        fa, fb = pm.getFrameId(lp.frame_a), pm.getFrameId(lp.frame_b)
        DR = lp.pos_dirs @ d.oMf[fa].rotation.T
        dp = d.oMf[fb].translation - d.oMf[fa].translation
        Ja, Jb = (pin.getFrameJacobian(pm, d, f, WORLD) for f in (fa, fb))
        J.append(DR @ (Jb[:3] - Ja[:3] + pin.skew(dp) @ Ja[3:]))
        va, vb = (pin.getFrameVelocity(pm, d, f, WORLD).linear for f in (fa, fb))
        aa, ab = (pin.getFrameClassicalAcceleration(pm, d, f, WORLD).linear for f in (fa, fb))
        wa = pin.getFrameVelocity(pm, d, fa, WORLD).angular
        al = pin.getFrameAcceleration(pm, d, fa, WORLD).angular
        dv = vb - va
        g.append(-DR @ (ab - aa - 2.0 * np.cross(wa, dv) + np.cross(wa, np.cross(wa, dp)) - np.cross(al, dp)))
    U, s, Vt = np.linalg.svd(np.vstack(J))
    assert len(s) == 10 and s[-1] > 1e-6 * s[0]
    N = Vt[10:].T
    a_p = Vt[:10].T @ ((U.T @ np.concatenate(g)) / s)
    z = np.linalg.solve(N.T @ M @ N, N.T @ (tau - h - M @ a_p))
    return a_p + N @ z, M, h, N


WORLD = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


def test_projected_inverse_dynamics_inverts_pinocchio(cassie, sdf_pose):
    """The motion Pinocchio's terms give for a torque of the 22 joint actuators (the free
    flyer unactuated): our projected inverse dynamics of that motion is Pinocchio's minimum
    norm actuation ``min |u| s.t. N^T (S^T u - M a - h) = 0``, its residual is zero, and the
    6 base motions are named as idle (the actuators cannot push the floating base)."""
    _, m = cassie
    rng = np.random.default_rng(7)
    S = np.eye(m.nv)[m.actuated_indices]
    for q, qd, _ in _states(m, sdf_pose, 4, seed=5):
        tau0 = S.T @ rng.standard_normal(len(m.actuated_indices))
        a, M, h, N = _pin_kkt(cassie, q, qd, tau0)
        res = rd.projected_inverse_dynamics(m, q, qd, u=a)
        b = M @ a + h
        u_pin = np.linalg.pinv(N.T @ S.T, rcond=1e-6) @ (N.T @ b)
        scale = np.abs(b).max()
        assert np.abs(res.tau - S.T @ u_pin).max() <= 1e-9 * scale
        assert np.abs(res.tau[:6]).max() == 0.0
        assert res.residual <= 1e-9 * scale
        # what it commands produces the motion in Pinocchio's dynamics
        assert np.abs(_pin_kkt(cassie, q, qd, res.tau)[0] - a).max() <= 1e-9 * np.abs(a).max()
        assert not res.controllable and '6 idle motion(s)' in res.message and 'root_joint/z' in res.message
        # every joint actuated: the minimum-norm generalized force is the projection N N^T b
        full = rd.projected_inverse_dynamics(m, q, qd, u=a, actuated='all')
        assert np.abs(full.tau - N @ (N.T @ b)).max() <= 1e-9 * scale


def test_two_second_passive_simulation_keeps_the_loops_closed(cassie, sdf_pose):
    _, m = cassie
    rng = np.random.default_rng(3)
    qd0 = pj.project_velocity(m, sdf_pose, 0.5 * rng.standard_normal(m.nv))
    plant = rd.ConstrainedPlant(m, sdf_pose, qd0, dt=1e-3)
    worst, moved, err = 0.0, 0.0, []
    for k in range(2000):
        info = plant.step(np.zeros(m.nv))
        worst = max(worst, info.phi_norm)
        moved = max(moved, np.abs(plant.q[7:] - sdf_pose[7:]).max())
        if k % 100 == 99:  # the accelerations along the run are Pinocchio's
            a = _pin_kkt(cassie, plant.q, plant.qd, np.zeros(m.nv))[0]
            err.append(np.abs(rd.constrained_forward_dynamics(m, plant.q, plant.qd, np.zeros(m.nv)).qdd - a).max())
            err[-1] /= np.abs(a).max()
    assert max(err) <= 1e-10, err
    assert worst <= 1e-9
    assert max(max(e) for e in rd.loop_errors(m, plant.q).values()) <= 1e-9
    assert moved > 0.1  # the legs did move
    assert plant.q[2] < sdf_pose[2] - 15.0  # free fall: g t^2 / 2 = 19.6 m


def _gearboxes(path):
    """(name, ratio, parent link, child link, reference link, axis, axis2) of every gearbox
    joint, read from the SDF (cassie.sdf: axes in the model frame)."""
    out = []
    for j in etree.parse(path).getroot().find('model').findall('joint'):
        if j.get('type') == 'gearbox':
            assert (j.findtext('axis/use_parent_model_frame') or '').strip() == '1'
            ax = [np.array([float(x) for x in j.findtext(f'{t}/xyz').split()]) for t in ('axis', 'axis2')]
            out.append(
                (
                    j.get('name'),
                    float(j.findtext('gearbox_ratio')),
                    j.findtext('parent').strip(),
                    j.findtext('child').strip(),
                    j.findtext('gearbox_reference_body').strip(),
                    *ax,
                )
            )
    return out


def _relative_angle(T, T0, link, ref, axis):
    """Angle of ``link`` relative to ``ref`` about ``axis`` (model frame at the SDF pose),
    from the links' orientations now (T) and at the SDF pose (T0): the rotation
    ``R_ref^T R_link (R_ref0^T R_link0)^T`` is a rotation about the axis fixed in ``ref``."""
    R0 = T0[ref][:3, :3].T @ T0[link][:3, :3]
    Q = T[ref][:3, :3].T @ T[link][:3, :3] @ R0.T
    a = T0[ref][:3, :3].T @ axis
    w = np.array([Q[2, 1] - Q[1, 2], Q[0, 2] - Q[2, 0], Q[1, 0] - Q[0, 1]])
    assert np.linalg.norm(np.cross(w, a)) <= 1e-9  # a rotation about that axis only
    return math.atan2(0.5 * w @ a, 0.5 * (np.trace(Q) - 1.0))


@pytest.fixture(scope='module')
def cassie_gearbox():
    path = os.path.join(cassie_dir(), 'cassie.sdf')
    res = import_sdf(path)
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        m = load_imported(res)
    return path, res, m, caught


def test_cassie_with_gearboxes_imports_the_gearboxes_as_couplings_and_a_prismatic_loop(cassie_gearbox):
    path, res, m, caught = cassie_gearbox
    # its foot rotors' inertias violate the triangle inequality: loaded as given, warned naming
    # the SDF file
    assert sorted(str(w.message) for w in caught) == [
        f"{path} (imported URDF): link '{side}-foot-reference' <inertial>: inertia violates the triangle "
        'inequality (principal moments [9.30600000e-07 9.49379088e-07 9.40002091e-06]): not a physical body; '
        'loaded as given'
        for side in ('left', 'right')
    ]
    assert all(w.category is rd.ModelWarning for w in caught)
    text = '\n'.join(res.notes)
    assert text.count('gearbox joint') == 10 and 'not represented (' not in text.split('gearbox joint')[1]
    types = {lp.name: lp.type for lp in m.loops}
    assert types['left-shin-spring-joint'] == 'prismatic' and types['left-tarsus-spring-joint'] == 'revolute'
    gears = _gearboxes(path)
    assert len(gears) == 10
    for name, ratio, *_ in gears:
        lp = next(lp for lp in m.loops if lp.name == f'gearbox_{name}')
        assert lp.type == 'coupling' and abs(abs(lp.coupling[2]) - ratio) == 0.0
    assert max(max(e) for e in rd.loop_errors(m, m.reference_q()).values()) <= 1e-15


def test_cassie_with_gearboxes_simulates_two_seconds_with_closed_loops_and_geared_rotors(cassie_gearbox):
    # revolute, prismatic and point_on_line loops and 10 gearboxes: 34 rows of rank 28 (planar
    # linkages): the projection method drops the redundant rows, the closure stays within 1e-9;
    # every gearbox holds as the SDF states it, theta_2 = -ratio theta_1, with the angles
    # measured from the links' orientations relative to the reference body
    path, _, m, _ = cassie_gearbox
    q0 = m.reference_q()
    A = rd.constraint_jacobian(m, q0)
    assert A.shape[0] == 34 and np.linalg.matrix_rank(A, tol=1e-9) == 28
    rng = np.random.default_rng(3)
    plant = rd.ConstrainedPlant(m, q0, pj.project_velocity(m, q0, 0.5 * rng.standard_normal(m.nv)), dt=1e-3)
    T0 = rd.forward_kinematics(m, q0)
    worst, turned, gear_err = 0.0, 0.0, 0.0
    for k in range(2000):
        worst = max(worst, plant.step(np.zeros(m.nv)).phi_norm)
        if k % 200 == 199:
            T = rd.forward_kinematics(m, plant.q)
            for _, ratio, par, chi, ref, a1, a2 in _gearboxes(path):
                t1 = _relative_angle(T, T0, par, ref, a1)
                t2 = _relative_angle(T, T0, chi, ref, a2)
                # the rotor may turn past pi: compare it modulo 2 pi, in output angle
                gear_err = max(gear_err, ratio * abs((t1 + t2 / ratio + math.pi) % (2 * math.pi) - math.pi))
                turned = max(turned, abs(t2))
    assert worst <= 1e-9
    assert gear_err <= 1e-9 and turned > 0.05
    assert np.abs(plant.q[7:] - q0[7:]).max() > 0.1


def test_a_model_on_a_world_joint_has_the_world_as_root():
    res = import_sdf(os.path.join(cassie_dir(), 'cassie_simple.sdf'))
    assert 'root_joint' not in res.sidecar
    m = load_imported(res)
    assert m.joint_names[0] == 'static' and m.root_link == 'world'
    # the ball joint of the rod on the hip stays in the tree: a spherical joint
    assert res.sidecar['joint_types'] == {'left-pitch-rod-joint': 'spherical', 'right-pitch-rod-joint': 'spherical'}
    assert {j.name: j.kind for j in m.joints}['left-pitch-rod-joint'] == 'spherical'
    assert max(max(e) for e in rd.loop_errors(m, m.reference_q()).values()) <= 1e-15


def test_the_registry_dispatches_on_the_suffix(tmp_path):
    res = import_description(CASSIE, root_joint=None)
    assert 'root_joint' not in res.sidecar
    with pytest.raises(rd.ModelError, match="no importer for the suffix '.txt'"):
        import_description(tmp_path / 'a.txt')
    world = os.path.join(cassie_dir(), 'cassie.world')
    with pytest.raises(rd.ModelError, match=r'model://cassie.*includes are not resolved'):
        import_description(world)
    with pytest.raises(rd.ModelError, match='frame-pair'):
        import_description(tmp_path / 'a.urdf')


def test_a_missing_importer_module_is_a_model_error(tmp_path, monkeypatch):
    from robot_dynamics.parsers import importing

    monkeypatch.setitem(importing.IMPORTERS, '.xml', ('robot_dynamics.parsers.no_such_importer', 'f'))
    with pytest.raises(rd.ModelError, match=r"a\.xml: the importer of '\.xml' files .* is not installed"):
        import_description(tmp_path / 'a.xml')
