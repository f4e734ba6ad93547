"""Visual geoms of the MuJoCo spec (``mj_spec(model, visuals=True)``), for rendering only.

What each body of :func:`robot_dynamics.plants.mujoco_plant.mj_spec` shows:

* **The description's geometry** where the URDF has some (:func:`robot_dynamics.parsers.visuals.
  link_geometry`): a link's ``<visual>`` boxes, cylinders, spheres and meshes; a mesh is loaded
  when its file is found and MuJoCo reads its format (STL, OBJ, MSH), else the link's
  ``<collision>`` geometry stands in for its visuals; a link with neither gets the stick
  figure. Each skipped mesh is named in the returned notes.
* **A stick figure** otherwise (every format: SDF, MJCF and frame-pair imports carry no URDF
  text): a sphere at the body's joint, a capsule from it to each child joint and to each frame
  on the body (tool frames, cut frames), or to the centre of mass of a body with neither.
  Radius ``r`` = 1.5 % of the robot's extent (the largest joint or frame offset), at least 3 mm.
* **The loops**: a sphere of radius ``1.3 r`` at each cut frame (``frame_a`` orange,
  ``frame_b`` red), so a closed loop shows where it is cut.

Every geom added here has ``contype = conaffinity = 0`` (no contact), density and mass 0 and
sits on a body whose inertia is explicit: the dynamics are those of the spec without visuals
(``test/tools/test_video.py`` compares the mass matrices).
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ['add_visual_geoms', 'VISUAL_GROUP', 'MESH_FORMATS']

VISUAL_GROUP = 1
MESH_FORMATS = ('.stl', '.obj', '.msh')
_PALETTE = (
    (0.30, 0.50, 0.75, 1.0),
    (0.85, 0.55, 0.25, 1.0),
    (0.35, 0.65, 0.40, 1.0),
    (0.65, 0.40, 0.65, 1.0),
    (0.55, 0.55, 0.60, 1.0),
    (0.75, 0.35, 0.35, 1.0),
)
_JOINT_RGBA = (0.15, 0.15, 0.18, 1.0)
_CUT_RGBA = ((1.0, 0.55, 0.0, 1.0), (0.85, 0.1, 0.1, 1.0))


def _quat(R):
    from transforms3d.quaternions import mat2quat

    return mat2quat(np.asarray(R, float))


def _visual(body, rgba, **kw):
    """A geom that only shows: no contact, no mass."""
    g = body.add_geom(**kw)
    g.contype = 0
    g.conaffinity = 0
    g.density = 0.0
    g.mass = 0.0
    g.group = VISUAL_GROUP
    g.rgba = list(rgba)
    return g


def _extent(model):
    d = [np.linalg.norm(model.p_fixed, axis=1).max(initial=0.0), np.linalg.norm(model.frame_p, axis=1).max(initial=0.0)]
    return max(d)


def add_visual_geoms(spec, model, body_of, mesh_formats=MESH_FORMATS):
    """Add the visual geoms (see the module docstring) to ``spec``; ``body_of``: body key (the
    last velocity coordinate of its joint, -1 for the world) -> ``MjsBody``. Returns the notes
    (list of str) on what was skipped."""
    import mujoco as mj

    from robot_dynamics.parsers.visuals import link_geometry

    notes = []
    r = max(0.003, 0.015 * _extent(model))
    base_dir = os.path.dirname(os.path.abspath(model.source)) if model.source and os.path.exists(model.source) else None
    geometry = link_geometry(model.urdf_xml, base_dir) if model.urdf_xml else {}
    frame_idx = {n: f for f, n in enumerate(model.frame_names)}
    keys = sorted(body_of)
    color = {k: _PALETTE[i % len(_PALETTE)] for i, k in enumerate(keys)}
    drawn = set()
    meshes = {}
    # the description's geometry, per link, on the link's body at the link frame
    for link, geoms in geometry.items():
        f = frame_idx.get(link)
        if f is None:
            continue
        k = int(model.frame_parent[f])
        body = body_of[k]
        Rf, pf = model.frame_R[f], model.frame_p[f]
        added = 0
        for role in ('visual', 'collision'):
            if added:
                break
            for g in (g for g in geoms if g.role == role):
                kw = dict(pos=pf + Rf @ g.p, quat=_quat(Rf @ g.R))
                if g.kind == 'box':
                    kw.update(type=mj.mjtGeom.mjGEOM_BOX, size=[s / 2.0 for s in g.size])
                elif g.kind == 'cylinder':
                    kw.update(type=mj.mjtGeom.mjGEOM_CYLINDER, size=[g.size[0], g.size[1] / 2.0, 0.0])
                elif g.kind == 'sphere':
                    kw.update(type=mj.mjtGeom.mjGEOM_SPHERE, size=[g.size[0], 0.0, 0.0])
                else:  # mesh
                    ext = os.path.splitext(g.path or g.filename or '')[1].lower()
                    if g.path is None or ext not in mesh_formats:
                        why = 'file not found' if g.path is None else f'MuJoCo does not read {ext or "this"} files'
                        notes.append(f"link '{link}': {role} mesh {g.filename} skipped ({why})")
                        continue
                    key = (g.path, tuple(g.size))
                    if key not in meshes:
                        meshes[key] = f'mesh{len(meshes)}'
                        spec.add_mesh(name=meshes[key], file=g.path, scale=list(g.size))
                    kw.update(type=mj.mjtGeom.mjGEOM_MESH, meshname=meshes[key])
                _visual(body, g.rgba or color[k], name=f'{link}/{role}{added}', **kw)
                added += 1
        if added and np.abs(model.frame_p[f]).max() == 0.0:
            drawn.add(k)  # the body's own link has geometry: no stick figure
    # stick figures of the other bodies
    targets = {k: [] for k in keys}
    for jt in model.joints:
        k = int(model.parents[jt.idx_v])
        if k in targets:
            targets[k].append(model.p_fixed[jt.idx_v])
    for f, _ in enumerate(model.frame_names):
        k = int(model.frame_parent[f])
        if k in targets:
            targets[k].append(model.frame_p[f])
    for k in keys:
        if k in drawn:
            if k >= 0:  # the joint, on a link drawn by its description
                _visual(
                    body_of[k],
                    _JOINT_RGBA,
                    name=f'{body_of[k].name}/joint',
                    type=mj.mjtGeom.mjGEOM_SPHERE,
                    size=[r, 0, 0],
                )
            continue
        body = body_of[k]
        # the world's hub: the middle of the joints it carries (a base bar between them)
        hub = (
            np.mean([p for p in targets[k] if np.linalg.norm(p) > 1e-6] or [np.zeros(3)], axis=0)
            if k < 0
            else np.zeros(3)
        )
        pts = [p for p in targets[k] if np.linalg.norm(p) > 1e-6 and np.linalg.norm(p - hub) > 1e-6]
        if not pts and k >= 0 and model.mass[k] > 0 and np.linalg.norm(model.com[k]) > 1e-6:
            pts = [model.com[k]]
        uniq = []
        for p in pts:
            if all(np.linalg.norm(p - u) > 1e-9 for u in uniq):
                uniq.append(p)
        for i, p in enumerate(uniq):
            _visual(
                body,
                color[k],
                name=f'{body.name or "world"}/stick{i}',
                type=mj.mjtGeom.mjGEOM_CAPSULE,
                size=[r, 0.0, 0.0],
                fromto=[*hub, *np.asarray(p, float)],
            )
        if k >= 0 or uniq:
            _visual(
                body,
                _JOINT_RGBA,
                name=f'{body.name or "world"}/joint',
                type=mj.mjtGeom.mjGEOM_SPHERE,
                size=[1.6 * r, 0, 0],
                pos=hub,
            )
    # the loops' cut frames
    for lp in model.loops:
        if lp.coupling is not None:
            continue
        for side, (fname, rgba) in enumerate(zip((lp.frame_a, lp.frame_b), _CUT_RGBA)):
            f = frame_idx[fname]
            _visual(
                body_of[int(model.frame_parent[f])],
                rgba,
                name=f'{lp.name}/cut_{"ab"[side]}',
                type=mj.mjtGeom.mjGEOM_SPHERE,
                size=[1.3 * r, 0.0, 0.0],
                pos=model.frame_p[f],
            )
    return notes
