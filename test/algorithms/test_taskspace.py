"""Task-space IK of closed chains and its velocity/acceleration (finite differences)."""

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.algorithms.taskspace import TaskSpaceError, task_ik, task_reference_to_joint
from robot_dynamics.control.trajectories import Circle


@pytest.fixture(scope='module')
def five_bar():
    return rd.load_model(rd.data_path('urdf/five_bar.urdf'))


def test_ik_closes_loop_and_reaches_target(five_bar):
    m = five_bar
    q, smin, it = task_ik(m, 'tool', [0, 2], [0.03, 0.86], m.reference_q())
    assert np.abs(rd.loop_residual(m, q)).max() < 1e-10
    p = rd.forward_kinematics(m, q)['tool'][:3, 3]
    assert np.allclose(p[[0, 2]], [0.03, 0.86], atol=1e-10)
    assert smin > 1e-3 and it <= 10


def test_reference_derivatives_match_finite_differences(five_bar):
    m = five_bar
    c = Circle([0.0, 0.0, 0.88], 0.04, 0.25)
    q = m.reference_q()
    t, h = 0.7, 1e-5
    sols = []
    for tk in (t - h, t, t + h):
        x = c(tk, order=2)[:, [0, 2]]
        sols.append(task_reference_to_joint(m, 'tool', [0, 2], x[0], x[1], x[2], q))
    a, r, b = sols
    assert np.allclose((b.q - a.q) / (2 * h), r.qd, atol=1e-7)
    assert np.allclose((b.qd - a.qd) / (2 * h), r.qdd, atol=1e-6)
    # the joint motion is admissible: A qd = 0, A qdd + Adot qd = 0
    ct = rd.constraint_terms(m, r.q, r.qd)
    assert np.abs(ct.A @ r.qd).max() < 1e-10
    assert np.abs(ct.A @ r.qdd + ct.bias).max() < 1e-9


def test_unreachable_target_is_an_error(five_bar):
    m = five_bar
    with pytest.raises(TaskSpaceError, match='not reached'):
        task_ik(m, 'tool', [0, 2], [0.0, 2.0], m.reference_q())
    with pytest.raises(TaskSpaceError):
        task_ik(m, 'tool', [0, 2], [np.nan, 0.9], m.reference_q())
