"""The registry of the control laws hosted by :class:`robot_dynamics.control.loop.ControlLoop`
(no ROS).

A law is one small object: ``update(state, reference, dt) -> LawOutput`` (efforts in the order of
its ``joints``); everything else (parsing, staleness, matching, limits, safe command, timing)
is the loop's. :func:`make_law` builds one by name from keyword parameters (what the generic
``controller_node`` does with its ROS parameters).

* ``pidc`` (seed 002): projected inverse dynamics control with passive joints, joint reference on
  the independent joints or task reference on selected world components of a frame origin
  (:class:`~robot_dynamics.control.computed_torque.DynamicsController`).
* ``computed_torque``: ``M (qdd_d + kd ed + kp e) + h`` for fully actuated trees (the same class).
* ``feedforward_pd`` (aliases ``embedding_feedforward``, seed 003, and ``d2_feedforward``, seed
  004): ``u + kp (theta_d - theta) + kd (thetad_d - thetad)`` on the actuated joints, the
  feed-forward ``u`` travelling with the reference
  (:class:`~robot_dynamics.control.feedforward_pd.FeedforwardPDLaw`).
* ``inertia_partitioning`` (seed 000): the modular inertia-partitioning controller on the
  minimal coordinates (:class:`~robot_dynamics.control.inertia_partitioning.IPController`).
* ``vdc`` (seed 001): virtual decomposition + pressure/flow control of a hydraulic boom, valve
  volts from the segment joints and the chamber pressures
  (:class:`~robot_dynamics.control.vdc.VDCController`).
* ``sea_flatness`` (seed 004): the flatness-based exactly linearising SEA law on the EE task
  reference with derivatives up to snap (:func:`~robot_dynamics.control.flatness_sea.make_sea_flatness_law`:
  :class:`~robot_dynamics.control.flatness_sea.SEAFlatnessController` on the planar 3RRR,
  :class:`~robot_dynamics.control.flatness_sea.GeneralSEAFlatness` on any SEA-PKM).

Each law module is imported when its law is built (a node loads only its own).
"""

from __future__ import annotations

from robot_dynamics.errors import InputError

__all__ = ['make_law', 'LAWS']

LAWS = (
    'pidc',
    'computed_torque',
    'feedforward_pd',
    'embedding_feedforward',
    'd2_feedforward',
    'inertia_partitioning',
    'vdc',
    'sea_flatness',
)


def make_law(model, law, **p):
    """Build a law by name (``LAWS``) from keyword parameters (unknown ones are an error)."""

    def take(*names):
        return {k: p.pop(k) for k in names if k in p}

    if law in ('pidc', 'computed_torque'):
        from robot_dynamics.control.computed_torque import DynamicsController

        obj = DynamicsController(model, law=law, **take('kp', 'kd', 'joints', 'reference', 'task_frame', 'task_axes'))
    elif law in ('feedforward_pd', 'embedding_feedforward', 'd2_feedforward'):
        from robot_dynamics.control.feedforward_pd import FeedforwardPDLaw

        obj = FeedforwardPDLaw(model, name=law, **take('kp', 'kd', 'joints'))
    elif law == 'inertia_partitioning':
        from robot_dynamics.control.inertia_partitioning import IPController

        kw = take('kp', 'joints', 'loop_map', 'neglect_bodies', 'unlock_blend_time')
        if 'variant' in p:
            kw['law'] = p.pop('variant')
        if 'kd' in p:
            kw['kv'] = p.pop('kd')
        kw.update(take('kv'))
        obj = IPController(model, **kw)
    elif law == 'vdc':
        from robot_dynamics.control.vdc import VDCController

        obj = VDCController(
            model, **take('joints', 'lam', 'k_scale', 'kf_pole', 'kx_ratio', 'dt', 'dp_min', 'wrench_timeout', 'params')
        )
    elif law == 'sea_flatness':  # seed 004: control/flatness_sea.py
        from robot_dynamics.control.flatness_sea import make_sea_flatness_law

        obj = make_sea_flatness_law(model, **take('poles', 'lambda_poles', 'preload', 'joints', 'route'))
    else:
        raise InputError(f'unknown law {law!r} (known: {", ".join(LAWS)})')
    if p:
        raise InputError(f'law {law}: unknown parameter(s) {sorted(p)}')
    return obj
