"""Exception classes of robot_dynamics.

Every error the package raises on bad input is a subclass of :class:`RobotDynamicsError`
(itself a ``ValueError``), and its message names the file and the element, key or joint
at fault, so that a malformed model never yields garbage silently.
"""


class RobotDynamicsError(ValueError):
    """Base class of all robot_dynamics input/model errors."""


class ModelError(RobotDynamicsError):
    """A URDF (or xacro) that cannot be turned into a valid model.

    Attributes: ``source`` (file path or ``'<string>'``) and ``element`` (the offending
    link/joint, or None).
    """

    def __init__(self, source, element, message):
        self.source = source
        self.element = element
        where = f"{source}" + (f": {element}" if element else "")
        super().__init__(f"{where}: {message}")


class LoopSpecError(RobotDynamicsError):
    """A malformed loop-closure sidecar (``<robot>.loops.yaml``).

    ``key`` is the path of the offending key inside the file, e.g. ``loops[1].frame_a``.
    """

    def __init__(self, source, key, message):
        self.source = source
        self.key = key
        where = f"{source}" + (f": {key}" if key else "")
        super().__init__(f"{where}: {message}")


class InputError(RobotDynamicsError):
    """Wrong array shape or non-finite values passed to an algorithm."""


class SingularMassMatrixError(RobotDynamicsError):
    """Forward dynamics met a singular joint-space inertia matrix.

    Raised when a joint drives a subtree that carries no inertia along its motion
    (e.g. only massless links); ``joint`` names the first such joint found.
    """

    def __init__(self, joint, message):
        self.joint = joint
        super().__init__(message)
