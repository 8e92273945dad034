#!/usr/bin/env python3
"""The HTTP server runner's tests start on 127.0.0.1: one endpoint per behaviour a remote
source can have. Prints its port on the first line of stdout. Counts requests per path
(and conditional ones) at /_stats. Standard library only."""
import argparse
import email.utils
import http.client
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
COUNTS = {}
CONDITIONAL = {}
METHODS = {}       # "METHOD path" -> requests, for an upstream's writes
HEADERS = {}
IN_FLIGHT = {"now": 0, "max": 0}
OUTAGE = {"mode": "none"}   # /_outage/<none|503|hang|html>: how /img/ answers while the origin is "down"
ETAG = '"v1"'
LAST_MODIFIED = "Mon, 02 Nov 2026 10:00:00 GMT"
SERVED = {"name": ""}   # /_serve/<variant>: /img/<anything> serves that variant from now on, a new version


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    image = b""
    variants = {}
    upstream = None

    def log_message(self, *args):
        pass

    def count(self):
        with LOCK:
            COUNTS[self.path] = COUNTS.get(self.path, 0) + 1
            METHODS[self.command + " " + self.path] = METHODS.get(self.command + " " + self.path, 0) + 1
            if self.headers.get("If-None-Match") or self.headers.get("If-Modified-Since"):
                CONDITIONAL[self.path] = CONDITIONAL.get(self.path, 0) + 1
            HEADERS[self.path] = {k: v for k, v in self.headers.items()}
            return COUNTS[self.path]

    def send(self, status, body=b"", content_type="image/jpeg", headers=None, length=None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_image(self, name=""):
        etag, modified = ETAG, LAST_MODIFIED
        if not name and SERVED["name"]:    # the origin's content changed: other bytes, other validators
            name, etag, modified = SERVED["name"], '"%s"' % SERVED["name"], "Tue, 03 Nov 2026 10:00:00 GMT"
        body = self.variants.get(name, self.image)
        if self.headers.get("If-None-Match") == etag or self.headers.get("If-Modified-Since") == modified:
            self.send_response(304)
            self.send_header("ETag", etag)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send(200, body, headers={"ETag": etag, "Last-Modified": modified})

    def do_GET(self):
        path = self.path.split("?")[0]
        if self.upstream and not path.startswith("/_"):
            return self.forward()
        if path == "/_stats":
            with LOCK:
                body = json.dumps({"counts": COUNTS, "conditional": CONDITIONAL, "headers": HEADERS, "methods": METHODS,
                                   "maxInFlight": IN_FLIGHT["max"]}).encode()
            return self.send(200, body, "application/json")
        if path == "/_reset":
            with LOCK:
                COUNTS.clear(); CONDITIONAL.clear(); METHODS.clear(); HEADERS.clear(); IN_FLIGHT.update(now=0, max=0)
            return self.send(200, b"{}", "application/json")
        if path.startswith("/_outage/"):
            OUTAGE["mode"] = path.split("/")[2]
            return self.send(200, b"{}", "application/json")
        if path.startswith("/_serve/"):
            SERVED["name"] = path.split("/")[2]
            return self.send(200, b"{}", "application/json")
        n = self.count()
        parts = path.strip("/").split("/")
        kind = parts[0]
        if kind == "img" and OUTAGE["mode"] == "503":
            return self.send(503, b"down for maintenance", "text/html")
        if kind == "img" and OUTAGE["mode"] == "html":
            return self.send(200, b"<html>down for maintenance</html>", "text/html")
        if kind == "img" and OUTAGE["mode"] == "hang":
            time.sleep(30)
            return
        if kind == "img":                      # /img/<anything>.jpg: the image, with validators
            return self.send_image(parts[1] if len(parts) > 2 else "")
        if kind == "busy":                     # /busy/<anything>: the image after 0.3 s; counts requests in flight
            with LOCK:
                IN_FLIGHT["now"] += 1
                IN_FLIGHT["max"] = max(IN_FLIGHT["max"], IN_FLIGHT["now"])
            time.sleep(0.3)
            with LOCK:
                IN_FLIGHT["now"] -= 1
            return self.send(200, self.image)
        if kind == "bytes":                    # /bytes/<n>: n bytes of body
            return self.send(200, b"x" * int(parts[1]), "application/octet-stream")
        if kind == "errorbytes":               # /errorbytes/<n>: a 500 with n bytes of body
            return self.send(500, b"e" * int(parts[1]), "text/plain")
        if kind == "headers":                  # /headers/<n>: a header line of n bytes, CRLF included
            return self.send(200, b"ok", "text/plain", {"X-Pad": "p" * (int(parts[1]) - len("X-Pad: \r\n"))})
        if kind == "nocache":                  # /nocache/<anything>: the image, no validators
            return self.send(200, self.image)
        if kind == "status":                   # /status/<code>/<anything>
            return self.send(int(parts[1]), b"error page", "text/html")
        if kind == "flaky":                    # /flaky/<k>/<anything>: 503 for the first k requests
            return self.send(503, b"busy", "text/html") if n <= int(parts[1]) else self.send(200, self.image)
        if kind == "ratelimit":                # /ratelimit/<seconds>/<anything>: 429 once, with Retry-After
            if n == 1:
                return self.send(429, b"slow down", "text/html", {"Retry-After": parts[1]})
            return self.send(200, self.image)
        if kind == "ratelimitdate":            # /ratelimitdate/<seconds>/<anything>: Retry-After as an HTTP date
            if n == 1:
                when = email.utils.formatdate(time.time() + int(parts[1]), usegmt=True)
                return self.send(429, b"slow down", "text/html", {"Retry-After": when})
            return self.send(200, self.image)
        if kind == "slow":                     # trickles 100 bytes a second
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Content-Length", str(len(self.image)))
            self.end_headers()
            try:
                for start in range(0, len(self.image), 100):
                    self.wfile.write(self.image[start:start + 100]); self.wfile.flush(); time.sleep(1)
            except OSError:
                pass
            return
        if kind == "hang":                     # headers, then nothing
            self.send_response(200)
            self.send_header("Content-Length", str(len(self.image)))
            self.end_headers(); self.wfile.flush()
            time.sleep(60)
            return
        if kind == "endless":                  # a body that never ends
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                chunk = self.image[:65536]
                for _ in range(100000):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except OSError:
                pass
            return
        if kind == "big":                      # declares more than any sane limit
            return self.send_big()
        if kind == "short":                    # fewer bytes than Content-Length, then close
            self.send_response(200)
            self.send_header("Content-Length", str(len(self.image)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(self.image[: len(self.image) // 2]); self.wfile.flush()
            self.close_connection = True
            return
        if kind == "redirect":                 # /redirect/<n>/<name>: n hops, then the image
            hops = int(parts[1])
            target = "/img/" + parts[2] if hops <= 1 else "/redirect/%d/%s" % (hops - 1, parts[2])
            return self.send(302, b"", "text/html", {"Location": target})
        if kind == "loop":
            return self.send(302, b"", "text/html", {"Location": path})
        if kind == "ftp":
            return self.send(302, b"", "text/html", {"Location": "ftp://127.0.0.1/x.jpg"})
        if kind == "html":                     # an error page served as 200
            return self.send(200, b"<!DOCTYPE html><html><body>Not here</body></html>", "text/html")
        if kind == "wrongtype":                # an image labelled text/plain
            return self.send(200, self.image, "text/plain")
        if kind == "corrupt":                  # starts like a JPEG, decodes as nothing
            return self.send(200, self.image[:200] + b"\0" * 5000)
        return self.send(404, b"no such endpoint", "text/html")

    do_PUT = do_DELETE = do_HEAD = do_POST = lambda self: self.forward()

    def forward(self):
        """--upstream: counted, then sent on as it came (Host too, so a signature still holds), or
        an object request (no query: a listing has one) answered 503 SlowDown while /_outage/503 is on."""
        self.count()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if OUTAGE["mode"] == "503" and "?" not in self.path:
            return self.send(503, b"<Error><Code>SlowDown</Code><Message>Reduce your request rate.</Message></Error>",
                             "application/xml")
        connection = http.client.HTTPConnection(self.upstream, timeout=60)
        try:
            connection.request(self.command, self.path, body=body, headers=dict(self.headers.items()))
            answer = connection.getresponse()
            data = answer.read()
        except OSError as error:
            return self.send(502, ("upstream: %s" % error).encode(), "text/plain")
        self.send_response(answer.status)
        for key, value in answer.getheaders():
            if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        connection.close()

    def send_big(self):
        self.send_response(200)
        self.send_header("Content-Type", "image/jpeg")
        self.send_header("Content-Length", str(10 ** 10))
        self.end_headers()
        try:
            self.wfile.write(self.image)
        except OSError:
            pass
        self.close_connection = True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--image", required=True)
    parser.add_argument("--variant", action="append", default=[], help="NAME=PATH served at /img/NAME/...")
    parser.add_argument("--port-file", help="also write the port to this file (atomically)")
    parser.add_argument("--port", type=int, default=0, help="listen here (0: any free port)")
    parser.add_argument("--upstream", help="HOST:PORT: every path but /_... is forwarded there, counted")
    arguments = parser.parse_args()
    Handler.upstream = arguments.upstream
    with open(arguments.image, "rb") as handle:
        Handler.image = handle.read()
    for variant in arguments.variant:
        name, path = variant.split("=", 1)
        with open(path, "rb") as handle:
            Handler.variants[name] = handle.read()
    serve(Handler, arguments.port, arguments.port_file)


def serve(handler, port, port_file):
    """Listens on 127.0.0.1:port (0: any free one), says where (on stdout, and in port_file, written
    whole then renamed), and serves until killed: what every server here does."""
    ThreadingHTTPServer.allow_reuse_address = True
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    port = server.server_address[1]
    if port_file:
        with open(port_file + ".tmp", "w") as handle:
            handle.write(str(port))
        os.rename(port_file + ".tmp", port_file)
    print(port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
