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
        jt = 'fixed' if rng.random() < fixed_prob else rng.choice(
            ['revolute', 'continuous', 'prismatic'], p=[0.45, 0.2, 0.35])
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
        lines.append(f'<link name="{child}"><inertial><origin xyz="{f(cx)}" rpy="{f(crpy)}"/>'
                     f'<mass value="{m:.17g}"/><inertia ixx="{I[0,0]:.17g}" ixy="{I[0,1]:.17g}" '
                     f'ixz="{I[0,2]:.17g}" iyy="{I[1,1]:.17g}" iyz="{I[1,2]:.17g}" izz="{I[2,2]:.17g}"/>'
                     f'</inertial></link>')
        lim = ('<limit lower="-2" upper="2" effort="100" velocity="10"/>'
               if jt in ('revolute', 'prismatic') else '')
        axis = f'<axis xyz="{f(ax)}"/>' if jt != 'fixed' else ''
        lines.append(f'<joint name="j{k}" type="{jt}"><parent link="{parent}"/><child link="{child}"/>'
                     f'<origin xyz="{f(xyz)}" rpy="{f(rpy)}"/>{axis}{lim}</joint>')
        links.append(child)
        movable += jt != 'fixed'
        k += 1
    lines.append('</robot>')
    return '\n'.join(lines), n
