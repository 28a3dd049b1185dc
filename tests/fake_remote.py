#!/usr/bin/env python3
"""fake_remote.py - a hostile remote store for tests/remote_test.sh.

    fake_remote.py PORTFILE PORT MODE [ROOT]

Listens on 127.0.0.1:PORT (0: the kernel picks one), writes the port to
PORTFILE once it is bound (readiness: the file appears whole, by rename),
serves until it has run LIFETIME seconds (FAKE_LIFETIME, 120), then exits by
itself.  Each connection's bytes sent are added to PORTFILE.sent, one line
per connection, when it ends; each HTTP request answered is a line of
PORTFILE.requests ("METHOD PATH").  MODE:

  http-huge ROOT   HTTP: GET and HEAD of /PATH serve ROOT/PATH (nginx's
                   WebDAV root, where a real machine published), but every
                   entry record (.../e/KEY) is rewritten to say that each
                   artifact is 8 GB, and every artifact (.../c/SHA) is
                   answered "Content-Length: 8000000000" and zeros, as long
                   as the client reads; so is the record in each combined
                   value (.../x/KEY), which then carries no artifact.  PUT
                   is answered 201 and dropped.
  http-swapped ROOT  HTTP: as http-huge serves ROOT, but in every entry
                   record each artifact stored compressed is swapped for a
                   zstd frame (made by the zstd program) of as many zero
                   bytes: the frame's own size and SHA-256, what is
                   fetched, are right, and it is served at .../c/ITS_SHA,
                   but it inflates to bytes that the record's size and
                   SHA-256 of the artifact do not describe.  A combined
                   value (.../x/KEY) carries that record and those frames.
  redis-huge       RESP: every command is answered "$8000000000\\r\\n" and
                   zeros, as long as the client reads.
  redis-drip       RESP: every command is answered "$64\\r\\n" and 64 bytes,
                   one byte a second.
  redis-badend     RESP: every command is answered at once with a bulk of 64
                   bytes that ends in "XY", not "\\r\\n".
  redis-cut        RESP: the first command is answered "$65536\\r\\n" and 100
                   bytes, then the connection is closed.
  redis-held       RESP: a lease server that answers "held" to everything:
                   SET ... NX is nil, EXISTS is 1 after FAKE_DELAY seconds
                   (0.9), GETRANGE is empty (absent), any other command OK.
  redis-evil       RESP: every command is answered with an error whose text
                   holds ESC sequences and a bidi override (U+202E), as
                   NOAUTH, so the client shows it to the user.
  http-slow        HTTP: every request is answered after FAKE_DELAY seconds
                   (0.9): GET and HEAD 404, PUT 201.
  http-oracle      HTTP: a server that probes the client's files (issue 22,
                   item 9).  GET of a manifest (.../m/DIRECT_KEY) is answered
                   with a forged, unsigned one whose record names the file
                   FAKE_SECRET (an absolute path) as a dependency, with its
                   size and SHA-256 (as if guessed right), and FAKE_SECRET.gone
                   as an include candidate that must be absent, under the
                   entry key that the client computes for them
                   (src/lib/key.c): a client that matches the record asks
                   for .../e/THAT_KEY, telling the server the file holds
                   what it guessed.  The key is written to PORTFILE.forged.
                   Every other GET and HEAD is 404, PUT 201.
  oci-huge UPSTREAM  OCI registry (tests/oci_hostile_test.sh): a proxy of
                   the registry at UPSTREAM (HOST:PORT; the client's
                   Authorization header passed on) whose manifests are
                   rewritten: a layer's embedded entry record (magic
                   "CJCE", deflated in org.cudajitcache.deflate) says each artifact is 8 GB (its digest and size
                   made to match), and so do the layers that embed nothing
                   (the artifacts'); other manifests pass; a blob that is
                   not such a record is answered "Content-Length: 8000000000"
                   and zeros, as long as the client reads.  Writes: 403.
  oci-denied       OCI: every request answered 403 DENIED ("requested access
                   to the resource is denied").
  oci-500          OCI: every request answered 500 UNKNOWN.
  oci-quota        OCI: a registry that is full: GET and HEAD 404
                   (MANIFEST_UNKNOWN, BLOB_UNKNOWN), every write (POST, PUT,
                   PATCH) 403 DENIED "quota exceeded".
  oci-drip         OCI: every request answered 200 with 64 bytes of body,
                   the whole reply (head included) a byte a second.
  oci-storage401   OCI: a registry that asks for Basic credentials (a 401
                   to a request without them), serves every manifest as a
                   direct-mode one whose value is only a blob and which
                   names another blob (fetched at once with it), and
                   redirects (307) each blob's GET to its "storage",
                   http://localhost:PORT/storage/... (this server, under
                   another host name), which answers 401 with "Bearer
                   realm=http://localhost:PORT/steal": a client that
                   answers it sends its credentials to /steal (a line of
                   PORTFILE.requests).  A request to the storage that
                   carries credentials is a line "CREDENTIALS PATH" there.
  oci-bloat        OCI: every manifest's GET answered 200 with 32 MB of
                   '{"layers":[[],[],...]}' (what a JSON parser makes
                   tens of times larger), as long as the client reads.

Standard library only, and the zstd program (http-swapped).
"""
import base64
import hashlib
import http.client
import json
import os
import socket
import socketserver
import struct
import subprocess
import sys
import zlib
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler

HUGE = 8000000000
CHUNK = b"\0" * (1 << 20)
DEFLATED = "org.cudajitcache.deflate"  # where an OCI layer embeds its bytes
LIFETIME = float(os.environ.get("FAKE_LIFETIME", "120"))
DELAY = float(os.environ.get("FAKE_DELAY", "0.9"))
sent_lock = threading.Lock()


def count_sent(portfile, n):
    with sent_lock, open(portfile + ".sent", "a") as f:
        f.write("%d\n" % n)


def count_request(portfile, method, path):
    """One line in PORTFILE.requests for each HTTP request answered."""
    with sent_lock, open(portfile + ".requests", "a") as f:
        f.write("%s %s\n" % (method, path))


def cstr(s):
    """What cjc_hash_str hashes: the bytes and their NUL."""
    return s.encode() + b"\0"


def u32str(s):
    """What cjc_buf_add_str writes: a u32 length and the bytes."""
    return struct.pack("<I", len(s.encode())) + s.encode()


def oracle_manifest(direct_key):
    """A manifest file (src/lib/manifest.h: blob "CJCM", version 1) of one
    record: FAKE_SECRET as a dependency, FAKE_SECRET.gone as absent, under
    the entry key cjc_key_entry gives them (an absolute path resolves to
    nothing)."""
    secret = os.environ["FAKE_SECRET"]
    with open(secret, "rb") as f:
        data = f.read()
    sha = hashlib.sha256(data).digest()
    absent = secret + ".gone"
    h = hashlib.sha256(cstr("cudajitcache-entry") + cstr(direct_key))
    h.update(cstr(secret) + cstr("") + sha)
    h.update(cstr("absent") + cstr(absent))
    key = h.hexdigest()
    with open(PORTFILE + ".forged", "a") as f:
        f.write(key + "\n")
    record = (key.encode() + struct.pack("<I", 1) + u32str(secret) + struct.pack("<Q", len(data)) +
              sha + struct.pack("<I", 1) + u32str(absent))
    framed = b"CJCM" + struct.pack("<II", 1, 1) + record
    return framed + struct.pack("<I", zlib.crc32(framed))


def rewrite_record(data, change):
    """An entry record (src/lib/remote.c: blob "CJCE" of u32-prefixed metadata
    and signature, CRC-32 last) whose metadata's each file change(f) rewrote."""
    payload = data[4:-4]
    mlen = struct.unpack_from("<I", payload, 0)[0]
    meta = json.loads(payload[4:4 + mlen])
    sig = payload[4 + mlen:]
    for f in meta["files"].values():
        change(f)
    m = json.dumps(meta).encode()
    framed = b"CJCE" + struct.pack("<I", len(m)) + m + sig
    return framed + struct.pack("<I", zlib.crc32(framed))


def rewrite_combined(data, change):
    """A combined value (src/lib/remote/layout.h: blob "CJCX" of a
    u32-prefixed entry record, a u32 count and that many artifacts, each its
    SHA-256 in hex and its u32-prefixed bytes; CRC-32 last) whose record
    rewrite_record rewrote, carrying the frames of SWAPPED it names."""
    rlen = struct.unpack_from("<I", data, 4)[0]
    record = rewrite_record(data[8:8 + rlen], change)
    named = [(sha, frame) for sha, frame in SWAPPED.items() if sha.encode() in record]
    framed = b"CJCX" + struct.pack("<I", len(record)) + record + struct.pack("<I", len(named))
    for sha, frame in named:
        framed += sha.encode() + struct.pack("<I", len(frame)) + frame
    return framed + struct.pack("<I", zlib.crc32(framed))


def huge_file(f):
    """http-huge: each artifact is HUGE."""
    f["size"] = HUGE
    if "zstd" in f:  # stored compressed: what is fetched (docs/store.md#compression)
        f["zstd"]["size"] = HUGE


SWAPPED = {}


def swapped_file(f):
    """http-swapped: a compressed artifact's frame swapped for one of zeros."""
    if "zstd" not in f:
        return
    frame = subprocess.run(["zstd", "-q", "-c"], input=bytes(f["size"]),
                           stdout=subprocess.PIPE, check=True).stdout
    sha = hashlib.sha256(frame).hexdigest()
    SWAPPED[sha] = frame
    f["zstd"] = {"size": len(frame), "sha256": sha}


HUGE_RECORDS = {}


def huge_manifest(body):
    """oci-huge's manifest: the embedded entry record made to list 8 GB
    artifacts (kept in HUGE_RECORDS for a GET of its blob), and every other
    layer 8 GB."""
    manifest = json.loads(body)
    for layer in manifest.get("layers", []):
        notes = layer.get("annotations", {})
        deflated = base64.b64decode(notes.get(DEFLATED, ""))
        raw = zlib.decompress(deflated) if deflated else b""
        if not raw:
            layer["size"] = HUGE
        if raw[:4] != b"CJCE":
            continue
        record = rewrite_record(raw, huge_file)
        layer["digest"] = "sha256:" + hashlib.sha256(record).hexdigest()
        layer["size"] = len(record)
        notes[DEFLATED] = base64.b64encode(zlib.compress(record)).decode()
        HUGE_RECORDS[layer["digest"]] = record
    return json.dumps(manifest).encode()


def stream_zeros(wfile, start=b""):
    """Writes start, then zeros until the client stops reading; bytes sent."""
    n = 0
    try:
        wfile.write(start)
        n += len(start)
        while n < HUGE:
            wfile.write(CHUNK)
            n += len(CHUNK)
    except OSError:
        pass
    return n


class Http(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    sent = 0

    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", length=None, stream=False, headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        if self.command == "HEAD":
            return
        if stream:
            self.sent += stream_zeros(self.wfile)
            self.close_connection = True
        else:
            self.wfile.write(body)
            self.sent += len(body)

    def do_GET(self):
        count_request(PORTFILE, self.command, self.path)
        if MODE.startswith("oci"):
            return self.oci()
        if MODE == "http-slow":
            time.sleep(DELAY)
            return self.answer(404)
        if MODE == "http-oracle":
            if "/m/" in self.path and self.command == "GET":
                return self.answer(200, oracle_manifest(self.path.rsplit("/", 1)[1]))
            return self.answer(404)
        swapped = MODE == "http-swapped"
        if "/c/" in self.path and swapped and self.path.rsplit("/", 1)[1] in SWAPPED:
            return self.answer(200, SWAPPED[self.path.rsplit("/", 1)[1]])
        if "/c/" in self.path and not swapped:
            return self.answer(200, length=HUGE, stream=True)
        path = os.path.join(ROOT, self.path.lstrip("/"))
        if ".." in self.path or not os.path.isfile(path):
            return self.answer(404)
        with open(path, "rb") as f:
            data = f.read()
        change = swapped_file if swapped else huge_file
        if "/x/" in self.path:
            data = rewrite_combined(data, change)
        self.answer(200, rewrite_record(data, change) if "/e/" in self.path else data)

    do_HEAD = do_GET

    def do_PUT(self):
        count_request(PORTFILE, self.command, self.path)
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if MODE.startswith("oci"):
            return self.oci()
        if MODE == "http-slow":
            time.sleep(DELAY)
        self.answer(201)

    do_POST = do_PATCH = do_DELETE = do_PUT

    def oci_error(self, status, code, message):
        body = json.dumps({"errors": [{"code": code, "message": message}]}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
            self.sent += len(body)

    def oci(self):
        """The oci-* modes (an OCI registry's answers)."""
        reading = self.command in ("GET", "HEAD")
        if MODE == "oci-denied":
            return self.oci_error(403, "DENIED", "requested access to the resource is denied")
        if MODE == "oci-500":
            return self.oci_error(500, "UNKNOWN", "unknown error")
        if MODE == "oci-quota":
            if reading:
                unknown = "MANIFEST_UNKNOWN" if "/manifests/" in self.path else "BLOB_UNKNOWN"
                return self.oci_error(404, unknown, "unknown")
            return self.oci_error(403, "DENIED", "quota exceeded")
        if MODE == "oci-drip":
            reply = b"HTTP/1.1 200 OK\r\nContent-Length: 64\r\n\r\n" + b"x" * 64
            try:
                for byte in reply:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    self.sent += 1
                    time.sleep(1)
            except OSError:
                pass
            self.close_connection = True
            return None
        if MODE == "oci-storage401":
            return self.oci_storage401()
        if MODE == "oci-bloat":
            return self.oci_bloat()
        if not reading:
            return self.oci_error(403, "DENIED", "read-only proxy")
        return self.oci_huge()

    def oci_storage401(self):
        """oci-storage401: a storage host a redirect leads to names a realm."""
        blob = b"x" * 100
        hexdigest = hashlib.sha256(blob).hexdigest()
        if self.path.startswith("/steal"):
            return self.answer(200, json.dumps({"token": "stolen"}).encode())
        if self.path.startswith("/storage/"):
            if self.headers.get("Authorization"):
                count_request(PORTFILE, "CREDENTIALS", self.path)
            realm = "http://localhost:%d/steal" % self.server.server_address[1]
            return self.answer(401, b"{}", headers=[("WWW-Authenticate", 'Bearer realm="%s",service="s"' % realm)])
        if not self.headers.get("Authorization"):
            return self.answer(401, b"{}", headers=[("WWW-Authenticate", 'Basic realm="r"')])
        if "/manifests/" in self.path:
            layer = {"mediaType": "application/vnd.cudajitcache.manifest.v1",
                     "digest": "sha256:" + hexdigest, "size": len(blob)}
            named = {"mediaType": "application/vnd.cudajitcache.artifact.v1",
                     "digest": "sha256:" + hashlib.sha256(b"y" * 100).hexdigest(), "size": 100}
            return self.answer(200, json.dumps({
                "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "artifactType": "application/vnd.cudajitcache.manifest.v1",
                "config": {"mediaType": "application/vnd.oci.empty.v1+json", "size": 2,
                           "digest": "sha256:" + hashlib.sha256(b"{}").hexdigest()},
                "layers": [layer, named]}).encode())
        storage = "http://localhost:%d/storage/%s" % (self.server.server_address[1],
                                                      self.path.rsplit(":", 1)[-1])
        return self.answer(307, b"", headers=[("Location", storage)])

    def oci_bloat(self):
        """oci-bloat: a manifest that a JSON parser would blow up."""
        if "/manifests/" not in self.path:
            return self.oci_error(404, "BLOB_UNKNOWN", "unknown")
        n = 16 * 1000 * 1000
        self.send_response(200)
        self.send_header("Content-Length", str(len(b'{"layers":[') + 3 * n + len(b"[]]}")))
        self.end_headers()
        try:
            self.wfile.write(b'{"layers":[')
            for _ in range(n // 100000):
                self.wfile.write(b"[]," * 100000)
                self.sent += 300000
            self.wfile.write(b"[]]}")
        except OSError:
            pass
        self.close_connection = True
        return None

    def oci_huge(self):
        """oci-huge: the upstream registry's answer, rewritten."""
        digest = self.path.rsplit("/", 1)[1]
        if "/blobs/" in self.path:
            if digest in HUGE_RECORDS:
                return self.answer(200, HUGE_RECORDS[digest])
            return self.answer(200, length=HUGE, stream=True)
        conn = http.client.HTTPConnection(ROOT, timeout=10)
        headers = {k: self.headers[k] for k in ("Authorization", "Accept") if self.headers[k]}
        conn.request(self.command, self.path, headers=headers)
        reply = conn.getresponse()
        body = reply.read()
        if reply.status == 200 and "/manifests/" in self.path:
            body = huge_manifest(body)
        self.send_response(reply.status)
        for name in ("Content-Type", "WWW-Authenticate"):
            if reply.getheader(name):
                self.send_header(name, reply.getheader(name))
        if reply.status == 200 and "/manifests/" in self.path:
            self.send_header("Docker-Content-Digest", "sha256:" + hashlib.sha256(body).hexdigest())
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
            self.sent += len(body)
        return None

    def finish(self):
        count_sent(PORTFILE, self.sent)
        super().finish()


class Resp(socketserver.StreamRequestHandler):
    def handle(self):
        sent = 0
        try:
            while True:
                args = self.read_command()
                if args is None:
                    break
                if MODE in ("redis-held", "redis-evil"):
                    reply = self.hostile_reply(args)
                    self.wfile.write(reply)
                    self.wfile.flush()
                    sent += len(reply)
                    continue
                if MODE == "redis-huge":
                    sent += stream_zeros(self.wfile, b"$%d\r\n" % HUGE)
                    break
                if MODE in ("redis-badend", "redis-cut"):
                    reply = (b"$64\r\n" + b"x" * 64 + b"XY" if MODE == "redis-badend"
                             else b"$65536\r\n" + b"x" * 100)
                    self.wfile.write(reply)
                    self.wfile.flush()
                    sent += len(reply)
                    if MODE == "redis-cut":
                        break
                    continue
                for byte in b"$64\r\n" + b"x" * 64 + b"\r\n":
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    sent += 1
                    time.sleep(1)
        except OSError:
            pass
        count_sent(PORTFILE, sent)

    def read_command(self):
        """Reads one RESP array of bulk strings: its words; None at the end."""
        line = self.rfile.readline()
        if not line.startswith(b"*"):
            return None
        args = []
        for _ in range(int(line[1:])):
            size = int(self.rfile.readline()[1:])
            args.append(self.rfile.read(size + 2)[:-2])
        return args

    @staticmethod
    def hostile_reply(args):
        """redis-held's and redis-evil's answer to one command."""
        if MODE == "redis-evil":
            return b"-NOAUTH \x1b[2J\x1b]0;owned\x07evil \xe2\x80\xaeoverride\r\n"
        verb = args[0].upper() if args else b""
        if verb == b"SET" and b"NX" in [a.upper() for a in args[3:]]:
            return b"$-1\r\n"
        if verb == b"EXISTS":
            time.sleep(DELAY)
            return b":1\r\n"
        if verb in (b"GETRANGE", b"GET"):
            return b"$0\r\n\r\n"
        return b"+OK\r\n"


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global PORTFILE, MODE, ROOT
    PORTFILE, port, MODE = sys.argv[1:4]
    ROOT = sys.argv[4] if len(sys.argv) > 4 else ""
    handler = Http if MODE.startswith(("http", "oci")) else Resp
    server = Server(("127.0.0.1", int(port)), handler)
    server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 16)
    with open(PORTFILE + ".tmp", "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(PORTFILE + ".tmp", PORTFILE)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    main()
