"""IRSBot-2 (seed 003, Mueller): corrected geometry, URDF + sidecar generator, closed-form
planar-mode IK (the test oracle of the brief, section 3F) and the paper's trajectories T1/T2.

Everything here is IRSBot-2 specific *data*; the algorithms live in
:mod:`robot_dynamics.pkm.embedding` and work for any PKM described by URDF + sidecar.

World frame F0: x towards limb 1, y along the proximal joint axes, z up; the base pivots are
at z = 0, the platform below. Limb 2 = limb 1 rotated by pi about z (brief section 4.6), so
symmetric motions give equal actuator torques. Corrections applied (docs/constraint_embedding.md):
y4/y5 use -d2/+d2 (the printed signs are swapped), e4,2 = e6,1 and e5,2 have the z component
-sin(psi0), r2/r3 swapped in the text, the elbow COM at point E, r6 uses d3.

Parameter sets: ``'eq47'`` (default; masses of the paper) and ``'alt'`` (a = 1/4, b = 1/6,
L1 = 1/2, L2 = 3/4: the set of the printed r6,0 and of the single-target test). ``m3``:
``'printed'`` (21.1875 kg, inertia scaled from the primitive; default) or ``'geometric'``
(the stated primitive, 0.421875 kg for eq47). Units SI, angles rad, rho = 2700 kg/m^3.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from robot_dynamics.errors import RobotDynamicsError

__all__ = [
    'PARAMETER_SETS',
    'parameters',
    'urdf_text',
    'loops_text',
    'write_files',
    'closed_form_ik',
    'trajectory',
    'WorkspaceLimitError',
    'JOINTS_LIMB',
]

RHO = 2700.0
M3_PRINTED = 21.1875
PARAMETER_SETS = {
    'eq47': dict(a=1 / 8, b=1 / 12, L1=1 / 4, L2=1 / 2),
    'alt': dict(a=1 / 4, b=1 / 6, L1=1 / 2, L2=3 / 4),
}
#: tree joints of one limb in the order of the brief (phi1, phi2, phi3, phi41, ..., phi62)
JOINTS_LIMB = ('j1', 'j2', 'j3', 'j4_1', 'j4_2', 'j5_1', 'j5_2', 'j6_1', 'j6_2')


class WorkspaceLimitError(RobotDynamicsError):
    """Target outside the workspace of the closed-form IK (|K/R| > 1)."""


def parameters(param_set='eq47', m3='printed'):
    """Geometry, joint points/axes (limb 1, F0, reference configuration) and inertias.

    Returns a dict with the primary parameters, derived ones (b1, b3, c1, c3, d1, d2, d3, P1,
    P2, P3, u, beta, psi0, xe, ze, z6), joint points ``y`` and axes ``e`` (dict by joint
    suffix), COM ``r`` and rotation ``R`` of the bodies, masses ``m`` and COM inertias ``I``
    (body axes) of the bodies bar1, elbow, bar3, rod4, rod5, platform.
    """
    if param_set not in PARAMETER_SETS:
        raise RobotDynamicsError(f'unknown IRSBot-2 parameter set {param_set!r} (known: {sorted(PARAMETER_SETS)})')
    if m3 not in ('printed', 'geometric'):
        raise RobotDynamicsError(f"m3 must be 'printed' or 'geometric', got {m3!r}")
    p = dict(PARAMETER_SETS[param_set])
    a, b, L1, L2 = p['a'], p['b'], p['L1'], p['L2']
    al, ph0 = math.pi / 6, math.pi / 4
    b1, b3 = b * math.cos(al), b * math.sin(al)
    c1 = d1 = b1 / 2
    c3 = d3 = b3
    d2 = a
    P1, P2, P3 = a / 2, d2 / 2, 0.0
    u = a + c1 + d1 - P1 + L1 * math.sin(ph0)
    beta = math.atan2(d2 - P2, u)
    spsi = math.hypot(d2 - P2, u) / L2
    psi0 = math.asin(spsi)
    sb, cb, sp, cp = math.sin(beta), math.cos(beta), math.sin(psi0), math.cos(psi0)
    xe = a + c1 + d1 + L1 * math.sin(ph0)
    ze = -c3 - d3 - L1 * math.cos(ph0)
    z6 = ze - L2 * cp - P3
    y = {
        'j1': (a, 0, 0),
        'j2': (a + L1 * math.sin(ph0), 0, -L1 * math.cos(ph0)),
        'j3': (a + b1, 0, b3),
        'j4': (xe, -d2, ze),
        'j5': (xe, d2, ze),
        'j6': (P1, -P2, ze - L2 * cp),
        'u8': (P1, P2, z6 + P3),
        'j7': (a + b1 + L1 * math.sin(ph0), 0, b3 - L1 * math.cos(ph0)),
        'r6': (0, 0, z6),
    }
    e41 = (sb, cb, 0.0)
    e42 = (cb * cp, -sb * cp, -sp)
    e = {
        'j1': (0, 1, 0),
        'j2': (0, 1, 0),
        'j3': (0, 1, 0),
        'j4_1': e41,
        'j4_2': e42,
        'j5_1': (-sb, cb, 0.0),
        'j5_2': (cb * cp, sb * cp, -sp),
        'j6_1': e42,
        'j6_2': e41,
    }
    y = {k: np.array(v, float) for k, v in y.items()}
    e = {k: np.array(v, float) for k, v in e.items()}
    # bodies: COM (world, reference), rotation rpy, mass, COM inertia in body axes
    s1, s3, rr = L1 / 6, L1 / 10, L2 / 30
    m1 = RHO * L1 * s1**2
    m3g = RHO * L1 * s3**2
    lx, ly, lz = 2 * (c1 + d1), 2 * d2, c3 + d3
    m2 = RHO * lx * ly * lz
    m4 = RHO * math.pi * rr**2 * L2
    px, py, pz = 4 * P1, 3 * P2, P2 / 4
    m6 = RHO * px * py * pz

    def beam(m, L, s):
        return np.array([m * (L * L + s * s) / 12, m * (L * L + s * s) / 12, m * s * s / 6])

    def box(m, x, yy, z):
        return m / 12 * np.array([yy * yy + z * z, x * x + z * z, x * x + yy * yy])

    I3 = beam(m3g, L1, s3)
    m3v = m3g
    if m3 == 'printed':
        I3 = I3 * (M3_PRINTED / m3g)
        m3v = M3_PRINTED
    body = {
        'bar1': dict(
            m=m1, I=beam(m1, L1, s1), rpy=(0, -ph0, 0), r=(a + L1 / 2 * math.sin(ph0), 0, -L1 / 2 * math.cos(ph0))
        ),
        'elbow': dict(
            m=m2, I=box(m2, lx, ly, lz), rpy=(0, 0, 0), r=(a + c1 + L1 * math.sin(ph0), 0, -c3 - L1 * math.cos(ph0))
        ),
        'bar3': dict(
            m=m3v, I=I3, rpy=(0, -ph0, 0), r=(a + b1 + L1 / 2 * math.sin(ph0), 0, b3 - L1 / 2 * math.cos(ph0))
        ),
        'rod4': dict(
            m=m4,
            I=np.array([m4 * (3 * rr**2 + L2**2) / 12] * 2 + [m4 * rr**2 / 2]),
            rpy=(0, psi0, -beta),
            r=((xe + P1) / 2, -(P2 + d2) / 2, ze - L2 / 2 * cp),
        ),
        'rod5': dict(
            m=m4,
            I=np.array([m4 * (3 * rr**2 + L2**2) / 12] * 2 + [m4 * rr**2 / 2]),
            rpy=(0, psi0, beta),
            r=((xe + P1) / 2, (P2 + d2) / 2, ze - L2 / 2 * cp),
        ),
        'platform': dict(m=m6, I=box(m6, px, py, pz), rpy=(0, 0, 0), r=(0, 0, z6)),
    }
    for v in body.values():
        v['r'] = np.array(v['r'], float)
    p.update(
        param_set=param_set,
        m3=m3,
        alpha=al,
        phi0=ph0,
        b1=b1,
        b3=b3,
        c1=c1,
        c3=c3,
        d1=d1,
        d2=d2,
        d3=d3,
        P1=P1,
        P2=P2,
        P3=P3,
        u=u,
        beta=beta,
        psi0=psi0,
        xe=xe,
        ze=ze,
        z6=z6,
        y=y,
        e=e,
        body=body,
    )
    return p


_RZPI = np.diag([-1.0, -1.0, 1.0])


def _f(v):
    return ' '.join(f'{float(x):.17g}' for x in v)


def urdf_text(param_set='eq47', m3='printed'):
    """URDF (spanning tree) of IRSBot-2. Joint frames are world-aligned at the reference
    configuration (all joint angles 0), with their origins on the joint points; universal
    joints are two revolutes with a massless cross link; limb 2 reaches the platform only
    through the cut joint l2_U6 (see :func:`loops_text`). Frame ``tool`` = platform frame
    F_p at r6,0 (the task point)."""
    P = parameters(param_set, m3)
    y, e, body = P['y'], P['e'], P['body']
    out = [
        '<?xml version="1.0"?>',
        f'<!-- IRSBot-2 (seed 003), parameter set {param_set}, m3 {m3}. GENERATED by',
        '     robot_dynamics.pkm.irsbot2.write_files(); do not edit by hand.',
        '     Spanning tree: base -> limb 1 (bar1 -> elbow -> [cross4 -> rod4 -> cross6 -> platform],',
        '     [cross5 -> rod5]; base -> bar3), base -> limb 2 (same, without its U6 to the platform).',
        '     Cut joints (irsbot2.loops.yaml): l1_R7, l1_U8, l2_R7, l2_U8, l2_U6 (22 rows, rank 14). -->',
        '<robot name="irsbot2">',
        '  <link name="base"/>',
    ]

    def link(name, bname=None, T=np.eye(3), org=np.zeros(3)):
        if bname is None:
            out.append(f'  <link name="{name}"/>')
            return
        bd = body[bname]
        r = T @ bd['r'] - org
        rpy = list(bd['rpy'])
        if T[0, 0] < 0:
            rpy[2] += math.pi
        Ixx, Iyy, Izz = bd['I']
        out.append(
            f'  <link name="{name}"><inertial><origin xyz="{_f(r)}" rpy="{_f(rpy)}"/>'
            f'<mass value="{bd["m"]:.17g}"/><inertia ixx="{Ixx:.17g}" ixy="0" ixz="0" '
            f'iyy="{Iyy:.17g}" iyz="0" izz="{Izz:.17g}"/></inertial></link>'
        )

    def joint(name, parent, child, xyz, axis=None):
        if axis is None:
            out.append(
                f'  <joint name="{name}" type="fixed"><parent link="{parent}"/>'
                f'<child link="{child}"/><origin xyz="{_f(xyz)}" rpy="0 0 0"/></joint>'
            )
        else:
            out.append(
                f'  <joint name="{name}" type="continuous"><parent link="{parent}"/>'
                f'<child link="{child}"/><origin xyz="{_f(xyz)}" rpy="0 0 0"/>'
                f'<axis xyz="{_f(axis)}"/><limit effort="10000" velocity="100"/></joint>'
            )

    for L, T in (('l1', np.eye(3)), ('l2', _RZPI)):
        Y = {k: T @ v for k, v in y.items()}
        E = {k: T @ v for k, v in e.items()}
        link(f'{L}_bar1', 'bar1', T, Y['j1'])
        joint(f'{L}_j1', 'base', f'{L}_bar1', Y['j1'], E['j1'])
        link(f'{L}_elbow', 'elbow', T, Y['j2'])
        joint(f'{L}_j2', f'{L}_bar1', f'{L}_elbow', Y['j2'] - Y['j1'], E['j2'])
        link(f'{L}_bar3', 'bar3', T, Y['j3'])
        joint(f'{L}_j3', 'base', f'{L}_bar3', Y['j3'], E['j3'])
        for k in ('4', '5'):
            link(f'{L}_cross{k}')
            joint(f'{L}_j{k}_1', f'{L}_elbow', f'{L}_cross{k}', Y['j' + k] - Y['j2'], E[f'j{k}_1'])
            link(f'{L}_rod{k}', 'rod' + k, T, Y['j' + k])
            joint(f'{L}_j{k}_2', f'{L}_cross{k}', f'{L}_rod{k}', np.zeros(3), E[f'j{k}_2'])
        # cut frames of the parallelogram joint R7 (on the elbow and on bar 3)
        link(f'{L}_r7_a')
        joint(f'{L}_r7_a_joint', f'{L}_elbow', f'{L}_r7_a', Y['j7'] - Y['j2'])
        link(f'{L}_r7_b')
        joint(f'{L}_r7_b_joint', f'{L}_bar3', f'{L}_r7_b', Y['j7'] - Y['j3'])
    y6 = y['j6']
    link('l1_cross6')
    joint('l1_j6_1', 'l1_rod4', 'l1_cross6', y6 - y['j4'], e['j6_1'])
    link('platform', 'platform', np.eye(3), y6)
    joint('l1_j6_2', 'l1_cross6', 'platform', np.zeros(3), e['j6_2'])
    link('tool')
    joint('tool_joint', 'platform', 'tool', y['r6'] - y6)
    for L, T in (('l1', np.eye(3)), ('l2', _RZPI)):
        link(f'{L}_u8_a')
        joint(f'{L}_u8_a_joint', 'platform', f'{L}_u8_a', T @ y['u8'] - y6)
        link(f'{L}_u8_b')
        joint(f'{L}_u8_b_joint', f'{L}_rod5', f'{L}_u8_b', T @ y['u8'] - T @ y['j5'])
    link('l2_u6_a')
    joint('l2_u6_a_joint', 'l2_rod4', 'l2_u6_a', _RZPI @ y6 - _RZPI @ y['j4'])
    link('l2_u6_b')
    joint('l2_u6_b_joint', 'platform', 'l2_u6_b', _RZPI @ y6 - y6)
    out.append('</robot>')
    return '\n'.join(out) + '\n'


def loops_text(param_set='eq47'):
    """The loops sidecar (format robot_dynamics/parsers/sidecar/1) with the limb decomposition."""
    P = parameters(param_set)
    e = P['e']
    ax = {}
    for L, T in (('l1', np.eye(3)), ('l2', _RZPI)):
        ax[L] = {k: T @ v for k, v in e.items()}

    def v(a):
        return '[' + ', '.join(f'{float(x):.17g}' for x in a) + ']'

    lines = [
        '# IRSBot-2 loop closures and limb decomposition (format robot_dynamics/parsers/sidecar/1).',
        f'# GENERATED by robot_dynamics.pkm.irsbot2.write_files() (parameter set {param_set}).',
        'format: robot_dynamics/parsers/sidecar/1',
        'description: >',
        '  IRSBot-2 (seed 003). Global spanning tree with 16 joints and 22 cut-joint rows (rank 14):',
        '  per limb the planar parallelogram joint R7 (revolute, 5 rows, 2 independent) and the',
        '  distal universal joint U8 (4 rows), plus the universal joint U6 of limb 2 to the platform.',
        '  Limbs (submechanisms) for the constraint embedding (robot_dynamics.pkm.embedding).',
        'loops:',
    ]
    for L in ('l1', 'l2'):
        lines += [
            f'  - {{name: {L}_R7, type: revolute, frame_a: {L}_r7_a, frame_b: {L}_r7_b, axis: {v(ax[L]["j1"])}}}',
            f'  - {{name: {L}_U8, type: universal, frame_a: {L}_u8_a, frame_b: {L}_u8_b,',
            f'     axes: [{v(ax[L]["j5_1"])}, {v(ax[L]["j5_2"])}]}}',
        ]
    lines += [
        '  - {name: l2_U6, type: universal, frame_a: l2_u6_a, frame_b: l2_u6_b,',
        f'     axes: [{v(ax["l2"]["j6_1"])}, {v(ax["l2"]["j6_2"])}]}}',
        'actuated: [l1_j1, l2_j1]',
        'independent: [l1_j1, l2_j1]',
        '# the reference configuration (all joints 0) is closed by construction',
        'reference_configuration: {}',
        'submechanisms:',
    ]
    for L in ('l1', 'l2'):
        joints = [f'{L}_{j}' for j in JOINTS_LIMB if L == 'l1' or not j.startswith('j6')]
        pj = '[l1_j6_1, l1_j6_2]' if L == 'l1' else 'l2_U6'
        lines += [
            f'  - name: limb{L[1]}',
            f'    description: limb {L[1]} = parallelogram (R1 R2 R3 + cut R7) in series with '
            f'the 4U loop (U4 U5 U6 + cut U8)',
            f'    joints: [{", ".join(joints)}]',
            f'    loops: [{L}_R7, {L}_U8]',
            f'    dependent: [{L}_j2, {L}_j3, {L}_j4_1, {L}_j4_2, {L}_j5_1, {L}_j5_2]',
            f'    platform_joint: {pj}',
            '    platform_frame: tool',
            f'    resolver: {{{L}_R7: {{type: linear, matrix: [[-1.0], [1.0]]}}, {L}_U8: {{type: newton}}}}',
            '    parameters: {task: [x, z], limb_task: [x, y, z]}',
        ]
    return '\n'.join(lines) + '\n'


def write_files(directory, param_set='eq47', m3='printed', stem='irsbot2'):
    """Write ``<stem>.urdf`` and ``<stem>.loops.yaml`` into ``directory``; returns the URDF path."""
    import os

    up = os.path.join(directory, f'{stem}.urdf')
    with open(up, 'w', encoding='utf-8') as fh:
        fh.write(urdf_text(param_set, m3))
    with open(os.path.join(directory, f'{stem}.loops.yaml'), 'w', encoding='utf-8') as fh:
        fh.write(loops_text(param_set))
    return up


ClosedForm = namedtuple('ClosedForm', 'limb1 limb2')
ClosedForm.__doc__ = """Closed-form IK: joint angles (9,) per limb in the order of JOINTS_LIMB
(phi1, phi2, phi3, phi41, phi42, phi51, phi52, phi61, phi62), limb-local axes convention."""


def _wrap(x):
    return (x + math.pi) % (2 * math.pi) - math.pi


def _limb_closed_form(P, xp, zp, mode):
    a, L1, L2 = P['a'], P['L1'], P['L2']
    c1, d1, c3, d3, d2 = P['c1'], P['d1'], P['c3'], P['d3'], P['d2']
    P1, P2, P3 = P['P1'], P['P2'], P['P3']
    X = xp + P1 - a - (c1 + d1)
    Z = zp + P3 + (c3 + d3)
    rho2 = L2**2 - (d2 - P2) ** 2
    K = (rho2 - X * X - Z * Z - L1**2) / (2 * L1)
    gam = math.atan2(X, Z)
    R = math.hypot(X, Z)
    if abs(K / R) > 1:
        raise WorkspaceLimitError(
            f'IRSBot-2 closed-form IK: target (x={xp:.6g}, z={zp:.6g}) is outside the workspace (K/R = {K / R:.6g})'
        )
    th = -gam - mode * math.acos(K / R)
    ph1 = _wrap(P['phi0'] - th)
    E4 = np.array([a + c1 + d1 + L1 * math.sin(th), -d2, -(c3 + d3) - L1 * math.cos(th)])
    w = np.array([xp + P1, -P2, zp + P3]) - E4
    sb, cb = math.sin(P['beta']), math.cos(P['beta'])
    sp, cp = math.sin(P['psi0']), math.cos(P['psi0'])
    e1 = np.array([sb, cb, 0.0])
    e2 = np.array([cb * cp, -sb * cp, -sp])
    n = np.cross(e1, e2)
    p42 = math.asin(w @ e1 / L2)
    p41 = math.atan2(-(w @ e2), w @ n)
    return np.array([ph1, -ph1, ph1, p41, p42, p41, -p42, -p42, -p41])


def closed_form_ik(x, z, param_set='eq47', mode=1):
    """Closed-form IK of the planar translation mode (brief section 3F, corrected geometry).

    ``x, z``: platform origin (tool) in F0 [m]. ``mode=1``: reference working mode, ``-1``:
    the other one. Limb 2 uses the same formulas with x -> -x (mirror construction).
    Raises :class:`WorkspaceLimitError` if |K/R| > 1. Returns :class:`ClosedForm`; the angles
    are directly the URDF joint values (l1_j1 ... l1_j6_2; for limb 2 l2_j1 ... and the
    virtual U6 angles l2_U6_1, l2_U6_2 of the embedding's limb-2 tree).
    """
    P = parameters(param_set)
    return ClosedForm(_limb_closed_form(P, x, z, mode), _limb_closed_form(P, -x, z, mode))


def trajectory(t, kind='T1', param_set='eq47', T=1.0, nu=3.0, factor=None):
    """Task trajectory (x, z) of the platform origin and its first two time derivatives.

    ``r6(t) = r6,0 + (dx s, 0, dz f s (1 - s))``, ``s = sin^2(nu pi t / T)``. T1: dx = 0.25,
    dz = 0.45; T2: dx = -0.15, dz = -0.6085 (passes near the stretched singularity of limb 1);
    'T1v': T1 with dx = 0 (vertical only). ``factor`` defaults to 1 for eq47 (the printed 4 is
    infeasible there, brief section 4.8) and 4 for alt. Returns x (2,), xd (2,), xdd (2,).
    """
    P = parameters(param_set)
    dx, dz = {'T1': (0.25, 0.45), 'T2': (-0.15, -0.6085), 'T1v': (0.0, 0.45)}[kind]
    f = (1.0 if param_set == 'eq47' else 4.0) if factor is None else factor
    w = nu * math.pi / T
    s = math.sin(w * t) ** 2
    sd = 2 * math.sin(w * t) * math.cos(w * t) * w  # = w sin(2wt)
    sdd = 2 * w * w * math.cos(2 * w * t)
    h, hd, hdd = s * (1 - s), sd * (1 - 2 * s), sdd * (1 - 2 * s) - 2 * sd * sd
    x0 = np.array([0.0, P['z6']])
    return (x0 + np.array([dx * s, dz * f * h]), np.array([dx * sd, dz * f * hd]), np.array([dx * sdd, dz * f * hdd]))
