#!/usr/bin/env python3
"""model_server.py: a scripted stand-in for a language-model API, for tests.

    python3 tests/server/model_server.py [--port N] [--idle SECONDS]

Listens on 127.0.0.1 only (an ephemeral port unless --port is given) and
prints two lines on stdout, then nothing else:

    PORT 12345
    PID 6789

Model endpoints (both wire formats):
    POST /v1/chat/completions   OpenAI-compatible chat completions
    POST /v1/messages           Anthropic messages API

Each model request consumes the next scripted action; with none left it gets
the default reply (a short text with a fixed kernel in a ```cuda block).
Actions (JSON objects; any may also carry "delay": seconds, applied first):
    {"reply": "text"}                   200 with that text; optional
                                        "reasoning_tokens": n (OpenAI usage),
                                        "thinking": "..." (Anthropic block),
                                        "stop": "length"|"max_tokens"|...
    {"status": 429, "retry_after": s}   429 with Retry-After: s (if given)
    {"status": 500}                     any status >= 400, with an error body
                                        in the endpoint's format
    {"drop": true}                      read the request, close without replying
    {"malformed": true}                 200 with a body that is not JSON
    {"truncated": true}                 Content-Length larger than the body,
                                        then close
    {"status": 401, "echo_auth": true}  an error whose message quotes the
                                        request's key header (a careless or
                                        hostile server)
    {"reply_auth": true}                200 with a reply that quotes the key
    {"usage_raw": "{...}"}              200 with this JSON text as its usage
                                        object, as is (NaN, 1e20, 12.5, "7")
    {"pad": n}                          200 with a reply padded to n bytes
    {"tool_calls": [{"name": "compile", "arguments": {...}}, ...]}
                                        200 with these tool calls in the
                                        endpoint's format (OpenAI tool_calls
                                        with the arguments as JSON text,
                                        Anthropic tool_use blocks); "reply"
                                        is the text beside them (default none);
                                        "arguments_text" instead of
                                        "arguments" sends that text as is

Control endpoints:
    POST /_script     a JSON list of actions (or one action), appended
    POST /_reset      empties the script and the log
    GET  /_log        every model request received: method, path, headers
                      (values of Authorization, Proxy-Authorization,
                      x-api-key and api-key replaced by "<redacted>"),
                      "secrets": {header name: sha256 hex of the key (the
                      Authorization value without "Bearer ")}, the body, and
                      the action applied. Keys are kept only as hashes.
    POST /_shutdown   stops the server

It exits by itself after --idle seconds without a request (default 120) or
when its parent process goes away, so a failed test never leaves it running.
Python 3 standard library only.
"""

import argparse
import hashlib
import json
import os
import socket
import sys
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KERNEL = """extern "C" __global__ void scale(float *y, const float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i];
}"""

DEFAULT_REPLY = "Here is the kernel.\n\n```cuda\n" + KERNEL + "\n```\n"

SECRET_HEADERS = ("authorization", "proxy-authorization", "x-api-key", "api-key")

MODEL_PATHS = ("/v1/chat/completions", "/v1/messages")


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.script = deque()
        self.log = []
        self.last_activity = time.monotonic()
        self.counter = 0

    def touch(self):
        with self.lock:
            self.last_activity = time.monotonic()


STATE = State()


def key_hash(name, value):
    if name == "authorization" and value.lower().startswith("bearer "):
        value = value[7:]
    return hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()


def tokens_of(text):
    return max(1, len(text) // 4)


def openai_reply(req, action, n):
    calls = action.get("tool_calls")
    text = action.get("reply", None if calls else DEFAULT_REPLY)
    prompt = tokens_of(json.dumps(req.get("messages", "")))
    completion = tokens_of(text or "")
    reasoning = int(action.get("reasoning_tokens", 0))
    message = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [{
            "id": "call_%d_%d" % (n, i), "type": "function",
            "function": {"name": c["name"],
                         "arguments": c.get("arguments_text", json.dumps(c.get("arguments", {})))},
        } for i, c in enumerate(calls)]
        completion += tokens_of(json.dumps(calls))
    return {
        "id": "chatcmpl-test-%d" % n,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": req.get("model", "test-model"),
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": action.get("stop", "tool_calls" if calls else "stop"),
        }],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion + reasoning,
            "total_tokens": prompt + completion + reasoning,
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        },
    }


def anthropic_reply(req, action, n):
    calls = action.get("tool_calls")
    text = action.get("reply", None if calls else DEFAULT_REPLY)
    content = []
    if "thinking" in action:
        content.append({"type": "thinking", "thinking": action["thinking"], "signature": "test"})
    if text is not None:
        content.append({"type": "text", "text": text})
    for i, c in enumerate(calls or []):
        content.append({"type": "tool_use", "id": "toolu_%d_%d" % (n, i), "name": c["name"],
                        "input": c.get("arguments", {})})
    return {
        "id": "msg_test_%d" % n,
        "type": "message",
        "role": "assistant",
        "model": req.get("model", "test-model"),
        "content": content,
        "stop_reason": action.get("stop", "tool_use" if calls else "end_turn"),
        "stop_sequence": None,
        "usage": {
            "input_tokens": tokens_of(json.dumps(req.get("messages", ""))),
            "output_tokens": tokens_of(text or "") + tokens_of(action.get("thinking", ""))
            + (tokens_of(json.dumps(calls)) if calls else 0),
        },
    }


def key_of(headers):
    for name, value in headers.items():
        if name.lower() in SECRET_HEADERS:
            return value
    return ""


def error_body(path, status):
    kinds = {429: ("rate_limit_exceeded", "rate_limit_error", "Rate limit reached"),
             500: ("server_error", "api_error", "Internal server error"),
             529: ("server_error", "overloaded_error", "Overloaded")}
    oa, an, msg = kinds.get(status, ("invalid_request_error", "invalid_request_error",
                                     "Error %d" % status))
    if path == "/v1/messages":
        return {"type": "error", "error": {"type": an, "message": msg}}
    return {"error": {"message": msg, "type": oa, "code": oa}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "klab-model-server/1"

    def log_message(self, fmt, *args):  # quiet: tests read only stdout's first lines
        pass

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def send(self, status, body, content_type="application/json", extra=None):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def hang_up(self):
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def do_GET(self):
        STATE.touch()
        if self.path == "/_log":
            with STATE.lock:
                log = list(STATE.log)
            self.send(200, log)
        elif self.path == "/_health":
            self.send(200, {"ok": True})
        else:
            self.send(404, {"error": {"message": "no such path"}})

    def do_POST(self):
        STATE.touch()
        body = self.read_body()
        if self.path == "/_script":
            try:
                actions = json.loads(body)
            except ValueError:
                self.send(400, {"error": {"message": "the script must be JSON"}})
                return
            if isinstance(actions, dict):
                actions = [actions]
            if not isinstance(actions, list) or not all(isinstance(a, dict) for a in actions):
                self.send(400, {"error": {"message": "the script must be a list of objects"}})
                return
            with STATE.lock:
                STATE.script.extend(actions)
                n = len(STATE.script)
            self.send(200, {"queued": n})
        elif self.path == "/_reset":
            with STATE.lock:
                STATE.script.clear()
                STATE.log.clear()
            self.send(200, {"ok": True})
        elif self.path == "/_shutdown":
            self.send(200, {"ok": True})
            self.close_connection = True
            threading.Thread(target=self.server.shutdown, daemon=True).start()
        elif self.path in MODEL_PATHS:
            self.model(body)
        else:
            self.send(404, {"error": {"message": "no such path"}})

    def model(self, raw):
        key = key_of(self.headers)
        headers, secrets = {}, {}
        for name, value in self.headers.items():
            low = name.lower()
            if low in SECRET_HEADERS:
                secrets[low] = key_hash(low, value)
                value = "<redacted>"
            headers[name] = value
        with STATE.lock:
            action = STATE.script.popleft() if STATE.script else {}
            STATE.counter += 1
            n = STATE.counter
            STATE.log.append({
                "method": self.command, "path": self.path, "headers": headers,
                "secrets": secrets, "body": raw.decode("utf-8", "replace"), "action": action,
                "time": time.time(),
            })
        try:
            req = json.loads(raw) if raw else {}
            if not isinstance(req, dict):
                req = {}
        except ValueError:
            req = {}

        if action.get("delay"):
            time.sleep(float(action["delay"]))
        if action.get("drop"):
            self.hang_up()
            return
        if action.get("malformed"):
            self.send(200, '{"choices": [{"message": {"content": "unterminated')
            return
        status = int(action.get("status", 200))
        if status >= 400:
            extra = {}
            if "retry_after" in action:
                extra["Retry-After"] = str(action["retry_after"])
            body = error_body(self.path, status)
            if action.get("echo_auth"):
                body["error"]["message"] = "invalid key: " + key
            self.send(status, body, extra=extra)
            return
        if action.get("reply_auth"):
            action = dict(action, reply="Your key is " + key + "\n\n```cuda\n" + KERNEL + "\n```\n")
        if action.get("pad"):
            text = action.get("reply", DEFAULT_REPLY)
            action = dict(action, reply=text + "x" * max(0, int(action["pad"]) - len(text)))
        if self.path == "/v1/messages":
            reply = anthropic_reply(req, action, n)
        else:
            reply = openai_reply(req, action, n)
        if "usage_raw" in action:
            reply["usage"] = "__USAGE__"
            data = json.dumps(reply).replace('"__USAGE__"', action["usage_raw"]).encode()
        else:
            data = json.dumps(reply).encode()
        if action.get("truncated"):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data) + 1000))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.hang_up()
            return
        self.send(200, data)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that hangs up (klab refusing an over-size reply) is part
        # of the script, not an error worth a traceback.
        if isinstance(sys.exc_info()[1], (ConnectionError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


def watchdog(server, idle, parent):
    while True:
        time.sleep(0.25)
        with STATE.lock:
            quiet = time.monotonic() - STATE.last_activity
        if quiet > idle or os.getppid() != parent:
            server.shutdown()
            return


def main():
    ap = argparse.ArgumentParser(description="scripted model API for tests")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--idle", type=float, default=120.0)
    args = ap.parse_args()
    server = Server(("127.0.0.1", args.port), Handler)
    parent = os.getppid()
    threading.Thread(target=watchdog, args=(server, args.idle, parent), daemon=True).start()
    sys.stdout.write("PORT %d\nPID %d\n" % (server.server_address[1], os.getpid()))
    sys.stdout.flush()
    try:
        server.serve_forever(poll_interval=0.1)
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
