"""Run mongoeco's wire server for the test suite, with three corrections.

mongoeco (pinned in requirements.txt) speaks the MongoDB wire protocol but, against the
official drivers, differs from MongoDB in three ways that this launcher corrects:

1. cursor ids go out as int64 (drivers reject a cursor id sent as int32);
2. int64 values for limit/skip/batchSize/getMore/maxTimeMS are accepted (drivers send
   them as int64; mongoeco only accepts plain ints there);
3. an error reply lacking a numeric ``code`` gets one, since drivers need it: what MongoDB
   answers where we know it — BadValue (2) for an ``$inc`` past the int64 range,
   WriteConflict (112, labelled TransientTransactionError) for a transaction write
   conflict — and UnknownError (8) otherwise.

Usage: python mongoeco_server.py --port PORT [--host 127.0.0.1]
Prints ``READY <host>:<port>`` on stdout once it accepts connections and stops on
SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from mongoeco.core.bson_scalars import BsonInt64
from mongoeco.wire import proxy

# Numeric command fields that drivers may send as int64.
INT64_COMMAND_FIELDS = ("limit", "skip", "batchSize", "getMore", "maxTimeMS", "ntoreturn")
# Code used for a server error reply that carries no code of its own
# (MongoDB's generic "InternalError" is 1; UnknownError is 8).
FALLBACK_ERROR_CODE = 8
FALLBACK_ERROR_CODE_NAME = "UnknownError"
# MongoDB answers an int64 overflow in $inc with BadValue (2); mongoeco sends no code.
INT64_OVERFLOW_MARKERS = ("exceeds BSON int64 range",)
BAD_VALUE_CODE = 2
# MongoDB answers a transaction write conflict with WriteConflict (112), labelled
# TransientTransactionError so that drivers retry the transaction.
WRITE_CONFLICT_MARKERS = ("Write conflict",)
WRITE_CONFLICT_CODE = 112


def _plain_int(value):
    return int(value.value) if isinstance(value, BsonInt64) else value


def normalize_request_body(body: dict) -> dict:
    """Turn int64 wrappers in the fields listed above into plain ints, in place."""
    for field in INT64_COMMAND_FIELDS:
        if field in body:
            body[field] = _plain_int(body[field])
    cursor = body.get("cursor")
    if isinstance(cursor, dict) and "batchSize" in cursor:
        cursor["batchSize"] = _plain_int(cursor["batchSize"])
    cursors = body.get("cursors")
    if isinstance(cursors, list):
        body["cursors"] = [_plain_int(item) for item in cursors]
    return body


def normalize_reply(document: dict) -> dict:
    """Make cursor ids int64 and give every error reply a numeric code, in place."""
    cursor = document.get("cursor")
    if isinstance(cursor, dict):
        cursor_id = cursor.get("id")
        if isinstance(cursor_id, int) and not isinstance(cursor_id, bool):
            cursor["id"] = BsonInt64(cursor_id)
    if document.get("ok") in (0, 0.0) and not isinstance(document.get("code"), int):
        message = str(document.get("errmsg", ""))
        if any(marker in message for marker in INT64_OVERFLOW_MARKERS):
            document["code"] = BAD_VALUE_CODE
            document["codeName"] = "BadValue"
        elif any(marker in message for marker in WRITE_CONFLICT_MARKERS):
            document["code"] = WRITE_CONFLICT_CODE
            document["codeName"] = "WriteConflict"
            labels = list(document.get("errorLabels") or [])
            if "TransientTransactionError" not in labels:
                labels.append("TransientTransactionError")
            document["errorLabels"] = labels
        else:
            document["code"] = FALLBACK_ERROR_CODE
            document.setdefault("codeName", FALLBACK_ERROR_CODE_NAME)
    return document


def install_corrections() -> None:
    original_decode_msg = proxy.decode_op_msg
    original_encode_msg = proxy.encode_op_msg_response
    original_encode_reply = proxy.encode_op_reply

    def decode_op_msg(header, payload):
        request = original_decode_msg(header, payload)
        if isinstance(request.body, dict):
            normalize_request_body(request.body)
        return request

    def encode_op_msg_response(document, **kwargs):
        return original_encode_msg(normalize_reply(document), **kwargs)

    def encode_op_reply(documents, **kwargs):
        return original_encode_reply([normalize_reply(d) for d in documents], **kwargs)

    proxy.decode_op_msg = decode_op_msg
    proxy.encode_op_msg_response = encode_op_msg_response
    proxy.encode_op_reply = encode_op_reply


async def serve(host: str, port: int) -> None:
    install_corrections()
    server = proxy.AsyncMongoEcoProxyServer(host=host, port=port)
    address = await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"READY {address.host}:{address.port}", flush=True)
    try:
        await stop.wait()
    finally:
        await server.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    asyncio.run(serve(args.host, args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
