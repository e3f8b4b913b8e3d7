"""WebSocket helpers for tests: connect to an operation's socket, read until it closes."""

from __future__ import annotations

import json
import struct

import websocket


def connect(stack, op_id: str, **kwargs):
    url = stack.url.replace("http://", "ws://") + f"/ws/operations/{op_id}"
    return websocket.create_connection(url, timeout=20, **kwargs)


def read_all(ws) -> tuple[list[dict], int | None]:
    """Messages until the server closes; answers (messages, close code). The socket is shut
    once the close arrives: left open, websocket-client stalls the next connect (~2 s)."""
    messages = []
    while True:
        frame = ws.recv_frame()  # raw frames: no automatic close reply to a gone peer
        opcode, data = frame.opcode, frame.data
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            ws.shutdown()
            return messages, struct.unpack("!H", data[:2])[0] if len(data) >= 2 else None
        if opcode == websocket.ABNF.OPCODE_TEXT:
            messages.append(json.loads(data))
