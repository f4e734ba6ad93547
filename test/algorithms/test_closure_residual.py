"""True closure error (rotation-log rows, no false zeros) and assembly from any pose.

Independent routes: Pinocchio's forward kinematics of the same URDF and ``pin.log3`` for the
relative rotation of the cut frames; the loop rows of the raw sidecar YAML (axes as written);
finite differences on the configuration manifold for the Jacobian.
"""

import glob
import os

import numpy as np
import pinocchio as pin
import pytest
import yaml

import robot_dynamics as rd
from robot_dynamics.algorithms import projection as pj
from robot_dynamics.algorithms.constraints import closure_errors, closure_residual, orientation_closure
from robot_dynamics.errors import AssemblyError
from robot_dynamics.parsers.sidecar import loop_rows
from robot_dynamics.spatial.lie import exp_so3

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), 'data')
ROOT = os.path.dirname(os.path.dirname(HERE))
LEG = os.path.join(DATA, 'two_weld_leg.urdf')
SHIPPED = sorted(p[: -len('.loops.yaml')] + '.urdf' for p in glob.glob(os.path.join(ROOT, 'urdf', '*.loops.yaml')))
SHIPPED_IDS = [os.path.basename(p)[:-5] for p in SHIPPED]
ROT_TYPES = ('weld', 'prismatic', 'revolute', 'cylindrical', 'planar', 'universal')


# --------------------------------------------------------------------------- Pinocchio route
class PinRoute:
    """The URDF in Pinocchio (buildModelFromUrdf) and the raw sidecar loops."""

    def __init__(self, urdf, loops=None):
        self.pm = pin.buildModelFromUrdf(urdf)
        self.pd = self.pm.createData()
        if loops is None:
            with open(urdf[:-5] + '.loops.yaml', encoding='utf-8') as fh:
                loops = yaml.safe_load(fh)['loops']
        self.loops = loops

    def q(self, m, q):
        """Pinocchio configuration of our q (one-DOF joints by name; continuous: cos, sin)."""
        qp = pin.neutral(self.pm)
        for jid in range(1, self.pm.njoints):
            jm = self.pm.joints[jid]
            x = q[m.joint_index(self.pm.names[jid])]
            if jm.nq == 2:
                qp[jm.idx_q : jm.idx_q + 2] = np.cos(x), np.sin(x)
            else:
                qp[jm.idx_q] = x
        return qp

    def errors(self, m, q):
        """loop name -> (position error [m], orientation error [rad]) from Pinocchio's placements."""
        pin.framesForwardKinematics(self.pm, self.pd, self.q(m, q))
        out = {}
        for lp in self.loops:
            Ta = self.pd.oMf[self.pm.getFrameId(lp['frame_a'])]
            Tb = self.pd.oMf[self.pm.getFrameId(lp['frame_b'])]
            R = Ta.rotation.T @ Tb.rotation
            d = Ta.rotation.T @ (Tb.translation - Ta.translation)
            t = lp['type']
            k = np.asarray(lp.get('axis', [0, 0, 1]), float)
            k = k / np.linalg.norm(k)
            if t in ('prismatic', 'cylindrical', 'point_on_line'):
                ep = np.linalg.norm(d - (d @ k) * k)
            elif t in ('planar', 'point_on_plane'):
                ep = abs(d @ k)
            else:
                ep = np.linalg.norm(d)
            if t in ('weld', 'weld6d', 'prismatic'):
                eo = np.linalg.norm(pin.log3(R))
            elif t in ('revolute', 'cylindrical', 'planar'):
                kb = R @ k
                eo = 2.0 * np.arctan2(np.linalg.norm(kb - k), np.linalg.norm(kb + k))
            elif t == 'universal':
                a1, a2 = (np.asarray(a, float) / np.linalg.norm(a) for a in lp['axes'])
                eo = abs(np.arcsin(np.clip(a1 @ R @ a2, -1.0, 1.0)))
            else:
                eo = 0.0
            out[lp['name']] = (ep, eo)
        return out

    def relative(self, m, q, name):
        """(log3(R_a^T R_b), p_b - p_a) of loop ``name`` by Pinocchio."""
        pin.framesForwardKinematics(self.pm, self.pd, self.q(m, q))
        lp = next(x for x in self.loops if x['name'] == name)
        Ta = self.pd.oMf[self.pm.getFrameId(lp['frame_a'])]
        Tb = self.pd.oMf[self.pm.getFrameId(lp['frame_b'])]
        return pin.log3(Ta.rotation.T @ Tb.rotation), Tb.translation - Ta.translation


@pytest.fixture(scope='module')
def leg():
    return rd.load_model(LEG)


@pytest.fixture(scope='module')
def leg_pin():
    return PinRoute(LEG)


def _max(errs):
    return max(max(v) for v in errs.values())


# --------------------------------------------------------------------------- the closure rows
class _Loop:
    def __init__(self, ltype, axis, axes):
        self.type = ltype
        self.pos_dirs, self.rot_pairs, _ = loop_rows(ltype, axis, axes)


@pytest.mark.parametrize('ltype', ROT_TYPES)
def test_orientation_closure_jacobian_matches_finite_differences(ltype):
    rng = np.random.default_rng(3)
    k = rng.normal(size=3)
    k /= np.linalg.norm(k)
    a2 = np.cross(k, rng.normal(size=3))
    lp = _Loop(ltype, k, (k, a2 / np.linalg.norm(a2)))
    for _ in range(5):
        R = exp_so3(rng.normal(size=3))
        e, E = orientation_closure(lp, R, True)
        assert e.shape == (len(lp.rot_pairs),) and E.shape == (len(e), 3)
        h = 1e-6
        Efd = np.stack(
            [
                (orientation_closure(lp, exp_so3(h * w) @ R) - orientation_closure(lp, exp_so3(-h * w) @ R)) / (2 * h)
                for w in np.eye(3)
            ],
            axis=1,
        )
        np.testing.assert_allclose(E, Efd, rtol=0, atol=1e-7)
        assert np.linalg.norm(e) > 1e-3  # a random rotation opens every constrained type


@pytest.mark.parametrize(
    'path', [LEG, os.path.join(DATA, 'biped_rods.urdf'), os.path.join(ROOT, 'urdf', 'irsbot2.urdf')]
)
def test_compiled_closure_rows_equal_the_readable_route_and_their_jacobian_is_exact(path):
    """The assembly's compiled closure rows equal closure_residual; their Jacobian equals
    central differences along model.integrate (free-flyer and ball joints included)."""
    m = rd.load_model(path)
    rng = np.random.default_rng(4)
    for _ in range(3):
        q = m.random_configuration(rng)
        r, J = pj._closure_terms(m, q)
        np.testing.assert_allclose(r, closure_residual(m, q), rtol=0, atol=1e-13)
        assert np.abs(r).max() > 1e-3
        h = 1e-6
        Jfd = np.stack(
            [
                (
                    pj._closure_terms(m, m.integrate(q, h * e), False)[0]
                    - pj._closure_terms(m, m.integrate(q, -h * e), False)[0]
                )
                / (2 * h)
                for e in np.eye(m.nv)
            ],
            axis=1,
        )
        np.testing.assert_allclose(J, Jfd, rtol=0, atol=1e-7)


def test_closure_errors_equal_pinocchio_at_random_configurations(leg, leg_pin):
    rng = np.random.default_rng(5)
    for _ in range(10):
        q = leg.random_configuration(rng)
        ours = closure_errors(leg, q)
        assert rd.loop_errors(leg, q) == ours
        for name, (ep, eo) in leg_pin.errors(leg, q).items():
            assert ours[name].position == pytest.approx(ep, abs=1e-12)
            assert ours[name].orientation == pytest.approx(eo, abs=1e-9)


# --------------------------------------------------------------------------- false zeros
def _closed_on(frame_b, revolute=False):
    """The leg assembled with weld_b closed on ``frame_b`` (b_tip turned in place); returns
    (q, the leg with its own loops, or with weld_b as a revolute cut about z)."""
    with open(LEG[:-5] + '.loops.yaml', encoding='utf-8') as fh:
        spec = yaml.safe_load(fh)
    turned = dict(spec, loops=[dict(spec['loops'][0], frame_b=frame_b), spec['loops'][1]])
    q = pj.assemble(rd.load_model(LEG, loops=turned), q_guess=np.zeros(18)).q
    if revolute:
        spec = dict(spec, loops=[dict(spec['loops'][0], type='revolute', axis=[0, 0, 1]), spec['loops'][1]])
    return q, rd.load_model(LEG, loops=spec), spec['loops']


@pytest.mark.parametrize(
    'frame_b,revolute,angle',
    [('b_tip_perm', False, 2 * np.pi / 3), ('b_tip_flip', False, np.pi), ('b_tip_flip', True, np.pi)],
    ids=['weld-120deg-about-111', 'weld-180deg-flip', 'revolute-antiparallel-axes'],
)
def test_false_zeros_of_the_dot_rows_are_reported_and_left(frame_b, revolute, angle):
    q, m, loops = _closed_on(frame_b, revolute)
    assert np.abs(rd.loop_residual(m, q)).max() <= 1e-12  # every row of phi vanishes ...
    errs = rd.loop_errors(m, q)
    assert errs['weld_b'].position <= 1e-12
    assert errs['weld_b'].orientation == pytest.approx(angle, abs=1e-9)  # ... the loop is open
    assert errs['weld_c'].orientation <= 1e-12
    assert PinRoute(LEG, loops).errors(m, q)['weld_b'][1] == pytest.approx(angle, abs=1e-9)
    # Newton-Raphson alone stops there at once; assemble does not report it closed
    with pytest.raises(AssemblyError, match='false zero') as exc:
        pj.assemble(m, q_guess=q, fallback=False)
    assert exc.value.residual == pytest.approx(angle, abs=1e-9)
    res = pj.assemble(m, q_guess=q)
    assert res.residual <= 1e-12 and _max(rd.loop_errors(m, res.q)) <= 1e-12
    assert _max(PinRoute(LEG, loops).errors(m, res.q)) <= 1e-9


# --------------------------------------------------------------------------- assembly
def test_two_weld_leg_is_drawn_open_and_assembles_from_20_random_guesses(leg, leg_pin):
    assert _max(rd.loop_errors(leg, np.zeros(leg.nq))) > 0.1
    rng = np.random.default_rng(6)
    for _ in range(20):
        guess = leg.random_configuration(rng)
        res = pj.assemble(leg, q_guess=guess)
        assert res.residual <= 1e-12
        assert _max(closure_errors(leg, res.q)) <= 1e-9
        for name in ('weld_b', 'weld_c'):
            w, d = leg_pin.relative(leg, res.q, name)
            assert np.linalg.norm(w) <= 1e-9 and np.linalg.norm(d) <= 1e-9, (name, w, d)


def test_two_weld_leg_with_the_plate_chain_held_assembles_from_20_random_guesses(leg, leg_pin):
    closed = pj.assemble(leg, q_guess=np.zeros(leg.nq)).q
    act = leg.actuated_indices
    rng = np.random.default_rng(7)
    for _ in range(20):
        guess = leg.random_configuration(rng)
        res = pj.assemble(leg, closed[act], q_guess=guess, fixed='actuated')
        np.testing.assert_array_equal(res.q[act], closed[act])
        assert _max(leg_pin.errors(leg, res.q)) <= 1e-9


@pytest.mark.parametrize('path', SHIPPED, ids=SHIPPED_IDS)
def test_shipped_robots_assemble_from_the_drawing_pose(path):
    m = rd.load_model(path)
    route = PinRoute(path)
    res = pj.assemble(m, q_guess=np.zeros(m.nq))
    assert res.residual <= 1e-12
    assert _max(route.errors(m, res.q)) <= 1e-9


@pytest.mark.parametrize('path', SHIPPED, ids=SHIPPED_IDS)
def test_shipped_robots_assemble_with_the_actuators_held_from_20_random_guesses(path):
    """Actuated joints at a closed configuration's values (inside the workspace); the passive
    joints start anywhere in their range (seeded)."""
    m = rd.load_model(path)
    route = PinRoute(path)
    act = m.actuated_indices
    closed = pj.assemble(m, q_guess=m.reference_q()).q
    rng = np.random.default_rng(8)
    for _ in range(20):
        res = pj.assemble(m, closed[act], q_guess=m.random_configuration(rng), fixed='actuated')
        np.testing.assert_array_equal(res.q[act], closed[act])
        assert _max(route.errors(m, res.q)) <= 1e-9


def test_rods_with_idle_spins_assemble_on_the_manifold():
    """Floating-base biped whose knee rods have ball joints at both ends (an idle spin about
    each rod): least squares on the manifold (Newton-Raphson skipped: max_iter=0) from the
    drawing pose and from random guesses with the hips held."""
    m = rd.load_model(os.path.join(DATA, 'biped_rods.urdf'))
    assert m.multi_dof
    act = m.q_of_v[m.actuated_indices]
    closed = pj.assemble(m, q_guess=m.reference_q()).q
    starts = [m.neutral()] + [m.random_configuration(np.random.default_rng(s)) for s in range(5)]
    for guess in starts:
        for fixed in ('none', 'actuated'):
            if fixed == 'actuated':  # the hips at a closed configuration's values
                guess = guess.copy()
                guess[act] = closed[act]
            res = pj.assemble(m, q_guess=guess, fixed=fixed, max_iter=0)
            assert res.iterations > 0 and res.residual <= 1e-12
            assert _max(rd.loop_errors(m, res.q)) <= 1e-12
            for jt in m.multi_dof:
                assert abs(np.linalg.norm(res.q[jt.q_slice][-4:]) - 1.0) <= 1e-12
            if fixed == 'actuated':
                np.testing.assert_array_equal(res.q[act], closed[act])
            ta = rd.forward_kinematics(m, res.q)
            for lp in m.loops:  # spherical cuts: the two points coincide
                np.testing.assert_allclose(ta[lp.frame_a][:3, 3], ta[lp.frame_b][:3, 3], rtol=0, atol=1e-12)


def test_unreachable_assembly_says_what_was_tried_and_the_smallest_residual():
    """Five-bar with motor 1 at pi and its elbow straight: the tool is 0.8 m from the other
    motor, out of reach of the 0.6 m chain."""
    m = rd.load_model(os.path.join(ROOT, 'urdf', 'five_bar.urdf'))
    with pytest.raises(AssemblyError, match='no closed configuration') as exc:
        pj.assemble(m, [np.pi, 0.0], fixed=['motor1_joint', 'elbow1_joint'], starts=8)
    msg = str(exc.value)
    for part in ('Newton-Raphson', 'Levenberg-Marquardt', '6 perturbations', '1 random configurations'):
        assert part in msg, (part, msg)
    assert 'smallest true closure residual reached is' in msg and "loop 'distal_joint'" in msg
    assert exc.value.residual > 1e-3
    assert exc.value.residual == pytest.approx(np.linalg.norm(closure_residual(m, exc.value.q)), rel=1e-12)
    np.testing.assert_array_equal(exc.value.q[[0, 1]], [np.pi, 0.0])


def test_coupling_rows_are_their_own_closure_rows():
    """URDF <mimic> joints load as coupling loops (q_j = multiplier q_i + offset): their
    closure rows are the rows of phi, reported as a position error for a prismatic joint and
    an orientation error for a revolute one; assembly closes them."""
    m = rd.load_model(os.path.join(DATA, 'parallel_gripper.urdf'))
    cps = [lp for lp in m.loops if lp.coupling is not None]
    assert cps and len(cps) == len(m.loops)
    rng = np.random.default_rng(9)
    for _ in range(3):
        q = m.random_configuration(rng)
        phi = rd.loop_residual(m, q)
        assert np.abs(phi).max() > 1e-3
        np.testing.assert_array_equal(closure_residual(m, q), phi)
        np.testing.assert_allclose(pj._closure_terms(m, q)[0], phi, rtol=0, atol=1e-15)
        np.testing.assert_allclose(pj._closure_terms(m, q)[1], rd.constraint_jacobian(m, q), rtol=0, atol=1e-15)
        errs = closure_errors(m, q)
        kinds = set()
        for k, lp in enumerate(m.loops):
            prismatic = m.joint(lp.coupling[0]).kind == 'prismatic'
            assert errs[lp.name] == ((abs(phi[k]), 0.0) if prismatic else (0.0, abs(phi[k])))
            kinds.add(prismatic)
        assert kinds == {True, False}  # both units are exercised
        res = pj.assemble(m, q_guess=q, max_iter=0)
        assert res.residual <= 1e-12 and np.abs(rd.loop_residual(m, res.q)).max() <= 1e-12
