"""Write ROS 2 messages into an MCAP file the way rosbag2's ``mcap`` storage does (ROS-free).

An MCAP file with profile ``ros2``: one schema per message type (name ``pkg/msg/Type``,
encoding ``ros2msg``: the type's ``.msg`` text followed by the text of every nested type after a
line of 80 ``=`` and ``MSG: pkg/Type``), one channel per topic (message encoding ``cdr``), and
the messages as the CDR bytes a ROS 2 subscription receives (``raw=True``: no decoding on the
recording path). ``ros2 bag info/play``, Foxglove and any MCAP reader open it directly.

The ``.msg`` texts are read from the ``share/<pkg>/msg`` directories of the prefixes in
``AMENT_PREFIX_PATH`` (a ROS installation) and of ``sys.prefix`` (the ``ros-*`` wheels).

    w = McapBagWriter('out/run.mcap')
    w.write('/joint_states', 'sensor_msgs/msg/JointState', cdr_bytes, log_time_ns)
    w.close()          # -> {topic: count}
"""
import os
import re
import sys

from .errors import RobotDynamicsError

__all__ = ['McapBagWriter', 'msg_definition', 'BagError']

_PRIMITIVES = {'bool', 'byte', 'char', 'float32', 'float64', 'int8', 'uint8', 'int16', 'uint16',
               'int32', 'uint32', 'int64', 'uint64', 'string', 'wstring'}
_SEP = '=' * 80


class BagError(RobotDynamicsError):
    """A message type without a definition, or a bag file that cannot be written."""


def _prefixes():
    out = [p for p in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if p]
    for p in (sys.prefix, sys.base_prefix):
        if p not in out:
            out.append(p)
    return out


def _msg_file(pkg, name):
    for prefix in _prefixes():
        path = os.path.join(prefix, 'share', pkg, 'msg', f'{name}.msg')
        if os.path.isfile(path):
            return path
    raise BagError(f'no definition of {pkg}/msg/{name}: {name}.msg not found under share/{pkg}/msg '
                   f'of {_prefixes()}')


def _split(type_name):
    """'sensor_msgs/msg/JointState' | 'sensor_msgs/JointState' -> ('sensor_msgs', 'JointState')."""
    parts = type_name.split('/')
    if len(parts) == 3 and parts[1] == 'msg':
        return parts[0], parts[2]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise BagError(f"message type {type_name!r}: expected 'pkg/msg/Type'")


def _field_types(text, pkg):
    """Nested (pkg, Type) of a .msg text (constants and primitives skipped)."""
    out = []
    for line in text.splitlines():
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        typ = line.split()[0]
        base = re.sub(r'\[.*\]$', '', typ)
        base = re.sub(r'<=\d+$', '', base)               # bounded strings: string<=10
        if base in _PRIMITIVES:                          # (constants are primitives too)
            continue
        if base == 'Header':
            out.append(('std_msgs', 'Header'))
        elif '/' in base:
            out.append(_split(base))
        else:
            out.append((pkg, base))
    return out


def msg_definition(type_name):
    """The ``ros2msg`` schema text of ``type_name`` (its .msg, then every nested type once,
    depth first, each after a separator line and ``MSG: pkg/Type``)."""
    pkg, name = _split(type_name)
    with open(_msg_file(pkg, name)) as f:
        text = f.read()
    parts, seen = [text.rstrip('\n')], {(pkg, name)}
    stack = list(reversed(_field_types(text, pkg)))
    while stack:
        p, n = stack.pop()
        if (p, n) in seen:
            continue
        seen.add((p, n))
        with open(_msg_file(p, n)) as f:
            sub = f.read()
        parts.append(f'{_SEP}\nMSG: {p}/{n}\n{sub.rstrip(chr(10))}')
        stack.extend(reversed(_field_types(sub, p)))
    return '\n'.join(parts) + '\n'


class McapBagWriter:
    """An MCAP file of ROS 2 messages (CDR) written as they come; ``close()`` finishes it.

    ``path``: the .mcap file (its directory is created). ``write(topic, type_name, data,
    log_time_ns, publish_time_ns=None)``: ``data`` the CDR bytes of one message,
    ``type_name`` 'pkg/msg/Type', times in ns (receive time; publish time defaults to it).
    """

    def __init__(self, path, library='robot_dynamics'):
        from mcap.writer import Writer
        self.path = os.path.abspath(path)
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        try:
            self._f = open(self.path, 'wb')
        except OSError as exc:
            raise BagError(f'cannot write the bag {self.path}: {exc}') from None
        self._w = Writer(self._f)
        self._w.start(profile='ros2', library=library)
        self._schemas, self._channels = {}, {}
        self.counts = {}
        self.closed = False

    def _channel(self, topic, type_name):
        key = (topic, type_name)
        if key not in self._channels:
            pkg, name = _split(type_name)
            full = f'{pkg}/msg/{name}'
            if full not in self._schemas:
                self._schemas[full] = self._w.register_schema(
                    name=full, encoding='ros2msg', data=msg_definition(full).encode())
            self._channels[key] = self._w.register_channel(
                topic=topic, message_encoding='cdr', schema_id=self._schemas[full],
                metadata={'offered_qos_profiles': ''})
        return self._channels[key]

    def write(self, topic, type_name, data, log_time_ns, publish_time_ns=None):
        if self.closed:
            raise BagError(f'{self.path} is closed')
        cid = self._channel(topic, type_name)
        self._w.add_message(channel_id=cid, log_time=int(log_time_ns), data=bytes(data),
                            publish_time=int(log_time_ns if publish_time_ns is None else publish_time_ns),
                            sequence=self.counts.get(topic, 0))
        self.counts[topic] = self.counts.get(topic, 0) + 1

    def close(self):
        """Finish the file (summary and index); returns {topic: message count}."""
        if not self.closed:
            self.closed = True
            self._w.finish()
            self._f.close()
        return dict(self.counts)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
