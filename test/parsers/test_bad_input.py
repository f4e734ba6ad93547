"""Bad input never yields garbage: it raises a documented exception naming file and element.

* malformed URDFs -> :class:`rd.ModelError` ("<file>: <link/joint ...>: <what is wrong>");
* malformed loop sidecars -> :class:`rd.LoopSpecError` ("<file>: <key path>: <what>");
* wrong array shapes / non-finite values -> :class:`rd.InputError`;
* a joint that moves no inertia -> :class:`rd.SingularMassMatrixError` in forward dynamics
  only (massless links themselves are legitimate).

All of them subclass :class:`rd.RobotDynamicsError` and ``ValueError``.
"""

import suite_paths
import os
import re
import textwrap

import numpy as np
import pytest

import robot_dynamics as rd

HERE = suite_paths.TEST_DIR
FOUR_BAR = os.path.join(os.path.dirname(HERE), 'urdf', 'four_bar.urdf')

INERTIAL = (
    '<inertial><origin xyz="0.1 0 0" rpy="0 0 0"/><mass value="1.0"/>'
    '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial>'
)
LIMIT = '<limit lower="-2" upper="2" effort="10" velocity="3"/>'


def link(name, inertial=INERTIAL):
    return f'<link name="{name}">{inertial}</link>'


def joint(
    name,
    parent,
    child,
    jtype='revolute',
    origin='<origin xyz="0.3 0 0" rpy="0 0 0"/>',
    axis='<axis xyz="0 0 1"/>',
    limit=LIMIT,
    extra='',
):
    if jtype in ('fixed', 'continuous'):
        limit = '' if jtype == 'fixed' else limit
    return (
        f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
        f'{origin}{axis if jtype != "fixed" else ""}{limit}{extra}</joint>'
    )


def robot(*parts, name='bad'):
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n' + '\n'.join(parts) + '\n</robot>\n'


def chain(**over):
    """A valid 3-joint chain base -> l1 -> l2 -> l3 (+ tool frame); ``over`` replaces parts."""
    parts = dict(
        base=link('base', ''),
        l1=link('l1'),
        l2=link('l2'),
        l3=link('l3'),
        tool=link('tool', ''),
        j1=joint('j1', 'base', 'l1', origin='<origin xyz="0 0 0.1" rpy="0 0 0"/>'),
        j2=joint('j2', 'l1', 'l2', axis='<axis xyz="0 1 0"/>'),
        j3=joint('j3', 'l2', 'l3', 'prismatic', axis='<axis xyz="1 0 0"/>'),
        tool_joint=joint('tool_joint', 'l3', 'tool', 'fixed'),
    )
    parts.update(over)
    return robot(*[p for p in parts.values() if p])


def write(tmp_path, text, name='robot.urdf'):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text) if not text.startswith('<') else text)
    return str(p)


def check_msg(exc, *needles):
    msg = str(exc.value)
    for n in needles:
        assert n in msg, f'{n!r} not in message {msg!r}'
    return msg


# ============================================================================ exception classes


def test_exception_hierarchy():
    import inspect
    from robot_dynamics import errors

    classes = [
        c
        for _, c in inspect.getmembers(errors, inspect.isclass)
        if issubclass(c, Exception) and not issubclass(c, Warning) and c.__module__ == errors.__name__
    ]
    for cls in (rd.ModelError, rd.LoopSpecError, rd.InputError, rd.SingularMassMatrixError):
        assert cls in classes
    for cls in classes:  # every error class of the package
        assert issubclass(cls, rd.RobotDynamicsError) and issubclass(cls, ValueError), cls
        assert cls.__doc__, cls


def test_valid_chain_loads(tmp_path):
    """The base case of the URDF tests is valid (so each case below breaks one thing)."""
    m = rd.load_model(write(tmp_path, chain()))
    assert m.joint_names == ['j1', 'j2', 'j3'] and 'tool' in m.frame_names


# ============================================================================ malformed URDF

URDF_CASES = {
    # id: (urdf text, substrings the message must contain besides the file path)
    'xml_syntax_error': (chain().replace('</link>', '', 1), ['XML syntax error', 'line 3']),
    'not_a_robot': (
        '<?xml version="1.0"?>\n<sdf version="1.6"><model name="x"/></sdf>',
        ['<sdf>', 'root element must be <robot>'],
    ),
    'unknown_parent_link': (
        chain(j2=joint('j2', 'l1x', 'l2')),
        ["joint 'j2'", "unknown parent link 'l1x'", "did you mean 'l1'"],
    ),
    'unknown_child_link': (chain(j3=joint('j3', 'l2', 'l4', 'prismatic')), ["joint 'j3'", "unknown child link 'l4'"]),
    'cycle': (
        chain(j1=joint('j1', 'l3', 'l1')).replace('<link name="base"></link>', ''),
        ['the joints form a cycle', "'l1'", "'l3'", 'j1'],
    ),
    'cycle_beside_a_tree': (
        chain(extra_a=link('xa'), extra_b=link('xb'), ja=joint('ja', 'xa', 'xb'), jb=joint('jb', 'xb', 'xa')),
        ['the joints form a cycle', '-(ja)->', '-(jb)->'],
    ),
    'link_with_two_parents': (
        chain(j4=joint('j4', 'l1', 'l3')),
        ["joint 'j4'", "link 'l3' has two parent joints", "'j3'", 'sidecar'],
    ),
    'two_root_links': (chain(j1=''), ['2 root links', "'base'", "'l1'", 'single tree']),
    'zero_axis': (chain(j2=joint('j2', 'l1', 'l2', axis='<axis xyz="0 0 0"/>')), ["joint 'j2'", 'zero', 'axis']),
    'axis_wrong_length': (
        chain(j2=joint('j2', 'l1', 'l2', axis='<axis xyz="0 1"/>')),
        ["joint 'j2' <axis xyz>", "expected 3 number(s), got '0 1'"],
    ),
    'axis_missing_xyz': (
        chain(j2=joint('j2', 'l1', 'l2', axis='<axis/>')),
        ["joint 'j2' <axis xyz>", 'required attribute is missing'],
    ),
    'negative_mass': (
        chain(l2=link('l2', INERTIAL.replace('value="1.0"', 'value="-1.5"'))),
        ["link 'l2' <inertial>", 'mass must be finite and >= 0', '-1.5'],
    ),
    'inertia_missing_attribute': (
        chain(l1=link('l1', INERTIAL.replace('ixy="0" ', ''))),
        ["link 'l1' <inertia ixy>", 'required attribute is missing'],
    ),
    'inertial_without_mass': (
        chain(l1=link('l1', '<inertial><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>')),
        ["link 'l1' <inertial>", 'missing <mass'],
    ),
    'nan_in_joint_origin': (
        chain(j2=joint('j2', 'l1', 'l2', origin='<origin xyz="0.3 nan 0"/>')),
        ["joint 'j2' <origin xyz>", 'non-finite', 'nan'],
    ),
    'inf_in_joint_rpy': (
        chain(j2=joint('j2', 'l1', 'l2', origin='<origin rpy="0 inf 0"/>')),
        ["joint 'j2' <origin rpy>", 'non-finite'],
    ),
    'nan_in_fixed_joint_origin': (
        chain(tool_joint=joint('tool_joint', 'l3', 'tool', 'fixed', origin='<origin xyz="NaN 0 0"/>')),
        ["joint 'tool_joint' <origin xyz>", 'non-finite'],
    ),
    'nan_in_inertial_origin': (
        chain(l1=link('l1', INERTIAL.replace('xyz="0.1 0 0"', 'xyz="nan 0 0"'))),
        ["link 'l1' <origin xyz>", 'non-finite'],
    ),
    'nan_mass': (
        chain(l1=link('l1', INERTIAL.replace('value="1.0"', 'value="nan"'))),
        ["link 'l1' <mass value>", 'non-finite'],
    ),
    'inf_inertia': (
        chain(l1=link('l1', INERTIAL.replace('iyz="0"', 'iyz="inf"'))),
        ["link 'l1' <inertia iyz>", 'non-finite'],
    ),
    'not_a_number': (
        chain(j2=joint('j2', 'l1', 'l2', origin='<origin xyz="0.3 zero 0"/>')),
        ["joint 'j2' <origin xyz>", "got '0.3 zero 0'"],
    ),
    'planar_joint_not_about_z': (
        chain(j1=joint('j1', 'base', 'l1', 'planar', axis='<axis xyz="1 0 0"/>', limit='')),
        ["joint 'j1'", 'planar joint moves in the xy plane', 'axis must be z'],
    ),
    'unknown_joint_type': (chain(j2=joint('j2', 'l1', 'l2', 'ball')), ["joint 'j2'", "unknown joint type 'ball'"]),
    'lower_above_upper': (
        chain(j2=joint('j2', 'l1', 'l2', limit='<limit lower="1.5" upper="-1.5" effort="1" velocity="1"/>')),
        ["joint 'j2' <limit>", 'lower 1.5 > upper -1.5'],
    ),
    'nan_limit': (
        chain(j2=joint('j2', 'l1', 'l2', limit='<limit lower="nan" upper="1" effort="1" velocity="1"/>')),
        ["joint 'j2' <limit lower>", 'non-finite'],
    ),
    'negative_velocity_limit': (
        chain(j2=joint('j2', 'l1', 'l2', limit='<limit lower="-1" upper="1" effort="1" velocity="-3"/>')),
        ["joint 'j2' <limit>", 'velocity limit must be >= 0'],
    ),
    'duplicate_link': (chain(l3b=link('l2')), ["link 'l2'", 'duplicate link name']),
    'duplicate_joint': (chain(j3=joint('j2', 'l2', 'l3')), ["joint 'j2'", 'duplicate joint name']),
    'joint_without_child': (
        chain(j2='<joint name="j2" type="revolute"><parent link="l1"/><axis xyz="0 0 1"/>' + LIMIT + '</joint>'),
        ["joint 'j2'", 'missing <child link'],
    ),
    'mimic_unknown_joint': (
        chain(j3=joint('j3', 'l2', 'l3', 'prismatic', extra='<mimic joint="j9" multiplier="2"/>')),
        ["joint 'j3' <mimic>", "mimicked joint 'j9'"],
    ),
    'mimic_fixed_joint': (
        chain(j3=joint('j3', 'l2', 'l3', 'prismatic', extra='<mimic joint="tool_joint"/>')),
        ["joint 'j3' <mimic>", 'fixed joint'],
    ),
    'link_without_name': (chain(l9='<link/>'), ['<link', "missing the 'name' attribute"]),
}


@pytest.mark.parametrize('case', sorted(URDF_CASES))
def test_malformed_urdf_file(tmp_path, case):
    text, needles = URDF_CASES[case]
    path = write(tmp_path, text)
    with pytest.raises(rd.ModelError) as exc:
        rd.load_model(path)
    msg = check_msg(exc, *needles)
    assert msg.startswith(path + ': '), msg  # "<file>: <element>: <what is wrong>"
    assert exc.value.source == path


NON_PHYSICAL_INERTIA = {
    'inertia_triangle_inequality': (
        chain(l1=link('l1', INERTIAL.replace('izz="0.02"', 'izz="0.05"'))),
        ["link 'l1' <inertial>", 'triangle inequality', 'loaded as given'],
    ),
    'zero_mass_with_inertia': (
        chain(l1=link('l1', INERTIAL.replace('value="1.0"', 'value="0"'))),
        ["link 'l1' <inertial>", 'zero mass with non-zero rotational', 'loaded as given'],
    ),
    # (published URDFs carry such inertias too: Tiago's antenna links, Romeo's body)
    'inertia_not_psd': (
        chain(l1=link('l1', INERTIAL.replace('iyy="0.02"', 'iyy="-0.02"'))),
        ["link 'l1' <inertial>", 'not positive semi-definite', 'loaded as given'],
    ),
    # a principal moment a hair below zero (within the semi-definiteness tolerance, far beyond
    # the rounding of an eigenvalue solver) that keeps the triangle inequality
    'tiny_negative_principal_moment': (
        chain(
            l1=link('l1', INERTIAL.replace('ixx="0.01"', 'ixx="-1e-12"').replace('izz="0.02"', 'izz="0.0200000001"'))
        ),
        ["link 'l1' <inertial>", 'slightly negative', 'loaded as given'],
    ),
}

# what leaves the dynamics undefined: refused with and without strict
UNDEFINED_DYNAMICS = ['negative_mass', 'nan_mass', 'nan_in_inertial_origin', 'inf_inertia']


@pytest.mark.parametrize('case', sorted(NON_PHYSICAL_INERTIA))
def test_non_physical_inertia_loads_with_a_warning_naming_file_and_link(tmp_path, case):
    # as Pinocchio: published URDFs carry such inertias (a hair outside the triangle
    # inequality, rotational inertia on a massless foot); they load as given, with a warning
    text, needles = NON_PHYSICAL_INERTIA[case]
    path = write(tmp_path, text)
    with pytest.warns(rd.ModelWarning) as rec:
        model = rd.load_model(path)
    msg = str(rec[0].message)
    assert msg.startswith(path + ': '), msg
    for n in needles:
        assert n in msg, (n, msg)
    assert model.nv == 3


@pytest.mark.parametrize('case', sorted(NON_PHYSICAL_INERTIA))
def test_strict_refuses_non_physical_inertia_naming_file_and_link(tmp_path, case):
    text, needles = NON_PHYSICAL_INERTIA[case]
    path = write(tmp_path, text)
    with pytest.raises(rd.ModelError) as exc:
        rd.load_model(path, strict=True)
    msg = check_msg(exc, *needles[:-1], 'strict=True')
    assert msg.startswith(path + ': ') and exc.value.element == needles[0], msg


@pytest.mark.parametrize('case', UNDEFINED_DYNAMICS)
@pytest.mark.parametrize('strict', [False, True])
def test_undefined_dynamics_is_refused_in_both_modes(tmp_path, case, strict):
    text, needles = URDF_CASES[case]
    path = write(tmp_path, text)
    with pytest.raises(rd.ModelError) as exc:
        rd.load_model(path, strict=strict)
    check_msg(exc, *needles)
    assert 'strict' not in str(exc.value)


def test_physical_model_loads_alike_with_strict(tmp_path):
    path = write(tmp_path, chain())
    a, b = rd.load_model(path), rd.load_model(path, strict=True)
    np.testing.assert_array_equal(a.inertia_com, b.inertia_com)
    np.testing.assert_array_equal(a.lower, b.lower)


MISSING_BOUNDS = {
    # (joint j2 (revolute) or j3 (prismatic), its <limit>, missing attributes, (lower, upper))
    'revolute_no_bounds': ('j2', '<limit effort="1" velocity="2"/>', "no 'lower' and no 'upper'", (-np.inf, np.inf)),
    'revolute_no_upper': ('j2', '<limit lower="-0.5" effort="1" velocity="2"/>', "no 'upper'", (-0.5, np.inf)),
    'prismatic_no_lower': ('j3', '<limit upper="0.2" effort="1" velocity="2"/>', "no 'lower'", (-np.inf, 0.2)),
}


@pytest.mark.parametrize('case', sorted(MISSING_BOUNDS))
def test_limit_without_lower_or_upper_is_unbounded_on_that_side_with_a_warning(tmp_path, case):
    import pinocchio as pin

    name, limit, what, bounds = MISSING_BOUNDS[case]
    parts = {'j2': joint('j2', 'l1', 'l2', axis='<axis xyz="0 1 0"/>', limit=limit)}
    if name == 'j3':
        parts = {'j3': joint('j3', 'l2', 'l3', 'prismatic', axis='<axis xyz="1 0 0"/>', limit=limit)}
    path = write(tmp_path, chain(**parts))
    with pytest.warns(rd.ModelWarning) as rec:
        m = rd.load_model(path)
    assert len(rec) == 1
    msg = str(rec[0].message)
    assert msg.startswith(f"{path}: joint '{name}' <limit>: {what} attribute"), msg
    assert 'unbounded' in msg and 'loaded as given' in msg
    i = m.joint_index(name)
    assert (m.lower[i], m.upper[i]) == bounds
    assert m.effort_limit[i] == 1 and m.velocity_limit[i] == 2
    # the reading that differs: urdfdom (through Pinocchio) puts the missing value at 0
    pm = pin.buildModelFromUrdf(path)
    iq = pm.joints[pm.getJointId(name)].idx_q
    pin_bounds = (pm.lowerPositionLimit[iq], pm.upperPositionLimit[iq])
    assert pin_bounds == tuple(0.0 if np.isinf(b) else b for b in bounds)
    with pytest.raises(rd.ModelError, match=f"joint '{name}' <limit>: {what}.*strict=True"):
        rd.load_model(path, strict=True)


def test_continuous_joint_and_absent_limit_are_unbounded_without_a_warning(tmp_path):
    import warnings

    parts = {
        'j1': joint('j1', 'base', 'l1', 'continuous', limit='<limit effort="1" velocity="2"/>'),
        'j2': joint('j2', 'l1', 'l2', axis='<axis xyz="0 1 0"/>', limit=''),
    }
    path = write(tmp_path, chain(**parts))
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        m = rd.load_model(path, strict=True)
    np.testing.assert_array_equal(m.lower[:2], [-np.inf, -np.inf])
    np.testing.assert_array_equal(m.upper[:2], [np.inf, np.inf])


@pytest.mark.parametrize(
    'case', ['unknown_parent_link', 'zero_axis', 'negative_mass', 'nan_in_fixed_joint_origin', 'xml_syntax_error']
)
def test_malformed_urdf_string_names_string_source(case):
    text, needles = URDF_CASES[case]
    with pytest.raises(rd.ModelError) as exc:
        rd.load_model(text)
    check_msg(exc, *needles)
    assert str(exc.value).startswith('<string>: ')


def test_missing_file(tmp_path):
    path = str(tmp_path / 'nope.urdf')
    with pytest.raises(rd.ModelError, match=re.escape(path) + ': no such URDF file'):
        rd.load_model(path)
    with pytest.raises(rd.ModelError, match='is a directory'):
        rd.load_model(str(tmp_path))
    with pytest.raises(rd.ModelError, match='no such URDF file'):  # PathLike too
        rd.load_model(tmp_path / 'nope.urdf')


@pytest.mark.parametrize('arg', [42, None, 3.5, ['robot.urdf'], {'robot': 1}, ''])
def test_wrong_type_of_source(arg):
    with pytest.raises(rd.ModelError) as exc:
        rd.load_model(arg)
    assert str(exc.value).startswith('<input>: ')
    check_msg(exc, 'URDF')


@pytest.mark.parametrize('gravity', ['down', [0, 0], [0, 0, np.nan], [[0, 0, -9.81]], np.inf])
def test_wrong_gravity_argument(tmp_path, gravity):
    path = write(tmp_path, chain())
    with pytest.raises(rd.ModelError, match='gravity must be a finite 3-vector'):
        rd.load_model(path, gravity=gravity)


@pytest.mark.parametrize('loops', [123, 4.5, ['a.yaml'], True])
def test_wrong_type_of_loops_argument(tmp_path, loops):
    path = write(tmp_path, chain())
    with pytest.raises(rd.LoopSpecError, match='loops must be a sidecar path'):
        rd.load_model(path, loops=loops)


def test_encoding_declaration_is_accepted(tmp_path):
    """Real URDFs often start with <?xml ... encoding="utf-8"?> (lxml rejects it on str)."""
    text = chain().replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="utf-8"?>')
    assert rd.load_model(write(tmp_path, text)).nq == 3
    assert rd.load_model(text).nq == 3
    assert rd.load_model(text.encode()).nq == 3


def test_xacro_error_names_file(tmp_path):
    path = write(
        tmp_path,
        textwrap.dedent("""\
        <?xml version="1.0"?>
        <robot name="x" xmlns:xacro="http://www.ros.org/wiki/xacro">
          <link name="${undefined_property}"/>
        </robot>
        """),
        name='broken.urdf.xacro',
    )
    with pytest.raises(rd.ModelError) as exc:
        rd.load_model(path, allow_xacro=True)
    check_msg(exc, path, 'xacro failed', 'undefined_property')


def test_mimic_multiplier_zero_is_kept(tmp_path):
    """multiplier="0" is a value, not 'absent' (regression: `x or 1.0`)."""
    path = write(
        tmp_path,
        chain(j3=joint('j3', 'l2', 'l3', 'prismatic', extra='<mimic joint="j2" multiplier="0" offset="0.1"/>')),
    )
    assert rd.load_model(path).mimic == {'j3': ('j2', 0.0, 0.1)}


# ============================================================================ malformed sidecar

GOOD_LOOP = {
    'name': 'coupler_rocker',
    'type': 'revolute',
    'frame_a': 'coupler_tip',
    'frame_b': 'rocker_tip',
    'axis': [0, 0, 1],
}


def sidecar(loops=None, **top):
    """YAML text of a four_bar sidecar; ``loops`` list of dicts, ``top`` extra/override keys."""
    import yaml

    data = {
        'format': 'robot_dynamics/parsers/sidecar/1',
        'loops': loops if loops is not None else [GOOD_LOOP],
        'actuated': ['crank_joint'],
    }
    data.update(top)
    return yaml.safe_dump(data, sort_keys=False)


def loop(**over):
    d = dict(GOOD_LOOP)
    for k, v in over.items():
        if v is None:
            d.pop(k, None)
        else:
            d[k] = v
    return d


SIDECAR_CASES = {
    # id: (yaml text, key the message must name, other substrings)
    'yaml_syntax_error': (
        'format: robot_dynamics/parsers/sidecar/1\nloops: [ {name: a, type: revolute\n',
        None,
        ['invalid YAML', 'line'],
    ),
    'yaml_duplicate_key': (
        'format: robot_dynamics/parsers/sidecar/1\nactuated: [crank_joint]\nactuated: [rocker_joint]\n',
        None,
        ['duplicate key', 'actuated'],
    ),
    'top_level_not_mapping': ('- a\n- b\n', None, ['top level must be a mapping']),
    'wrong_format': (
        sidecar(format='robot_dynamics/parsers/sidecar/2'),
        'format',
        ["must be 'robot_dynamics/parsers/sidecar/1'"],
    ),
    'missing_format': (sidecar().replace('format: robot_dynamics/parsers/sidecar/1\n', ''), 'format', ['got None']),
    'unknown_top_level_key': (
        sidecar(actuatd=['crank_joint']),
        'actuatd',
        ['unknown top-level key', "did you mean 'actuated'"],
    ),
    'unknown_loop_key': (sidecar([loop(frame_c='x')]), 'loops[0].frame_c', ['unknown loop key']),
    'missing_loop_key': (sidecar([loop(frame_b=None)]), 'loops[0].frame_b', ['required key is missing']),
    'loop_name_not_a_string': (sidecar([loop(name=7)]), 'loops[0].name', ['must be a string']),
    'unknown_loop_type': (
        sidecar([loop(type='revolut')]),
        'loops[0].type',
        ["unknown loop type 'revolut'", "did you mean 'revolute'"],
    ),
    'frame_a_not_in_urdf': (
        sidecar([loop(frame_a='coupler_tipp')]),
        'loops[0].frame_a',
        ["'coupler_tipp' is not a link", "did you mean 'coupler_tip'"],
    ),
    'frame_b_not_in_urdf': (sidecar([loop(frame_b='nowhere')]), 'loops[0].frame_b', ["'nowhere' is not a link"]),
    'same_frames': (sidecar([loop(frame_b='coupler_tip')]), 'loops[0]', ['must differ']),
    'missing_axis_for_revolute': (sidecar([loop(axis=None)]), 'loops[0].axis', ["loop type 'revolute' needs an axis"]),
    'axis_not_allowed': (sidecar([loop(type='spherical')]), 'loops[0].axis', ["loop type 'spherical' takes no axis"]),
    'axes_not_allowed': (
        sidecar([loop(axes=[[1, 0, 0], [0, 1, 0]])]),
        'loops[0].axes',
        ["loop type 'revolute' takes no axes"],
    ),
    'zero_axis': (sidecar([loop(axis=[0, 0, 0])]), 'loops[0].axis', ['non-zero']),
    'axis_not_numbers': (sidecar([loop(axis=['x', 0, 1])]), 'loops[0].axis', ['3 numbers']),
    'axis_wrong_length': (sidecar([loop(axis=[0, 1])]), 'loops[0].axis', ['3 finite numbers']),
    'non_orthogonal_universal': (
        sidecar([loop(type='universal', axis=None, axes=[[1, 0, 0], [1, 1, 0]])]),
        'loops[0].axes',
        ['orthogonal'],
    ),
    'universal_zero_second_axis': (
        sidecar([loop(type='universal', axis=None, axes=[[1, 0, 0], [0, 0, 0]])]),
        'loops[0].axes[1]',
        ['non-zero'],
    ),
    'universal_missing_axes': (
        sidecar([loop(type='universal', axis=None)]),
        'loops[0].axes',
        ['universal loop needs axes'],
    ),
    'duplicate_loop_names': (
        sidecar([loop(), loop(type='spherical', axis=None)]),
        'loops[1].name',
        ["duplicate loop name 'coupler_rocker'"],
    ),
    'loops_not_a_list': (sidecar(loops={'a': 1}), 'loops', ['must be a list']),
    'actuated_not_in_urdf': (
        sidecar(actuated=['crank_joint', 'crank_jiont']),
        'actuated[1]',
        ["'crank_jiont' is not a movable joint", "did you mean 'crank_joint'"],
    ),
    'actuated_fixed_joint': (
        sidecar(actuated=['coupler_tip_joint']),
        'actuated[0]',
        ["'coupler_tip_joint' is not a movable joint"],
    ),
    'actuated_duplicate': (sidecar(actuated=['crank_joint', 'crank_joint']), 'actuated', ['duplicate names']),
    'independent_not_a_list': (sidecar(independent='crank_joint'), 'independent', ['expected a list']),
    'reference_configuration_not_a_number': (
        sidecar(reference_configuration={'crank_joint': 'pi/2'}),
        'reference_configuration.crank_joint',
        ["expected a finite number, got 'pi/2'"],
    ),
    'reference_configuration_nan': (
        'format: robot_dynamics/parsers/sidecar/1\nreference_configuration: {crank_joint: .nan}\n',
        'reference_configuration.crank_joint',
        ['expected a finite number'],
    ),
    'reference_configuration_unknown_joint': (
        sidecar(reference_configuration={'crank': 1.0}),
        'reference_configuration.crank',
        ['not a movable joint'],
    ),
    'submechanism_unknown_key': (
        sidecar(submechanisms=[{'name': 'sm', 'joints': ['crank_joint'], 'solver': 'x'}]),
        'submechanisms[0].solver',
        ['unknown submechanism key'],
    ),
    'submechanism_unknown_loop': (
        sidecar(submechanisms=[{'name': 'sm', 'loops': ['knee']}]),
        'submechanisms[0].loops[0]',
        ["'knee' is not a loop"],
    ),
    'submechanism_without_name': (
        sidecar(submechanisms=[{'joints': ['crank_joint']}]),
        'submechanisms[0]',
        ['needs a name'],
    ),
    'actuator_unknown_joint': (
        sidecar(actuators={'motor': {'type': 'electric', 'joint': 'crank'}}),
        'actuators.motor.joint',
        ["'crank' is not a movable joint", "did you mean 'crank_joint'"],
    ),
    'actuator_without_type': (
        sidecar(actuators={'motor': {'joint': 'crank_joint'}}),
        'actuators.motor',
        ['needs a string type'],
    ),
}


@pytest.mark.parametrize('case', sorted(SIDECAR_CASES))
def test_malformed_sidecar(tmp_path, case):
    text, key, needles = SIDECAR_CASES[case]
    path = tmp_path / 'four_bar.loops.yaml'
    path.write_text(text)
    with pytest.raises(rd.LoopSpecError) as exc:
        rd.load_model(FOUR_BAR, loops=str(path))
    msg = check_msg(exc, *needles)
    prefix = f'{path}: ' + (f'{key}: ' if key else '')
    assert msg.startswith(prefix), f'{msg!r} does not start with {prefix!r}'
    assert exc.value.source == str(path) and exc.value.key == key


def test_sidecar_next_to_urdf_is_validated(tmp_path):
    """The auto-discovered <stem>.loops.yaml is validated the same way."""
    urdf = tmp_path / 'four_bar.urdf'
    urdf.write_text(open(FOUR_BAR).read())
    (tmp_path / 'four_bar.loops.yaml').write_text(sidecar([loop(frame_a='nope')]))
    with pytest.raises(
        rd.LoopSpecError, match=re.escape(str(tmp_path / 'four_bar.loops.yaml')) + r': loops\[0\]\.frame_a: '
    ):
        rd.load_model(str(urdf))
    assert rd.load_model(str(urdf), loops=False).loops == []


def test_missing_sidecar_file(tmp_path):
    path = str(tmp_path / 'none.loops.yaml')
    with pytest.raises(rd.LoopSpecError, match=re.escape(path) + ': no such loops file'):
        rd.load_model(FOUR_BAR, loops=path)


def test_sidecar_dict_errors_name_the_key():
    with pytest.raises(rd.LoopSpecError, match=r'^<dict>: loops\[0\]\.frame_a: '):
        rd.load_model(FOUR_BAR, loops={'format': 'robot_dynamics/parsers/sidecar/1', 'loops': [loop(frame_a='x')]})
    with pytest.raises(rd.LoopSpecError, match=r'^<dict>: 3: unknown top-level key'):
        rd.load_model(FOUR_BAR, loops={'format': 'robot_dynamics/parsers/sidecar/1', 3: 'x', 'zz': 1})


def test_good_sidecar_still_loads(tmp_path):
    path = tmp_path / 'ok.loops.yaml'
    path.write_text(sidecar(reference_configuration={'crank_joint': 1}))
    m = rd.load_model(FOUR_BAR, loops=str(path))
    assert [lp.name for lp in m.loops] == ['coupler_rocker']
    assert m.actuated == ['crank_joint'] and m.reference_configuration == {'crank_joint': 1.0}


# ============================================================================ algorithm inputs


@pytest.fixture(scope='module')
def model():
    return rd.load_model(chain())


def _state(model, N=None):
    rng = np.random.default_rng(0)
    shape = (model.nq,) if N is None else (N, model.nq)
    return [rng.normal(size=shape) for _ in range(3)]


CALLS = {
    'rnea': lambda m, q, qd, qdd, **kw: rd.rnea(m, q, qd, qdd, **kw),
    'crba': lambda m, q, qd, qdd, **kw: rd.crba(m, q),
    'forward_dynamics': lambda m, q, qd, qdd, **kw: rd.forward_dynamics(m, q, qd, qdd, **kw),
    'forward_kinematics': lambda m, q, qd, qdd, **kw: rd.forward_kinematics(m, q),
    'frame_jacobian': lambda m, q, qd, qdd, **kw: rd.frame_jacobian(m, q, 'tool'),
}
USES = {
    'rnea': 'q qd qdd f_ext gravity',
    'crba': 'q',
    'forward_dynamics': 'q qd tau f_ext gravity',
    'forward_kinematics': 'q',
    'frame_jacobian': 'q',
}


def _args(model, which, value, batch=None):
    """(q, qd, qdd/tau, kwargs) with argument ``which`` replaced by ``value``."""
    q, qd, qdd = _state(model, batch)
    args = {'q': q, 'qd': qd, 'qdd': qdd, 'tau': qdd}
    kw = {}
    if which in ('f_ext', 'gravity'):
        kw[which] = value
    else:
        args[which] = value
    third = args['tau'] if which == 'tau' else args['qdd']
    return args['q'], args['qd'], third, kw


@pytest.mark.parametrize('fn', sorted(CALLS))
def test_valid_inputs_work(model, fn):
    q, qd, qdd = _state(model)
    single = CALLS[fn](model, q, qd, qdd)
    Q, QD, QDD = _state(model, 4)
    batched = CALLS[fn](model, Q, QD, QDD)
    assert single is not None and batched is not None


def _cases(kind):
    out = []
    for fn in sorted(CALLS):
        for arg in USES[fn].split():
            out.append(pytest.param(fn, arg, id=f'{fn}-{arg}'))
    return out


@pytest.mark.parametrize('bad', [np.nan, np.inf, -np.inf], ids=['nan', 'inf', '-inf'])
@pytest.mark.parametrize('fn,arg', _cases('finite'))
def test_non_finite_input_raises_input_error(model, fn, arg, bad):
    n = model.nq
    for batch in (None, 3):
        if arg == 'f_ext':
            v = np.zeros((n, 6) if batch is None else (batch, n, 6))
            v[..., 1, 4] = bad
        elif arg == 'gravity':
            v = np.array([0.0, bad, -9.81])
        else:
            v = _state(model, batch)[0]
            v[..., 1] = bad
        q, qd, third, kw = _args(model, arg, v, batch)
        with pytest.raises(rd.InputError) as exc:
            CALLS[fn](model, q, qd, third, **kw)
        assert 'finite' in str(exc.value)


def _bad_shapes(model, arg):
    n = model.nq
    if arg == 'f_ext':
        return [
            np.zeros((n, 3)),
            np.zeros((n + 1, 6)),
            np.zeros(6 * n),
            np.zeros((2, 2, n, 6)),
            np.zeros((5, n, 6)),
        ]  # 5 samples for a batch of 3
    if arg == 'gravity':
        return [np.zeros(2), np.zeros((1, 3)), 9.81]
    return [np.zeros(n + 1), np.zeros(n - 1), np.zeros((2, n + 1)), np.zeros((2, 3, n)), 0.0, np.zeros((0,))]


@pytest.mark.parametrize('fn,arg', _cases('shape'))
def test_wrong_shape_raises_input_error(model, fn, arg):
    for v in _bad_shapes(model, arg):
        batch = 3 if (arg == 'f_ext' and np.ndim(v) == 3) else None
        q, qd, third, kw = _args(model, arg, v, batch)
        with pytest.raises(rd.InputError) as exc:
            CALLS[fn](model, q, qd, third, **kw)
        assert any(s in str(exc.value) for s in ('shape', 'samples', '(3,)')), str(exc.value)


@pytest.mark.parametrize('fn,arg', [c for c in _cases('batch') if c.values[1] in ('qd', 'qdd', 'tau')])
def test_batch_size_mismatch_raises_input_error(model, fn, arg):
    Q = _state(model, 3)[0]
    q, qd, third, kw = _args(model, arg, _state(model, 2)[0], 3)
    with pytest.raises(rd.InputError, match='2 samples, expected 3'):
        CALLS[fn](model, Q, qd, third, **kw)


@pytest.mark.parametrize('fn', sorted(CALLS))
def test_non_numeric_input_raises_input_error(model, fn):
    q, qd, qdd = _state(model)
    with pytest.raises(rd.InputError):
        CALLS[fn](model, ['a'] * model.nq, qd, qdd)


def test_frame_jacobian_unknown_frame_and_reference(model):
    q = np.zeros(model.nq)
    with pytest.raises(rd.InputError, match='reference must be one of'):
        rd.frame_jacobian(model, q, 'tool', reference='bodyy')
    with pytest.raises(rd.UnknownNameError, match="no frame 'tooll'") as ei:
        rd.frame_jacobian(model, q, 'tooll')
    assert isinstance(ei.value, KeyError) and isinstance(ei.value, rd.RobotDynamicsError)
    with pytest.raises(rd.UnknownNameError, match="no movable joint 'nope'"):
        model.joint_index('nope')


# ============================================================================ massless subtree

MASSLESS = robot(
    link('base', ''),
    link('upper'),
    link('cross', ''),
    link('lower'),
    link('flange', ''),
    link('finger', ''),
    link('tip', ''),
    joint('shoulder', 'base', 'upper'),
    # a universal joint: massless cross between two revolute joints (legitimate)
    joint('u1', 'upper', 'cross', axis='<axis xyz="1 0 0"/>'),
    joint('u2', 'cross', 'lower', origin='', axis='<axis xyz="0 1 0"/>'),
    joint('wrist', 'lower', 'flange', axis='<axis xyz="0 0 1"/>'),  # only massless below
    joint('slide', 'flange', 'finger', 'prismatic', axis='<axis xyz="1 0 0"/>'),
    joint('tip_joint', 'finger', 'tip', 'fixed'),
    name='massless_subtree',
)


def test_massless_subtree_loads_and_rnea_works():
    m = rd.load_model(MASSLESS)
    assert m.joint_names == ['shoulder', 'u1', 'u2', 'wrist', 'slide']
    assert m.mass[m.joint_index('u1')] == 0.0 and m.mass[m.joint_index('wrist')] == 0.0
    rng = np.random.default_rng(1)
    q, qd, qdd = rng.normal(size=(3, m.nq))
    tau = rd.rnea(m, q, qd, qdd)
    assert np.all(np.isfinite(tau))
    assert tau[3] == 0.0 and tau[4] == 0.0  # nothing to move below the wrist
    M = rd.crba(m, q)
    assert np.all(np.isfinite(M)) and np.all(M[3:] == 0)


def test_massless_subtree_forward_dynamics_names_the_joint():
    m = rd.load_model(MASSLESS)
    q = np.full(m.nq, 0.3)
    with pytest.raises(rd.SingularMassMatrixError) as exc:
        rd.forward_dynamics(m, q, np.zeros(m.nq), np.zeros(m.nq))
    assert exc.value.joint == 'wrist'
    check_msg(exc, "'wrist'", 'singular', 'massless_subtree')
    with pytest.raises(rd.SingularMassMatrixError):  # batched too
        rd.forward_dynamics(m, np.tile(q, (4, 1)), np.zeros((4, m.nq)), np.zeros((4, m.nq)))


def test_massless_universal_cross_is_fine():
    """Without the massless wrist subtree the universal joint's massless cross is harmless."""
    xml = MASSLESS.replace(
        joint('wrist', 'lower', 'flange', axis='<axis xyz="0 0 1"/>'), joint('wrist', 'lower', 'flange', 'fixed')
    )
    xml = xml.replace(
        joint('slide', 'flange', 'finger', 'prismatic', axis='<axis xyz="1 0 0"/>'),
        joint('slide', 'flange', 'finger', 'fixed'),
    )
    m = rd.load_model(xml)
    assert m.joint_names == ['shoulder', 'u1', 'u2']
    rng = np.random.default_rng(2)
    q, qd, tau = rng.normal(size=(3, m.nq))
    qdd = rd.forward_dynamics(m, q, qd, tau)
    np.testing.assert_allclose(rd.rnea(m, q, qd, qdd), tau, atol=1e-10)
