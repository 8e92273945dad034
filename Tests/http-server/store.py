#!/usr/bin/env python3
"""A small S3-compatible store of the tests' own, on 127.0.0.1, for what SeaweedFS and moto cannot
do: a ListObjectsV2 that lies as the test asks, and a log of every raw request line. It checks
SigV4 over the path exactly as it arrived (nothing normalized), so a request that rewrote a key on
the way is refused as AWS would refuse it. Objects live in memory, keyed by any bytes.

Control (unsigned, GET): /_lie/<mode>/<times> makes the next <times> listing answers lie (-1: all),
or with mode "outage" every PUT answer 503 SlowDown, "drop-put" the next <times> PUTs be stored and then
the connection dropped unanswered, "skewed" every request be refused as RequestTimeTooSkewed (the Date 20
minutes ahead), "fail-multipart" every part of a multipart upload and its abort answer 500; PUTs honour
If-None-Match: * and If-Match;
/_requests gives the raw request lines as JSON; /_reset clears them. Prints its port on stdout.
Standard library only."""
import argparse
import base64
import email.utils
import hashlib
import hmac
import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler
from xml.sax.saxutils import escape

from server import serve

LOCK = threading.Lock()
OBJECTS = {}          # (bucket, key) -> bytes
REQUESTS = []         # (raw request line, when it came)
UPLOADS = {}          # multipart upload id -> {part number: bytes}
LIE = {"mode": "none", "times": 0}
MODIFIED = "2026-11-01T10:00:00.000Z"
LISTING_LIES = {"truncated-no-token", "repeat-token", "garbage", "outside-prefix", "out-of-order", "oversize", "raw-keys"}


def sigv4_quote(text, safe):
    return urllib.parse.quote(text, safe=safe)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    access_key = None
    secret = None

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", content_type="application/xml", headers=None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, status, code, message=""):
        body = "<Error><Code>%s</Code><Message>%s</Message></Error>" % (code, escape(message))
        self.reply(status, body.encode())

    def signature_matches(self, raw_path, raw_query, payload_hash):
        authorization = self.headers.get("Authorization", "")
        if not authorization.startswith("AWS4-HMAC-SHA256 "):
            return False
        fields = dict(part.strip().split("=", 1) for part in authorization[len("AWS4-HMAC-SHA256 "):].split(","))
        access, day, region, service, _ = fields["Credential"].split("/")
        if access != self.access_key:
            return False
        signed = fields["SignedHeaders"].split(";")
        pairs = [pair.split("=", 1) + [""] for pair in raw_query.split("&") if pair] if raw_query else []
        query = "&".join(sorted("%s=%s" % (sigv4_quote(urllib.parse.unquote(name), "-_.~"), sigv4_quote(urllib.parse.unquote(value), "-_.~"))
                                for name, value, *_ in pairs))
        headers = "".join("%s:%s\n" % (name, " ".join(self.headers.get(name, "").split())) for name in signed)
        canonical = "\n".join([self.command, raw_path, query, headers, ";".join(signed), payload_hash])
        date = self.headers.get("x-amz-date", "")
        scope = "/".join([day, region, service, "aws4_request"])
        to_sign = "\n".join(["AWS4-HMAC-SHA256", date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        key = ("AWS4" + self.secret).encode()
        for part in [day, region, service, "aws4_request"]:
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        return hmac.compare_digest(hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest(), fields["Signature"])

    def handle_request(self):
        raw_path, _, raw_query = self.path.partition("?")
        if raw_path.startswith("/_"):
            return self.control(raw_path)
        with LOCK:
            REQUESTS.append((self.requestline, time.time()))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        payload_hash = self.headers.get("x-amz-content-sha256", "")
        if self.secret and not self.signature_matches(raw_path, raw_query, payload_hash):
            return self.error(403, "SignatureDoesNotMatch", "the signature does not match the request as received")
        bucket, _, raw_key = raw_path[1:].partition("/")
        key = urllib.parse.unquote(raw_key)
        query = dict(urllib.parse.parse_qsl(raw_query, keep_blank_values=True))
        if self.command == "GET" and not raw_key and query.get("list-type") == "2":
            return self.listing(bucket, query)
        if self.command == "PUT" and LIE["mode"] in ("outage", "outage-retry-after"):
            self.send_response(503)
            if LIE["mode"] == "outage-retry-after":
                self.send_header("Retry-After", "1")
            body = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            return self.wfile.write(body)
        if LIE["mode"] == "skewed":
            self.send_response(403)
            self.send_header("Date", email.utils.formatdate(time.time() + 1200, usegmt=True))
            body = b"<Error><Code>RequestTimeTooSkewed</Code><Message>The difference between the request time and the current time is too large.</Message></Error>"
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            return self.wfile.write(body)
        if "uploads" in query or "uploadId" in query:
            return self.multipart(bucket, key, query, body)
        if self.command == "PUT" and not self.condition_holds(OBJECTS.get((bucket, key))):
            return self.error(412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
        with LOCK:
            stored = OBJECTS.get((bucket, key))
            if self.command == "PUT":
                OBJECTS[(bucket, key)] = body
            elif self.command == "DELETE":
                OBJECTS.pop((bucket, key), None)
        if self.command == "PUT" and LIE["mode"] == "drop-put" and LIE["times"] != 0:
            # Stored, then the connection dropped before any answer: the writer cannot tell it landed.
            LIE["times"] -= 1
            self.close_connection = True
            return
        if self.command == "PUT":
            return self.reply(200, headers={"ETag": '"%s"' % hashlib.md5(body).hexdigest()})
        if self.command == "DELETE":
            return self.reply(204)
        if stored is None:
            return self.error(404, "NoSuchKey", key)
        self.reply(200, stored, "application/octet-stream", {"ETag": '"%s"' % hashlib.md5(stored).hexdigest()})

    do_GET = do_PUT = do_DELETE = do_HEAD = do_POST = handle_request

    def multipart(self, bucket, key, query, body):
        """S3's multipart upload, enough for one writer; with mode "fail-multipart" every part and the abort fail (500)."""
        if LIE["mode"] == "fail-multipart" and ("partNumber" in query or self.command == "DELETE"):
            return self.error(500, "InternalError", "We encountered an internal error. Please try again.")
        upload = query.get("uploadId")
        with LOCK:
            if "uploads" in query:
                upload = "upload-%d" % len(UPLOADS)
                UPLOADS[upload] = {}
                return self.reply(200, ("<InitiateMultipartUploadResult><UploadId>%s</UploadId></InitiateMultipartUploadResult>" % upload).encode())
            if self.command == "PUT":
                UPLOADS[upload][int(query["partNumber"])] = body
                return self.reply(200, headers={"ETag": '"%s"' % hashlib.md5(body).hexdigest()})
            parts = UPLOADS.pop(upload, {})
            if self.command == "POST":
                OBJECTS[(bucket, key)] = b"".join(parts[number] for number in sorted(parts))
                return self.reply(200, b"<CompleteMultipartUploadResult></CompleteMultipartUploadResult>")
        self.reply(204)

    def condition_holds(self, stored):
        """S3's conditional writes: If-None-Match: * only where there is no object, If-Match only over that ETag."""
        if self.headers.get("If-None-Match") == "*":
            return stored is None
        wanted = self.headers.get("If-Match")
        return wanted is None or (stored is not None and wanted.strip('"') == hashlib.md5(stored).hexdigest())

    def control(self, raw_path):
        parts = raw_path.strip("/").split("/")
        with LOCK:
            if parts[0] == "_lie":
                LIE.update(mode=parts[1], times=int(parts[2]))
            elif parts[0] == "_reset":
                REQUESTS.clear()
            body = json.dumps(REQUESTS if parts[0] == "_requests" else {}).encode()
        self.reply(200, body, "application/json")

    def listing(self, bucket, query):
        prefix = query.get("prefix", "")
        page = int(query.get("max-keys", "1000"))
        token = query.get("continuation-token")
        # "again" (repeat-token's) goes on from the first page, as the first time.
        after = None if token is None else (base64.urlsafe_b64decode(token).decode() if token != "again" else None)
        with LOCK:
            keys = sorted((key for (owner, key) in OBJECTS if owner == bucket and key.startswith(prefix)), key=lambda k: k.encode())
            lying = LIE["mode"] if LIE["times"] != 0 and LIE["mode"] in LISTING_LIES else "none"
            if LIE["times"] > 0 and lying != "none":
                LIE["times"] -= 1
            sizes = {key: len(OBJECTS[(bucket, key)]) for key in keys}
            etags = {key: hashlib.md5(OBJECTS[(bucket, key)]).hexdigest() for key in keys}
        if token == "again":
            keys = keys[page:]
        if after is not None:
            keys = [key for key in keys if key.encode() > after.encode()]
        shown, rest = keys[:page], keys[page:]
        token = base64.urlsafe_b64encode(shown[-1].encode()).decode() if rest else None
        encoded = query.get("encoding-type") == "url" and lying != "raw-keys"
        extra = ""
        if lying == "garbage":
            return self.reply(200, b"<html><body>Service temporarily replaced by a maintenance page</body></html>", "text/html")
        if lying == "truncated-no-token":
            rest, token = [1], None
        if lying == "repeat-token":
            token = "again"
            rest = rest or [1]
        if lying == "outside-prefix":
            shown = shown + ["zzz-not-below-the-prefix.jpg"]
        if lying == "out-of-order":
            shown = list(reversed(shown))
        if lying == "oversize":
            extra = "<Padding>%s</Padding>" % ("x" * (9 << 20))
        contents = "".join(
            "<Contents><Key>%s</Key><LastModified>%s</LastModified><ETag>&quot;%s&quot;</ETag><Size>%d</Size></Contents>"
            % (escape(urllib.parse.quote_plus(key, safe="/") if encoded else key), MODIFIED, etags.get(key, "0"), sizes.get(key, 1))
            for key in shown)
        document = ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>%s</Name><Prefix>%s</Prefix><KeyCount>%d</KeyCount>'
                    '<MaxKeys>%d</MaxKeys>%s<IsTruncated>%s</IsTruncated>%s%s%s</ListBucketResult>') % (
            bucket, escape(prefix), len(shown), page, "<EncodingType>url</EncodingType>" if encoded else "",
            "true" if rest else "false", "<NextContinuationToken>%s</NextContinuationToken>" % token if token else "", contents, extra)
        self.reply(200, document.encode())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", required=True, help="a JSON file: {bucket: {key: path of the bytes}}")
    parser.add_argument("--access-key")
    parser.add_argument("--secret")
    parser.add_argument("--port-file")
    parser.add_argument("--port", type=int, default=0, help="listen here (0: any free port)")
    arguments = parser.parse_args()
    Handler.access_key, Handler.secret = arguments.access_key, arguments.secret
    with open(arguments.objects) as handle:
        for bucket, objects in json.load(handle).items():
            for key, path in objects.items():
                with open(path, "rb") as data:
                    OBJECTS[(bucket, key)] = data.read()
    serve(Handler, arguments.port, arguments.port_file)


if __name__ == "__main__":
    main()
