"""The campaign's Redis proxy reads a client's stream command by command, whatever the TCP
chunks: a pipeline in one chunk, a command split anywhere, an inline command."""

from __future__ import annotations

from tests.faults.redisproxy import RespCommands


def _resp(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def test_commands_are_whole_whatever_the_chunks():
    multi, lpush = _resp(b"MULTI"), _resp(b"LPUSH", b"celery", b'{"a": "b\r\nc"}')
    stream = multi + lpush + b"PING\r\n"
    for cut in range(1, len(stream)):
        reader = RespCommands()
        found = reader.feed(stream[:cut]) + reader.feed(stream[cut:])
        assert [raw for raw, _ in found] == [multi, lpush, b"PING\r\n"], cut
        assert [args for _, args in found] == [[b"MULTI"],
                                               [b"LPUSH", b"celery", b'{"a": "b\r\nc"}'],
                                               [b"PING"]]
