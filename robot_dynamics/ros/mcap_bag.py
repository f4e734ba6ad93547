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

Crash safety: the writer finishes the MCAP chunk in progress and hands it to the operating
system (a flush; then ``fsync`` in a background thread) every ``flush_period`` s (default 1 s)
of wall time (checked on every ``write`` and by ``flush_if_due()``, which the recorder node
calls from a timer). A recording process killed without ``close()`` (``kill -9``, power loss
after the ``fsync``) leaves a file without summary and footer that holds every message but
those of the last ``flush_period`` s. ``recover(path)`` reads such a file record by record up
to the first incomplete one and writes a complete copy (``robot-dynamics record --recover FILE``):

    info = recover('out/run.mcap')        # -> out/run.recovered.mcap
    info['counts'], info['start_ns'], info['end_ns']
"""

import io
import os
import re
import struct
import sys
import threading
import time

from robot_dynamics.errors import RobotDynamicsError

__all__ = ['McapBagWriter', 'msg_definition', 'recover', 'BagError']

_PRIMITIVES = {
    'bool',
    'byte',
    'char',
    'float32',
    'float64',
    'int8',
    'uint8',
    'int16',
    'uint16',
    'int32',
    'uint32',
    'int64',
    'uint64',
    'string',
    'wstring',
}
_SEP = '=' * 80
_MAGIC = b'\x89MCAP0\r\n'  # MCAP's 8 leading (and trailing) bytes


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
    raise BagError(f'no definition of {pkg}/msg/{name}: {name}.msg not found under share/{pkg}/msg of {_prefixes()}')


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
        base = re.sub(r'<=\d+$', '', base)  # bounded strings: string<=10
        if base in _PRIMITIVES:  # (constants are primitives too)
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

    ``flush_period`` [s]: the chunk in progress is finished (zstd-compressed, as every chunk)
    and written to the file by the first ``write`` this long after the last flush; call
    ``flush_if_due(ahead=check period)`` periodically to keep to it through pauses between
    messages. ``None``: chunks are written only when they reach the mcap writer's chunk size
    (1 MiB) and at ``close()``.
    ``fsync``: after each such flush a background thread asks the OS to put the bytes on the
    disk (``os.fsync``: 1-5 ms on an idle disk, up to a second on a busy one, so never in the
    caller's thread; a killed process loses nothing flushed: the bytes are in the OS's cache),
    and ``close()`` does it once more.
    ``clock``: the wall clock of ``flush_period`` [s] (``time.monotonic``; tests inject one).
    """

    def __init__(self, path, library='robot_dynamics', flush_period=1.0, fsync=True, clock=time.monotonic):
        from mcap.writer import Writer

        self.path = os.path.abspath(path)
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        try:
            self._f = open(self.path, 'wb')
        except OSError as exc:
            raise BagError(f'cannot write the bag {self.path}: {exc}') from None
        self._w = Writer(self._f)
        self._w.start(profile='ros2', library=library)
        self._f.flush()  # the header is on disk from the start
        self._schemas, self._channels = {}, {}
        self.counts = {}
        self.closed = False
        self.flush_period = None if flush_period is None else float(flush_period)
        self.fsync = bool(fsync)
        self._clock = clock
        self.flushed_at = clock()  # clock time of the last flush [s]
        self.flushes = 0  # flushes so far (periodic and explicit)
        self._sync_wanted = threading.Event()
        self._sync_stop = False
        self._syncer = None

    def _channel(self, topic, type_name):
        key = (topic, type_name)
        if key not in self._channels:
            pkg, name = _split(type_name)
            full = f'{pkg}/msg/{name}'
            if full not in self._schemas:
                self._schemas[full] = self._w.register_schema(
                    name=full, encoding='ros2msg', data=msg_definition(full).encode()
                )
            self._channels[key] = self._w.register_channel(
                topic=topic,
                message_encoding='cdr',
                schema_id=self._schemas[full],
                metadata={'offered_qos_profiles': ''},
            )
        return self._channels[key]

    def write(self, topic, type_name, data, log_time_ns, publish_time_ns=None):
        if self.closed:
            raise BagError(f'{self.path} is closed')
        cid = self._channel(topic, type_name)
        self._w.add_message(
            channel_id=cid,
            log_time=int(log_time_ns),
            data=bytes(data),
            publish_time=int(log_time_ns if publish_time_ns is None else publish_time_ns),
            sequence=self.counts.get(topic, 0),
        )
        self.counts[topic] = self.counts.get(topic, 0) + 1
        if self.flush_period is not None and self._clock() - self.flushed_at >= self.flush_period:
            self.flush()

    def flush(self):
        """Finish the chunk in progress (if it holds messages) and write it, with everything
        buffered, to the file (``fsync`` follows in the background if asked): what was written
        so far survives the end of the process. A no-op on a closed writer."""
        if self.closed:
            return
        self._w.flush()  # mcap >= 1.6: finalize the chunk, flush the stream
        if self.fsync:
            if self._syncer is None:
                self._syncer = threading.Thread(target=self._sync_loop, name='mcap_fsync', daemon=True)
                self._syncer.start()
            self._sync_wanted.set()
        self.flushed_at = self._clock()
        self.flushes += 1

    def _sync(self):
        try:
            os.fsync(self._f.fileno())
        except (OSError, ValueError):  # a file system without fsync: flushed is enough
            pass

    def _sync_loop(self):
        """The fsync thread: one ``os.fsync`` per wake-up (requests during one are merged)."""
        while True:
            self._sync_wanted.wait()
            self._sync_wanted.clear()
            if self._sync_stop:
                return
            self._sync()

    def flush_if_due(self, ahead=0.0):
        """``flush()`` when ``flush_period - ahead`` s have passed since the last one; returns
        whether it did. Cheap: call it often. ``ahead`` [s]: the period of the caller's checks
        (the recorder node's timer), so that no flush comes later than ``flush_period``."""
        if self.closed or self.flush_period is None or self._clock() - self.flushed_at < self.flush_period - ahead:
            return False
        self.flush()
        return True

    def close(self):
        """Finish the file (summary and index); returns {topic: message count}."""
        if not self.closed:
            self.closed = True
            if self._syncer is not None:  # no fsync on a closed file
                self._sync_stop = True
                self._sync_wanted.set()
                self._syncer.join()
            self._w.finish()
            self._f.flush()
            if self.fsync:
                self._sync()
            self._f.close()
        return dict(self.counts)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _default_recovered_path(path):
    stem, ext = os.path.splitext(path)
    return f'{stem}.recovered{ext or ".mcap"}'


def _records(f, size):
    """Yield ``(opcode, body, offset)`` of the records after the leading magic, up to the end
    of the readable part; the last item is ``(None, reason, offset)``: why reading stopped
    (``offset`` [bytes]: where the unread part begins)."""
    pos = f.tell()
    while True:
        head = f.read(9)
        if len(head) < 9:
            yield None, ('end of file' if not head else 'truncated in a record header'), pos
            return
        opcode, length = struct.unpack('<BQ', head)
        if opcode == 0:  # no such record: zeros or garbage follow
            yield None, f'invalid record (opcode 0) at byte {pos}', pos
            return
        if length > size - pos - 9:
            yield None, f'truncated in a record of {length} bytes (opcode 0x{opcode:02x}) at byte {pos}', pos
            return
        body = f.read(length)
        if len(body) < length:
            yield None, f'truncated in a record of {length} bytes at byte {pos}', pos
            return
        yield opcode, body, pos
        pos += 9 + length


def recover(path, out=None):
    """Rebuild a complete MCAP file from a truncated one (a recording killed before ``close()``).

    Reads ``path`` record by record from the start, up to the footer or the first record that
    is incomplete or unreadable (a partial last chunk is skipped whole), and writes every
    schema, channel, message (log/publish time, sequence, bytes unchanged), metadata and
    attachment read into ``out`` (default ``<stem>.recovered.mcap`` next to ``path``; ``out``
    may be ``path`` itself: the file is replaced when the copy is complete), with summary,
    indexes and footer. Works on a complete file too (a plain copy).

    Returns a dict: ``path``, ``out``, ``counts`` {topic: messages recovered}, ``messages``
    (their sum), ``start_ns``/``end_ns`` (first/last log time [ns], ``None`` without messages),
    ``complete`` (the input had its data-section end or footer), ``bytes_read`` (bytes up to
    the end of the last record used), ``bytes_total``, ``stopped`` (why reading stopped),
    ``skipped`` (messages of a channel whose schema was lost). Raises :class:`BagError` for a
    missing file, a file that is not MCAP, or an output that cannot be written.
    """
    from mcap.opcode import Opcode
    from mcap.records import Attachment, Channel, Chunk, Header, Message, Metadata, Schema
    from mcap.stream_reader import breakup_chunk
    from mcap.data_stream import ReadDataStream
    from mcap.writer import Writer

    src = os.path.abspath(path)
    if not os.path.exists(src):
        raise BagError(f'{src}: no such file')
    if not os.path.isfile(src):
        raise BagError(f'{src}: not a file')
    dst = os.path.abspath(out) if out else _default_recovered_path(src)
    try:
        fin = open(src, 'rb')
    except OSError as exc:
        raise BagError(f'{src}: cannot read: {exc.strerror or exc}') from None
    with fin:
        size = os.fstat(fin.fileno()).st_size
        magic = fin.read(len(_MAGIC))
        if magic != _MAGIC:
            why = 'empty file' if size == 0 else 'too short' if len(magic) < len(_MAGIC) else 'no MCAP magic'
            raise BagError(f'{src}: not an MCAP file ({why})')
        records = _records(fin, size)
        opcode, body, pos = next(records)
        if opcode != Opcode.HEADER:
            what = body if opcode is None else f'opcode 0x{opcode:02x}'
            raise BagError(f'{src}: not an MCAP file (no header record: {what})')
        try:
            header = Header.read(ReadDataStream(io.BytesIO(body)))
        except Exception as exc:  # noqa: BLE001 (a damaged header: any parse error)
            raise BagError(f'{src}: not an MCAP file (unreadable header: {exc})') from None
        # written beside the destination, renamed onto it when complete (out == path: in place)
        tmp = os.path.join(os.path.dirname(dst), f'.{os.path.basename(dst)}.{os.getpid()}.part')
        try:
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            fout = open(tmp, 'wb')
        except OSError as exc:
            raise BagError(f'{dst}: cannot write: {exc.strerror or exc}') from None
        info = dict(
            path=src,
            out=dst,
            counts={},
            messages=0,
            start_ns=None,
            end_ns=None,
            complete=False,
            bytes_read=pos + 9 + len(body),
            bytes_total=size,
            stopped='',
            skipped=0,
        )
        schemas, channels, topics = {}, {}, {}
        try:
            with fout:
                w = Writer(fout)
                w.start(profile=header.profile, library=header.library)

                def use(rec):
                    if isinstance(rec, Message):
                        cid = channels.get(rec.channel_id)
                        if cid is None:
                            info['skipped'] += 1
                            return
                        w.add_message(
                            channel_id=cid,
                            log_time=rec.log_time,
                            data=rec.data,
                            publish_time=rec.publish_time,
                            sequence=rec.sequence,
                        )
                        topic = topics[rec.channel_id]
                        info['counts'][topic] = info['counts'].get(topic, 0) + 1
                        info['start_ns'] = (
                            rec.log_time if info['start_ns'] is None else min(info['start_ns'], rec.log_time)
                        )
                        info['end_ns'] = rec.log_time if info['end_ns'] is None else max(info['end_ns'], rec.log_time)
                    elif isinstance(rec, Schema):
                        if rec.id not in schemas:
                            schemas[rec.id] = w.register_schema(name=rec.name, encoding=rec.encoding, data=rec.data)
                    elif isinstance(rec, Channel):
                        if rec.id not in channels and (rec.schema_id == 0 or rec.schema_id in schemas):
                            channels[rec.id] = w.register_channel(
                                topic=rec.topic,
                                message_encoding=rec.message_encoding,
                                schema_id=schemas.get(rec.schema_id, 0),
                                metadata=dict(rec.metadata),
                            )
                            topics[rec.id] = rec.topic
                    elif isinstance(rec, Metadata):
                        w.add_metadata(rec.name, dict(rec.metadata))
                    elif isinstance(rec, Attachment):
                        w.add_attachment(
                            create_time=rec.create_time,
                            log_time=rec.log_time,
                            name=rec.name,
                            media_type=rec.media_type,
                            data=rec.data,
                        )

                readers = {
                    Opcode.SCHEMA: Schema.read,
                    Opcode.CHANNEL: Channel.read,
                    Opcode.METADATA: Metadata.read,
                    Opcode.ATTACHMENT: Attachment.read,
                }
                for opcode, body, pos in records:
                    if opcode is None:
                        info['stopped'] = body
                        break
                    if opcode in (Opcode.DATA_END, Opcode.FOOTER):
                        info['complete'] = True
                        info['stopped'] = 'end of the data section'
                        break
                    try:
                        stream = ReadDataStream(io.BytesIO(body))
                        if opcode == Opcode.CHUNK:
                            # the whole chunk or nothing: decompressed and its CRC checked first
                            got = breakup_chunk(Chunk.read(stream), validate_crc=True)
                        elif opcode == Opcode.MESSAGE:
                            got = [Message.read(stream, len(body))]
                        elif opcode in readers:
                            got = [readers[opcode](stream)]
                        else:  # indexes, statistics, unknown records: not needed
                            got = []
                    except Exception as exc:  # noqa: BLE001 (damaged bytes: any parse error ends it)
                        info['stopped'] = f'unreadable record (opcode 0x{opcode:02x}) at byte {pos}: {exc}'
                        break
                    for rec in got:
                        use(rec)
                    info['bytes_read'] = pos + 9 + len(body)
                w.finish()
            os.replace(tmp, dst)
        except OSError as exc:
            raise BagError(f'{dst}: cannot write: {exc.strerror or exc}') from None
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    info['messages'] = sum(info['counts'].values())
    return info
