"""The loop-closure sidecar ``<robot>.loops.yaml`` (format ``robot_dynamics/parsers/sidecar/1``).

The URDF stays a valid spanning tree; the sidecar names the cut joints. Each loop has two
massless *cut frames* (URDF links fixed to the two sides of the cut) that coincide when the
loop is closed::

    format: robot_dynamics/parsers/sidecar/1
    loops:
      - name: knee                 # unique
        type: revolute             # see LOOP_TYPES
        frame_a: knee_a            # URDF link names
        frame_b: knee_b
        axis: [0, 0, 1]            # in frame_a (revolute, prismatic, cylindrical: joint axis;
                                   #  planar, point_on_plane: plane normal; point_on_line: line)
        # universal: axes: [[1,0,0], [0,1,0]]   first in frame_a, second in frame_b
      - name: gear                 # a joint coupling (no cut frames): one row
        type: coupling             #   q_joint - (multiplier q_mimic + offset) = 0
        joint: wheel_joint         # one-DOF joints of the URDF
        mimic: pinion_joint        # (or reference_joint: pinion_joint)
        multiplier: -2.0           # default 1 [joint unit / mimic unit]
        offset: 0.0                # default 0 [rad | m]
        # or polycoef: [a0, a1, 0, 0, 0] (MuJoCo's joint equality: offset a0, multiplier a1;
        #  the nonlinear terms a2.. must be 0)
    actuated: [motor1, motor2]     # other movable joints are passive (default: all actuated)
    independent: [motor1, motor2]  # minimal coordinates (default: actuated)
    reference_configuration: {motor1: 0.5, knee_joint: -1.0}   # a closed configuration
    submechanisms: [{name: leg1, joints: [...], loops: [knee]}]
    # constraint-embedding limbs (robot_dynamics.pkm.embedding) add platform_joint,
    # platform_frame, dependent, resolver, parameters {task, limb_task} and
    # redundant: {loop: k}  (k rows of that intra-limb loop are redundant, e.g. 1 for the
    #                        4-universal-joint parallelogram of a Delta limb; checked)
    actuators: {boom_cyl: {type: hydraulic_cylinder, joint: boom_piston, piston_area: 3.1e-3}}

Constraint rows of each type (frame_a basis ``(t1, t2, k)`` with ``k`` the axis):

=================  ==========================  ======================================
type               position rows (along)       orientation rows (pairs u in a, w in b)
=================  ==========================  ======================================
weld (weld6d)      x, y, z                     (y,z), (z,x), (x,y)
revolute           x, y, z                     (t1,k), (t2,k)
prismatic          t1, t2                      (t1,k), (t2,k), (t1,t2)
cylindrical        t1, t2                      (t1,k), (t2,k)
universal          x, y, z                     (a1, a2)
spherical (point,  x, y, z                     -
  point3d)
planar             k                           (t1,k), (t2,k)
point_on_line      t1, t2                      -
point_on_plane     k                           -
coupling           -  (one joint-space row ``q_joint - multiplier q_mimic - offset``)
=================  ==========================  ======================================

A position row along ``n`` (fixed in frame_a) is ``n . (p_b - p_a)``; an orientation row is
``u . w`` with ``u`` fixed in frame_a and ``w`` fixed in frame_b (zero when the frames are
aligned). All rows vanish when the loop is closed; see :mod:`robot_dynamics.algorithms.constraints`.
Every problem raises :class:`~robot_dynamics.errors.LoopSpecError` naming file and key, the
sections the methods read included (``actuators`` by type, see ``ACTUATOR_TYPES`` and
``ACTUATOR_NUMBERS``; a submechanism's ``platform_frame``, ``parameters``, ``resolver``), so a
method built from a loaded model does not meet a wrongly typed or out-of-range value.
"""

from __future__ import annotations

import difflib
import math
import os

import numpy as np

from robot_dynamics.errors import LoopSpecError
from robot_dynamics.model import Loop

FORMAT = 'robot_dynamics/parsers/sidecar/1'
LOOP_TYPES = (
    'revolute',
    'prismatic',
    'cylindrical',
    'universal',
    'spherical',
    'point',
    'point3d',
    'weld',
    'weld6d',
    'planar',
    'point_on_line',
    'point_on_plane',
    'coupling',
)
_TOP_KEYS = {
    'format',
    'loops',
    'actuated',
    'independent',
    'reference_configuration',
    'submechanisms',
    'actuators',
    'description',
    'root_joint',
    'joint_types',
}
_LOOP_KEYS = {'name', 'type', 'frame_a', 'frame_b', 'axis', 'axes', 'description'}
_COUPLING_KEYS = {
    'name',
    'type',
    'joint',
    'mimic',
    'reference_joint',
    'multiplier',
    'offset',
    'polycoef',
    'description',
}
_SUBMECH_KEYS = {
    'name',
    'joints',
    'loops',
    'independent',
    'dependent',
    'resolver',
    'platform_joint',
    'platform_frame',
    'description',
    'parameters',
    'redundant',
}
_NEEDS_AXIS = {'revolute', 'prismatic', 'cylindrical', 'planar', 'point_on_line', 'point_on_plane'}

_E = np.eye(3)


def _basis(k):
    """Orthonormal (t1, t2) completing unit k to a right-handed frame (t1, t2, k)."""
    a = _E[int(np.argmin(np.abs(k)))]
    t1 = np.cross(a, k)
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(k, t1)


def loop_rows(ltype, axis=None, axes=None):
    """Constrained directions of a loop type: (pos_dirs (k,3), rot_pairs (r,2,3), names)."""
    x, y, z = _E
    if ltype in ('weld', 'weld6d'):
        return (np.array([x, y, z]), np.array([[y, z], [z, x], [x, y]]), ('px', 'py', 'pz', 'rx', 'ry', 'rz'))
    if ltype in ('spherical', 'point', 'point3d'):
        return np.array([x, y, z]), np.zeros((0, 2, 3)), ('px', 'py', 'pz')
    if ltype == 'universal':
        a1, a2 = axes
        return np.array([x, y, z]), np.array([[a1, a2]]), ('px', 'py', 'pz', 'r_a1xa2')
    k = axis
    t1, t2 = _basis(k)
    if ltype == 'revolute':
        return np.array([x, y, z]), np.array([[t1, k], [t2, k]]), ('px', 'py', 'pz', 'r_t1', 'r_t2')
    if ltype == 'prismatic':
        return (np.array([t1, t2]), np.array([[t1, k], [t2, k], [t1, t2]]), ('p_t1', 'p_t2', 'r_t1', 'r_t2', 'r_k'))
    if ltype == 'cylindrical':
        return np.array([t1, t2]), np.array([[t1, k], [t2, k]]), ('p_t1', 'p_t2', 'r_t1', 'r_t2')
    if ltype == 'planar':
        return np.array([k]), np.array([[t1, k], [t2, k]]), ('p_k', 'r_t1', 'r_t2')
    if ltype == 'point_on_line':
        return np.array([t1, t2]), np.zeros((0, 2, 3)), ('p_t1', 'p_t2')
    if ltype == 'point_on_plane':
        return np.array([k]), np.zeros((0, 2, 3)), ('p_k',)
    raise ValueError(ltype)


def _strict_loader():
    """A yaml SafeLoader that rejects duplicate mapping keys (PyYAML keeps the last one)."""
    import yaml

    class StrictLoader(yaml.SafeLoader):
        pass

    def construct_mapping(loader, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            try:
                dup = key in seen
                seen.add(key)
            except TypeError:  # unhashable key: let PyYAML report it
                continue
            if dup:
                raise yaml.constructor.ConstructorError(
                    'while constructing a mapping', node.start_mark, f'found duplicate key {key!r}', key_node.start_mark
                )
        return loader.construct_mapping(node, deep)

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return StrictLoader


def _yaml_problem(exc):
    """One-line description of a PyYAML error: 'line L, column C: problem (context)'."""
    mark = getattr(exc, 'problem_mark', None)
    problem = getattr(exc, 'problem', None)
    if mark is None or not problem:
        return ' '.join(str(exc).split())
    ctx = getattr(exc, 'context', None)
    return f'line {mark.line + 1}, column {mark.column + 1}: {problem}' + (f' ({ctx})' if ctx else '')


def _hint(name, candidates):
    """' (did you mean 'x'?)' for a close match among candidates, else ''."""
    close = difflib.get_close_matches(str(name), [str(c) for c in candidates], n=1)
    return f" (did you mean '{close[0]}'?)" if close else ''


def _first(keys):
    """Deterministic first of a set of (possibly non-string) YAML keys."""
    return sorted(keys, key=str)[0]


def read_spec(spec):
    """Load the sidecar: a path, an already parsed dict, or a (dict, source name) pair as this
    function returns. Returns (dict, source name)."""
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], dict):
        return spec
    if isinstance(spec, dict):
        return spec, '<dict>'
    if not isinstance(spec, (str, bytes, os.PathLike)):
        raise LoopSpecError(
            '<input>', None, f'loops must be a sidecar path, a dict, False or None, got {type(spec).__name__}'
        )
    path = os.fsdecode(os.fspath(spec))
    if not os.path.isfile(path):
        raise LoopSpecError(path, None, 'no such loops file')
    import yaml

    try:
        with open(path, encoding='utf-8') as fh:
            data = yaml.load(fh, Loader=_strict_loader())  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        raise LoopSpecError(path, None, f'invalid YAML: {_yaml_problem(exc)}') from exc
    except UnicodeDecodeError as exc:
        raise LoopSpecError(path, None, f'not a UTF-8 text file: {exc}') from None
    if not isinstance(data, dict):
        raise LoopSpecError(path, None, 'top level must be a mapping')
    return data, path


def _vec3(src, key, v):
    if (
        isinstance(v, (str, bytes, dict))
        or not isinstance(v, (list, tuple))
        or any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in v)
    ):
        raise LoopSpecError(src, key, f'expected 3 numbers, got {_short(v)}')
    try:
        a = np.array([float(x) for x in v])
    except OverflowError:
        raise LoopSpecError(src, key, f'number out of range in {_short(v)}') from None
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise LoopSpecError(src, key, f'expected 3 finite numbers, got {_short(v)}')
    s = np.abs(a).max()
    if s < 1e-12:
        raise LoopSpecError(src, key, 'axis must be non-zero')
    a = a / s  # no overflow in the norm of huge entries
    return a / np.linalg.norm(a)


def _short(v, n=80):
    """repr of a YAML value, shortened (a fuzzer's 400-digit integer stays readable)."""
    r = repr(v)
    return r if len(r) <= n else r[:n] + '...'


def _names(src, key, v, allowed, what):
    if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
        raise LoopSpecError(src, key, f'expected a list of {what} names, got {v!r}')
    for i, s in enumerate(v):
        if s not in allowed:
            where = 'the sidecar' if what == 'loop' else 'the URDF'
            raise LoopSpecError(src, f'{key}[{i}]', f"'{s}' is not a {what} of {where}{_hint(s, allowed)}")
    if len(set(v)) != len(v):
        raise LoopSpecError(src, key, 'duplicate names')
    return list(v)


# actuator types the package reads, with their required keys (others are kept as data)
ACTUATOR_TYPES = {
    'hydraulic_cylinder': ('joint', 'bore', 'rod', 'stroke', 'valve'),
    'hydraulic_supply': ('supply_pressure', 'return_pressure', 'bulk_modulus'),
    'sea': ('joint', 'motor_joint', 'stiffness'),
    'linear_actuator': ('joint',),
}
_FRAME_KEYS = ('eye', 'rod_eye', 'tool_frame', 'frame')


def _number_ok(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        return math.isfinite(float(v))
    except OverflowError:
        return False


def _plain_values(src, key, d):
    """Values of a parameter mapping: finite numbers, strings, or lists / mappings of them."""
    items = d.items() if isinstance(d, dict) else enumerate(d)
    for k, v in items:
        kk = f'{key}.{k}' if isinstance(d, dict) else f'{key}[{k}]'
        if isinstance(k, (dict, list)) or (isinstance(d, dict) and not isinstance(k, str)):
            raise LoopSpecError(src, key, f'keys must be strings, got {_short(k)}')
        if isinstance(v, (dict, list)):
            _plain_values(src, kk, v)
        elif not (isinstance(v, str) or v is None or _number_ok(v)):
            raise LoopSpecError(src, kk, f'expected a finite number or a string, got {_short(v)}')


def _check_actuator(src, key, a, jset, frames):
    """One ``actuators`` entry: a mapping with a string ``type``; ``*joint`` keys name movable
    joints, frame keys name links, numbers are finite; known types have their required keys
    (``ACTUATOR_TYPES``) and positive physical sizes."""
    if not isinstance(a, dict) or not isinstance(a.get('type'), str):
        raise LoopSpecError(src, key, f'each actuator needs a string type (a mapping with type: ...), got {_short(a)}')
    _plain_values(src, key, a)
    for k, v in a.items():
        if k.endswith('joint'):
            _name(src, f'{key}.{k}', v, jset, 'movable joint')
        elif k in _FRAME_KEYS:
            _name(src, f'{key}.{k}', v, frames, 'link (frame)')
    for req in ACTUATOR_TYPES.get(a['type'], ()):
        if req not in a:
            raise LoopSpecError(src, f'{key}.{req}', f"required for an actuator of type '{a['type']}'")
    for k in ('bore', 'rod', 'stroke', 'stiffness', 'supply_pressure', 'bulk_modulus', 'motor_inertia'):
        if k in a and not (_number_ok(a[k]) and a[k] > 0):
            raise LoopSpecError(src, f'{key}.{k}', f'must be a number > 0, got {_short(a[k])}')
    if 'valve' in a and not isinstance(a['valve'], dict):
        raise LoopSpecError(src, f'{key}.valve', 'must be a mapping')
    for k, (bound, required) in ACTUATOR_NUMBERS.get(a['type'], {}).items():
        where = f'{key}.{k}'
        parent, leaf = a, k
        if '.' in k:  # a key of a nested mapping (valve.nominal_flow ...)
            head, leaf = k.split('.', 1)
            parent = a.get(head)
            if parent is None and head not in a and not required:
                continue
            if not isinstance(parent, dict):
                if parent is None and not required:
                    continue
                raise LoopSpecError(src, f'{key}.{head}', f'must be a mapping, got {_short(parent)}')
        if leaf not in parent:
            if required:
                raise LoopSpecError(src, where, f"required for an actuator of type '{a['type']}'")
            continue
        _bounded(src, where, parent[leaf], bound)
    if a['type'] == 'hydraulic_cylinder' and not a['bore'] > a['rod']:
        raise LoopSpecError(src, f'{key}.rod', f'rod diameter {a["rod"]} must be below the bore {a["bore"]}')
    if a['type'] == 'hydraulic_supply' and 'return_pressure' in a and not a['return_pressure'] < a['supply_pressure']:
        raise LoopSpecError(
            src,
            f'{key}.return_pressure',
            f'{a["return_pressure"]} Pa must be below the supply_pressure {a["supply_pressure"]} Pa',
        )


def _check_method_keys(src, key, sm, jset):
    """The keys of a submechanism that a method reads (after the generic checks):

    * ``platform_frame`` (a limb of the constraint embedding): one frame name;
    * ``parameters.task`` / ``parameters.limb_task`` (constraint embedding): lists;
    * ``resolver`` as a mapping loop -> {type, matrix}: each a mapping, ``matrix`` a
      rectangular list of rows of finite numbers;
    * ``resolver: isosceles_triangle`` (inertia partitioning): ``parameters`` with ``L0``, ``l0``
      > 0 [m], ``stroke_joint`` and ``apex_joint`` movable joints, ``base_angle_joints`` (list of
      movable joints) and ``base_angle_signs`` (as many finite numbers), ``apex_sign`` a
      finite number.
    """
    if 'platform_frame' in sm and not isinstance(sm['platform_frame'], str):
        raise LoopSpecError(
            src, f'{key}.platform_frame', f'expected one frame name, got {_short(sm["platform_frame"])}'
        )
    par = sm.get('parameters') or {}
    for k in ('task', 'limb_task'):
        if k in par and not (isinstance(par[k], list) and par[k]):
            raise LoopSpecError(
                src, f'{key}.parameters.{k}', f'expected a non-empty list of components, got {_short(par[k])}'
            )
    res = sm.get('resolver')
    if isinstance(res, dict):
        for ln, spec in res.items():
            rk = f'{key}.resolver.{ln}'
            if not isinstance(spec, dict):
                raise LoopSpecError(src, rk, f'expected a mapping {{type: ..., ...}}, got {_short(spec)}')
            if 'type' in spec and not isinstance(spec['type'], str):
                raise LoopSpecError(src, f'{rk}.type', f'expected a string, got {_short(spec["type"])}')
            if 'matrix' in spec:
                K = spec['matrix']
                if (
                    not isinstance(K, list)
                    or not K
                    or not all(isinstance(r, list) and len(r) == len(K[0]) for r in K)
                    or not all(_number_ok(x) for r in K for x in r)
                ):
                    raise LoopSpecError(
                        src, f'{rk}.matrix', f'expected rows of finite numbers of equal length, got {_short(K)}'
                    )
    if res == 'isosceles_triangle':
        pk = f'{key}.parameters'
        if not isinstance(sm.get('parameters'), dict):
            raise LoopSpecError(
                src, pk, 'the isosceles_triangle resolver needs parameters L0, l0, stroke_joint, apex_joint'
            )
        for k in ('L0', 'l0'):
            if k not in par:
                raise LoopSpecError(src, f'{pk}.{k}', 'required by the isosceles_triangle resolver')
            _bounded(src, f'{pk}.{k}', par[k], '>0')
        for k in ('stroke_joint', 'apex_joint'):
            if k not in par:
                raise LoopSpecError(src, f'{pk}.{k}', 'required by the isosceles_triangle resolver')
            _name(src, f'{pk}.{k}', par[k], jset, 'movable joint')
        bj = par.get('base_angle_joints', [])
        if not isinstance(bj, list):
            raise LoopSpecError(src, f'{pk}.base_angle_joints', f'expected a list of joint names, got {_short(bj)}')
        for i, j in enumerate(bj):
            _name(src, f'{pk}.base_angle_joints[{i}]', j, jset, 'movable joint')
        if 'base_angle_signs' in par:
            bs = par['base_angle_signs']
            if not isinstance(bs, list) or len(bs) != len(bj):
                raise LoopSpecError(
                    src,
                    f'{pk}.base_angle_signs',
                    f'expected {len(bj)} numbers (one per base angle joint), got {_short(bs)}',
                )
            for i, x in enumerate(bs):
                _bounded(src, f'{pk}.base_angle_signs[{i}]', x, 'finite')
        if 'apex_sign' in par:
            _bounded(src, f'{pk}.apex_sign', par['apex_sign'], 'finite')


def _bounded(src, key, v, bound):
    """A finite number with ``bound`` '>0', '>=0' or 'finite'; returns it as a float."""
    if not _number_ok(v):
        raise LoopSpecError(src, key, f'expected a finite number, got {_short(v)}')
    x = float(v)
    if (bound == '>0' and not x > 0) or (bound == '>=0' and not x >= 0):
        raise LoopSpecError(src, key, f'must be a number {bound.replace("0", " 0")}, got {_short(v)}')
    return x


# numeric keys of the actuator types a method reads: {type: {key (nested: 'valve.key'): (bound,
# required)}}; bound '>0', '>=0' or 'finite' (the hydraulic route divides by the valve's
# nominal flow and pressure drop, the SEA routes by the stiffness and motor inertia)
ACTUATOR_NUMBERS = {
    'hydraulic_cylinder': {
        'dead_volume_a': ('>=0', False),
        'dead_volume_b': ('>=0', False),
        'end_stiffness': ('>=0', False),
        'end_damping': ('>=0', False),
        'valve.nominal_flow': ('>0', True),
        'valve.nominal_pressure_drop': ('>0', True),
        'valve.max_input': ('>0', False),
        'valve.spool_time_constant': ('>=0', False),
        'friction.coulomb': ('>=0', False),
        'friction.viscous': ('>=0', False),
        'friction.velocity_scale': ('>0', False),
    },
    'hydraulic_supply': {
        'return_pressure': ('>=0', True),
        'min_pressure': ('finite', False),
        'max_pressure': ('>0', False),
    },
    'sea': {'damping': ('>=0', False), 'motor_damping': ('>=0', False), 'motor_inertia': ('>0', False)},
}


# semantic checks at load (constraint Jacobian at the reference configuration)
CLOSURE_TOL = 1e-6  # [m] / [-]: largest closure error of the reference configuration
RANK_TOL = 1e-9  # relative singular-value threshold


def _rank(M):
    if M.size == 0:
        return 0
    s = np.linalg.svd(M, compute_uv=False)
    return int((s > RANK_TOL * max(1.0, float(s.max()))).sum())


def check_semantics(model, src, declared=()):
    """What a sidecar must mean:

    * the two cut frames of a loop are on different bodies (else the loop constrains nothing
      that can move: it is always or never closed);
    * a complete ``reference_configuration`` ``q_r`` (every movable joint listed; a partial one
      is a guess for assembly and is not judged) closes every loop to ``CLOSURE_TOL`` (else:
      assemble it first);
    * at that ``q_r``: declared ``independent`` joints determine the configuration,
      ``rank [A; S_i] = n``, and there are as many as the mechanism has degrees of freedom,
      ``n - rank A``, less those of them that are idle motions (see below);
    * declared ``actuated`` joints drive it, ``rank [A; S_a] = n`` (a joint driven through a
      series-elastic actuator counts with its motor, and then the count is not checked: motor
      and link side are separate degrees of freedom). Motions they leave free are idle
      motions (a rod spinning about its axis, a floating base, an unactuated degree of
      freedom): not an error, a :class:`~robot_dynamics.errors.ModelWarning` naming each, and
      ``model.idle_motions`` lists them (:func:`robot_dynamics.algorithms.constraints.idle_motions`).

    ``declared``: the sidecar's top-level keys (defaults are not judged: without a
    ``reference_configuration`` there is no closed configuration to judge ranks at).
    Raises :class:`LoopSpecError` naming the loop or key."""
    if not model.loops:
        return
    from robot_dynamics.algorithms.constraints import (
        constraint_jacobian,
        describe_idle_motions,
        idle_motions,
        loop_errors,
    )

    for i, lp in enumerate(model.loops):
        if lp.coupling is not None:
            continue
        ba, bb = (int(model.frame_parent[model.frame_index(f)]) for f in (lp.frame_a, lp.frame_b))
        if ba == bb:
            body = 'the world' if ba < 0 else f"the body of joint '{model.joint_names[ba]}'"
            raise LoopSpecError(
                src,
                f'loops[{i}]',
                f"frame_a '{lp.frame_a}' and frame_b "
                f"'{lp.frame_b}' are both fixed to {body}: the loop constrains "
                'nothing that can move (cut frames go on the two sides of a joint)',
            )
    if set(model.reference_configuration) != set(model.joint_names):
        return  # none or partial (a guess for assembly): no closed configuration to judge
    q = model.reference_q()
    with np.errstate(over='ignore', invalid='ignore'):  # a huge coordinate: a non-finite error, refused below
        errors = loop_errors(model, q)
    for name, (ep, eo) in errors.items():
        if not (ep <= CLOSURE_TOL and eo <= CLOSURE_TOL):
            raise LoopSpecError(
                src,
                'reference_configuration',
                (
                    f"does not close loop '{name}': position error {ep:.3g} m, orientation error "
                    f'{eo:.3g} rad (tolerance {CLOSURE_TOL:g}); write a closed configuration there, e.g. '
                    'robot_dynamics.assemble(model).q (the nearest closed one) of the model loaded '
                    'with this sidecar minus its reference_configuration, or list only the '
                    'independent joints (a partial configuration is a guess for assembly)'
                ),
            )
    A = constraint_jacobian(model, q)
    n, dof = model.nv, model.nv - _rank(A)
    sea = {a.get('motor_joint'): a.get('joint') for a in model.actuators.values() if a.get('type') == 'sea'}
    eye = np.eye(n)
    idle = []
    if 'actuated' in declared:
        idle = idle_motions(model, q, list(model.actuated) + [sea[j] for j in model.actuated if j in sea])
        model.idle_motions = idle
    N = np.array([mo.direction for mo in idle]).reshape(len(idle), n)

    def spans(joints, extra=None):
        js = set(joints) | {sea[j] for j in joints if j in sea}
        rows = [A, eye[[model.joint_index(j) for j in js]]] + ([extra] if extra is not None else [])
        return _rank(np.vstack(rows)) == n

    rank = f'rank A = {n - dof}'
    checks = (
        (
            'independent',
            lambda: not spans(model.independent, N),
            f'{model.independent} do not determine the configuration at the reference configuration: the '
            f'mechanism has {dof} degree(s) of freedom (n = {n} joints, {rank}'
            + (f', {len(idle)} of them idle motions' if idle else '')
            + f'); choose {dof - len(idle)} joints whose motion is not fixed by the loops',
        ),
        (
            'independent',
            lambda: not sea and not (dof - len(idle) <= len(model.independent) <= dof),
            f'{len(model.independent)} independent joint(s) {model.independent} for a mechanism with {dof} '
            f'degree(s) of freedom (n = {n}, {rank}' + (f', {len(idle)} of them idle motions' if idle else '') + ')',
        ),
    )
    for key, fails, message in checks:
        if key in declared and fails():
            raise LoopSpecError(src, key, message)
    if idle:
        import warnings

        from robot_dynamics.errors import ModelWarning

        warnings.warn(
            f'{src}: actuated: {len(idle)} idle motion(s) at the reference configuration (the loops and '
            f'the actuated joints {model.actuated} leave them free; forward dynamics and simulation treat '
            'them as free, inverse dynamics puts no effort on them): ' + '; '.join(describe_idle_motions(idle)),
            ModelWarning,
            stacklevel=4,
        )


def _name(src, key, v, allowed, what):
    """One name (a string among ``allowed``)."""
    if not isinstance(v, str):
        raise LoopSpecError(src, key, f'expected a {what} name, got {_short(v)}')
    if v not in allowed:
        raise LoopSpecError(src, key, f"'{v}' is not a {what} of the URDF{_hint(v, allowed)}")
    return v


def _joint_frame(model, v):
    """Name of the frame fixed at the joint frame of velocity coordinate v (its URDF child link)."""
    ks = np.flatnonzero(model.frame_parent == v)
    for k in ks.tolist():
        if not model.frame_p[k].any() and np.array_equal(model.frame_R[k], _E):
            return model.frame_names[k]
    return model.frame_names[int(ks[0])]


def _coupling_loop(src, key, lp, model, names):
    """A ``coupling`` loop entry -> :class:`Loop` (one joint-space row)."""
    name = lp.get('name')
    if not isinstance(name, str):
        raise LoopSpecError(src, f'{key}.name', f'must be a string, got {_short(name)}')
    if name in names:
        raise LoopSpecError(src, f'{key}.name', f"duplicate loop name '{name}'")
    names.add(name)
    one_dof = {jt.name for jt in model.joints if jt.nv == 1}
    if 'joint' not in lp:
        raise LoopSpecError(src, f'{key}.joint', 'required key is missing (the coupled joint)')
    joint = _name(src, f'{key}.joint', lp['joint'], one_dof, 'one-DOF joint')
    if ('mimic' in lp) == ('reference_joint' in lp):
        raise LoopSpecError(src, f'{key}.mimic', 'a coupling needs exactly one of mimic / reference_joint')
    rk = 'mimic' if 'mimic' in lp else 'reference_joint'
    ref = _name(src, f'{key}.{rk}', lp[rk], one_dof, 'one-DOF joint')
    if ref == joint:
        raise LoopSpecError(src, f'{key}.{rk}', f"a joint cannot be coupled to itself ('{joint}')")
    if 'polycoef' in lp:
        for k in ('multiplier', 'offset'):
            if k in lp:
                raise LoopSpecError(src, f'{key}.{k}', 'give either polycoef or multiplier/offset')
        pc = lp['polycoef']
        if not isinstance(pc, list) or not 1 <= len(pc) <= 5 or not all(_number_ok(c) for c in pc):
            raise LoopSpecError(src, f'{key}.polycoef', f'expected 1 to 5 finite numbers, got {_short(pc)}')
        if any(float(c) != 0.0 for c in pc[2:]):
            raise LoopSpecError(
                src, f'{key}.polycoef', f'nonlinear terms {pc[2:]} are not supported (only a0 + a1 q_mimic)'
            )
        offset, mult = float(pc[0]), float(pc[1]) if len(pc) > 1 else 0.0
    else:
        vals = []
        for k, default in (('multiplier', 1.0), ('offset', 0.0)):
            v = lp.get(k, default)
            if not _number_ok(v):
                raise LoopSpecError(src, f'{key}.{k}', f'expected a finite number, got {_short(v)}')
            vals.append(float(v))
        mult, offset = vals
    return Loop(
        name=name,
        type='coupling',
        frame_a=_joint_frame(model, model.joint(joint).idx_v),
        frame_b=_joint_frame(model, model.joint(ref).idx_v),
        row_names=(f'{name}/q',),
        coupling=(joint, ref, mult, offset),
    )


def attach_loops(model, spec, check=True):
    """Validate the sidecar ``spec`` against ``model`` and store it on the model."""
    data, src = read_spec(spec)
    unknown = set(data) - _TOP_KEYS
    if unknown:
        k = _first(unknown)
        raise LoopSpecError(src, str(k), f'unknown top-level key{_hint(k, _TOP_KEYS)} (allowed: {sorted(_TOP_KEYS)})')
    if data.get('format') != FORMAT:
        raise LoopSpecError(src, 'format', f"must be '{FORMAT}', got {data.get('format')!r}")
    frames = set(model.frame_names)
    joints = list(model.joint_names)
    jset = set(joints)
    loops_raw = data.get('loops', []) or []
    if not isinstance(loops_raw, list):
        raise LoopSpecError(src, 'loops', 'must be a list')
    loops, names = [], set()
    for i, lp in enumerate(loops_raw):
        key = f'loops[{i}]'
        if not isinstance(lp, dict):
            raise LoopSpecError(src, key, 'each loop must be a mapping')
        coupling = lp.get('type') == 'coupling'
        allowed = _COUPLING_KEYS if coupling else _LOOP_KEYS
        bad = set(lp) - allowed
        if bad:
            k = _first(bad)
            what = 'key of a coupling loop' if coupling else 'loop key'
            raise LoopSpecError(src, f'{key}.{k}', f'unknown {what}{_hint(k, allowed)} (allowed: {sorted(allowed)})')
        if coupling:
            loops.append(_coupling_loop(src, key, lp, model, names))
            continue
        for req in ('name', 'type', 'frame_a', 'frame_b'):
            if req not in lp:
                raise LoopSpecError(src, f'{key}.{req}', 'required key is missing')
            if not isinstance(lp[req], str):
                raise LoopSpecError(src, f'{key}.{req}', f'must be a string, got {lp[req]!r}')
        name, lt = lp['name'], lp['type']
        if name in names:
            raise LoopSpecError(src, f'{key}.name', f"duplicate loop name '{name}'")
        names.add(name)
        if lt not in LOOP_TYPES:
            raise LoopSpecError(
                src, f'{key}.type', f"unknown loop type '{lt}'{_hint(lt, LOOP_TYPES)} (known: {LOOP_TYPES})"
            )
        for fk in ('frame_a', 'frame_b'):
            if lp[fk] not in frames:
                raise LoopSpecError(
                    src, f'{key}.{fk}', f"'{lp[fk]}' is not a link (frame) of the URDF{_hint(lp[fk], frames)}"
                )
        if lp['frame_a'] == lp['frame_b']:
            raise LoopSpecError(src, key, 'frame_a and frame_b must differ')
        axis = axes = None
        if lt in _NEEDS_AXIS:
            if 'axis' not in lp:
                raise LoopSpecError(src, f'{key}.axis', f"loop type '{lt}' needs an axis")
            axis = _vec3(src, f'{key}.axis', lp['axis'])
        elif 'axis' in lp:
            raise LoopSpecError(src, f'{key}.axis', f"loop type '{lt}' takes no axis")
        if lt == 'universal':
            ax = lp.get('axes')
            if not isinstance(ax, list) or len(ax) != 2:
                raise LoopSpecError(src, f'{key}.axes', 'universal loop needs axes: [[..], [..]]')
            axes = np.array([_vec3(src, f'{key}.axes[{k}]', ax[k]) for k in range(2)])
            if abs(axes[0] @ axes[1]) > 1e-9:
                raise LoopSpecError(src, f'{key}.axes', 'universal axes must be orthogonal')
        elif 'axes' in lp:
            raise LoopSpecError(src, f'{key}.axes', f"loop type '{lt}' takes no axes")
        pos, rot, rn = loop_rows(lt, axis, axes)
        loops.append(
            Loop(
                name=name,
                type=lt,
                frame_a=lp['frame_a'],
                frame_b=lp['frame_b'],
                axis=axis,
                axes=axes,
                pos_dirs=pos,
                rot_pairs=rot,
                row_names=tuple(f'{name}/{r}' for r in rn),
            )
        )
    actuated = (
        _names(src, 'actuated', data['actuated'], jset, 'movable joint')
        if 'actuated' in data
        else model.default_actuated()
    )
    independent = (
        _names(src, 'independent', data['independent'], jset, 'movable joint')
        if 'independent' in data
        else list(actuated)
    )
    ref = data.get('reference_configuration', {}) or {}
    if not isinstance(ref, dict):
        raise LoopSpecError(src, 'reference_configuration', 'must be a mapping joint: value')
    refc = {}
    for j, v in ref.items():
        if j not in jset:
            raise LoopSpecError(src, f'reference_configuration.{j}', f'not a movable joint of the URDF{_hint(j, jset)}')
        try:
            ok = not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(float(v))
        except OverflowError:
            ok = False
        if not ok:
            raise LoopSpecError(src, f'reference_configuration.{j}', f'expected a finite number, got {_short(v)}')
        refc[j] = float(v)
    subs = data.get('submechanisms', []) or []
    if not isinstance(subs, list):
        raise LoopSpecError(src, 'submechanisms', 'must be a list')
    for i, sm in enumerate(subs):
        key = f'submechanisms[{i}]'
        if not isinstance(sm, dict) or not isinstance(sm.get('name'), str):
            raise LoopSpecError(src, key, 'each submechanism needs a name')
        bad = set(sm) - _SUBMECH_KEYS
        if bad:
            k = _first(bad)
            raise LoopSpecError(
                src,
                f'{key}.{k}',
                f'unknown submechanism key{_hint(k, _SUBMECH_KEYS)} (allowed: {sorted(_SUBMECH_KEYS)})',
            )
        for jk in ('joints', 'independent', 'dependent'):
            if jk in sm:
                _names(src, f'{key}.{jk}', sm[jk], jset, 'movable joint')
        if 'loops' in sm:
            _names(src, f'{key}.loops', sm['loops'], names, 'loop')
        for k, allowed, what in (
            ('platform_joint', jset | names, 'movable joint or loop'),
            ('platform_frame', frames, 'link (frame)'),
        ):
            if k in sm:
                if isinstance(sm[k], list):
                    _names(src, f'{key}.{k}', sm[k], allowed, what)
                else:
                    _name(src, f'{key}.{k}', sm[k], allowed, what)
        if 'resolver' in sm:
            if isinstance(sm['resolver'], dict):
                _plain_values(src, f'{key}.resolver', sm['resolver'])
            elif not isinstance(sm['resolver'], str):
                raise LoopSpecError(
                    src, f'{key}.resolver', f'must be a string or a mapping, got {_short(sm["resolver"])}'
                )
        if 'redundant' in sm:
            red = sm['redundant']
            if not isinstance(red, dict):
                raise LoopSpecError(
                    src, f'{key}.redundant', f'must be a mapping loop: number of redundant rows, got {_short(red)}'
                )
            for ln, v in red.items():
                if ln not in set(sm.get('loops') or []):
                    raise LoopSpecError(
                        src, f'{key}.redundant.{ln}', f'not one of the submechanism loops {sm.get("loops") or []}'
                    )
                if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    raise LoopSpecError(
                        src, f'{key}.redundant.{ln}', f'expected a non-negative integer, got {_short(v)}'
                    )
        if 'parameters' in sm:
            if not isinstance(sm['parameters'], dict):
                raise LoopSpecError(src, f'{key}.parameters', 'must be a mapping')
            _plain_values(src, f'{key}.parameters', sm['parameters'])
        _check_method_keys(src, key, sm, jset)
    acts = data.get('actuators', {}) or {}
    if not isinstance(acts, dict):
        raise LoopSpecError(src, 'actuators', 'must be a mapping name: {type: ..., ...}')
    for an, a in acts.items():
        _check_actuator(src, f'actuators.{an}', a, jset, frames)
    model.loops = loops
    model.actuated = actuated
    model.passive = [j for j in joints if j not in set(actuated)]
    model.independent = independent
    model.reference_configuration = refc
    model.submechanisms = subs
    model.actuators = acts
    model.loops_source = src
    if check:
        check_semantics(model, src, declared=set(data))
    return model
