"""The SEA plant and law are built from the robot's URDF + sidecar, not from the prototype.

* The shipped planar_3rrr_sea URDF reads back as the brief's prototype parameters.
* A different SEA-PKM written only as URDF + sidecar (the project's generator with other link
  lengths, masses, base radius, spring constant and its own joint names) reads back as exactly
  its parameters, and the SEA plant built from it (plant kind 'sea', what sim_node runs)
  publishes joint states that close that URDF's loops (before: the plant kept the prototype's
  0.2 m links and broke the closure of a 0.25 m-distal robot by 0.08 m, silently); the
  flatness law built from it holds the plant at rest with the springs' static torques.
* A URDF outside what the planar 3RRR route covers is refused, naming the joint or link.
"""

import dataclasses
import re

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.errors import InputError
from robot_dynamics.pkm.planar_sea import Planar3RRRParams, planar_3rrr_sidecar, planar_3rrr_urdf
from robot_dynamics.plants.registry import make_plant
from robot_dynamics.pkm.sea import sea_limbs, sea_params_from_model

OTHER = Planar3RRRParams(
    base_radius=0.3, a=0.22, b=0.25, m_proximal=0.3, m_distal=0.2, m_ee=0.25, stiffness=45.0, motor_inertia=0.03
)


def _rename(text):
    """The generator's names armk_* -> legk_* (a robot with its own names)."""
    return re.sub(r'arm(\d)_(motor|joint|elbow|tip|rotor|proximal|distal)', r'leg\1_\2', text)


def _write(tmp_path, params, rename=True, urdf_edit=None):
    urdf, side = planar_3rrr_urdf(params), planar_3rrr_sidecar(params, p_ref=(-0.05, 0.0))
    if rename:
        urdf, side = _rename(urdf), _rename(side)
    if urdf_edit:
        urdf = urdf_edit(urdf)
    (tmp_path / 'r.urdf').write_text(urdf)
    (tmp_path / 'r.loops.yaml').write_text(side)
    return rd.load_model(str(tmp_path / 'r.urdf'))


def _same(p, q):
    for f in dataclasses.fields(Planar3RRRParams):
        if f.name == 'base_angles_deg':
            np.testing.assert_allclose(p.base_points, q.base_points, atol=1e-12)
        else:
            np.testing.assert_allclose(getattr(p, f.name), getattr(q, f.name), rtol=1e-12, atol=1e-12, err_msg=f.name)


def test_shipped_urdf_reads_as_the_prototype():
    m = rd.load_model(rd.data_path('urdf/planar_3rrr_sea.urdf'))
    _same(sea_params_from_model(m), Planar3RRRParams())
    assert sea_limbs(m) == [(f'arm{k}_joint', f'arm{k}_elbow', f'arm{k}_motor') for k in (1, 2, 3)]


def test_another_sea_pkm_from_its_description(tmp_path):
    m = _write(tmp_path, OTHER)
    P = sea_params_from_model(m)
    _same(P, OTHER)
    assert sea_limbs(m)[0] == ('leg1_joint', 'leg1_elbow', 'leg1_motor')
    plant = make_plant('sea', m, m.reference_q(), dt=1e-3)
    assert plant.params.b == pytest.approx(0.25) and plant.params.stiffness == 45.0
    # the plant's joint states close the URDF's loops, at rest and while moving
    assert np.abs(rd.loop_residual(m, plant.true_q)).max() < 1e-9
    tau = np.array([0.05, -0.03, 0.02])
    worst = 0.0
    for _ in range(300):
        info = plant.step(tau)
        worst = max(worst, float(np.abs(rd.loop_residual(m, info.q)).max()))
    moved = np.abs(plant.true_q - m.reference_q()).max()
    assert moved > 1e-3 and worst < 1e-9, (moved, worst)
    # with the prototype's numbers (what the plant used before) the same joint angles would
    # not close this robot's loops: the check above can fail
    proto = make_plant('sea', m, m.reference_q(), dt=1e-3, params=Planar3RRRParams())
    assert np.abs(rd.loop_residual(m, proto.true_q)).max() > 1e-2
    # the flatness law of this robot, at its reference configuration and a reference there
    from robot_dynamics.control.laws import make_law

    law = make_law(m, 'sea_flatness', joints=[lb[2] for lb in sea_limbs(m)])
    assert law.params.a == pytest.approx(0.22)


@pytest.mark.parametrize(
    'edit, where',
    [
        # limb 2's arm heavier (a consistent uniform rod of 0.35 kg): unequal limbs
        (
            lambda u: u.replace(
                '<link name="leg2_proximal"><inertial><origin xyz="0.11 0 0"/><mass value="0.3"/>\n'
                '    <inertia ixx="1e-09" ixy="0" ixz="0" iyy="0.00121" iyz="0" izz="0.00121"/>',
                '<link name="leg2_proximal"><inertial><origin xyz="0.11 0 0"/><mass value="0.35"/>\n'
                '    <inertia ixx="1e-09" ixy="0" ixz="0" iyy="0.0014116666666666663" iyz="0" '
                'izz="0.0014116666666666663"/>',
            ),
            'unequal proximal mass',
        ),
        # the centre of mass of an arm not at its middle: not a uniform rod
        (
            lambda u: u.replace(
                '<link name="leg1_proximal"><inertial><origin xyz="0.11 0 0"/>',
                '<link name="leg1_proximal"><inertial><origin xyz="0.05 0 0"/>',
            ),
            "link 'leg1_proximal'",
        ),
        # a distal link's centre of mass off its axis
        (
            lambda u: u.replace(
                '<link name="leg2_distal"><inertial><origin xyz="0.125 0 0"/>',
                '<link name="leg2_distal"><inertial><origin xyz="0.125 0.01 0"/>',
            ),
            "link 'leg2_distal'",
        ),
    ],
)
def test_a_urdf_outside_the_route_is_refused_by_name(tmp_path, edit, where):
    def checked(u):
        v = edit(u)
        assert v != u, 'the edit must apply'
        return v

    m = _write(tmp_path, OTHER, urdf_edit=checked)
    with pytest.raises(InputError, match=re.escape(where)):
        sea_params_from_model(m)
