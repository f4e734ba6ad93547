"""Shared plumbing of the thin rclpy nodes (no maths here: that lives in the core).

* :func:`load_model_param`: every node declares ``robot_description`` (URDF path or XML) and
  ``loops`` (sidecar path, '' = auto) and builds the core :class:`~robot_dynamics.Model`.
* :class:`JointStateParser`: ``sensor_msgs/JointState`` -> q, qd by joint *name* (never by
  position); rejects NaN/inf, unknown/missing names and length mismatches with a reason.
* QoS profiles (documented in docs/ros_interfaces.md): state and commands reliable/volatile
  depth 10 (what joint_state_broadcaster and forward_command_controller use), the
  ``robot_description`` topic reliable/transient-local depth 1 (latched, like
  robot_state_publisher).
"""

from __future__ import annotations

import math

import numpy as np
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy


def _reliable(depth, durability=DurabilityPolicy.VOLATILE):
    return QoSProfile(
        depth=depth, reliability=ReliabilityPolicy.RELIABLE, durability=durability, history=HistoryPolicy.KEEP_LAST
    )


QOS_STATE = _reliable(10)
QOS_COMMAND = _reliable(10)
# reference samples (trajectory_node -> ik_node -> controllers): a preview (trajectory_node
# ``lead``) arrives in bursts of up to lead x rate samples (T1: 26); KEEP_LAST 10 would drop all
# but the last ten of a burst at a reader that is busy, and the first 64 ms of T1 would have no
# reference at the controller. 100 samples of history on both ends
QOS_REFERENCE = _reliable(100)
QOS_LATCHED = _reliable(1, DurabilityPolicy.TRANSIENT_LOCAL)


#: the nodes that take a model with multi-DOF joints (a floating base, ball joints): the state
#: on /joint_states (one-DOF joints) + multi_dof_joint_states (robot_dynamics.ros.wire)
MULTI_DOF_NODES = ('sim_node', 'kinematics_node')


def load_model_param(node, multi_dof=False):
    """Declare ``robot_description`` and ``loops`` and load the model (raises on bad input).

    ``multi_dof``: the node takes multi-DOF joints (:data:`MULTI_DOF_NODES`); the others refuse
    such a model at start, naming the joint."""
    import robot_dynamics as rd

    P = declare_params(
        node,
        {
            'robot_description': (
                '',
                'URDF path or URDF XML of the robot (xacro only through the launch files, opt-in)',
                None,
            ),
            'loops': (
                '',
                'loop-closure sidecar path (default: <urdf stem>.loops.yaml beside a URDF '
                'path; empty for XML without loops)',
                None,
            ),
        },
    )
    desc, loops = P['robot_description'], P['loops']
    if not desc:
        raise rd.ModelError('<parameter robot_description>', None, 'is empty: give a URDF path or the URDF XML')
    model = rd.load_model(desc, loops=loops or None)
    if not multi_dof:  # its law, completion or trajectory works on one-DOF joints
        model.require_one_dof(
            f'{node.get_name()} ({", ".join(MULTI_DOF_NODES)} take multi-DOF joints: the one-DOF joints '
            'on /joint_states, the others on multi_dof_joint_states and /tf)'
        )
    multi = f', multi-DOF {[j.name for j in model.multi_dof]}' if model.multi_dof else ''
    node.get_logger().info(
        f'model {model.name}: {model.nq} joints{multi}, {len(model.loops)} loop(s), actuated {model.actuated}'
    )
    return model


_BIG = 1.7e308


def declare_params(node, spec, runtime=()):
    """Declare the node's parameters with descriptors; returns {name: value}.

    ``spec``: {name: (default, description, constraint)} with ``constraint`` None, a numeric
    range ``(lo, hi)`` (None = unbounded; an rclpy range, so ``ros2 param set`` outside it is
    refused) or a tuple of allowed strings. Parameters not named in ``runtime`` are read-only
    (the node reads them once at start: a run-time ``ros2 param set`` is refused with that
    reason instead of answering "successful" and doing nothing). Initial values outside their
    constraint raise ValueError naming the parameter (the node does not start). Every numeric
    scalar parameter (a gain, a limit, a rate, a time) must come with a finite range: a spec
    without one raises ValueError."""
    from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor

    values, choices, ranges = {}, {}, {}
    for name, (default, text, cons) in spec.items():
        if (
            isinstance(default, (int, float))
            and not isinstance(default, bool)
            and not (
                isinstance(cons, tuple)
                and len(cons) == 2
                and all(isinstance(c, (int, float)) and math.isfinite(c) for c in cons)
            )
        ):
            raise ValueError(
                f'parameter {name}: a numeric parameter needs a finite (lo, hi) range in its spec, got {cons!r}'
            )
        d = ParameterDescriptor(description=text, read_only=name not in runtime)
        numeric = (
            isinstance(cons, tuple)
            and len(cons) == 2
            and all(c is None or (isinstance(c, (int, float)) and not isinstance(c, bool)) for c in cons)
        )
        if numeric and not isinstance(default, (str, bool)):
            lo, hi = (-_BIG if cons[0] is None else cons[0]), (_BIG if cons[1] is None else cons[1])
            if isinstance(default, (list, tuple)):
                ranges[name] = (lo, hi)  # arrays: each element (checked below)
            elif isinstance(default, int):
                d.integer_range = [
                    IntegerRange(from_value=int(max(lo, -(2**62))), to_value=int(min(hi, 2**62)), step=0)
                ]
            else:
                d.floating_point_range = [FloatingPointRange(from_value=float(lo), to_value=float(hi), step=0.0)]
            d.additional_constraints = (
                f'{cons[0] if cons[0] is not None else "-inf"} .. {cons[1] if cons[1] is not None else "inf"}'
            )
        elif isinstance(cons, tuple) and not numeric:
            choices[name] = cons
            d.additional_constraints = 'one of ' + ', '.join(map(str, cons))
        try:
            v = node.declare_parameter(name, default, d).value
        except Exception as exc:  # rclpy: out of range / wrong type of an override
            raise ValueError(f'parameter {name}: {exc}') from None
        if name in choices and v not in choices[name]:
            raise ValueError(f'parameter {name}: {v!r} is not one of {list(choices[name])}')
        why = _outside(name, v, ranges.get(name))
        if why:
            raise ValueError(f'parameter {name}: {why}')
        values[name] = v

    if choices or ranges:
        from rcl_interfaces.msg import SetParametersResult

        def check(params):
            for prm in params:
                if prm.name in choices and prm.value not in choices[prm.name]:
                    return SetParametersResult(
                        successful=False, reason=f'{prm.name} must be one of {list(choices[prm.name])}'
                    )
                why = _outside(prm.name, prm.value, ranges.get(prm.name))
                if why:
                    return SetParametersResult(successful=False, reason=why)
            return SetParametersResult(successful=True)

        node.add_on_set_parameters_callback(check)
    return values


def _outside(name, value, rng):
    """None, or why the elements of an array parameter ``value`` leave ``rng`` (lo, hi)."""
    if rng is None or not isinstance(value, (list, tuple)) and not hasattr(value, 'tolist'):
        return None
    bad = [x for x in list(value) if isinstance(x, (int, float)) and not rng[0] <= x <= rng[1]]
    return f'{name}: {bad[0]!r} outside the range {rng[0]:g} .. {rng[1]:g}' if bad else None


def now_msg(node):
    """Current ROS time as builtin_interfaces/Time."""
    return node.get_clock().now().to_msg()


class JointStateParser:
    """Map JointState messages to the model's q, qd by joint name.

    ``required``: the joint names that must be present (default: every one-DOF joint, all of
    the model's joints without multi-DOF joints). ``parse(msg)`` returns ``(q, qd, None)`` or
    ``(None, None, reason)``; the multi-DOF joints of q, qd (not on /joint_states) are left at
    the reference configuration and zero.
    """

    def __init__(self, model, required=None):
        self.model = model
        # one-DOF joint name -> (its index in q, in qd)
        self._one = {jt.name: (jt.idx_q, jt.idx_v) for jt in model.joints if jt.nv == 1}
        self.required = list(self._one if required is None else required)

    def parse(self, msg):
        names = list(msg.name)
        pos = list(msg.position)
        vel = list(msg.velocity)
        if len(pos) != len(names):
            return None, None, f'position has {len(pos)} entries for {len(names)} names'
        if vel and len(vel) != len(names):
            return None, None, f'velocity has {len(vel)} entries for {len(names)} names'
        if len(set(names)) != len(names):
            return None, None, 'duplicate joint names'
        idx = {n: i for i, n in enumerate(names)}
        missing = [j for j in self.required if j not in idx]
        if missing:
            return None, None, f'missing joints {missing}'
        q = self.model.reference_q()
        qd = np.zeros(self.model.nv)
        for j, (iq, iv) in self._one.items():
            if j in idx:
                k = idx[j]
                q[iq] = pos[k]
                if vel:
                    qd[iv] = vel[k]
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
            return None, None, 'non-finite position or velocity'
        return q, qd, None


def finite_list(values, n=None):
    """True if ``values`` is a list of n finite floats (n optional)."""
    if n is not None and len(values) != n:
        return False
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)


def spin_node(node_cls, args=None):
    """rclpy boilerplate: init, construct, spin, clean shutdown (exit code 0, no traceback) on
    Ctrl-C, SIGTERM or SIGHUP (:func:`robot_dynamics.ros._signals.quiet_signals`), also when
    it comes before or during the node's construction."""
    import rclpy
    from rclpy.executors import ExternalShutdownException

    from robot_dynamics.ros._signals import quiet_signals

    flag = quiet_signals()
    if flag['signal'] is not None:  # stopped while importing: nothing to undo
        return 0
    rclpy.init(args=args)
    node = None
    code = 0
    try:
        node = node_cls()
        executor = make_executor()
        executor.add_node(node)
        freeze_heap()
        while rclpy.ok() and flag['signal'] is None:
            executor.spin_once(timeout_sec=0.1)  # (a stop signal ends the loop within this)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception as exc:  # noqa: BLE001 - report and exit non-zero, never hang
        if flag['signal'] is not None or not rclpy.ok():
            pass  # shut down (Ctrl-C, SIGTERM) inside spin_once or the constructor: the
            # executor's wait raises "Unable to convert call argument '0' to Python object" then
        else:
            import sys

            print(f'{node_cls.__name__}: fatal: {exc}', file=sys.stderr, flush=True)
            code = 1
    finally:
        try:
            if node is not None:
                node.destroy_node()
            if rclpy.ok():
                rclpy.shutdown()
        except Exception:  # noqa: BLE001 - a context already shut down by a signal
            pass
    return code


def freeze_heap():
    """Move every object alive after start-up (modules, numba dispatchers, the model) out of the
    cyclic garbage collector's reach (``gc.freeze``): a full collection then walks only what the
    loop allocates since. Measured in a controller process: a full collection of the ~73 000
    start-up objects takes 13-15 ms (a late command every time one falls inside a 1 ms period),
    0.001 ms after the freeze. Nothing is leaked: frozen objects are those that live as long as
    the node anyway."""
    import gc

    gc.collect()
    gc.freeze()


def make_executor(kind=None, context=None):
    """The executor every node spins in: rclpy's ``EventsExecutor`` (default; measured on this
    2-core machine: 223 us of CPU per 1 kHz JointState -> command round trip in the answering
    process instead of 674 us with the ``SingleThreadedExecutor``, bench/bench_executor.py), or
    the ``SingleThreadedExecutor`` with ``kind='single'`` or the environment variable
    ``ROBOT_DYNAMICS_EXECUTOR=single``. Spun by ``spin_once`` in a loop while ``rclpy.ok()``, so
    SIGINT/SIGTERM (rclpy's handlers shut the context down) end it within the timeout.
    ``context``: the rclpy context (default: the global one)."""
    import os

    kind = kind or os.environ.get('ROBOT_DYNAMICS_EXECUTOR', 'events')
    if kind not in ('events', 'single'):
        raise ValueError(f"ROBOT_DYNAMICS_EXECUTOR must be 'events' or 'single', got {kind!r}")
    if kind == 'events':
        import sys
        from rclpy.experimental import EventsExecutor

        err = sys.stderr
        try:  # it calls faulthandler.enable(), which needs a real
            err.fileno()  # file: not a redirected stderr (pytest, a StringIO)
        except (AttributeError, ValueError, OSError):
            sys.stderr = sys.__stderr__
        try:
            if sys.stderr is not None:
                return EventsExecutor(context=context)
        finally:
            sys.stderr = err
    from rclpy.executors import SingleThreadedExecutor

    return SingleThreadedExecutor(context=context)


def guarded(node, callback, what='callback'):
    """Wrap a subscription/timer/service callback so that an exception never kills the node:
    the message is dropped, a warning is logged (at most one per 2 s per ``what``) and
    ``node.callback_errors`` (reported on ``/diagnostics``) rises. What was last published (a
    command, the safe command) stands; the loop's staleness takes over if nothing follows."""
    import time as _time

    from rclpy.timer import TimerInfo

    def run(*args):
        if args and isinstance(args[0], TimerInfo):
            args = args[1:]  # the EventsExecutor passes a TimerInfo to *args callbacks
        try:
            return callback(*args)
        except KeyboardInterrupt:
            # Ctrl-C / SIGINT arrived while this callback ran: end the node cleanly (spin_node's
            # loop stops when the context is shut down; exit code 0) instead of the executor's
            # FATAL log of an exception escaping a callback
            try:
                node.context.try_shutdown()
            except Exception:  # noqa: BLE001 - already shut down
                pass
            return None
        except Exception as exc:  # noqa: BLE001 - the point of the guard
            if not node.context.ok():
                return None  # shutting down (a timer after SIGINT): nothing to report
            node.callback_errors = getattr(node, 'callback_errors', 0) + 1
            last = getattr(node, '_guard_warned', {})
            now = _time.monotonic()
            if now - last.get(what, -1e9) >= 2.0:
                last[what] = now
                node._guard_warned = last
                node.get_logger().error(
                    f'{what} failed ({type(exc).__name__}: {exc}); message dropped ({node.callback_errors} so far)'
                )
            if len(args) == 2 and hasattr(args[1], 'success'):  # a service: answer it
                args[1].success = False
                if hasattr(args[1], 'message'):
                    args[1].message = f'{type(exc).__name__}: {exc}'
                return args[1]
            return None

    return run


def stamp_sec(stamp):
    """builtin_interfaces/Time -> seconds (float)."""
    return stamp.sec + 1e-9 * stamp.nanosec


class DiagnosticsPublisher:
    """Publish a core ``diagnostics()`` dict on ``/diagnostics`` (diagnostic_msgs/DiagnosticArray)
    every 1/``rate`` s of wall time (and at once through :meth:`publish`): level OK, WARN when the
    last command was a safe command or overruns/rejections/clipping happened since the previous
    report, ERROR when the dict has an ``error`` (its text is the message). 0 disables it."""

    def __init__(self, node, source, rate=2.0, hardware_id=''):
        from rclpy.clock import Clock, ClockType

        self.node, self.source, self.hw = node, source, hardware_id or node.get_name()
        self.prev = {}
        self.pub = None
        if rate and rate > 0:
            from diagnostic_msgs.msg import DiagnosticArray

            self.pub = node.create_publisher(DiagnosticArray, '/diagnostics', 10)
            node.create_timer(1.0 / rate, self.publish, clock=Clock(clock_type=ClockType.STEADY_TIME))

    def publish(self):
        from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

        d = dict(self.source())
        d['callback_errors'] = getattr(self.node, 'callback_errors', 0)
        st = DiagnosticStatus(name=f'{self.node.get_fully_qualified_name()}: control loop', hardware_id=self.hw)
        news = {
            k: d.get(k, 0) - self.prev.get(k, 0)
            for k in (
                'overruns',
                'rejected_states',
                'law_errors',
                'callback_errors',
                'refused_steps',
                'refused',
                'clipped_commands',
                'clipped_holds',
                'clipped',
            )
        }
        self.prev = {k: d.get(k, 0) for k in news}
        warn = d.get('safe') or any(v > 0 for v in news.values())
        st.level = DiagnosticStatus.ERROR if d.get('error') else DiagnosticStatus.WARN if warn else DiagnosticStatus.OK
        st.message = (
            d['error']
            if d.get('error')
            else (d.get('reason') or 'ok')
            if d.get('safe')
            else (', '.join(f'{v} new {k}' for k, v in news.items() if v) or 'ok')
        )
        st.values = [KeyValue(key=str(k), value=f'{v:.6g}' if isinstance(v, float) else str(v)) for k, v in d.items()]
        arr = DiagnosticArray()
        arr.header.stamp = self.node.get_clock().now().to_msg()
        arr.status = [st]
        self.pub.publish(arr)


class PublisherWatch:
    """One owner per topic: checks every ``period`` s of wall time that each watched topic has
    at most its allowed number of publishers (``topics``: {name: allowed}; names resolved
    against the node's namespace). ``problem`` is None or the text naming the topic, the count
    and the publishing nodes; a change is logged (ERROR while it lasts, INFO when it is over)
    and passed to ``on_change(problem)``."""

    def __init__(self, node, topics, period=0.25, on_change=None):
        from rclpy.clock import Clock, ClockType

        self.node, self.on_change, self.problem = node, on_change, None
        self.topics = {node.resolve_topic_name(t): int(n) for t, n in topics.items()}
        self.timer = node.create_timer(period, self.check, clock=Clock(clock_type=ClockType.STEADY_TIME))

    def check(self):
        problems = []
        for topic, allowed in self.topics.items():
            infos = self.node.get_publishers_info_by_topic(topic)
            if len(infos) > allowed:
                who = sorted({f'{i.node_namespace.rstrip("/")}/{i.node_name}' for i in infos})
                problems.append(
                    f'{len(infos)} publishers on {topic} (nodes {", ".join(who)}; expected at most {allowed})'
                )
        problem = '; '.join(problems) or None
        if problem != self.problem:
            if problem:
                self.node.get_logger().error(problem)
            else:
                self.node.get_logger().info(f'one publisher again on {", ".join(self.topics)}')
            self.problem = problem
            if self.on_change is not None:
                self.on_change(problem)
        return problem


def time_msg(t):
    """builtin_interfaces/Time of ``t`` seconds (floor seconds, rounded nanoseconds)."""
    import math
    from builtin_interfaces.msg import Time

    sec = int(math.floor(t))
    return Time(sec=sec, nanosec=int(round((t - sec) * 1e9)) % 1_000_000_000)


def wrench_stamped(frame, w, stamp):
    """geometry_msgs/WrenchStamped of a linear-first wrench ``w`` (6,) [N, N m] in ``frame``."""
    from geometry_msgs.msg import WrenchStamped

    ws = WrenchStamped()
    ws.header.stamp, ws.header.frame_id = stamp, frame
    ws.wrench.force.x, ws.wrench.force.y, ws.wrench.force.z = map(float, w[:3])
    ws.wrench.torque.x, ws.wrench.torque.y, ws.wrench.torque.z = map(float, w[3:])
    return ws


def labelled_array(labels, values):
    """std_msgs/Float64MultiArray of ``values`` with one layout dimension labelled by the
    comma-joined ``labels`` (the labelled diagnostics topics of the nodes)."""
    from std_msgs.msg import Float64MultiArray, MultiArrayDimension

    msg = Float64MultiArray(data=[float(v) for v in values])
    msg.layout.dim = [MultiArrayDimension(label=','.join(labels), size=len(labels), stride=len(labels))]
    return msg


def wrench_vec(msg):
    """(6,) linear-first wrench of a geometry_msgs/WrenchStamped."""
    f, t = msg.wrench.force, msg.wrench.torque
    return np.array([f.x, f.y, f.z, t.x, t.y, t.z], float)


def task_part_vec(msg):
    """The numbers of a PoseStamped (x, y, z, qx, qy, qz, qw), TwistStamped or AccelStamped
    (linear, angular) message."""
    if hasattr(msg, 'pose'):
        p, o = msg.pose.position, msg.pose.orientation
        return np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w], float)
    a = msg.twist if hasattr(msg, 'twist') else msg.accel
    return np.array([a.linear.x, a.linear.y, a.linear.z, a.angular.x, a.angular.y, a.angular.z], float)


def warn_throttled(node, cache, text, period=2.0):
    """A warning throttled per kind (the text up to its second ':', e.g. 'safe command: state
    stale' and 'safe command: no reference yet' are two kinds): one per ``period`` s of wall
    time; ``cache`` is the caller's dict of last times."""
    import time

    key, now = ':'.join(text.split(':', 2)[:2])[:60], time.monotonic()
    if now - cache.get(key, -1e9) >= period:
        cache[key] = now
        node.get_logger().warning(text)


def extra_states_msg(ex, stamp, js=None):
    """JointState of the plant extra states (cylinders: see the module doc), after the joints of
    ``js`` (the /joint_states message of the same step) when given."""
    from sensor_msgs.msg import JointState

    msg = JointState()
    msg.header.stamp = stamp
    names = list(ex['names'])
    n = len(names)
    head = (
        (list(js.name), list(js.position), list(js.velocity), list(js.effort)) if js is not None else ([], [], [], [])
    )
    msg.name = head[0] + names + [f'{c}/{k}' for c in names for k in ('p_a', 'p_b', 'u')]
    msg.position = (
        head[1] + [float(v) for v in ex['x']] + [float(ex[k][i]) for i in range(n) for k in ('pa', 'pb', 'u')]
    )
    msg.velocity = head[2] + [float(v) for v in ex['xd']] + [0.0] * (3 * n)
    msg.effort = head[3] + [float(v) for v in ex['fp']] + [0.0] * (3 * n)
    return msg


# ---------------------------------------------------------------- multi-DOF joints on the wire
#: /tf as tf2_ros' TransformBroadcaster publishes it (reliable, volatile, depth 100)
QOS_TF = _reliable(100)


def tf_message_type():
    """tf2_msgs/TFMessage, or None where tf2_msgs is not installed (a ROS installation has it;
    the PyPI wheels of ROS 2 Kilted do not ship it)."""
    try:
        from tf2_msgs.msg import TFMessage
    except ImportError:
        return None
    return TFMessage


def _transform(p, quat):
    from geometry_msgs.msg import Transform

    t = Transform()
    t.translation.x, t.translation.y, t.translation.z = map(float, p)
    t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w = map(float, quat)
    return t


def multi_dof_msg(wire, q, v, tau, stamp):
    """sensor_msgs/MultiDOFJointState of the multi-DOF joints of ``wire``
    (:class:`robot_dynamics.ros.wire.WireState`): per joint the child link in the parent link
    (quaternion x, y, z, w), the joint velocity as a twist and its generalized force as a
    wrench, both in the child link's axes."""
    from geometry_msgs.msg import Twist, Wrench
    from sensor_msgs.msg import MultiDOFJointState

    msg = MultiDOFJointState()
    msg.header.stamp = stamp
    msg.joint_names = [jt.name for jt in wire.multi]
    msg.transforms = [_transform(p, quat) for p, quat in wire.transforms(q)]
    for tw in wire.twists(v):
        t = Twist()
        t.linear.x, t.linear.y, t.linear.z = map(float, tw[:3])
        t.angular.x, t.angular.y, t.angular.z = map(float, tw[3:])
        msg.twist.append(t)
    for wr in wire.wrenches(tau):
        w = Wrench()
        w.force.x, w.force.y, w.force.z = map(float, wr[:3])
        w.torque.x, w.torque.y, w.torque.z = map(float, wr[3:])
        msg.wrench.append(w)
    return msg


def tf_msg(tf_type, wire, q, stamp):
    """tf2_msgs/TFMessage (``tf_type``) of the multi-DOF joints: parent link -> child link."""
    from geometry_msgs.msg import TransformStamped

    msg = tf_type()
    for (parent, child), (p, quat) in zip(wire.frames, wire.transforms(q)):
        ts = TransformStamped()
        ts.header.stamp, ts.header.frame_id, ts.child_frame_id = stamp, parent, child
        ts.transform = _transform(p, quat)
        msg.transforms.append(ts)
    return msg


def parse_multi_dof(wire, msg):
    """(transforms, twists, None) of a MultiDOFJointState in ``wire.multi`` order (twists None
    when the message has none), or (None, None, reason)."""
    names = list(msg.joint_names)
    idx = {n: i for i, n in enumerate(names)}
    missing = [jt.name for jt in wire.multi if jt.name not in idx]
    if missing:
        return None, None, f'missing multi-DOF joints {missing}'
    if len(msg.transforms) != len(names) or (msg.twist and len(msg.twist) != len(names)):
        return None, None, f'{len(msg.transforms)} transforms, {len(msg.twist)} twists for {len(names)} names'
    tr, tw = [], [] if msg.twist else None
    for jt in wire.multi:
        k = idx[jt.name]
        t = msg.transforms[k]
        p = [t.translation.x, t.translation.y, t.translation.z]
        quat = [t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w]
        n = math.sqrt(sum(c * c for c in quat))
        if not (finite_list(p) and finite_list(quat) and abs(n - 1.0) < 1e-6):
            return None, None, f'joint {jt.name}: non-finite transform or quaternion of norm {n:.9g}'
        tr.append((p, quat))
        if tw is not None:
            s = msg.twist[k]
            x = [s.linear.x, s.linear.y, s.linear.z, s.angular.x, s.angular.y, s.angular.z]
            if not finite_list(x):
                return None, None, f'joint {jt.name}: non-finite twist'
            tw.append(x)
    return tr, tw, None
