"""Joint coupling loops (sidecar type ``coupling``, URDF ``<mimic>``): the constrained forward
dynamics against a Lagrange-multiplier solve with Pinocchio's M and h, closure in a simulation,
and the refusals of malformed entries."""

import numpy as np
import pinocchio as pin
import pytest

import robot_dynamics as rd
from robot_dynamics.plants.rigid import ConstrainedPlant

_LINK = (
    '<link name="{n}"><inertial><origin xyz="{c}" rpy="0.1 -0.2 0.3"/><mass value="{m}"/>'
    '<inertia ixx="0.03" ixy="0.001" ixz="-0.002" iyy="0.04" iyz="0.003" izz="0.05"/></inertial></link>'
)
_JOINT = (
    '<joint name="{n}" type="{t}"><parent link="{p}"/><child link="{c}"/>'
    '<origin xyz="{o}" rpy="{r}"/><axis xyz="{a}"/>{extra}</joint>'
)
_LIMIT = '<limit lower="-4" upper="4" effort="10" velocity="10"/>'

# a pinion (j1) driving a wheel (j2, ratio -2, offset 0.1 rad) that carries a pendulum (j3), and
# a slider (j4) geared to the pinion (rack: 0.05 m/rad)
GEAR_URDF = (
    '<robot name="gear_train"><link name="base"/>'
    + _LINK.format(n='pinion', c='0.1 0.02 0', m=1.2)
    + _LINK.format(n='wheel', c='0.2 0 0.05', m=2.0)
    + _LINK.format(n='pendulum', c='0 0 -0.3', m=0.7)
    + _LINK.format(n='rack', c='0.05 0 0', m=0.4)
    + _JOINT.format(n='j1', t='revolute', p='base', c='pinion', o='0 0 0', r='0 0 0', a='0 1 0', extra=_LIMIT)
    + _JOINT.format(n='j2', t='revolute', p='base', c='wheel', o='0.5 0 0', r='0 0.2 0', a='0 1 0', extra=_LIMIT)
    + _JOINT.format(n='j3', t='revolute', p='wheel', c='pendulum', o='0.3 0 0', r='0.1 0 0', a='1 0 0', extra=_LIMIT)
    + _JOINT.format(
        n='j4',
        t='prismatic',
        p='base',
        c='rack',
        o='0 0.4 0',
        r='0 0 0.3',
        a='1 0 0',
        extra='<limit lower="-1" upper="1" effort="10" velocity="1"/><mimic joint="j1" multiplier="0.05"/>',
    )
    + '</robot>'
)

SIDECAR = {
    'format': 'robot_dynamics/parsers/sidecar/1',
    'loops': [{'name': 'gear', 'type': 'coupling', 'joint': 'j2', 'mimic': 'j1', 'multiplier': -2.0, 'offset': 0.1}],
    'actuated': ['j1', 'j3'],
}


@pytest.fixture(scope='module')
def gear(tmp_path_factory):
    path = tmp_path_factory.mktemp('gear') / 'gear_train.urdf'
    path.write_text(GEAR_URDF)
    return path, rd.load_model(path, loops=SIDECAR)


def _kkt(pm, q, qd, tau, A):
    """qdd of M qdd + h = tau - A^T lam, A qdd = 0 (A constant: no bias), with Pinocchio's M, h."""
    pd = pm.createData()
    M = pin.crba(pm, pd, q)
    M = np.triu(M) + np.triu(M, 1).T
    h = pin.rnea(pm, pd, q, qd, np.zeros(pm.nv))
    m = A.shape[0]
    K = np.block([[M, A.T], [A, np.zeros((m, m))]])
    return np.linalg.solve(K, np.concatenate([tau - h, np.zeros(m)]))[: pm.nv]


def test_rows_and_constant_jacobian(gear):
    _, m = gear
    assert [lp.name for lp in m.loops] == ['gear', 'mimic_j4']
    assert m.mimic == {'j4': ('j1', 0.05, 0.0)} and m.nconstraints == 2
    A_expected = np.array([[2.0, 1.0, 0.0, 0.0], [-0.05, 0.0, 0.0, 1.0]])
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, qd = rng.uniform(-2, 2, 4), rng.normal(size=4)
        t = rd.constraint_terms(m, q, qd)
        np.testing.assert_array_equal(t.A, A_expected)
        np.testing.assert_array_equal(t.bias, 0.0)
        np.testing.assert_allclose(t.phi, [q[1] + 2 * q[0] - 0.1, q[3] - 0.05 * q[0]], rtol=0, atol=1e-15)
    errs = rd.loop_errors(m, np.array([0.0, 0.3, 0.0, 0.02]))
    assert errs['gear'] == (0.0, pytest.approx(0.2)) and errs['mimic_j4'] == (pytest.approx(0.02), 0.0)


def test_forward_dynamics_against_lagrange_multipliers(gear):
    path, m = gear
    pm = pin.buildModelFromUrdf(str(path))
    assert list(pm.names)[1:] == m.joint_names
    A = rd.constraint_jacobian(m, np.zeros(4))
    rng = np.random.default_rng(7)
    for _ in range(5):
        q, qd, tau = rng.uniform(-2, 2, 4), rng.normal(size=4), rng.normal(size=4)
        qd -= np.linalg.pinv(A) @ (A @ qd)  # consistent velocities
        ref = _kkt(pm, q, qd, tau, A)
        res = rd.constrained_forward_dynamics(m, q, qd, tau)
        np.testing.assert_allclose(res.qdd, ref, rtol=0, atol=1e-9 * np.abs(ref).max())
        np.testing.assert_allclose(A @ res.qdd, 0.0, atol=1e-12)
        # and it is not the tree's answer
        assert np.abs(rd.forward_dynamics(m, q, qd, tau) - ref).max() > 1e-3


def test_closure_kept_in_simulation(gear):
    _, m = gear
    q0 = np.array([0.4, 0.1 - 0.8, -0.3, 0.02])
    plant = ConstrainedPlant(m, q0=q0, dt=2e-3)
    plant.reset(q0)
    np.testing.assert_allclose(plant.state[1], q0, atol=1e-12)
    for _ in range(250):
        info = plant.step([0.5, -0.2])
    q = info.q
    assert abs(q[0] - 0.4) > 0.05  # it moved
    np.testing.assert_allclose(rd.loop_residual(m, q), 0.0, atol=1e-10)
    np.testing.assert_allclose(rd.constraint_jacobian(m, q) @ info.qd, 0.0, atol=1e-10)


def test_mimic_ignore_and_sidecar_override(gear):
    path, _ = gear
    assert rd.load_model(path, loops=False, mimic='ignore').loops == []
    side = {
        'format': 'robot_dynamics/parsers/sidecar/1',
        'loops': [{'name': 'rack', 'type': 'coupling', 'joint': 'j4', 'reference_joint': 'j1', 'polycoef': [0, 0.1]}],
    }
    m = rd.load_model(path, loops=side)
    assert [lp.coupling for lp in m.loops] == [('j4', 'j1', 0.1, 0.0)]


@pytest.mark.parametrize(
    'entry, key, words',
    [
        ({'joint': 'j2'}, 'loops[0].mimic', 'exactly one of'),
        ({'joint': 'j9', 'mimic': 'j1'}, 'loops[0].joint', "'j9' is not a one-DOF joint"),
        ({'joint': 'j2', 'mimic': 'j2'}, 'loops[0].mimic', 'coupled to itself'),
        ({'joint': 'j2', 'mimic': 'j1', 'multiplier': 'x'}, 'loops[0].multiplier', 'finite number'),
        ({'joint': 'j2', 'mimic': 'j1', 'polycoef': [0, 1, 0.5]}, 'loops[0].polycoef', 'nonlinear terms'),
        ({'joint': 'j2', 'mimic': 'j1', 'polycoef': [0, 1], 'offset': 1}, 'loops[0].offset', 'either polycoef'),
        ({'joint': 'j2', 'mimic': 'j1', 'frame_a': 'wheel'}, 'loops[0].frame_a', 'unknown key of a coupling'),
    ],
)
def test_malformed_coupling_names_file_and_key(gear, tmp_path, entry, key, words):
    import yaml

    path, _ = gear
    side = tmp_path / 'gear.loops.yaml'
    side.write_text(
        yaml.safe_dump(
            {'format': 'robot_dynamics/parsers/sidecar/1', 'loops': [{'name': 'g', 'type': 'coupling', **entry}]}
        )
    )
    with pytest.raises(rd.LoopSpecError) as ei:
        rd.load_model(path, loops=side, mimic='ignore')
    assert ei.value.key == key and words in str(ei.value) and str(side) in str(ei.value)


def test_reference_configuration_must_satisfy_the_coupling(gear):
    path, _ = gear
    ref = {'j1': 0.2, 'j2': -0.3, 'j3': 0.0, 'j4': 0.01}
    m = rd.load_model(path, loops={**SIDECAR, 'reference_configuration': ref})
    np.testing.assert_allclose(rd.loop_residual(m, m.reference_q()), 0.0, atol=1e-15)
    with pytest.raises(rd.LoopSpecError, match="does not close loop 'gear'"):
        rd.load_model(path, loops={**SIDECAR, 'reference_configuration': {**ref, 'j2': 0.0}})


def test_cli_info_prints_the_coupling(gear, capsys):
    from robot_dynamics.tools import cli

    path, _ = gear
    assert cli.main(['info', str(path)]) == 0
    assert 'mimic_j4: coupling j4 = 0.05 * j1 + 0 rows=' in capsys.readouterr().out


def test_constraint_embedding_refuses_a_coupling_naming_it():
    import yaml

    from robot_dynamics.pkm import embedding as E

    with open(rd.data_path('test/data/five_bar_embedding.loops.yaml'), encoding='utf-8') as fh:
        side = yaml.safe_load(fh)
    ref = side.pop('reference_configuration')
    side['loops'].append(
        {
            'name': 'elbow_gear',
            'type': 'coupling',
            'joint': 'elbow1_joint',
            'mimic': 'motor1_joint',
            'offset': ref['elbow1_joint'] - ref['motor1_joint'],
        }
    )
    side['submechanisms'][0]['loops'] = ['elbow_gear']
    model = rd.load_model(rd.data_path('urdf/five_bar.urdf'), loops=side)
    with pytest.raises(E.PKMSpecError, match=r"loops: loop 'elbow_gear' is a joint coupling"):
        E.get_pkm(model)
