"""Exception classes of robot_dynamics.

Every error the package raises on bad input is a subclass of :class:`RobotDynamicsError`
(itself a ``ValueError``), and its message names the file and the element, key or joint
at fault, so that a malformed model never yields garbage silently.
"""


class RobotDynamicsError(ValueError):
    """Base class of all robot_dynamics input/model errors."""


def _located(err, source, where, message):
    """Set ``err.source`` and build the message ``"<source>: <where>: <message>"``."""
    err.source = source
    ValueError.__init__(err, f'{source}' + (f': {where}' if where else '') + f': {message}')


class ModelError(RobotDynamicsError):
    """A URDF (or xacro) that cannot be turned into a valid model.

    Message: ``"<file>: <element>: <what is wrong>"``, e.g.
    ``"arm.urdf: joint 'elbow' <origin xyz> (line 42): non-finite value 'nan 0 0'"``.
    Attributes: ``source`` (file path, ``'<string>'`` for XML text, ``'<input>'`` for an
    argument of the wrong type) and ``element`` (the offending link/joint/XML element,
    ``'line N'`` for an XML syntax error, or None for whole-file problems).
    """

    def __init__(self, source, element, message):
        self.element = element
        _located(self, source, element, message)


class LoopSpecError(RobotDynamicsError):
    """A malformed loop-closure sidecar (``<robot>.loops.yaml``).

    Message: ``"<file>: <key>: <what is wrong>"``, e.g.
    ``"arm.loops.yaml: loops[1].frame_a: 'knee_x' is not a link (frame) of the URDF"``.
    ``source`` is the file path (``'<dict>'`` for an already parsed mapping); ``key`` is the
    path of the offending key inside the file, e.g. ``loops[1].frame_a`` (None for whole-file
    problems such as a YAML syntax error, whose line is in the message).
    """

    def __init__(self, source, key, message):
        self.key = key
        _located(self, source, key, message)


class InputError(RobotDynamicsError):
    """Wrong array shape or non-finite values passed to an algorithm."""


class UnknownNameError(RobotDynamicsError, KeyError):
    """A joint or frame name (or index) that the model does not have.

    Also a ``KeyError``, so ``except KeyError`` keeps working for dictionary-like lookups.
    """

    def __str__(self):
        return str(self.args[0]) if self.args else ''


class SingularMassMatrixError(RobotDynamicsError):
    """Forward dynamics met a singular joint-space inertia matrix.

    Raised when a joint drives a subtree that carries no inertia along its motion
    (e.g. only massless links); ``joint`` names the first such joint found.
    """

    def __init__(self, joint, message):
        self.joint = joint
        super().__init__(message)


class AssemblyError(RobotDynamicsError):
    """No closed configuration was found (loop assembly / position projection failed).

    Raised by :func:`robot_dynamics.algorithms.projection.assemble` when Newton-Raphson on the loop
    closures does not converge, or stalls at a least-squares point with a non-zero residual
    (no assembly exists for the given independent coordinates). Attributes: ``q`` (the last
    iterate), ``residual`` (its ``||phi||``), ``iterations``.
    """

    def __init__(self, message, q=None, residual=None, iterations=None):
        self.q = q
        self.residual = residual
        self.iterations = iterations
        super().__init__(message)


class ConstraintRankError(RobotDynamicsError):
    """An algorithm that needs a full-row-rank constraint Jacobian met a rank-deficient one
    (e.g. the Lagrange-multiplier oracle with redundant loop rows or at a singularity)."""


class ControllabilityError(RobotDynamicsError):
    """Projected inverse dynamics with passive joints cannot realise the motion:
    ``rank [A; S_a] < n`` (only raised with ``strict=True``; otherwise reported in the result)."""


class PKMStructureError(RobotDynamicsError):
    """The model is not a PKM this algorithm handles (limbs not disjoint serial chains, limbs of
    different length, a cut joint that is not spherical, an unclosed reference configuration,
    no actuated joint in a limb ...). The message names the model and the limb/loop/joint.
    Raised as well by the general route (:mod:`robot_dynamics.pkm.general`) for what is outside
    it (hybrid or branching limbs, unsupported cut types, under-actuation ...)."""


class PKMSingularityError(RobotDynamicsError):
    """IK failed or a limb Jacobian J_t / the IK Jacobian J_IK is singular at some samples.
    ``samples``: indices of the failing samples; ``status``: per-sample codes (1 IK not
    converged / no IK solution, 2 singular J_t (closed-form IK: U or S at a singular
    configuration), 3 singular J_IK, 4 non-finite input, 5 IK solution outside the URDF joint
    limits, 6 closed-form IK branch ambiguous: the warm start does not single out one branch,
    7 parallel (constraint/task) singularity of the general route)."""

    def __init__(self, message, samples=None, status=None):
        self.samples = samples
        self.status = status
        super().__init__(message)


class ModelWarning(UserWarning):
    """A description the package loads as given but that is not physical (e.g. an inertia outside
    the triangle inequality, rotational inertia on a massless link), as Pinocchio loads it; the
    message names the file and the element."""
