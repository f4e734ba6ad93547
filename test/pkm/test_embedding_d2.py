"""Constraint embedding (seed 003) with u', u'' through the general 2nd-order route (seed 004)
for robots whose limbs are serial chains (E.inverse_dynamics_d2_task), on robots written as
URDF + sidecar: the planar 3-RPR (test/data/planar_3rpr, task x, y, rz, gravity in the plane)
and the five-bar with its embedding sidecar (test/data/five_bar_embedding). Oracles: u = the
embedding's own first-order inverse dynamics (eq. 45) at the same (x, xd, xdd); u', u'' =
central differences (5-point) of that first-order u along the smooth task trajectory. The
IRSBot-2 (hybrid limbs: loops inside a limb) is refused with the reason."""

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.pkm import embedding as E
from robot_dynamics.pkm.recursive import PKMStructureError

ROBOTS = {
    'rpr': ('test/data/planar_3rpr.urdf', 'test/data/planar_3rpr.loops.yaml', (0, -9.81, 0), [0.05, 0.04, 0.3]),
    'five_bar': ('urdf/five_bar.urdf', 'test/data/five_bar_embedding.loops.yaml', None, [0.03, 0.02]),
}


@pytest.mark.parametrize('which', sorted(ROBOTS))
def test_d2_through_general_route_matches_embedding_and_differences(which):
    u_path, lp, g, amp = ROBOTS[which]
    m = rd.load_model(rd.data_path(u_path), loops=rd.data_path(lp), gravity=g)
    pk = E.get_pkm(m, tol=1e-12)
    a = np.array(amp)
    k = np.arange(len(a))
    w, c = 2 * np.pi * (1 + 0.3 * k), 0.7 * k

    def X(t, o):
        return (pk.x_ref if o == 0 else 0.0) + a * w**o * np.sin(w * t + c + o * np.pi / 2)

    h = 1e-3
    for t in (0.11, 0.37):
        u, ud, udd = E.inverse_dynamics_d2_task(m, *(X(t, o) for o in range(5)))
        U = [E.inverse_dynamics(m, X(t + j * h, 0), X(t + j * h, 1), X(t + j * h, 2)) for j in (-2, -1, 0, 1, 2)]
        assert np.abs(u - U[2]).max() < 1e-10 * max(1.0, np.abs(u).max())
        fd1 = (U[0] - 8 * U[1] + 8 * U[3] - U[4]) / (12 * h)
        fd2 = (-U[0] + 16 * U[1] - 30 * U[2] + 16 * U[3] - U[4]) / (12 * h * h)
        assert np.abs(ud - fd1).max() < 1e-7 * np.abs(ud).max()
        assert np.abs(udd - fd2).max() < 1e-7 * np.abs(udd).max()
    # batched over samples = single calls
    T = np.array([0.11, 0.37])
    ub = E.inverse_dynamics_d2_task(m, *(np.stack([X(t, o) for t in T]) for o in range(5)))
    assert np.abs(ub[2][1] - udd).max() < 1e-9 * np.abs(udd).max()


def test_hybrid_limbs_refused_with_the_reason():
    m = rd.load_model(rd.data_path('urdf/irsbot2.urdf'))
    with pytest.raises(PKMStructureError, match='hybrid limbs'):
        E.inverse_dynamics_d2_task(m, [0.0, -0.65], [0, 0], [0, 0], [0, 0], [0, 0])
