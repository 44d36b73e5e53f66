"""The docker backend's stream, both ends, without an engine: framing and ordering."""

from __future__ import annotations

import os
import select
import socket
import threading
import time

from intercode.sandbox.docker.stream import BACKLOG, DOCKER_HEAD, STATUS_POINTS, Stream
from intercode.sandbox.inbox import proto
from intercode.sandbox.inbox.relay import (
    FROM_CTL,
    FROM_OUTPUT,
    FROM_STATUS,
    HEAD,
    THAW,
    TO_ACTION,
    TO_ARM,
    TO_CTL,
    Relay,
    StatusWatch,
)


def docker_frame(kind: int, payload: bytes) -> bytes:
    return DOCKER_HEAD.pack(kind, len(payload)) + payload


def mux(channel: int, payload: bytes) -> bytes:
    return docker_frame(1, HEAD.pack(channel, len(payload)) + payload)


def read_all(fd: int) -> bytes:
    out = b""
    while True:
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            return out
        if not chunk:
            return out
        out += chunk


def test_frames_split_anywhere_reach_their_pipes_in_order():
    host, engine = socket.socketpair()
    stream = Stream(host)
    data = (mux(FROM_OUTPUT, b"hello ") + docker_frame(2, b"an error\n")
            + mux(FROM_CTL, proto.encode({"ev": "note", "text": "x"}))
            + mux(FROM_OUTPUT, b"world") + mux(FROM_STATUS, b"seq 0 /\0"))
    for i in range(len(data)):  # one byte at a time: every split point
        engine.send(data[i:i + 1])
        stream.receive()
    assert stream.take_status() == b""  # not before the output before it was read
    assert stream.take_output() == b"hello world"
    assert stream.take_status() == b"seq 0 /\0"
    assert [m for m, _ in stream.ctl_frames] == [{"ev": "note", "text": "x"}]
    assert bytes(stream.stderr) == b"an error\n"
    engine.close()
    stream.receive()
    assert stream.ended
    host.close()


def test_a_status_waits_for_the_output_before_it_and_a_flood_is_bounded():
    host, engine = socket.socketpair()
    stream = Stream(host)
    big = b"x" * (BACKLOG[FROM_OUTPUT] + (4 << 20))
    sender = threading.Thread(target=lambda: engine.sendall(
        mux(FROM_OUTPUT, big) + mux(FROM_STATUS, b"done\0")))
    sender.start()
    taken = 0
    while sender.is_alive() or not stream.status:
        stream.receive()
        if stream.status:
            break
        if stream.dropped:  # the host reads the output only once the flood was cut
            taken += len(stream.take_output(1 << 20))
    sender.join()
    # the status is readable only once all the output kept before it was read
    assert stream.take_status() == b"done\0"
    assert taken + stream.dropped == len(big)
    assert stream.dropped > 0  # the output nobody read was cut, not kept without bound
    engine.sendall(mux(FROM_OUTPUT, b"after") + mux(FROM_STATUS, b"next\0"))
    while not stream.output:
        stream.receive()
    assert stream.take_status() == b""  # the next status waits for "after" to be read
    assert stream.take_output() == b"after"
    assert stream.take_status() == b"next\0"
    engine.close()
    host.close()


def test_relay_forwards_both_ways_and_ends_the_channel_at_eof():
    box_in_r, host_w = os.pipe()
    host_r, box_out_w = os.pipe()
    ctl_r, ctl_w = os.pipe()
    act_r, act_w = os.pipe()
    out_r, out_w = os.pipe()
    st_r, st_w = os.pipe()
    cout_r, _cout_w = os.pipe()
    relay = Relay(box_in_r, box_out_w, {TO_CTL: ctl_w, TO_ACTION: act_w},
                  {cout_r: FROM_CTL, out_r: FROM_OUTPUT, st_r: FROM_STATUS})
    thread = threading.Thread(target=relay.run, daemon=True)
    thread.start()
    os.write(host_w, HEAD.pack(TO_ACTION, 3) + b"ls\n" + HEAD.pack(TO_CTL, 2) + b"{}")
    assert os.read(act_r, 100) == b"ls\n"
    assert os.read(ctl_r, 100) == b"{}"
    os.write(out_w, b"file\n")
    os.write(st_w, b"s 0 /\0")
    want = HEAD.pack(FROM_OUTPUT, 5) + b"file\n" + HEAD.pack(FROM_STATUS, 6) + b"s 0 /\0"
    got = b""
    while len(got) < len(want):
        got += os.read(host_r, 100)
    assert got == want  # the output written before the status comes first
    os.close(host_w)
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert os.read(ctl_r, 100) == b""  # the supervisor sees the end of its channel


def test_the_status_watch_finds_the_armed_actions_record_split_anywhere():
    records = (b"old 0 /\0" + b"tok reply\n{\"x\": 1}\0" + b"tok 0 /work\0")
    end = len(records)
    for i in range(1, end):
        watch = StatusWatch()
        watch.arm(b"tok")
        found = [watch.ended(records[:i]), watch.ended(records[i:])]
        assert found == [i >= end, i < end]  # only its own status ends it, not its reply
    watch = StatusWatch()
    watch.arm(b"tok")
    assert not watch.ended(b"tokx 0 /\0xtok 0 /\0 tok 0 /\0")  # the token whole, at a start
    assert watch.ended(b"tok 0 /\0")
    assert not watch.ended(b"tok 0 /\0")  # disarmed once found


def _frames(data: bytes) -> list[tuple[int, bytes]]:
    out, buf = [], bytearray(data)
    while buf:
        channel, size = HEAD.unpack_from(buf)
        out.append((channel, bytes(buf[HEAD.size:HEAD.size + size])))
        del buf[:HEAD.size + size]
    return out


class _RelayRig:
    """A relay driven by hand (no thread): each step is called when the test says."""

    def __init__(self) -> None:
        self.box_in_r, self.host_w = os.pipe()
        self.host_r, box_out_w = os.pipe()
        self.ctl_r, ctl_w = os.pipe()
        self.act_r, act_w = os.pipe()
        out_r, _out_w = os.pipe()
        self.st_r, self.st_w = os.pipe()
        cout_r, _cout_w = os.pipe()
        for fd in (self.box_in_r, self.ctl_r, self.act_r, self.st_r, self.host_r):
            os.set_blocking(fd, False)
        self.relay = Relay(self.box_in_r, box_out_w, {TO_CTL: ctl_w, TO_ACTION: act_w},
                           {cout_r: FROM_CTL, out_r: FROM_OUTPUT, self.st_r: FROM_STATUS})

    def host_sends(self, *frames: tuple[int, bytes]) -> None:
        os.write(self.host_w, b"".join(HEAD.pack(c, len(p)) + p for c, p in frames))
        self.relay._take_stream()

    def shell_writes_status(self, data: bytes) -> None:
        os.write(self.st_w, data)
        self.relay._forward(self.st_r, 1 << 62)
        self.relay._send_out()

    def supervisor_reads(self) -> list[dict]:
        return [m for m, _ in proto.FrameBuffer().feed(read_all(self.ctl_r))]


def test_the_relay_asks_for_the_freeze_after_the_armed_actions_status():
    rig = _RelayRig()
    rig.host_sends((TO_ARM, b"7 tok"), (TO_ACTION, b"tok 2\nhi\0"))
    assert read_all(rig.act_r) == b"tok 2\nhi\0"
    rig.shell_writes_status(b"tok reply\nr\0")
    assert rig.relay.held is None  # a reply record does not end the action
    rig.shell_writes_status(b"tok 0 /\0")
    # the status goes to the host at once; the freeze is held back for its delay
    assert _frames(read_all(rig.host_r)) == [(FROM_STATUS, b"tok reply\nr\0"),
                                             (FROM_STATUS, b"tok 0 /\0")]
    assert rig.relay.held is not None and rig.relay.held[0] == 7
    assert rig.supervisor_reads() == []
    # any other request first releases it, in the order the host would have sent them
    rig.host_sends((TO_CTL, proto.encode({"op": "hashes"})))
    got = rig.supervisor_reads()
    assert [m["op"] for m in got] == ["freeze", "hashes"] and got[0]["n"] == 7
    assert 0 <= got[0]["delay"] <= 0.005
    # the thaw after a freeze the supervisor got is passed on
    rig.host_sends((TO_CTL, THAW))
    assert rig.supervisor_reads() == [{"op": "thaw"}]


def test_a_held_freeze_and_the_thaw_after_it_cancel_out():
    rig = _RelayRig()
    rig.host_sends((TO_ARM, b"1 aa"), (TO_ACTION, b"aa 1\nx\0"))
    rig.shell_writes_status(b"aa 0 /\0")
    assert rig.relay.held is not None
    # the next action comes before the freeze is due: it and its thaw cancel out
    rig.host_sends((TO_ARM, b"2 bb"), (TO_ACTION, b"bb 1\ny\0"), (TO_CTL, THAW))
    assert rig.relay.held is None
    assert rig.supervisor_reads() == []  # the supervisor was not even woken
    assert read_all(rig.act_r) == b"aa 1\nx\0bb 1\ny\0"
    # an action without an arming frame disarms: its status asks for nothing
    rig.host_sends((TO_ACTION, b"cc 1\nz\0"))
    rig.shell_writes_status(b"bb 0 /\0cc 0 /\0")
    assert rig.relay.held is None
    # a freeze whose delay ran out goes to the supervisor with none left
    rig.host_sends((TO_ARM, b"3 dd"), (TO_ACTION, b"dd 1\nw\0"))
    rig.shell_writes_status(b"dd 0 /\0")
    assert rig.relay.held is not None and rig.relay.held[0] == 3
    rig.relay.held = (3, time.monotonic() - 1.0)
    rig.relay._release_freeze()
    assert rig.supervisor_reads() == [{"op": "freeze", "n": 3, "delay": 0.0}]
    rig.host_sends((TO_CTL, THAW))
    assert rig.supervisor_reads() == [{"op": "thaw"}]


def test_the_relays_loop_releases_a_held_freeze_when_it_is_due():
    rig = _RelayRig()
    os.set_blocking(rig.ctl_r, True)
    thread = threading.Thread(target=rig.relay.run, daemon=True)
    rig.host_sends((TO_ARM, b"5 ee"), (TO_ACTION, b"ee 1\nv\0"))
    thread.start()
    os.write(rig.st_w, b"ee 0 /\0")
    msg, _ = proto.read_frame(rig.ctl_r)  # nothing else comes: the loop's own timeout
    assert msg["op"] == "freeze" and msg["n"] == 5
    os.close(rig.host_w)
    thread.join(timeout=10)
    assert not thread.is_alive()


def test_alternating_output_and_status_records_keep_few_waiting_points():
    """Status records wait for the output before them; a flood of alternating one-byte
    output and status frames (only the agent's processes write such) once kept one
    entry per pair on the host, without bound but the bytes."""
    host, engine = socket.socketpair()
    stream = Stream(host)
    pairs = 3 * STATUS_POINTS
    data = b"".join(mux(FROM_OUTPUT, b"o") + mux(FROM_STATUS, b"s") for _ in range(pairs))

    def send() -> None:  # (more than the socket buffers: sent while the stream reads)
        engine.sendall(data)
        engine.shutdown(socket.SHUT_WR)

    threading.Thread(target=send, daemon=True).start()
    while not stream.ended:
        select.select([host], [], [], 5)
        stream.receive()
    assert len(stream._status_waiting) <= STATUS_POINTS
    assert stream.take_output() == b"o" * pairs
    assert stream.take_status() == b"s" * pairs  # nothing lost, once the output was read
    engine.close()


# -- the host's socket (docker_link): the same frames without the engine's framing ----------


def _linked_stream(first_on_attach: bytes = b"") -> tuple[Stream, socket.socket, socket.socket]:
    """A stream whose pid 1 connected to the host's socket (returns the stream, the
    container's end of the attach stream and of the socket)."""
    from intercode.sandbox.docker import link as docker_link

    host, engine = socket.socketpair()
    listener = docker_link.Listener(required=True)
    stream = Stream(host, link=listener)
    if first_on_attach:
        engine.sendall(first_on_attach)
    box = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    box.connect(listener.path)
    box.sendall(listener.token)
    stream.await_link(time.monotonic() + 30)
    assert stream.link is None and not os.path.exists(listener.dir)
    return stream, engine, box


def test_a_linked_stream_reads_the_relays_frames_as_they_are():
    stream, engine, box = _linked_stream(docker_frame(2, b"early stderr\n"))
    assert stream.linked and stream.fd != stream.attach.fileno()
    frames = (HEAD.pack(FROM_OUTPUT, 5) + b"hello" + HEAD.pack(FROM_STATUS, 8) + b"seq 0 /\0"
              + HEAD.pack(FROM_CTL, len(proto.encode({"ev": "x"}))) + proto.encode({"ev": "x"}))
    for i in range(len(frames)):  # every split point
        box.send(frames[i:i + 1])
        stream.receive()
    assert stream.take_output() == b"hello" and stream.take_status() == b"seq 0 /\0"
    assert [m for m, _ in stream.ctl_frames] == [{"ev": "x"}]
    # the attach stream: its stderr kept for error messages, any stdout ignored
    engine.sendall(docker_frame(1, b"not a frame") + docker_frame(2, b"late\n"))
    stream.drain_stderr()
    assert bytes(stream.stderr) == b"early stderr\nlate\n" and not stream.take_output()
    stream.send(TO_ACTION, b"act")
    assert box.recv(100) == HEAD.pack(TO_ACTION, 3) + b"act"
    box.close()
    stream.receive()
    assert stream.ended


def test_output_on_the_attach_stream_first_means_pid_1_stayed_there():
    from intercode.sandbox.docker import link as docker_link

    host, engine = socket.socketpair()
    listener = docker_link.Listener(required=False)
    stream = Stream(host, link=listener)
    engine.sendall(mux(FROM_OUTPUT, b"via attach"))
    stream.await_link(time.monotonic() + 30)
    assert not stream.linked and stream.link is None and not os.path.exists(listener.dir)
    assert stream.take_output() == b"via attach"


def test_the_relay_on_one_socket_ends_with_its_lifeline():
    """Pid 1's relay on the host's socket (both ends one descriptor, blocking): frames go
    both ways; the end of stdin (the lifeline) ends it, the supervisor's pipes closed."""
    host, box = socket.socketpair()
    life_r, life_w = os.pipe()
    _ctl_r, ctl_w = os.pipe()
    act_r, act_w = os.pipe()
    out_r, out_w = os.pipe()
    st_r, _st_w = os.pipe()
    cout_r, _cout_w = os.pipe()
    relay = Relay(box.fileno(), box.fileno(), {TO_CTL: ctl_w, TO_ACTION: act_w},
                  {cout_r: FROM_CTL, out_r: FROM_OUTPUT, st_r: FROM_STATUS}, life_r)
    thread = threading.Thread(target=relay.run, daemon=True)
    thread.start()
    host.sendall(HEAD.pack(TO_ACTION, 2) + b"hi")
    assert os.read(act_r, 10) == b"hi"
    os.write(out_w, b"output")
    host.settimeout(30)
    got = b""
    while len(got) < HEAD.size + 6:
        got += host.recv(100)
    assert got == HEAD.pack(FROM_OUTPUT, 6) + b"output"
    assert os.get_blocking(box.fileno())  # its writes block; it is read only when ready
    os.close(life_w)
    thread.join(30)
    assert not thread.is_alive()
    assert os.read(act_r, 10) == b""  # closed: the supervisor sees its end
