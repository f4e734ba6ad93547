"""Parameters of the generic controller node (ROS-free: the node declares them with these
descriptors; a bringup config or a test reads the defaults here).

``CONTROLLER_PARAMS``: name -> (default, description, constraint) (see
:func:`robot_dynamics.ros._common.declare_params`: a constraint is a (lo, hi) range or a tuple
of choices); ``RUNTIME``: the parameters that may change at run time (the others are read-only);
``FLOATS``: the ones read as float; ``GAINS``: the run-time gains whose changes are bounded
(``max_gain_change``: a new value within [running / f, running x f]; from zero, up to the start
value x f).
"""

CONTROLLER_PARAMS = {
    'law': ('pidc', 'control law (robot_dynamics.control.laws.LAWS)', None),
    'controller': ('effort_controller', 'commands on /<controller>/commands', None),
    'joints': ([''], 'command order (default: the actuated joints)', None),
    'reference': ('joint', 'reference coordinates (pidc / computed_torque)', ('joint', 'task')),
    'task_frame': ('tool', 'frame whose origin a task reference drives', None),
    'task_axes': ([0, 1, 2], 'world components of the task reference', None),
    'kp': (100.0, 'proportional gain', (0.0, 1e7)),
    'kd': (20.0, 'derivative gain', (0.0, 1e6)),
    'rate': (100.0, 'control period 1/rate [Hz]: watchdog timer and overrun threshold', (1e-3, 1e5)),
    'state_timeout': (0.1, 'no valid state for that long [s] -> safe command', (1e-6, 1e3)),
    'reference_timeout': (0.5, 'reference older than that behind the state [s] -> safe command', (1e-6, 1e3)),
    'max_extrapolation': (0.05, 'longest reference extrapolation [s]', (0.0, 10.0)),
    'reference_sync': (False, 'lock-step: wait for the reference of the state stamp', None),
    'ref_wait': (0.2, 'lock-step: longest wait for that reference [s wall]', (1e-6, 1e3)),
    'max_effort': (0.0, 'effort bound per joint, with the URDF limits (0 = URDF only)', (0.0, 1e7)),
    'safe': ('hold', 'safe command: gravity hold at the last valid state, or zero', ('hold', 'zero')),
    'hold_damping': (0.0, 'safe hold: damping on the actuated joints', (0.0, 1e5)),
    'ff_lead': (0.0, 'feed-forward lead [s] (zero-order-hold compensation)', (0.0, 1.0)),
    'interpolate': (
        False,
        'joint references between two held samples (a source publishing ahead): '
        'the quintic through both (else Taylor from the earlier one)',
        None,
    ),
    'reference_history': (
        256,
        'reference samples held (a source publishing ahead holds lead x rate of them '
        'after the state: at 250 Hz, 256 cover a 1 s preview)',
        (2, 100000),
    ),
    'max_future': (0.5, 'reject states stamped more than that ahead of the node clock [s]', (0.0, 1e3)),
    'feedforward_topic': (
        'ik_node/feedforward_effort',
        'feed-forward efforts (JointState); empty = in the trajectory point',
        None,
    ),
    'publish_wrenches': (True, 'publish ~/constraint_wrench/<loop> (pidc)', None),
    'diagnostics_rate': (2.0, '/diagnostics rate [Hz] (0 = off)', (0.0, 1e3)),
    'state_topic': ('joint_states', 'joint states topic (relative name)', None),
    'wait_first_reference': (False, 'lock-step: wait for the first reference however long', None),
    'max_state_age': (0.0, 'answer a state from the subscription only when younger [s] (0 = one period)', (0.0, 10.0)),
    'timer_rate': (0.0, 'watchdog timer rate [Hz] (0 = rate)', (0.0, 1e5)),
    'error_rate': (
        0.0,
        '~/tracking_error, ~/feedforward, ~/constraint_wrench at most this often [Hz of state time] '
        '(0 = with every command)',
        (0.0, 1e5),
    ),
    'max_gain_change': (
        2.0,
        'a run-time change of a gain (kp, kd, kv) is refused beyond this factor of its '
        'running value (change it in steps)',
        (1.0, 1e3),
    ),
    'poles': (30.0, 'sea_flatness: EE error poles [1/s]', (0.0, 1e4)),
    'lambda_poles': (30.0, 'sea_flatness: internal-force error poles [1/s]', (0.0, 1e4)),
    'preload': (0.0, 'sea_flatness: internal preload [N m]', (-1e4, 1e4)),
    'route': (
        'auto',
        'sea_flatness: auto | planar (closed-form planar 3RRR) | general (any SEA-PKM, general 2nd-order route)',
        ('auto', 'planar', 'general'),
    ),
}

#: parameters that may change at run time (the others are read-only)
RUNTIME = ('kp', 'kd')
#: gains whose run-time changes are bounded by ``max_gain_change``
GAINS = ('kp', 'kd', 'kv')

FLOATS = (
    'kp',
    'kd',
    'rate',
    'state_timeout',
    'reference_timeout',
    'max_extrapolation',
    'ref_wait',
    'max_effort',
    'hold_damping',
    'ff_lead',
    'max_gain_change',
    'max_future',
    'diagnostics_rate',
    'max_state_age',
    'timer_rate',
    'error_rate',
    'poles',
    'lambda_poles',
    'preload',
)


def controller_spec(extra=None):
    """The parameter spec with a subclass's defaults / extra parameters: ``extra`` {name:
    default or (default, description, constraint)}."""
    spec = dict(CONTROLLER_PARAMS)
    for k, v in (extra or {}).items():
        _, text, cons = spec.get(k, (None, k, None))
        spec[k] = v if isinstance(v, tuple) else (v, text, cons)
    return spec


def make_law_from_params(model, p):
    """The law of a controller node's parameters ``p`` (:func:`robot_dynamics.control.laws.make_law`)."""
    from robot_dynamics.control.laws import make_law

    kw = dict(kp=p['kp'], kd=p['kd'], joints=p['joints'] or None)
    if p['law'] in ('pidc', 'computed_torque'):
        kw.update(reference=p['reference'], task_frame=p['task_frame'], task_axes=p['task_axes'])
    elif p['law'] == 'sea_flatness':
        kw = dict(
            poles=p['poles'],
            lambda_poles=p['lambda_poles'],
            preload=p['preload'],
            joints=kw['joints'],
            route=p['route'],
        )
    return make_law(model, p['law'], **kw)
