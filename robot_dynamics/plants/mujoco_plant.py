"""A plant simulated by MuJoCo, built from the package's model (URDF + loop sidecar).

:func:`mj_spec` turns a :class:`robot_dynamics.model.Model` into a ``mujoco.MjSpec``; the
:class:`MujocoPlant` steps it like the rigid plant (same interface: ``reset``, ``step(tau,
dt)``, ``q``, ``qd``, ``t``, external wrenches, snapshots); ``robot-dynamics export mjcf``
writes the same spec as an MJCF file that MuJoCo's own viewer opens.

What the model becomes:

* **Bodies and joints**: one body per joint of the spanning tree, at the joint frame's placement
  (URDF: the child link's frame), its inertia from the description (mass, centre of mass, full
  inertia tensor about the centre of mass); revolute / continuous joints are hinges, prismatic
  joints slides, a free-flyer root a free joint, a spherical joint a ball joint. Finite URDF
  position limits become joint ranges (MuJoCo's soft limit constraints). The description's
  ``<dynamics>`` damping and friction are *not* applied, as in the rigid plant (the package's
  models carry none), so that both plants integrate the same equations.
* **Frames** (every URDF link and fixed frame) are sites on their bodies.
* **Loops** (equality constraints between the cut frames' sites): ``spherical`` -> ``connect``;
  ``revolute`` -> two ``connect`` at the cut point and ``axis_length`` along the axis;
  ``weld`` -> ``weld``; ``coupling`` -> a joint equality (``q = multiplier q_ref + offset``).
  The other loop types free some relative motion that MuJoCo's equalities cannot express; they
  become *virtual joints* on a chain of bodies hung at the frame ``frame_a`` (mass
  ``virtual_mass`` each, inertia ``virtual_mass * virtual_radius**2``), closed by a connect or
  two: ``point_on_line`` a slide along the line, ``point_on_plane`` two slides in the plane,
  ``universal`` a hinge about its first axis then a revolute pair of connects about the
  second, ``cylindrical`` a slide then the revolute pair, ``planar`` two slides then the
  revolute pair, ``prismatic`` a slide then a weld. With the default 1e-6 kg the virtual bodies
  add less than 1e-6 of the lightest link's inertia.
* **Actuation**: the generalized force of the plant input (``tau`` (n,) or the actuated
  joints' efforts) is applied as ``qfrc_applied`` on the joints' degrees of freedom;
  the MJCF export also declares a ``motor`` per actuated joint (ctrlrange from the effort
  limit) for MuJoCo's viewer.
* **Softness**: MuJoCo's equality constraints are soft. Defaults: time step 0.2 ms with
  RK4, ``solref = (4e-4, 1)`` (a critically damped constraint with a 0.4 ms time constant, twice
  the step, the stiffest MuJoCo integrates stably) and ``solimp = (0.9999, 0.9999, 1e-3, 0.5,
  2)`` (the largest impedance MuJoCo allows: the constraint force takes 99.99 % of the reference
  acceleration). The closure then holds to 1e-11 .. 2e-7 m on the package's robots; with
  ``solimp`` (0.99, 0.999) it is 100x looser (``test/plants/test_mujoco_plant.py``).
* Visual geoms (``visuals=True``, for rendering; no contact, no mass):
  :mod:`robot_dynamics.plants.mujoco_visuals`.
* Contact: off unless ``contact=True`` (the description's collision boxes, cylinders and
  spheres become geoms and a ground plane is added at z = 0).

Coordinates: ours and MuJoCo's agree for one-DOF joints; a free flyer is (x, y, z, qx, qy, qz,
qw) with the body-frame twist (v, w) here and (x, y, z, qw, qx, qy, qz) with the world-frame
linear velocity and body-frame angular velocity in MuJoCo; a ball joint (qx, qy, qz, qw) here,
(qw, qx, qy, qz) there, both with body-frame angular velocity. :class:`MjMap` converts.
"""

from __future__ import annotations

import math

import numpy as np

from robot_dynamics.errors import InputError, ModelError, RobotDynamicsError
from robot_dynamics.plants.registry import register_plant
from robot_dynamics.plants.rigid import Plant, StepInfo

__all__ = ['mj_spec', 'mj_export', 'MjMap', 'MujocoPlant', 'DEFAULT_TIMESTEP', 'DEFAULT_SOLREF', 'DEFAULT_SOLIMP']

DEFAULT_TIMESTEP = 2e-4
DEFAULT_SOLREF = (4e-4, 1.0)
DEFAULT_SOLIMP = (0.9999, 0.9999, 1e-3, 0.5, 2.0)

_VIRTUAL = {
    # loop type: (virtual joints: ('slide'|'hinge', which axis), closure: 'connect'|'revolute'|'weld')
    'point_on_line': ((('slide', 'axis'),), 'connect'),
    'point_on_plane': ((('slide', 't1'), ('slide', 't2')), 'connect'),
    'universal': ((('hinge', 'a1'),), 'revolute'),
    'cylindrical': ((('slide', 'axis'),), 'revolute'),
    'planar': ((('slide', 't1'), ('slide', 't2')), 'revolute'),
    'prismatic': ((('slide', 'axis'),), 'weld'),
}


def _mujoco():
    try:
        import mujoco
    except ImportError as exc:  # (a runtime dependency: requirements/core.txt)
        raise InputError(f'the MuJoCo plant needs the mujoco package: {exc}') from exc
    return mujoco


def _quat_wxyz(R):
    """Unit quaternion (w, x, y, z) of a rotation matrix."""
    from transforms3d.quaternions import mat2quat

    return mat2quat(np.asarray(R, float))


def _perp_basis(n):
    """Two unit vectors completing the unit vector n to a right-handed basis."""
    n = np.asarray(n, float) / np.linalg.norm(n)
    e = np.eye(3)[int(np.argmin(np.abs(n)))]
    t1 = np.cross(n, e)
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(n, t1)


class MjMap:
    """Where each coordinate of the model sits in MuJoCo's ``qpos`` / ``qvel``, and the
    virtual joints of the loops (see the module docstring).

    ``joints``: per model joint (kind, our q slice start, our v start, mj qpos address, mj dof
    address); ``virtual``: per loop with virtual joints, (loop, [(kind, axis in frame_a, qpos
    address)], frame_a, frame_b); ``bodies``: per model frame name, (mj body name, placement
    in that body (R, p)).
    """

    def __init__(self):
        self.joints, self.virtual, self.sites = [], [], {}
        self.visual_notes = []
        self.body_of_coord = {}

    def bind(self, mjm):
        mj = _mujoco()
        self.joints = [
            (
                kind,
                iq,
                iv,
                int(mjm.jnt_qposadr[mj.mj_name2id(mjm, mj.mjtObj.mjOBJ_JOINT, name)]),
                int(mjm.jnt_dofadr[mj.mj_name2id(mjm, mj.mjtObj.mjOBJ_JOINT, name)]),
            )
            for kind, iq, iv, name in self._joint_names
        ]
        self.virtual = []
        for lp, vj in self._virtual_names:
            entries = []
            for kind, axis, jn, *extra in vj:
                jid = mj.mj_name2id(mjm, mj.mjtObj.mjOBJ_JOINT, jn)
                entries.append((kind, axis, int(mjm.jnt_qposadr[jid]), int(mjm.jnt_dofadr[jid]), *extra))
            self.virtual.append((lp, entries))
        self.dofs = (
            np.concatenate(
                [
                    np.arange(a, a + (6 if k == 'free_flyer' else 3 if k == 'spherical' else 1))
                    for k, _, _, _, a in self.joints
                ]
            ).astype(np.int64)
            if self.joints
            else np.zeros(0, np.int64)
        )
        one = [(iq, iv, a, d) for k, iq, iv, a, d in self.joints if k not in ('free_flyer', 'spherical')]
        self._1 = tuple(np.array([e[i] for e in one], np.int64) for i in range(4))
        self._multi = [e for e in self.joints if e[0] in ('free_flyer', 'spherical')]
        return self

    def to_mj(self, model, q, qd, qpos, qvel):
        """Write our (q, qd) into MuJoCo's qpos / qvel (the loops' virtual joints are set by
        :class:`MujocoPlant`)."""
        iq1, iv1, a1, d1 = self._1
        qpos[a1] = q[iq1]
        qvel[d1] = qd[iv1]
        for kind, iq, iv, a, d in self._multi:
            if kind == 'free_flyer':
                qpos[a : a + 3] = q[iq : iq + 3]
                qpos[a + 3] = q[iq + 6]
                qpos[a + 4 : a + 7] = q[iq + 3 : iq + 6]
                R = _rot_xyzw(q[iq + 3 : iq + 7])
                qvel[d : d + 3] = R @ qd[iv : iv + 3]
                qvel[d + 3 : d + 6] = qd[iv + 3 : iv + 6]
            else:  # spherical
                qpos[a] = q[iq + 3]
                qpos[a + 1 : a + 4] = q[iq : iq + 3]
                qvel[d : d + 3] = qd[iv : iv + 3]

    def from_mj(self, qpos, qvel, q, qd):
        """Read MuJoCo's qpos / qvel into our (q, qd)."""
        iq1, iv1, a1, d1 = self._1
        q[iq1] = qpos[a1]
        qd[iv1] = qvel[d1]
        for kind, iq, iv, a, d in self._multi:
            if kind == 'free_flyer':
                q[iq : iq + 3] = qpos[a : a + 3]
                q[iq + 3 : iq + 6] = qpos[a + 4 : a + 7]
                q[iq + 6] = qpos[a + 3]
                R = _rot_xyzw(q[iq + 3 : iq + 7])
                qd[iv : iv + 3] = R.T @ qvel[d : d + 3]
                qd[iv + 3 : iv + 6] = qvel[d + 3 : d + 6]
            else:  # spherical
                q[iq : iq + 3] = qpos[a + 1 : a + 4]
                q[iq + 3] = qpos[a]
                qd[iv : iv + 3] = qvel[d : d + 3]


def _rot_xyzw(x):
    from transforms3d.quaternions import quat2mat

    return quat2mat([x[3], x[0], x[1], x[2]])


def _child_links(model):
    """Per velocity coordinate index of a joint's last coordinate: the name of the link the
    joint moves (the frame on it at the identity placement), else None."""
    out = {}
    for f, name in enumerate(model.frame_names):
        p = int(model.frame_parent[f])
        if p not in out and np.abs(model.frame_p[f]).max() == 0.0 and np.abs(model.frame_R[f] - np.eye(3)).max() == 0.0:
            out[p] = name
    return out


def _set_inertia(body, mass, com, I, mass_floor, inertia_floor):
    """The body's inertia: mass [kg], centre of mass and the inertia tensor about it in the
    body frame, as principal moments and axes (floored, see :func:`mj_spec`)."""
    w, V = np.linalg.eigh(0.5 * (I + I.T))
    if np.linalg.det(V) < 0:
        V[:, 0] = -V[:, 0]
    body.mass = max(mass, mass_floor)
    body.ipos = np.asarray(com, float)
    body.iquat = _quat_wxyz(V)
    body.inertia = np.maximum(w, inertia_floor)
    body.explicitinertial = True


def mj_spec(
    model,
    *,
    timestep=DEFAULT_TIMESTEP,
    solref=DEFAULT_SOLREF,
    solimp=DEFAULT_SOLIMP,
    axis_length=0.1,
    virtual_mass=1e-6,
    virtual_radius=0.01,
    integrator='RK4',
    contact=False,
    motors=True,
    limits=True,
    mass_floor=1e-9,
    inertia_floor=1e-12,
    visuals=False,
):
    """MuJoCo spec of ``model`` (see the module docstring). Returns ``(spec, MjMap)``.

    ``timestep`` [s]; ``solref`` (time constant [s], damping ratio) and ``solimp`` of every
    equality; ``axis_length`` [m] between the two connects of a revolute pair; ``integrator``
    'Euler' | 'implicitfast' | 'RK4'; ``limits``: finite URDF position limits as joint ranges.
    MuJoCo needs every moving body to have a positive mass and positive principal moments: a
    massless body gets ``mass_floor`` [kg], a principal moment below ``inertia_floor``
    [kg m^2] is raised to it (a point mass, a thin rod about its axis). ``visuals``: add geoms
    that only show (the description's geometry or a stick figure, and the loops' cut frames:
    :mod:`robot_dynamics.plants.mujoco_visuals`; no contact, no mass); what they skip is in
    ``MjMap.visual_notes``. Raises ModelError naming the joint or loop that MuJoCo cannot
    represent.
    """
    mj = _mujoco()
    spec = mj.MjSpec()
    spec.modelname = model.name
    spec.option.timestep = float(timestep)
    spec.option.gravity = np.asarray(model.gravity, float)
    spec.option.integrator = {
        'Euler': mj.mjtIntegrator.mjINT_EULER,
        'implicitfast': mj.mjtIntegrator.mjINT_IMPLICITFAST,
        'RK4': mj.mjtIntegrator.mjINT_RK4,
    }[integrator]
    if not contact:
        spec.option.disableflags |= int(mj.mjtDisableBit.mjDSBL_CONTACT)
    spec.compiler.autolimits = True
    spec.compiler.degree = False  # (MjSpec's default unit is the degree)
    spec.compiler.balanceinertia = True  # (a published inertia a hair outside the triangle inequality)
    mmap = MjMap()
    mmap._joint_names, mmap._virtual_names = [], []
    mmap.visual_notes = []
    links = _child_links(model)
    world = spec.worldbody
    body_of = {-1: world}  # last velocity coordinate of a joint -> its body
    used = {model.root_link}
    for jt in model.joints:
        first, last = jt.idx_v, jt.idx_v + jt.nv - 1
        parent = body_of[int(model.parents[first])]
        name = links.get(last) or f'{jt.name}_body'
        if name in used:
            name = f'{jt.name}_body'
        used.add(name)
        body = parent.add_body(name=name, pos=model.p_fixed[first], quat=_quat_wxyz(model.R_fixed[first]))
        _set_inertia(body, float(model.mass[last]), model.com[last], model.inertia_com[last], mass_floor, inertia_floor)
        if jt.kind == 'free_flyer':
            body.add_freejoint(name=jt.name)
        elif jt.kind == 'spherical':
            body.add_joint(name=jt.name, type=mj.mjtJoint.mjJNT_BALL)
        elif jt.nv == 1:
            i = jt.idx_v
            kw = dict(name=jt.name, axis=model.axes[i])
            kw['type'] = mj.mjtJoint.mjJNT_HINGE if jt.kind in ('revolute', 'continuous') else mj.mjtJoint.mjJNT_SLIDE
            lo, hi = float(model.lower[i]), float(model.upper[i])
            if limits and math.isfinite(lo) and math.isfinite(hi) and lo < hi:
                kw['range'] = [lo, hi]
            body.add_joint(**kw)
        else:
            raise ModelError(model.source, f"joint '{jt.name}'", f'the MuJoCo plant has no {jt.kind} joint')
        mmap._joint_names.append((jt.kind, jt.idx_q, jt.idx_v, jt.name))
        body_of[last] = body
    # frames -> sites
    for f, name in enumerate(model.frame_names):
        b = body_of[int(model.frame_parent[f])]
        b.add_site(name=name, pos=model.frame_p[f], quat=_quat_wxyz(model.frame_R[f]), size=[0.005, 0, 0])
        mmap.sites[name] = (b.name, model.frame_R[f].copy(), model.frame_p[f].copy())
    site_body = {name: body_of[int(model.frame_parent[f])] for f, name in enumerate(model.frame_names)}
    frame_idx = {name: f for f, name in enumerate(model.frame_names)}
    eq_kw = dict(solref=list(solref), solimp=list(solimp))

    def connect(name, s1, s2):
        spec.add_equality(
            name=name, type=mj.mjtEq.mjEQ_CONNECT, objtype=mj.mjtObj.mjOBJ_SITE, name1=s1, name2=s2, **eq_kw
        )

    def revolute_pair(lname, body_a, site_a, axis_a, body_b_site, frame_b_name, axis_b):
        """Two connects: at the cut point and axis_length along the axis on each side."""
        connect(f'{lname}/0', site_a, body_b_site)
        fb = frame_idx[frame_b_name]
        pa = np.zeros(3) if site_a not in frame_idx else None
        # a second site on each side, on the axis
        sa = f'{lname}/axis_a'
        if pa is None:  # site_a is a model frame
            fa = frame_idx[site_a]
            body_a.add_site(
                name=sa, pos=model.frame_p[fa] + model.frame_R[fa] @ (axis_length * axis_a), size=[0.003, 0, 0]
            )
        else:
            body_a.add_site(name=sa, pos=axis_length * np.asarray(axis_a), size=[0.003, 0, 0])
        sb = f'{lname}/axis_b'
        site_body[frame_b_name].add_site(
            name=sb, pos=model.frame_p[fb] + model.frame_R[fb] @ (axis_length * axis_b), size=[0.003, 0, 0]
        )
        connect(f'{lname}/1', sa, sb)

    for lp in model.loops:
        if lp.coupling is not None:
            joint, ref, mult, off = lp.coupling
            spec.add_equality(
                name=lp.name,
                type=mj.mjtEq.mjEQ_JOINT,
                objtype=mj.mjtObj.mjOBJ_JOINT,
                name1=joint,
                name2=ref,
                data=[float(off), float(mult), 0, 0, 0, 0, 0, 0, 0, 0, 0],
                **eq_kw,
            )
            continue
        if lp.type == 'spherical':
            connect(lp.name, lp.frame_a, lp.frame_b)
        elif lp.type == 'weld':
            spec.add_equality(
                name=lp.name,
                type=mj.mjtEq.mjEQ_WELD,
                objtype=mj.mjtObj.mjOBJ_SITE,
                name1=lp.frame_a,
                name2=lp.frame_b,
                **eq_kw,
            )
        elif lp.type == 'revolute':
            w = np.asarray(lp.rot_pairs[0][1], float)
            revolute_pair(
                lp.name, site_body[lp.frame_a], lp.frame_a, np.asarray(lp.axis, float), lp.frame_b, lp.frame_b, w
            )
        elif lp.type in _VIRTUAL:
            joints, closure = _VIRTUAL[lp.type]
            fa = frame_idx[lp.frame_a]
            if lp.type == 'universal':
                a1, a2 = np.asarray(lp.axes[0], float), np.asarray(lp.axes[1], float)
                axes = {'a1': a1}
            else:
                n = np.asarray(lp.axis, float)
                t1, t2 = _perp_basis(n)
                axes = {'axis': n, 't1': t1, 't2': t2}
            b = site_body[lp.frame_a].add_body(
                name=f'{lp.name}/v0', pos=model.frame_p[fa], quat=_quat_wxyz(model.frame_R[fa])
            )
            vj = []
            for k, (kind, which) in enumerate(joints):
                if k:
                    b = b.add_body(name=f'{lp.name}/v{k}')
                _set_inertia(b, virtual_mass, np.zeros(3), np.eye(3) * virtual_mass * virtual_radius**2, 0.0, 0.0)
                jn = f'{lp.name}/{kind}{k}'
                b.add_joint(
                    name=jn,
                    type=mj.mjtJoint.mjJNT_SLIDE if kind == 'slide' else mj.mjtJoint.mjJNT_HINGE,
                    axis=axes[which],
                )
                vj.append((kind, axes[which], jn))
            end = f'{lp.name}/end'
            b.add_site(name=end, size=[0.003, 0, 0])
            if closure == 'connect':
                connect(lp.name, end, lp.frame_b)
            elif closure == 'weld':
                spec.add_equality(
                    name=lp.name,
                    type=mj.mjtEq.mjEQ_WELD,
                    objtype=mj.mjtObj.mjOBJ_SITE,
                    name1=end,
                    name2=lp.frame_b,
                    **eq_kw,
                )
            elif lp.type == 'universal':
                # the hinge turns about a1; the second axis, fixed in frame b, keeps
                # perpendicular to a1: on the virtual body at hinge angle 0 it is u0
                u0 = _perp_basis(a1)[0]
                revolute_pair(lp.name, b, end, u0, lp.frame_b, lp.frame_b, a2)
                vj[-1] = vj[-1] + (u0, a2)
            else:
                revolute_pair(
                    lp.name, b, end, axes['axis'], lp.frame_b, lp.frame_b, np.asarray(lp.rot_pairs[0][1], float)
                )
            mmap._virtual_names.append((lp, vj))
        else:
            raise ModelError(
                model.loops_source or model.source,
                f"loop '{lp.name}'",
                f'the MuJoCo plant cannot express a {lp.type} loop',
            )
    if motors:
        for name in model.actuated:
            i = model.joint_index(name)
            lim = float(model.effort_limit[i])
            kw = dict(name=name, target=name, trntype=mj.mjtTrn.mjTRN_JOINT, gear=[1, 0, 0, 0, 0, 0])
            if math.isfinite(lim) and lim > 0:
                kw['ctrlrange'] = [-lim, lim]
            spec.add_actuator(**kw)
    if visuals:
        from robot_dynamics.plants.mujoco_visuals import add_visual_geoms

        mmap.visual_notes = add_visual_geoms(spec, model, body_of)
    return spec, mmap


def _stiffen_virtual(mj, mjm, mmap):
    """MuJoCo scales an equality's softness with its estimate of the constraint's inverse
    inertia, the bodies' ``body_invweight0`` (isotropic): a light virtual body would make the
    loop as soft as if the heavy body it follows were as light. Each virtual body takes the
    inverse weight of the loop's ``frame_b`` body, which its connect holds (the solver itself
    uses the exact inertia)."""
    for lp, _ in mmap._virtual_names:
        b = mj.mj_name2id(mjm, mj.mjtObj.mjOBJ_BODY, mmap.sites[lp.frame_b][0])
        k = 0
        while True:
            v = mj.mj_name2id(mjm, mj.mjtObj.mjOBJ_BODY, f'{lp.name}/v{k}')
            if v < 0:
                break
            mjm.body_invweight0[v] = mjm.body_invweight0[b]
            k += 1


def mj_export(model, path=None, **kw):
    """The MJCF text of :func:`mj_spec` (written to ``path`` if given), for MuJoCo's own tools.

    An MJCF file cannot carry the stiffening of the virtual bodies that the plant applies
    after compiling (:func:`_stiffen_virtual`): the file's virtual bodies weigh 1e-3 of the
    lightest link instead (``virtual_mass``), which keeps its point_on_plane and universal
    loops within 1e-5 m (``test/plants/test_mujoco_plant.py``) and adds that much inertia.
    """
    if 'virtual_mass' not in kw:
        light = np.asarray(model.mass)[np.asarray(model.mass) > 0]
        kw['virtual_mass'] = 1e-3 * float(light.min()) if light.size else 1e-6
    spec, _ = mj_spec(model, **kw)
    xml = spec.to_xml()
    if path is not None:
        with open(path, 'w', encoding='utf-8') as fh:
            fh.write(xml)
    return xml


class MujocoPlant(Plant):
    """The model simulated by MuJoCo (:func:`mj_spec`), driven like the rigid plant.

    ``dt`` [s] is the default plant step (the command period); each step runs
    ``round(dt / timestep)`` MuJoCo steps with the generalized force held. ``reset`` closes the
    loops as the rigid plant does (:func:`robot_dynamics.algorithms.projection.assemble`,
    the independent joints kept) and sets the virtual joints of the loops from the cut
    frames. ``last.phi_norm`` is the norm of the package's loop residual at the state
    (:func:`robot_dynamics.algorithms.constraints.loop_residual`, position rows in m) when
    ``monitor_closure`` (default on), else the norm of MuJoCo's equality violations.
    Spec options (``timestep``, ``solref``, ``solimp``, ``integrator``, ``contact``, ...) go
    to :func:`mj_spec`.
    """

    supports_external_wrench = True
    state_attrs = ('t', 'q', 'qd', 'last', '_mjstate')

    def __init__(self, model, q0=None, qd0=None, dt=1e-3, monitor_closure=True, **spec_kw):
        mj = _mujoco()
        self._mj = mj
        self.model = model
        spec_kw.setdefault('motors', False)
        self.spec, mmap = mj_spec(model, **spec_kw)
        self._edit_spec(self.spec)
        self.mjm = self.spec.compile()
        _stiffen_virtual(mj, self.mjm, mmap)
        self.mjm.opt.enableflags |= int(mj.mjtEnableBit.mjENBL_ENERGY)
        self.mjd = mj.MjData(self.mjm)
        self.map = mmap.bind(self.mjm)
        self.dt = float(dt)
        self.timestep = float(self.mjm.opt.timestep)
        self.monitor_closure = bool(monitor_closure)
        self.events = []
        self._ext = {}
        self._body_of_frame = {
            name: mj.mj_name2id(self.mjm, mj.mjtObj.mjOBJ_BODY, b) for name, (b, _, _) in mmap.sites.items()
        }
        self._site_of_frame = {name: mj.mj_name2id(self.mjm, mj.mjtObj.mjOBJ_SITE, name) for name in mmap.sites}
        self._state_spec = mj.mjtState.mjSTATE_INTEGRATION
        self._mjstate = np.empty(mj.mj_stateSize(self.mjm, self._state_spec))
        self.reset(q0, qd0)

    @property
    def nq(self):
        return self.model.nq

    def _edit_spec(self, spec):
        """Add to the spec before it compiles (a subclass's actuator elements; here nothing)."""

    def reset(self, q0=None, qd0=None, t0=0.0, fixed=None):
        """Set the state (closed and projected as the rigid plant does); returns the StepInfo."""
        from robot_dynamics.algorithms.projection import _joint_mask, _vec, assemble, project_velocity

        model, mj = self.model, self._mj
        q = model.reference_q() if q0 is None else _vec(q0, model.nq, 'q0').copy()
        qd = np.zeros(model.nv) if qd0 is None else _vec(qd0, model.nv, 'qd0').copy()
        if model.loops:
            fixed = ('independent' if model.independent else 'none') if fixed is None else fixed
            if isinstance(fixed, str) and fixed == 'none':
                q = assemble(model, q_guess=q, fixed='none').q
            else:
                _, idx = _joint_mask(model, fixed, 'independent')
                q = assemble(model, q[model.q_of_v[idx]], q_guess=q, fixed=fixed).q
            qd = project_velocity(model, q, qd)
        mj.mj_resetData(self.mjm, self.mjd)
        self.map.to_mj(model, q, qd, self.mjd.qpos, self.mjd.qvel)
        self._set_virtual(q, qd)
        self.mjd.time = float(t0)
        mj.mj_forward(self.mjm, self.mjd)
        self.t = float(t0)
        self.q, self.qd = q, qd
        self.events = []
        self.last = self._info(np.zeros(model.nv))
        self._save()
        return self.last

    def _set_virtual(self, q, qd):
        """The virtual joints of the loops from the cut frames at (q, qd)."""
        if not self.map.virtual:
            return
        from robot_dynamics.algorithms.kinematics import forward_kinematics, frame_jacobian

        T = forward_kinematics(self.model, q)
        for lp, vj in self.map.virtual:
            Ta, Tb = T[lp.frame_a], T[lp.frame_b]
            Ra, d = Ta[:3, :3], Tb[:3, 3] - Ta[:3, 3]
            va = frame_jacobian(self.model, q, lp.frame_a) @ qd
            vb = frame_jacobian(self.model, q, lp.frame_b) @ qd
            rel = Ra.T @ d
            relv = Ra.T @ (vb[:3] - va[:3] - np.cross(va[3:], d))
            relw = Ra.T @ (vb[3:] - va[3:])
            for kind, axis, adr, dof, *extra in vj:
                if kind == 'slide':
                    self.mjd.qpos[adr] = rel @ axis
                    self.mjd.qvel[dof] = relv @ axis
                else:  # universal hinge: from u0 to the second axis about a1
                    u0, a2 = extra
                    v = Ra.T @ Tb[:3, :3] @ a2
                    self.mjd.qpos[adr] = math.atan2(axis @ np.cross(u0, v), u0 @ v)
                    self.mjd.qvel[dof] = relw @ axis

    def _save(self):
        self._mj.mj_getState(self.mjm, self.mjd, self._mjstate, self._state_spec)

    def restore(self, snap):
        super().restore(snap)
        self._mj.mj_setState(self.mjm, self.mjd, self._mjstate, self._state_spec)
        self._mj.mj_forward(self.mjm, self.mjd)

    def _info(self, tau):
        from robot_dynamics.algorithms.constraints import loop_residual

        d, n = self.mjd, self.model.nv
        if self.monitor_closure and self.model.loops:
            phi = float(np.linalg.norm(loop_residual(self.model, self.q)))
        else:
            eq = d.efc_type[: d.nefc] == int(self._mj.mjtConstraint.mjCNSTR_EQUALITY)
            phi = float(np.linalg.norm(d.efc_pos[: d.nefc][eq]))
        qdd = np.zeros(n)
        F = np.zeros(n)
        dofs = self.map.dofs
        qdd[:] = d.qacc[dofs]
        F[:] = -d.qfrc_constraint[dofs]
        for kind, iq, iv, a, dd in self.map._multi:
            if kind == 'free_flyer':  # world linear acceleration -> body frame, minus w x v
                R = _rot_xyzw(self.q[iq + 3 : iq + 7])
                qdd[iv : iv + 3] = R.T @ d.qacc[dd : dd + 3] - np.cross(self.qd[iv + 3 : iv + 6], self.qd[iv : iv + 3])
                F[iv : iv + 3] = -(R.T @ d.qfrc_constraint[dd : dd + 3])
        kin, pot = float(d.energy[1]), float(d.energy[0])
        return StepInfo(
            self.t,
            self.q.copy(),
            self.qd.copy(),
            qdd,
            tau,
            phi,
            0,
            0,
            0.0,
            kin,
            pot,
            kin + pot,
            F,
            np.zeros(0),
            0,
            True,
            0.0,
            0.0,
            0.0,
            1,
            (),
        )

    def external_tau(self, q=None):
        """Generalized force (n,) of the external loads at q (default: the current state)."""
        from robot_dynamics.plants.rigid import external_generalized_force

        return external_generalized_force(self.model, self.q if q is None else q, self._ext)

    def step(self, tau=None, dt=None):
        """Advance by ``dt`` (default ``self.dt``) with ``tau`` (n,) or the actuated efforts
        held; the external loads are evaluated at the start of the step. Returns StepInfo."""
        mj, d = self._mj, self.mjd
        f = self.full_tau(tau)
        h = self.dt if dt is None else float(dt)
        if not (h > 0.0 and math.isfinite(h)):
            raise InputError(f'dt must be a positive number, got {dt!r}')
        total = f + self.external_tau() if self._ext else f
        d.qfrc_applied[:] = 0.0
        _, iv1, _, d1 = self.map._1
        d.qfrc_applied[d1] = total[iv1]
        for kind, iq, iv, a, dd in self.map._multi:
            if kind == 'free_flyer':  # body-frame force -> world frame (same power)
                R = _rot_xyzw(self.q[iq + 3 : iq + 7])
                d.qfrc_applied[dd : dd + 3] = R @ total[iv : iv + 3]
                d.qfrc_applied[dd + 3 : dd + 6] = total[iv + 3 : iv + 6]
            else:  # spherical
                d.qfrc_applied[dd : dd + 3] = total[iv : iv + 3]
        mj.mj_step(self.mjm, d, nstep=max(1, int(round(h / self.timestep))))
        if not (np.all(np.isfinite(d.qpos)) and np.all(np.isfinite(d.qvel))):
            raise RobotDynamicsError(f'MuJoCo step of {self.model.name!r} at t = {self.t:.6f} s went non-finite')
        q, qd = self.q.copy(), self.qd.copy()
        self.map.from_mj(d.qpos, d.qvel, q, qd)
        self.q, self.qd = q, qd
        self.t += h
        self.last = self._info(f)
        self._save()
        return self.last


def _mujoco_plant(model, q0=None, dt=1e-3, **options):
    return MujocoPlant(model, q0, dt=dt, **options)


register_plant('mujoco', _mujoco_plant)
register_plant('rigid', _mujoco_plant, backend='mujoco')
register_plant('mujoco', _mujoco_plant, backend='mujoco')
