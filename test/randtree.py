"""Random URDF trees for the oracle tests (chains and branched, revolute/continuous/prismatic,
fixed joints, random axes, origins and physical inertias)."""

import numpy as np


def _rand_inertia(rng):
    # physical inertia: R diag(principal) R^T with the triangle inequality
    a, b = rng.uniform(0.01, 0.3, 2)
    c = rng.uniform(abs(a - b) + 1e-3, a + b)
    ev = np.array([a, b, c])
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return q @ np.diag(ev) @ q.T


def random_tree_urdf(seed, n_joints=None, branched=True, fixed_prob=0.15, name=None):
    """URDF XML of a random fixed-base tree; returns (xml, number of movable joints)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 21)) if n_joints is None else n_joints
    lines = [f'<robot name="{name or f"rand{seed}"}">', '<link name="base"/>']
    links = ['base']
    movable = 0
    k = 0
    while movable < n:
        parent = rng.choice(links) if branched else links[-1]
        child = f'l{k}'
        jt = (
            'fixed'
            if rng.random() < fixed_prob
            else rng.choice(['revolute', 'continuous', 'prismatic'], p=[0.45, 0.2, 0.35])
        )
        xyz = rng.uniform(-0.5, 0.5, 3)
        rpy = rng.uniform(-np.pi, np.pi, 3)
        ax = rng.normal(size=3)
        if rng.random() < 0.4:
            ax = np.eye(3)[rng.integers(3)] * rng.choice([-1, 1])
        ax /= np.linalg.norm(ax)
        m = rng.uniform(0.1, 3.0)
        I = _rand_inertia(rng)
        cx = rng.uniform(-0.2, 0.2, 3)
        crpy = rng.uniform(-1, 1, 3)
        f = lambda v: ' '.join(f'{x:.17g}' for x in v)
        lines.append(
            f'<link name="{child}"><inertial><origin xyz="{f(cx)}" rpy="{f(crpy)}"/>'
            f'<mass value="{m:.17g}"/><inertia ixx="{I[0, 0]:.17g}" ixy="{I[0, 1]:.17g}" '
            f'ixz="{I[0, 2]:.17g}" iyy="{I[1, 1]:.17g}" iyz="{I[1, 2]:.17g}" izz="{I[2, 2]:.17g}"/>'
            f'</inertial></link>'
        )
        lim = '<limit lower="-2" upper="2" effort="100" velocity="10"/>' if jt in ('revolute', 'prismatic') else ''
        axis = f'<axis xyz="{f(ax)}"/>' if jt != 'fixed' else ''
        lines.append(
            f'<joint name="j{k}" type="{jt}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{f(xyz)}" rpy="{f(rpy)}"/>{axis}{lim}</joint>'
        )
        links.append(child)
        movable += jt != 'fixed'
        k += 1
    lines.append('</robot>')
    return '\n'.join(lines), n


def _link_xml(name, rng, f, massless=False):
    if massless:
        return f'<link name="{name}"/>'
    m = rng.uniform(0.1, 3.0)
    I = _rand_inertia(rng)
    return (
        f'<link name="{name}"><inertial><origin xyz="{f(rng.uniform(-0.2, 0.2, 3))}" '
        f'rpy="{f(rng.uniform(-1, 1, 3))}"/><mass value="{m:.17g}"/>'
        f'<inertia ixx="{I[0, 0]:.17g}" ixy="{I[0, 1]:.17g}" ixz="{I[0, 2]:.17g}" '
        f'iyy="{I[1, 1]:.17g}" iyz="{I[1, 2]:.17g}" izz="{I[2, 2]:.17g}"/></inertial></link>'
    )


def two_branch_urdf(seed, n_a=2, n_b=6, cut_b_origin=None):
    """URDF XML of a spatial tree with two branches from ``base`` ending in cut frames.

    Branch A: ``n_a`` joints ``a0..`` then the massless link ``cut_a`` (fixed, random origin);
    branch B: ``n_b`` joints ``b0..`` then ``cut_b`` (fixed, origin ``cut_b_origin`` =
    (xyz, rpy) in the last body of B, identity if None). Joints are revolute or prismatic
    with random axes (generic: with ``n_b >= 6`` the relative twist of the cut frames spans
    se(3)). The same ``seed`` gives the same tree whatever ``cut_b_origin`` is, so a caller
    can load it once, compute where ``cut_b`` must sit to close a loop at some q, and
    rebuild it with that origin.
    """
    rng = np.random.default_rng(seed)
    f = lambda v: ' '.join(f'{x:.17g}' for x in v)
    lines = [f'<robot name="two_branch{seed}">', '<link name="base"/>']
    for br, nj in (('a', n_a), ('b', n_b)):
        parent = 'base'
        for k in range(nj):
            child = f'{br}{k}_link'
            jt = rng.choice(['revolute', 'prismatic'], p=[0.7, 0.3])
            ax = rng.normal(size=3)
            ax /= np.linalg.norm(ax)
            lines.append(_link_xml(child, rng, f))
            lines.append(
                f'<joint name="{br}{k}" type="{jt}"><parent link="{parent}"/>'
                f'<child link="{child}"/><origin xyz="{f(rng.uniform(-0.4, 0.4, 3))}" '
                f'rpy="{f(rng.uniform(-np.pi, np.pi, 3))}"/><axis xyz="{f(ax)}"/></joint>'
            )
            parent = child
        if br == 'a':
            xyz, rpy = rng.uniform(-0.3, 0.3, 3), rng.uniform(-np.pi, np.pi, 3)
        elif cut_b_origin is None:
            xyz, rpy = np.zeros(3), np.zeros(3)
        else:
            xyz, rpy = cut_b_origin
        lines.append(_link_xml(f'cut_{br}', rng, f, massless=True))
        lines.append(
            f'<joint name="cut_{br}_joint" type="fixed"><parent link="{parent}"/>'
            f'<child link="cut_{br}"/><origin xyz="{f(xyz)}" rpy="{f(rpy)}"/></joint>'
        )
    lines.append('</robot>')
    return '\n'.join(lines)
