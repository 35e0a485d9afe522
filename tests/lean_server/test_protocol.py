from __future__ import annotations

import asyncio

import pytest

from lean_server.protocol import GarbageOutput, encode_request, message_from_raw, read_response


def _reader(data: bytes, eof: bool = True) -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    if eof:
        reader.feed_eof()
    return reader


def test_encode_request_is_json_and_blank_line() -> None:
    wire = encode_request({"cmd": "theorem x : True := by\n  trivial", "env": 0})
    assert wire.endswith(b"\n\n")
    assert b"\\n" in wire and wire.count(b"\n") == 2  # newlines inside the code are escaped


async def test_reads_pretty_printed_and_compact_responses_back_to_back() -> None:
    data = (
        b'{"sorries":\n [{"proofState": 0}],\n "env": 0}\n\n'
        b'{"env": 1}\n\n'
        b'{"messages":\n [{"severity": "info", "data": "a"}],\n "env": 2}\n\n'
    )
    reader = _reader(data, eof=False)
    assert (await read_response(reader))["env"] == 0
    assert (await read_response(reader)) == {"env": 1}
    assert (await read_response(reader))["env"] == 2


async def test_garbage_first_line_fails_fast_without_waiting_for_a_blank_line() -> None:
    reader = _reader(b"uncaught exception: nope\n", eof=False)
    with pytest.raises(GarbageOutput) as info:
        await asyncio.wait_for(read_response(reader), 1)
    assert "uncaught" in info.value.text


async def test_eof_mid_response_is_incomplete_read() -> None:
    with pytest.raises(asyncio.IncompleteReadError):
        await read_response(_reader(b'{"env":'))


def test_message_from_lean_json_normalises_information() -> None:
    raw = {
        "caption": "",
        "data": "'bad' depends on axioms: [cheat]",
        "endPos": {"column": 6, "line": 9},
        "fileName": "t.lean",
        "kind": "[anonymous]",
        "pos": {"column": 0, "line": 9},
        "severity": "information",
    }
    msg = message_from_raw(raw)
    assert msg.severity == "info"
    assert msg.pos is not None and (msg.pos.line, msg.pos.column) == (9, 0)
    assert msg.end_pos is not None and msg.end_pos.column == 6


async def test_an_empty_answer_is_garbage_not_a_hang() -> None:
    with pytest.raises(GarbageOutput) as info:
        await asyncio.wait_for(read_response(_reader(b"\n", eof=False)), 1)
    assert info.value.text == "empty response"
