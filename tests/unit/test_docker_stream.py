"""The docker backend's stream, both ends, without an engine: framing and ordering."""

from __future__ import annotations

import os
import socket
import threading

from intercode.sandbox.docker_stream import BACKLOG, DOCKER_HEAD, Stream
from intercode.sandbox.inbox import proto
from intercode.sandbox.inbox.relay import (
    FROM_CTL,
    FROM_OUTPUT,
    FROM_STATUS,
    HEAD,
    TO_ACTION,
    TO_CTL,
    Relay,
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
    assert read_all(stream.output_r) == b"hello world"
    assert read_all(stream.status_r) == b"seq 0 /\0"
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
    got = b""
    while sender.is_alive() or not got.endswith(b"done\0"):
        stream.receive()
        status = read_all(stream.status_r)
        if status:
            # the status comes only once all the output kept before it is in its pipe
            assert not stream._pending[FROM_OUTPUT]
            got += status
            break
        if stream.dropped:  # the host reads the output only once the flood was cut
            read_all(stream.output_r)
    sender.join()
    assert got == b"done\0"
    assert stream.dropped > 0  # the output nobody read was cut, not kept without bound
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
