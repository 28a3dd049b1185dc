#!/usr/bin/python3
"""oci_token_server.py - a Docker registry token server for tests/servers.sh
(start_registry DIR token): the bearer-token exchange of the Docker/OCI
distribution token protocol, for docker-registry's `auth: token:`.

    oci_token_server.py PORTFILE PORT DIR [--anonymous pull|none]
                        [--expires-in SECONDS]

Our own, for the tests: Debian packages no token server.  /usr/bin/python3
with Debian's python3-jwt and python3-cryptography.

DIR holds what it was given: `user` (one line USER:PASSWORD, the one account
it knows), `key.pem` (an RSA key) and `cert.pem` (a self-signed certificate
of that key, which is the registry's rootcertbundle), `issuer` and
`service` (one line each).

  GET /token?service=S&scope=TYPE:NAME:ACTIONS[&scope=...]
      Basic credentials of the account: a token granting every action asked
      for.  No credentials: with --anonymous pull, a token granting only
      "pull" of what was asked; with --anonymous none (the default), 401.
      Wrong credentials, or a service that is not DIR/service: 401.  The
      answer is {"token", "access_token", "expires_in", "issued_at"}; the
      token is an RS256 JWT whose header carries the certificate (x5c, which
      the registry verifies against its rootcertbundle) and whose claims are
      those distribution 2.8 checks: iss, sub, aud (the service), exp, nbf,
      iat, jti and access [{type, name, actions}].  It lasts --expires-in
      seconds (300).

Readiness as fake_remote.py's: listens on 127.0.0.1:PORT (0: the kernel picks
one), writes the port to PORTFILE once it is bound (whole, by rename), exits
by itself after TOKEN_SERVER_LIFETIME seconds (900).  Each request is read
with a 10 s timeout (http.server bounds its head: lines of 64 KB, 100
headers).  Each request answered is a
line of PORTFILE.requests, never with a secret:

    STATUS USER|anonymous|bad SCOPE[,SCOPE...]|-

so a test counts the tokens fetched (lines starting with 200) per scope.
"""
import base64
import json
import os
import socketserver
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import serialization

LIFETIME = float(os.environ.get("TOKEN_SERVER_LIFETIME", "900"))
log_lock = threading.Lock()


def read_line(path):
    with open(path) as f:
        return f.readline().rstrip("\n")


class Config:
    def __init__(self, directory, anonymous, expires_in):
        self.user, _, self.password = read_line(os.path.join(directory, "user")).partition(":")
        self.issuer = read_line(os.path.join(directory, "issuer"))
        self.service = read_line(os.path.join(directory, "service"))
        with open(os.path.join(directory, "key.pem"), "rb") as f:
            self.key = serialization.load_pem_private_key(f.read(), password=None)
        with open(os.path.join(directory, "cert.pem"), "rb") as f:
            cert = x509.load_pem_x509_certificate(f.read())
        der = cert.public_bytes(serialization.Encoding.DER)
        self.x5c = [base64.b64encode(der).decode()]
        self.anonymous = anonymous
        self.expires_in = expires_in


def parse_scope(scope):
    """TYPE:NAME:ACTIONS (NAME may hold a ':', as HOST:PORT/REPO does)."""
    kind, _, rest = scope.partition(":")
    name, _, actions = rest.rpartition(":")
    if not kind or not name:
        return None
    return {"type": kind, "name": name, "actions": [a for a in actions.split(",") if a]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10

    def log_message(self, *args):
        pass

    def answer(self, status, body, who, scopes):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == 401:
            self.send_header("WWW-Authenticate", 'Basic realm="cjc-token"')
        self.end_headers()
        self.wfile.write(data)
        with log_lock, open(PORTFILE + ".requests", "a") as f:
            f.write("%d %s %s\n" % (status, who, ",".join(scopes) or "-"))

    def who(self):
        """The account the request authenticates as: its name, "anonymous"
        (no credentials) or None (wrong ones)."""
        auth = self.headers.get("Authorization", "")
        if not auth:
            return "anonymous"
        kind, _, value = auth.partition(" ")
        if kind.lower() != "basic":
            return None
        try:
            user, _, password = base64.b64decode(value, validate=True).decode().partition(":")
        except ValueError:
            return None
        return user if (user, password) == (CONFIG.user, CONFIG.password) else None

    def do_GET(self):
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        scopes = query.get("scope", [])
        if url.path != "/token":
            return self.answer(404, {"errors": [{"code": "NOT_FOUND"}]}, "-", scopes)
        who = self.who()
        if who is None or query.get("service", [""])[0] != CONFIG.service:
            return self.answer(401, {"errors": [{"code": "UNAUTHORIZED"}]}, "bad", scopes)
        if who == "anonymous" and CONFIG.anonymous != "pull":
            return self.answer(401, {"errors": [{"code": "UNAUTHORIZED"}]}, who, scopes)
        access = []
        for scope in scopes:
            for one in scope.split(" "):
                granted = parse_scope(one)
                if granted is None:
                    continue
                if who == "anonymous":
                    granted["actions"] = [a for a in granted["actions"] if a == "pull"]
                access.append(granted)
        now = int(time.time())
        claims = {"iss": CONFIG.issuer, "sub": "" if who == "anonymous" else who,
                  "aud": CONFIG.service, "exp": now + CONFIG.expires_in, "nbf": now - 1,
                  "iat": now, "jti": uuid.uuid4().hex, "access": access}
        token = jwt.encode(claims, CONFIG.key, algorithm="RS256", headers={"x5c": CONFIG.x5c})
        issued = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
        self.answer(200, {"token": token, "access_token": token, "expires_in": CONFIG.expires_in,
                          "issued_at": issued}, who, scopes)


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


def main():
    global PORTFILE, CONFIG
    args = sys.argv[1:]
    if len(args) < 3:
        sys.exit("usage: oci_token_server.py PORTFILE PORT DIR [--anonymous pull|none] "
                 "[--expires-in SECONDS]")
    PORTFILE, port, directory = args[:3]
    options = dict(zip(args[3::2], args[4::2]))
    CONFIG = Config(directory, options.get("--anonymous", "none"),
                    int(options.get("--expires-in", "300")))
    server = Server(("127.0.0.1", int(port)), Handler)
    with open(PORTFILE + ".tmp", "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(PORTFILE + ".tmp", PORTFILE)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    main()
