"""Joint models (robot_dynamics.spatial.joints) against Pinocchio's joints of the same kind.

For each kind, a Pinocchio model with that one joint on the world: neutral configuration,
integrate, difference, the joint placement (``oMi`` after forwardKinematics) and the motion
subspace (the joint's LOCAL Jacobian) equal Pinocchio's at random configurations and
velocities; and, independently of Pinocchio, integrate / difference invert each other and the
motion subspace is the derivative of the placement along integrate (central differences).
"""

import numpy as np
import pytest

from robot_dynamics.spatial import joints as J

pin = pytest.importorskip('pinocchio')  # the oracle; installed by scripts/test.sh

RNG = np.random.default_rng(20261129)
AXIS = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])


def _cases():
    return [
        (J.Revolute(AXIS), lambda: pin.JointModelRevoluteUnaligned(*AXIS)),
        (J.Prismatic(AXIS), lambda: pin.JointModelPrismaticUnaligned(*AXIS)),
        (J.Spherical(), pin.JointModelSpherical),
        (J.FreeFlyer(), pin.JointModelFreeFlyer),
        (J.Planar(), pin.JointModelPlanar),
    ]


IDS = ['revolute', 'prismatic', 'spherical', 'free_flyer', 'planar']


def _pin_model(make):
    m = pin.Model()
    m.addJoint(0, make(), pin.SE3.Identity(), 'j')
    m.lowerPositionLimit = -np.ones(m.nq)
    m.upperPositionLimit = np.ones(m.nq)
    return m, m.createData()


def _same_rotation_quat(a, b, atol):
    """Quaternions equal up to their sign (both represent the same rotation)."""
    assert min(np.abs(a - b).max(), np.abs(a + b).max()) <= atol, (a, b)


@pytest.mark.parametrize('jm, make', _cases(), ids=IDS)
def test_sizes_and_neutral_as_pinocchio(jm, make):
    m, _ = _pin_model(make)
    assert (jm.nq, jm.nv) == (m.nq, m.nv)
    np.testing.assert_array_equal(jm.neutral(), pin.neutral(m))


@pytest.mark.parametrize('jm, make', _cases(), ids=IDS)
def test_integrate_difference_placement_and_subspace_as_pinocchio(jm, make):
    m, d = _pin_model(make)
    for _ in range(20):
        q0 = jm.random(RNG)
        q1 = jm.random(RNG)
        v = RNG.uniform(-2.0, 2.0, jm.nv)
        qi = jm.integrate(q0, v)
        qp = pin.integrate(m, q0, v)
        if jm.nq in (4, 7) and jm.kind != 'planar':
            np.testing.assert_allclose(qi[: jm.nq - 4], qp[: jm.nq - 4], atol=1e-13)
            _same_rotation_quat(qi[-4:], qp[-4:], 1e-13)
        else:
            np.testing.assert_allclose(qi, qp, atol=1e-13)
        np.testing.assert_allclose(jm.difference(q0, q1), pin.difference(m, q0, q1), atol=1e-12)
        pin.forwardKinematics(m, d, q1)
        R, p = jm.placement(q1)
        np.testing.assert_allclose(R, d.oMi[1].rotation, atol=1e-14)
        np.testing.assert_allclose(p, d.oMi[1].translation, atol=1e-14)
        pin.computeJointJacobians(m, d, q1)
        np.testing.assert_allclose(jm.S, np.reshape(pin.getJointJacobian(m, d, 1, pin.LOCAL), (6, jm.nv)), atol=1e-14)


@pytest.mark.parametrize('jm, make', _cases(), ids=IDS)
def test_integrate_and_difference_invert_each_other_batched(jm, make):
    q0 = jm.random(RNG, size=50)
    q1 = jm.random(RNG, size=50)
    assert q0.shape == (50, jm.nq)
    v = jm.difference(q0, q1)
    assert v.shape == (50, jm.nv)
    back = jm.integrate(q0, v)
    R1, p1 = jm.placement(q1)
    Rb, pb = jm.placement(back)
    np.testing.assert_allclose(Rb, R1, atol=1e-12)
    np.testing.assert_allclose(pb, p1, atol=1e-12)
    w = RNG.uniform(-1.0, 1.0, (50, jm.nv))  # rotation angles below pi: the log is principal
    np.testing.assert_allclose(jm.difference(q0, jm.integrate(q0, w)), w, atol=1e-12)
    # one sample and a batch give the same numbers
    np.testing.assert_allclose(jm.integrate(q0[3], w[3]), jm.integrate(q0, w)[3], rtol=0, atol=0)


@pytest.mark.parametrize('jm, make', _cases(), ids=IDS)
def test_motion_subspace_is_the_derivative_of_the_placement(jm, make):
    """Child-frame twist of M(q (+) t v) at t = 0, by central differences, equals S v."""
    from robot_dynamics.spatial.lie import vee

    q = jm.random(RNG)
    v = RNG.standard_normal(jm.nv)
    h = 1e-6
    Rp, pp = jm.placement(jm.integrate(q, h * v))
    Rm, pm = jm.placement(jm.integrate(q, -h * v))
    R, p = jm.placement(q)
    w = vee(R.T @ (Rp - Rm) / (2 * h))
    lin = R.T @ (pp - pm) / (2 * h)
    np.testing.assert_allclose(np.concatenate([lin, w]), jm.S @ v, atol=1e-8)


def test_quaternion_helpers():
    w = RNG.standard_normal(3)
    np.testing.assert_allclose(J.quat_to_matrix(J.quat_exp(w)), pin.exp3(w), atol=1e-14)
    a, b = J.quat_exp(RNG.standard_normal(3)), J.quat_exp(RNG.standard_normal(3))
    np.testing.assert_allclose(
        J.quat_to_matrix(J.quat_multiply(a, b)), J.quat_to_matrix(a) @ J.quat_to_matrix(b), atol=1e-14
    )
    np.testing.assert_allclose(J.quat_exp(np.zeros(3)), [0, 0, 0, 1])
    np.testing.assert_allclose(J.quat_exp([1e-9, 0, 0]), [5e-10, 0, 0, 1], atol=1e-20)


def test_joint_model_by_kind_and_bad_input():
    assert isinstance(J.joint_model('floating'), J.FreeFlyer)
    assert isinstance(J.joint_model('ball'), J.Spherical)
    assert isinstance(J.joint_model('continuous', axis=(0, 2, 0)), J.Revolute)
    np.testing.assert_allclose(J.joint_model('prismatic', axis=(0, 2, 0)).axis, [0, 1, 0])
    with pytest.raises(ValueError, match="unknown joint kind 'helical'"):
        J.joint_model('helical')
    with pytest.raises(ValueError, match='non-zero 3-vector'):
        J.Revolute((0, 0, 0))
    with pytest.raises(ValueError, match='finite limits'):
        J.FreeFlyer().random(lower=[-np.inf] * 3, upper=[1.0] * 3)
    with pytest.raises(TypeError):
        J.JointModel()  # abstract
    q = J.FreeFlyer().normalize([1, 2, 3, 0, 0, 0, 2.0])
    np.testing.assert_allclose(q, [1, 2, 3, 0, 0, 0, 1.0])
    np.testing.assert_allclose(J.Planar().normalize([0, 0, 3.0, 4.0]), [0, 0, 0.6, 0.8])
