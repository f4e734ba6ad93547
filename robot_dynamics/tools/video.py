"""Videos of a robot's motion: MuJoCo's offscreen renderer, H.264 MP4 and a key-frame PNG.

:func:`render_video` draws a joint trajectory (times ``t`` (N,), positions ``q`` (N, nq)) of a
model with the visual geoms of :func:`robot_dynamics.plants.mujoco_plant.mj_spec`
(``visuals=True``: the description's geometry or a stick figure, the loops' cut frames), from a
fixed camera that frames the robot's bounding box over the whole trajectory, over a floor
under it. The frames are sampled at ``fps`` in the trajectory's own time (plant time), each
from the nearest sample; the MP4 (H.264, yuv420p, plays in browsers) is written by PyAV
(``av``, pinned in requirements/core.txt: its wheel carries libx264, nothing to install
beside it), the key frame (default: the middle of the run) by Pillow.

Offscreen OpenGL: ``MUJOCO_GL`` picks the back-end, ``egl`` when unset (Mesa's EGL renders on
the CPU with llvmpipe when there is no GPU, and on the GPU when there is one); ``osmesa`` works
too where Debian's ``libosmesa6`` is installed. The EGL libraries come from Debian's
``libegl1 libopengl0 libgl1-mesa-dri`` (installed by ``scripts/setup_env.sh``). The context is
created here from the chosen back-end's module, so it works whatever ``MUJOCO_GL`` was when
``mujoco`` was first imported in the process; the plant never reads it.

``robot-dynamics demo`` renders its recorded ``/joint_states`` to ``out/demo_<robot>.mp4`` and
``out/demo_<robot>_frame.png``; ``robot-dynamics render ROBOT`` renders a CSV trajectory or a
sinusoid of the independent joints.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

import numpy as np

from robot_dynamics.errors import RobotDynamicsError

__all__ = ['RenderError', 'Video', 'OffscreenRenderer', 'render_video', 'trajectory_frames', 'write_mp4', 'read_mp4']

DEFAULT_SIZE = (640, 480)
DEFAULT_FPS = 30.0
_INSTALL = 'apt-get install libegl1 libopengl0 libgl1-mesa-dri (scripts/setup_env.sh installs them)'


class RenderError(RobotDynamicsError):
    """Offscreen rendering or video encoding is not available or failed."""


@dataclass
class Video:
    """What :func:`render_video` wrote: paths, frame count, size, fps, the seconds spent
    rendering (``render_s``, scene + OpenGL + read-back) and encoding (``encode_s``)."""

    path: str
    keyframe: str | None
    frames: int
    size: tuple
    fps: float
    render_s: float
    encode_s: float
    backend: str
    notes: list


def _gl_context(width, height):
    """An offscreen OpenGL context of the ``MUJOCO_GL`` back-end (``egl`` when unset). The
    back-end's module is imported directly, so the variable is read, never set: the processes
    this one starts later (a plant importing mujoco) keep the environment they had."""
    backend = (os.environ.get('MUJOCO_GL') or 'egl').lower().strip()
    import logging

    logging.getLogger('OpenGL.acceleratesupport').setLevel(logging.WARNING)  # (its optional C module)
    try:
        if backend == 'egl':
            from mujoco.egl import GLContext
        elif backend == 'osmesa':
            from mujoco.osmesa import GLContext
        elif backend == 'glfw':  # a desktop session's hidden window
            from mujoco.glfw import GLContext
        else:
            raise RenderError(f"MUJOCO_GL={backend!r}: offscreen rendering needs 'egl', 'osmesa' or 'glfw'")
        ctx = GLContext(width, height)
    except RenderError:
        raise
    except Exception as exc:  # noqa: BLE001 - a missing library shows up as one of several errors
        hint = _INSTALL if backend == 'egl' else 'apt-get install libosmesa6' if backend == 'osmesa' else ''
        raise RenderError(
            f'offscreen rendering is not available (MUJOCO_GL={backend}): {type(exc).__name__}: {exc}'
            + (f'; {hint}' if hint else '')
        ) from exc
    return ctx, backend


class OffscreenRenderer:
    """Renders a compiled ``MjModel`` from a free camera into RGB arrays (H, W, 3) uint8."""

    def __init__(self, mjm, width, height, samples=0):
        import mujoco as mj

        self._mj = mj
        self.width, self.height = int(width), int(height)
        self._ctx, self.backend = _gl_context(self.width, self.height)
        self._ctx.make_current()
        mjm.vis.global_.offwidth = max(int(mjm.vis.global_.offwidth), self.width)
        mjm.vis.global_.offheight = max(int(mjm.vis.global_.offheight), self.height)
        mjm.vis.quality.offsamples = int(samples)  # multisampling: 4 samples cost ~4x on llvmpipe
        self.mjm = mjm
        self._con = mj.MjrContext(mjm, mj.mjtFontScale.mjFONTSCALE_100)
        mj.mjr_setBuffer(mj.mjtFramebuffer.mjFB_OFFSCREEN, self._con)
        self._scn = mj.MjvScene(mjm, maxgeom=max(1000, 2 * mjm.ngeom + 100))
        self._opt = mj.MjvOption()
        self._opt.sitegroup[:] = 0  # sites (frames) and joints are not drawn: the geoms are
        self.camera = mj.MjvCamera()
        self.camera.type = mj.mjtCamera.mjCAMERA_FREE
        self._rect = mj.MjrRect(0, 0, self.width, self.height)
        self._buf = np.empty((self.height, self.width, 3), np.uint8)

    def render(self, mjd):
        mj = self._mj
        self._ctx.make_current()
        mj.mjv_updateScene(self.mjm, mjd, self._opt, None, self.camera, mj.mjtCatBit.mjCAT_ALL, self._scn)
        mj.mjr_render(self._rect, self._scn, self._con)
        mj.mjr_readPixels(self._buf, None, self._rect, self._con)
        return np.flipud(self._buf).copy()

    def close(self):
        if self._con is not None:
            self._con.free()
            self._con = None
        if self._ctx is not None:
            self._ctx.free()
            self._ctx = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _scene_spec(model):
    """The model's spec with visuals, a light, a sky and (after :func:`_frame_camera`) a floor."""
    import mujoco as mj

    from robot_dynamics.plants.mujoco_plant import mj_spec

    spec, mmap = mj_spec(model, visuals=True, motors=False, limits=False)
    spec.visual.headlight.ambient = [0.35, 0.35, 0.35]
    spec.visual.headlight.diffuse = [0.55, 0.55, 0.55]
    spec.visual.quality.shadowsize = 0  # (shadows, reflections: 3-5x slower on llvmpipe)
    spec.add_texture(
        name='sky',
        type=mj.mjtTexture.mjTEXTURE_SKYBOX,
        builtin=mj.mjtBuiltin.mjBUILTIN_GRADIENT,
        rgb1=[0.92, 0.94, 0.97],
        rgb2=[0.70, 0.75, 0.82],
        width=64,
        height=64,
    )
    return spec, mmap


def _add_floor(spec, bbox, up):
    """A checkered floor perpendicular to ``up`` just under ``bbox`` (lo (3,), hi (3,))."""
    import mujoco as mj

    lo, hi = bbox
    size = float(np.max(hi - lo))
    centre = 0.5 * (lo + hi)
    h = float(np.min([c @ up for c in _corners(lo, hi)])) - 0.02 * max(size, 0.1)
    pos = centre - (centre @ up) * up + h * up
    spec.add_texture(
        name='grid',
        type=mj.mjtTexture.mjTEXTURE_2D,
        builtin=mj.mjtBuiltin.mjBUILTIN_CHECKER,
        rgb1=[0.82, 0.83, 0.85],
        rgb2=[0.74, 0.75, 0.78],
        width=256,
        height=256,
    )
    mat = spec.add_material(name='grid', texrepeat=[8, 8], reflectance=0.0)
    mat.textures[int(mj.mjtTextureRole.mjTEXROLE_RGB)] = 'grid'
    from robot_dynamics.plants.mujoco_plant import _perp_basis

    t1, t2 = _perp_basis(up)
    R = np.column_stack([t1, t2, up])
    g = spec.worldbody.add_geom(
        name='floor',
        type=mj.mjtGeom.mjGEOM_PLANE,
        size=[1.5 * max(size, 0.1), 1.5 * max(size, 0.1), 0.05],
        pos=pos,
        quat=_quat(R),
        material='grid',
    )
    g.contype = g.conaffinity = 0
    g.group = 1
    spec.worldbody.add_light(pos=pos + up * (2.0 * max(size, 0.2)), dir=-up, diffuse=[0.5, 0.5, 0.5], castshadow=False)


def _quat(R):
    from transforms3d.quaternions import mat2quat

    return mat2quat(np.asarray(R, float))


def _corners(lo, hi):
    return np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])


def trajectory_frames(t, fps):
    """Indices of the samples shown at ``fps`` over the trajectory's times ``t`` (the nearest
    sample to each frame time)."""
    t = np.asarray(t, float)
    if len(t) == 0:
        return np.zeros(0, np.int64)
    n = max(1, int(math.floor((t[-1] - t[0]) * fps + 1e-9)) + 1)
    ft = t[0] + np.arange(n) / fps
    hi = np.clip(np.searchsorted(t, ft), 0, len(t) - 1)  # first sample at or after the frame
    lo = np.maximum(hi - 1, 0)
    return np.where(np.abs(ft - t[lo]) <= np.abs(t[hi] - ft), lo, hi).astype(np.int64)


def _bbox(mj, mjm, mjd, set_q, samples):
    """Bounding box (lo, hi) of the visual geoms over ``samples`` (indices into the trajectory),
    and the geoms' centres (the points the motion sweeps)."""
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    vis = np.flatnonzero(mjm.geom_group == 1)
    c_loc, h_loc = mjm.geom_aabb[vis, :3], mjm.geom_aabb[vis, 3:]
    pts = []
    for k in samples:
        set_q(k)
        mj.mj_kinematics(mjm, mjd)
        R = mjd.geom_xmat[vis].reshape(-1, 3, 3)
        c = mjd.geom_xpos[vis] + np.einsum('gij,gj->gi', R, c_loc)
        h = np.einsum('gij,gj->gi', np.abs(R), h_loc)
        lo = np.minimum(lo, (c - h).min(0, initial=np.inf))
        hi = np.maximum(hi, (c + h).max(0, initial=-np.inf))
        pts.append(c)
    if not np.all(np.isfinite(lo)):
        lo, hi = -0.1 * np.ones(3), 0.1 * np.ones(3)
    return (lo, hi), (np.concatenate(pts) if pts else None)


def _frame_camera(cam, bbox, up, aspect, fovy=45.0, points=None):
    """Point the free camera at the box: along the normal of the motion's plane (slightly
    tilted) when the robot moves in a plane, else from a three-quarter view; back it off until
    the box fits the image."""
    lo, hi = bbox
    centre = 0.5 * (lo + hi)
    view = None
    if points is not None and len(points) >= 3:
        X = points - points.mean(0)
        _, s, Vt = np.linalg.svd(X, full_matrices=False)
        if s[0] > 0 and s[-1] < 0.15 * s[0]:  # planar: look at the plane
            n = Vt[-1]
            n = n if n @ up >= 0 else -n
            if abs(n @ up) > 0.9:  # a horizontal plane: from above, tilted 25 degrees
                side = _perp_basis_up(up)
                view = -(math.cos(math.radians(65)) * side + math.sin(math.radians(65)) * up)
            else:  # a vertical plane: from the side, 15 degrees above
                h = n - (n @ up) * up
                h /= np.linalg.norm(h)
                view = -(math.cos(math.radians(15)) * h + math.sin(math.radians(15)) * up)
    if view is None:
        az = math.radians(-135.0)
        view = -np.array([math.cos(az) * math.cos(math.radians(25)), math.sin(az) * math.cos(math.radians(25)), 0.0])
        view = view - math.sin(math.radians(25)) * up
    view /= np.linalg.norm(view)
    right = np.cross(view, up)
    right /= np.linalg.norm(right)
    cup = np.cross(right, view)
    C = _corners(lo, hi) - centre
    half_v = math.tan(math.radians(fovy) / 2.0)
    dist = 0.0
    for c in C:  # each corner inside the frustum (10 % margin)
        depth = -(c @ view)
        dist = max(dist, abs(c @ cup) * 1.1 / half_v + depth, abs(c @ right) * 1.1 / (half_v * aspect) + depth)
    dist = max(dist, float(np.max(-(C @ view))) + 1e-3)  # the camera outside the box
    cam.lookat[:] = centre
    cam.distance = dist
    # MuJoCo's free camera: azimuth / elevation in degrees of the viewing direction (z up)
    cam.azimuth = math.degrees(math.atan2(view[1], view[0]))
    cam.elevation = math.degrees(math.asin(max(-1.0, min(1.0, view[2]))))


def _perp_basis_up(up):
    """A horizontal direction for a camera above a horizontal plane (world -y when up is z,
    so x points right in the image)."""
    cand = np.array([0.0, -1.0, 0.0])
    h = cand - (cand @ up) * up
    if np.linalg.norm(h) < 1e-6:
        h = np.array([1.0, 0.0, 0.0]) - up[0] * up
    return h / np.linalg.norm(h)


def write_mp4(frames, path, fps=DEFAULT_FPS, crf=23):
    """Encode RGB frames (iterable of (H, W, 3) uint8, even W and H) to an H.264 MP4 at
    ``path``; returns the number of frames written."""
    try:
        import av
    except ImportError as exc:
        raise RenderError(f'writing MP4 needs PyAV (pip install av, requirements/core.txt): {exc}') from exc
    from fractions import Fraction

    os.makedirs(os.path.dirname(os.path.abspath(path)) or '.', exist_ok=True)
    n = 0
    with av.open(path, mode='w', options={'movflags': 'faststart'}) as out:
        st = None
        for img in frames:
            if st is None:
                st = out.add_stream('libx264', rate=Fraction(fps).limit_denominator(1001))
                st.height, st.width = img.shape[:2]
                st.pix_fmt = 'yuv420p'
                st.options = {'crf': str(crf), 'preset': 'veryfast'}
            for pkt in st.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(img), format='rgb24')):
                out.mux(pkt)
            n += 1
        if st is not None:
            for pkt in st.encode():
                out.mux(pkt)
    return n


def read_mp4(path):
    """Decoded frames (list of (H, W, 3) uint8) of a video file."""
    import av

    with av.open(path) as c:
        return [f.to_ndarray(format='rgb24') for f in c.decode(video=0)]


def _even(x):
    return int(x) + (int(x) % 2)


def render_video(
    model,
    t,
    q,
    path,
    keyframe=None,
    fps=DEFAULT_FPS,
    size=DEFAULT_SIZE,
    key_time=None,
    progress=None,
    gif=None,
    gif_size=None,
    gif_fps=10.0,
    samples=0,
    key_samples=4,
):
    """Render the joint trajectory ``t`` (N,) [s], ``q`` (N, nq) of ``model`` to the MP4
    ``path`` (and the PNG ``keyframe``, the frame nearest ``key_time`` [s from the start],
    default the middle; ``gif``: also an animated GIF at ``gif_fps``, ``gif_size`` (W, H)).
    ``size`` (W, H) in pixels (made even), ``fps`` frames per trajectory second;
    ``progress(text)`` is called about every 10 % of the frames. ``samples``: multisampling
    of the video frames (0: none; 4 looks smoother and renders ~4x slower on a CPU),
    ``key_samples`` of the key frame. Returns a :class:`Video`.
    Raises :class:`RenderError` without an offscreen OpenGL back-end."""
    t = np.asarray(t, float)
    q = np.atleast_2d(np.asarray(q, float))
    if len(t) != len(q) or q.shape[1] != model.nq or len(t) == 0:
        raise RenderError(f'render_video: t ({len(t)},) and q {q.shape} do not match (nq = {model.nq})')
    W, H = _even(size[0]), _even(size[1])
    # the GL context first: a missing back-end fails before any work
    ctx_probe = None
    try:
        ctx_probe, backend = _gl_context(W, H)
    finally:
        if ctx_probe is not None:
            ctx_probe.free()
    import mujoco as mj

    spec, mmap = _scene_spec(model)
    mjm0 = spec.compile()
    mmap.bind(mjm0)
    mjd0 = mj.MjData(mjm0)
    qd0 = np.zeros(model.nv)

    def setter(mjd):
        def set_q(k):
            mmap.to_mj(model, q[k], qd0, mjd.qpos, mjd.qvel)

        return set_q

    idx = trajectory_frames(t, fps)
    probe = idx[:: max(1, len(idx) // 60)]
    up = -np.asarray(model.gravity, float)
    up = up / np.linalg.norm(up) if np.linalg.norm(up) > 0 else np.array([0.0, 0.0, 1.0])
    bbox, pts = _bbox(mj, mjm0, mjd0, setter(mjd0), probe)
    _add_floor(spec, bbox, up)
    mjm = spec.compile()
    mjd = mj.MjData(mjm)
    set_q = setter(mjd)
    kt = (t[-1] - t[0]) / 2.0 if key_time is None else float(key_time)
    key_i = int(np.argmin(np.abs(t[idx] - (t[0] + kt))))
    gif_imgs = []
    gif_every = max(1, int(round(fps / gif_fps))) if gif else 0
    render_s = 0.0
    t_start = time.perf_counter()

    with OffscreenRenderer(mjm, W, H, samples=samples) as r:
        _frame_camera(r.camera, bbox, up, W / H, fovy=float(mjm.vis.global_.fovy), points=pts)

        def frames():
            nonlocal render_s
            step = max(1, len(idx) // 10)
            for i, k in enumerate(idx):
                t0 = time.perf_counter()
                set_q(k)
                mj.mj_kinematics(mjm, mjd)
                mj.mj_camlight(mjm, mjd)
                img = r.render(mjd)
                render_s += time.perf_counter() - t0
                if gif_every and i % gif_every == 0:
                    gif_imgs.append(img)
                if progress is not None and (i + 1) % step == 0 and i + 1 < len(idx):
                    el = time.perf_counter() - t_start
                    progress(f'rendering {path}: {i + 1}/{len(idx)} frames ({(i + 1) / el:.0f} frames/s)')
                yield img

        n = write_mp4(frames(), path, fps=fps)
        backend = r.backend
        cam = (r.camera.lookat.copy(), r.camera.distance, r.camera.azimuth, r.camera.elevation)
    total = time.perf_counter() - t_start
    if keyframe is not None:
        with OffscreenRenderer(mjm, W, H, samples=key_samples) as r:
            r.camera.lookat[:], r.camera.distance, r.camera.azimuth, r.camera.elevation = cam
            set_q(idx[key_i])
            mj.mj_kinematics(mjm, mjd)
            mj.mj_camlight(mjm, mjd)
            _save_png(r.render(mjd), keyframe)
    if gif:
        _save_gif(gif_imgs, gif, gif_fps, gif_size)
    return Video(path, keyframe, n, (W, H), float(fps), render_s, total - render_s, backend, list(mmap.visual_notes))


def _save_png(img, path):
    from PIL import Image

    os.makedirs(os.path.dirname(os.path.abspath(path)) or '.', exist_ok=True)
    Image.fromarray(img).save(path, optimize=True)


def _save_gif(imgs, path, fps, size=None):
    from PIL import Image

    os.makedirs(os.path.dirname(os.path.abspath(path)) or '.', exist_ok=True)
    ims = [Image.fromarray(a) for a in imgs]
    if size is not None:
        ims = [im.resize(tuple(size), Image.LANCZOS) for im in ims]
    # one palette for every frame (the middle one's): smaller than a palette per frame
    pal = ims[len(ims) // 2].quantize(colors=64, method=Image.Quantize.FASTOCTREE)
    ims = [im.quantize(palette=pal, dither=Image.Dither.NONE) for im in ims]
    ims[0].save(path, save_all=True, append_images=ims[1:], duration=int(round(1000 / fps)), loop=0, optimize=True)
