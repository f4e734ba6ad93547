"""`robot-dynamics check`: the facts (closure, DOF, actuation rank) and which methods apply to
each robot, decided by trying each method's own model objects (nothing keyed on names)."""

import pytest

from robot_dynamics.tools import cli
from robot_dynamics.tools.check import check_robot

from projection_helpers import urdf

# method index -> robots it must apply to (and, by the rest of the list, not to)
EXPECT = {
    0: {
        'four_bar',
        'five_bar',
        'slider_crank',
        'gough_stewart',
        'irsbot2',
        'hydraulic_boom',
        'series_parallel_3dof',
        'planar_3rrr_sea',
        'arm7',
    },
    1: {'irsbot2'},
    2: {'gough_stewart', 'four_bar', 'five_bar', 'planar_3rrr_sea'},  # compiled or general route
    4: {'hydraulic_boom'},
    5: {'planar_3rrr_sea'},
}


@pytest.mark.parametrize('name', sorted(EXPECT[0]))
def test_methods_that_apply(name):
    rep = check_robot(urdf(name))
    for k, robots in EXPECT.items():
        meth, ok, detail = rep.methods[k]
        assert ok == (name in robots), (name, meth, detail)
        if not ok:
            assert detail.startswith('does not apply: ') and len(detail) > 30
    facts = dict(rep.facts)
    if name != 'arm7':
        assert float(facts['closure at reference'].split()[0]) < 1e-9
        dof = int(facts['degrees of freedom'].split()[0])
        assert (
            dof
            == {
                'four_bar': 1,
                'slider_crank': 1,
                'five_bar': 2,
                'irsbot2': 2,
                'gough_stewart': 6,
                'hydraulic_boom': 2,
                'series_parallel_3dof': 3,
                'planar_3rrr_sea': 5,
            }[name]
        )


def test_cli_check(capsys):
    assert cli.main(['check', 'four_bar']) == 0
    out = capsys.readouterr().out
    assert 'degrees of freedom    1' in out and '[x] projection' in out and '[ ] VDC' in out
    with pytest.raises(SystemExit):
        cli.main(['check', 'no_such_robot'])


def test_check_names_the_launch_command_of_a_bringup_config(tmp_path):
    """The 'launch' fact: the bringup configs that run this URDF (a <stem>.yaml beside it such
    as test/data/planar_3rpr.yaml, or packaged config/<name>.yaml); none for a URDF without."""
    import os
    import shutil
    import robot_dynamics as rd

    for robot in ('planar_3rpr', 'delta_parallelogram'):
        facts = dict(check_robot(rd.data_path(f'test/data/{robot}.urdf')).facts)
        assert facts['launch'].startswith('robot-dynamics launch ')
        assert facts['launch'].endswith(os.path.join('test', 'data', f'{robot}.yaml (timing lockstep)'))
    facts = dict(check_robot(urdf('irsbot2')).facts)
    assert 'robot-dynamics launch irsbot2_t1 (timing realtime)' in facts['launch']
    for ext in ('urdf', 'loops.yaml'):  # the same robot elsewhere, no config beside it
        shutil.copy(rd.data_path(f'test/data/planar_3rpr.{ext}'), tmp_path / f'p.{ext}')
    assert 'launch' not in dict(check_robot(str(tmp_path / 'p.urdf')).facts)


def test_check_sea_route_of_a_robot_outside_the_planar_class():
    """test/data/five_bar_sea: the SEA method applies through the general route (two SEAs, no
    preload); the planar 3RRR names its closed-form fast path."""
    import robot_dynamics as rd

    meth, ok, detail = check_robot(rd.data_path('test/data/five_bar_sea.urdf')).methods[5]
    assert ok and "task ['x', 'z']" in detail and detail.split('; ')[-1].startswith('general route')
    meth, ok, detail = check_robot(urdf('planar_3rrr_sea')).methods[5]
    assert ok and 'redundant SEA' in detail and 'planar 3RRR closed form (auto)' in detail


def test_check_reports_the_true_closure_error_and_the_assembly_of_an_open_drawing():
    """test/data/two_weld_leg is drawn at q = 0 with both welds open: the check gives the
    position and orientation errors and the configuration assembly reaches from there."""
    import numpy as np
    import robot_dynamics as rd

    path = rd.data_path('test/data/two_weld_leg.urdf')
    facts = dict(check_robot(path).facts)
    m = rd.load_model(path)
    errs = rd.closure_errors(m, np.zeros(m.nq))
    wp, wo = (max(v[i] for v in errs.values()) for i in (0, 1))
    assert wp > 0.1 and wo > 0.1
    assert facts['closure at reference'].startswith(
        f'{max(wp, wo):.2e} (position {wp:.2e} m, orientation {wo:.2e} rad)'
    )
    assert facts['assembly from reference'].startswith('closed (true closure residual ')
    closed = dict(check_robot(urdf('five_bar')).facts)
    assert 'assembly from reference' not in closed


def test_a_reference_configuration_at_a_false_zero_is_refused():
    """The weld rows of phi vanish at a 120 deg turn of the cut frames; the sidecar check
    measures the true closure and refuses such a reference configuration, naming the loop."""
    import numpy as np
    import yaml
    import robot_dynamics as rd
    from robot_dynamics.errors import LoopSpecError

    path = rd.data_path('test/data/two_weld_leg.urdf')
    with open(path[:-5] + '.loops.yaml', encoding='utf-8') as fh:
        spec = yaml.safe_load(fh)
    turned = dict(spec, loops=[dict(spec['loops'][0], frame_b='b_tip_perm'), spec['loops'][1]])
    m = rd.load_model(path, loops=turned)
    q = rd.assemble(m, q_guess=np.zeros(m.nq)).q
    ref = dict(spec, reference_configuration={j: float(q[m.joint_index(j)]) for j in m.joint_names})
    m2 = rd.load_model(path, loops=dict(ref, reference_configuration={}))
    assert np.abs(rd.loop_residual(m2, q)).max() <= 1e-12
    with pytest.raises(LoopSpecError, match="does not close loop 'weld_b'.*orientation error 2.09"):
        rd.load_model(path, loops=ref)
