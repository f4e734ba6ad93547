"""Check a robot description before anything runs it: ``robot-dynamics check <urdf>``.

:func:`check_robot` loads the URDF + sidecar (which already raises on malformed input and on
sidecars that mean nothing: see :func:`robot_dynamics.parsers.sidecar.check_semantics`), then reports the
true closure error at the reference configuration (position [m], orientation [rad], zero only
at closure; when it is not closed, what assembly from it gives), the degrees of freedom and the actuation rank, and for
every method of the package whether it applies to this robot, and if not, why (the method's own
error message: each method is tried by building its model objects at the reference
configuration, nothing is assumed from the robot's name).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from robot_dynamics.errors import RobotDynamicsError

__all__ = ['check_robot', 'CheckReport', 'METHODS']


@dataclass
class CheckReport:
    """``facts``: (label, value) lines; ``methods``: (method, applies, detail) rows."""

    name: str
    facts: list = field(default_factory=list)
    methods: list = field(default_factory=list)

    def text(self):
        w = max(len(k) for k, _ in self.facts) if self.facts else 0
        out = [f'robot {self.name}'] + [f'  {k:<{w}}  {v}' for k, v in self.facts]
        out.append('methods:')
        for meth, ok, detail in self.methods:
            out.append(f'  [{"x" if ok else " "}] {meth}: {detail}')
        return '\n'.join(out)


def _projection(m):
    from robot_dynamics.algorithms.projection import constrained_forward_dynamics, controllability

    q, z = m.reference_q(), np.zeros(m.nv)
    if not np.all(np.isfinite(constrained_forward_dynamics(m, q, z, z).qdd)):
        raise RobotDynamicsError('constrained forward dynamics at the reference configuration is not finite')
    sigma = controllability(m, q)  # sigma_min [A; S_a]: > 0 <=> the actuators control
    ok = sigma > 1e-9
    return (
        'constrained forward dynamics (simulation), projected inverse dynamics; the actuated '
        f'joints {"control" if ok else "do NOT control (rigidly)"} the motion at the reference '
        f'configuration (sigma_min [A; S_a] = {sigma:.3g})'
    )


def _embedding(m):
    from robot_dynamics.pkm.embedding import get_pkm

    p = get_pkm(m)
    limbs = ', '.join(
        f'{lb.name} ({len(lb.qi)} DOF' + (f', loops {[L.name for L in lb.loops]}' if lb.loops else '') + ')'
        for lb in p.limbs
    )
    return f'{len(p.limbs)} limb(s): {limbs}; task {list(p.task)} of frame {p.platform_frame!r}'


def _recursive(m):
    from robot_dynamics.pkm.recursive import PKMStructureError, limbs_from_model

    try:
        lm = limbs_from_model(m)
        return f"compiled route: {lm.L} serial limb(s) of {lm.N} bodies to the platform '{lm.platform}'"
    except PKMStructureError as exc:
        from robot_dynamics.pkm.general import general_pkm

        why = ' '.join(str(exc).split())
        why = why.split(': ', 1)[-1] if why.startswith("model '") else why
        return f'general route (pkm.general): {general_pkm(m).describe()} [compiled route: {why[:120]}]'


def _partitioning(m):
    from robot_dynamics.algorithms.partitioning import PartitionedModel

    pm = PartitionedModel(m, 'auto')
    return f'minimal coordinates {list(pm.all_coords)}, loop map {pm.loop_map.kind}'


def _vdc(m):
    from robot_dynamics.algorithms.vdc import structure_from_model

    st = structure_from_model(m)
    return f'{st.ns} hydraulic segment(s) {[s.name for s in st.segments]}'


def _sea(m):
    from robot_dynamics.errors import InputError
    from robot_dynamics.plants.sea import sea_params_from_model
    from robot_dynamics.pkm.sea import SEAPKM

    s = SEAPKM(m)
    try:
        sea_params_from_model(m)
        route = 'planar 3RRR closed form (auto), general route available'
    except InputError as exc:
        route = f'general route (planar 3RRR closed form: {exc})'
    return (
        f'{s.n_a} series-elastic actuator(s), task {s.task}'
        + (', one redundant SEA (preload lambda)' if s.n_a > s.delta else '')
        + f'; {route}'
    )


METHODS = [
    ('projection (seed 002: closed-chain dynamics, pidc)', _projection),
    ('constraint embedding (seed 003: IK + task-space ID)', _embedding),
    ('recursive 2nd-order ID (seed 004)', _recursive),
    ('inertia partitioning (seed 000)', _partitioning),
    ('VDC of hydraulic booms (seed 001)', _vdc),
    ('SEA flatness control (seed 004)', _sea),
]


def launch_hint(urdf_path):
    """How to start the ROS graph of the robot in ``urdf_path``: ``robot-dynamics launch ...``
    for every bringup config that runs this URDF file: the packaged ``config/<name>.yaml`` (by
    name) and a ``<stem>.yaml`` beside the URDF (by path, e.g. ``test/data/planar_3rpr.yaml``);
    '' when there is none (or ``urdf_path`` is not a file)."""
    import glob
    import os
    from robot_dynamics.ros.bringup import BringupError, load_bringup, share_dir

    if not isinstance(urdf_path, str) or not os.path.isfile(urdf_path):
        return ''
    me = os.path.realpath(urdf_path)
    stem = urdf_path[:-5] if urdf_path.endswith('.urdf') else urdf_path
    cands = sorted(glob.glob(os.path.join(share_dir(), 'config', '*.yaml'))) + [stem + '.yaml']
    out = []
    for c in cands:
        if not os.path.isfile(c):
            continue
        try:
            b = load_bringup(c)
        except (BringupError, OSError, ValueError):
            continue
        if os.path.realpath(b.urdf) == me:
            packaged = os.path.dirname(os.path.realpath(c)) == os.path.realpath(os.path.join(share_dir(), 'config'))
            out.append(
                f'robot-dynamics launch '
                f'{os.path.basename(c)[:-5] if packaged else os.path.relpath(c)}'
                f' (timing {b.timing})'
            )
    return '; '.join(out)


def _assembly_fact(m, q):
    """What :func:`~robot_dynamics.algorithms.projection.assemble` makes of the (open) reference
    configuration q, nothing fixed: (text, closed q or None). The text gives the closed
    configuration's distance and the joints that move most, or the assembly error (its
    attempts, the smallest residual)."""
    from robot_dynamics.algorithms.projection import assemble

    try:
        res = assemble(m, q_guess=q, fixed='none')
    except RobotDynamicsError as exc:
        return 'fails: ' + ' '.join(str(exc).split()), None
    dq = m.difference(q, res.q)
    top = np.argsort(-np.abs(dq))[:3]
    moved = ', '.join(f'{m.joint_names[i]} {dq[i]:+.3g}' for i in top if abs(dq[i]) > 0)
    return (
        f'closed (true closure residual {res.residual:.1e}) at |dq| = {np.linalg.norm(dq):.3g} '
        f'from the reference ({moved}); robot_dynamics.assemble(model).q is that configuration'
    ), res.q


def check_robot(source, loops=None, allow_xacro=False, root_joint=None, strict=False):
    """Load and check a robot; returns a :class:`CheckReport` (raises the loader's own error
    when the description itself is malformed). ``loops``, ``allow_xacro``, ``root_joint`` and
    ``strict`` as :func:`robot_dynamics.load_model`."""
    from robot_dynamics.algorithms.constraints import (
        constraint_jacobian,
        describe_idle_motions,
        idle_motions,
        loop_errors,
    )
    from robot_dynamics.parsers.sidecar import _rank
    from robot_dynamics.parsers.urdf import load_model

    m = load_model(source, loops=loops, allow_xacro=allow_xacro, root_joint=root_joint, strict=strict)
    r = CheckReport(m.name)
    r.facts.append(('joints', f'{m.nv} velocity coordinates ({len(m.actuated)} actuated, {len(m.passive)} passive)'))
    r.facts.append(('loops', ', '.join(f'{lp.name} ({lp.type})' for lp in m.loops) or 'none (tree)'))
    q = m.reference_q()
    if m.loops:
        err = loop_errors(m, q)  # true closure errors: position [m], orientation [rad]
        worst = max(max(v) for v in err.values())
        wp = max(v[0] for v in err.values())
        wo = max(v[1] for v in err.values())
        complete = set(m.reference_configuration) == set(m.joint_names)
        r.facts.append(
            (
                'closure at reference',
                f'{worst:.2e} (position {wp:.2e} m, orientation {wo:.2e} rad)'
                + ('' if complete else ' (reference configuration partial: a guess for assembly)'),
            )
        )
        q_closed = q
        if worst > 1e-9:
            text, q_closed = _assembly_fact(m, q)
            r.facts.append(('assembly from reference', text))
        A = constraint_jacobian(m, q)
        rank = _rank(A)  # the loader's rank decision (check_semantics)
        # in velocity coordinates (nv: a free-flyer or ball joint has nq > nv)
        r.facts.append(('degrees of freedom', f'{m.nv - rank} (n = {m.nv}, rank A = {rank}, {A.shape[0]} rows)'))

        def rk(js):
            return _rank(np.vstack([A, np.eye(m.nv)[[m.joint_index(j) for j in js]]]))

        r.facts.append(('actuation rank', f'rank [A; S_a] = {rk(m.actuated)} of {m.nv}'))
        r.facts.append(('independent joints', f'{m.independent}: rank [A; S_i] = {rk(m.independent)} of {m.nv}'))
        # idle motions: at the reference configuration when it closes the loops, else at the
        # nearest closed configuration assemble finds (none judged if it finds none)
        q_idle = q if worst <= 1e-6 else q_closed
        if q_idle is None:
            r.facts.append(('idle motions', 'not judged (no closed configuration found from the reference)'))
        else:
            idle = idle_motions(m, q_idle)
            r.facts.append(('idle motions', '; '.join(describe_idle_motions(idle)) if idle else 'none'))
    else:
        r.facts.append(('degrees of freedom', f'{m.nv} (tree)'))
    hint = launch_hint(source)
    if hint:
        r.facts.append(('launch', hint))
    for name, fn in METHODS:
        try:
            r.methods.append((name, True, fn(m)))
        except (RobotDynamicsError, KeyError, ValueError, np.linalg.LinAlgError) as exc:
            r.methods.append((name, False, f'does not apply: {" ".join(str(exc).split())[:300]}'))
    return r
