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
