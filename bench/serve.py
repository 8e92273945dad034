#!/usr/bin/env python3
"""The downloads benchmark's fallback file server, for machines without nginx (bench.py prefers nginx).

    serve.py ROOT

Serves the files of ROOT on 127.0.0.1 over HTTP/1.1 with keep-alive, one thread per connection
(ThreadingHTTPServer), no request log. Prints its port on the first line of stdout. Python standard
library only. Its throughput is bound by one Python interpreter (the GIL): it can be slower than
the clients it serves, which is why bench.py uses nginx when it can.
"""
import functools
import sys
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer


class Handler(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive; SimpleHTTPRequestHandler sends Content-Length

    def log_message(self, *args):
        pass


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: serve.py ROOT")
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=sys.argv[1]))
    server.daemon_threads = True
    server.request_queue_size = 128
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
