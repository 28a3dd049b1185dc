# servers.sh - sourced (bash): real servers on 127.0.0.1 for the remote-store
# tests.  scripts/install-deps installs them all.
#
#   start_redis DIR [REDIS-SERVER-ARG...]
#	redis-server, requirepass, no persistence (save "", appendonly no), on a
#	TCP port and a unix socket.  Extra arguments are redis-server's own
#	(--maxmemory 1mb ...) and come last, so they win.  Sets REDIS_PORT,
#	REDIS_PASSWORD, REDIS_SOCKET, REDIS_PID, REDIS_URL
#	(redis://:PASSWORD@127.0.0.1:PORT).
#   redis_cli ARG...            redis-cli, authenticated, against it.
#   redis_limit_memory [SIZE]   maxmemory SIZE (1mb) + maxmemory-policy
#	noeviction (or give --maxmemory 1mb --maxmemory-policy noeviction to
#	start_redis, which a restart keeps).  An empty Redis 7.0 uses ~0.95 MB
#	already: a small SET may still pass, but after ~20 KB more every write
#	is answered "OOM command not allowed when used memory > 'maxmemory'."
#
#   start_nginx DIR
#	nginx, one process (master_process off, daemon off: a SIGKILL leaves no
#	worker behind holding the ports), its prefix, conf, pid, logs and temp
#	paths all in DIR, as root or not.  WebDAV (dav_methods PUT DELETE;
#	create_full_put_path on) under NGINX_ROOT (DIR/dav) at three locations,
#	served over http on NGINX_PORT and https on NGINX_TLS_PORT alike:
#	  /cache/   no authentication            NGINX_URL, NGINX_HTTPS_URL
#	  /auth/    basic auth NGINX_USER:NGINX_PASSWORD (htpasswd made with
#	            openssl passwd -apr1)        NGINX_AUTH_URL, NGINX_HTTPS_AUTH_URL
#	  /bearer/  "Authorization: Bearer $NGINX_TOKEN" or 401; the token is
#	            also in the file NGINX_TOKEN_FILE    NGINX_BEARER_URL
#	The certificate is self-signed for 127.0.0.1 (CN and subjectAltName
#	IP:127.0.0.1): give NGINX_CA to the client as its CA file.  Also
#	NGINX_PID.  Every URL ends without a slash.
#	nginx 1.22's dav module does NOT honour "If-None-Match: *" on PUT: a PUT
#	over an existing file answers 204 No Content and replaces it (a new file:
#	201 Created); only GET/HEAD honour it (304).  So an HTTP store cannot get an atomic "create only" from
#	this server; a conditional PUT must not be relied on here.
#
#   start_s3 DIR
#	s3rver (npm, pinned by install-deps in TEST_NODE_PREFIX), path-style,
#	a fresh bucket.  Sets S3_PORT, S3_ENDPOINT (http://127.0.0.1:PORT),
#	S3_BUCKET, S3_REGION and AWS_REGION/AWS_DEFAULT_REGION (us-east-1),
#	AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (S3RVER/S3RVER, the only key
#	s3rver has), S3_ROOT (its files on disk), S3_PID.
#	What s3rver 3.7.1 checks (tried with curl 7.88.1):
#	  - it does NOT verify SigV4 signatures: the source says "Signature
#	    version 4 calculation is unimplemented"; a request signed with a
#	    wrong secret succeeds (200).  Only the access key id is checked: an
#	    unknown one gets 403 InvalidAccessKeyId.  A request with no
#	    Authorization at all is served anonymously (200).  So these tests
#	    cannot catch a bad signature; real S3 (or MinIO) would.
#	  - a SigV4 request must carry x-amz-content-sha256 (UNSIGNED-PAYLOAD,
#	    STREAMING-... or 64 hex digits), else 400 InvalidRequest "Missing
#	    required header for this request: x-amz-content-sha256".  curl 7.88's
#	    --aws-sigv4 "aws:amz:REGION:s3" (CURLOPT_AWS_SIGV4) does not add that
#	    header itself; given with -H / CURLOPT_HTTPHEADER, curl signs it
#	    (SignedHeaders=host;x-amz-content-sha256;x-amz-date).  Real S3 needs
#	    it too.  s3rver does not compare a hex value with the body.
#	  - it ignores If-None-Match on PUT (an overwrite answers 200).
#
#   start_latency_proxy NAME DIR HOST:PORT DELAY_MS [TURNS]
#	tests/latency_proxy.py on 127.0.0.1 in front of HOST:PORT: every byte
#	either way DELAY_MS late, so a round trip costs twice that.  Sets
#	LATENCY_PORT; kill_server NAME stops it (NAME: the caller's, one per
#	proxy).  For bench/run: a remote store across a network.  With TURNS,
#	a file: its connections and round trips are counted there (a line
#	"connect N" and one "request N" per round trip; latency_proxy.py).
#
#   start_registry DIR [token]
#	Debian's docker-registry (distribution 2.8), filesystem storage in
#	DIR/data (REGISTRY_ROOT: blobs under docker/registry/v2/blobs/sha256/
#	XX/HEX/data), deletes enabled, on 127.0.0.1 over plain HTTP, htpasswd
#	(bcrypt, htpasswd -B) authentication for REGISTRY_USER:REGISTRY_PASSWORD.
#	Sets REGISTRY_PORT, REGISTRY_HOST (127.0.0.1:PORT), REGISTRY_URL
#	(oci+http://USER:PASSWORD@HOST/cjc/store: a repository of two
#	components), REGISTRY_ANON_URL (the same without credentials),
#	REGISTRY_PID, REGISTRY_LOG (one line per request answered).
#	With `token` (and tests/oci_token_server.py's options after it:
#	--anonymous pull|none, --expires-in SECONDS), the registry's `auth:
#	token:` instead, with our own token server (Debian packages none) on
#	another port: the registry answers 401 with "WWW-Authenticate: Bearer
#	realm=http://127.0.0.1:TPORT/token,service=cjc-registry,scope=..." and
#	takes the RS256 tokens that server gives for REGISTRY_USER:
#	REGISTRY_PASSWORD (its certificate, DIR/token/cert.pem, is the
#	registry's rootcertbundle).  Also sets REGISTRY_TOKEN_PORT,
#	REGISTRY_TOKEN_PID and REGISTRY_TOKEN_LOG, a line per token request answered ("200 cjc
#	repository:cjc/store:pull,push": status, who, scopes; no secret), to
#	count token fetches.  kill_server registry_token stops it alone.
#   registry_log_settled
#	returns once REGISTRY_LOG holds every request the registry answered
#	before the call.  It writes a request's line after its last byte, so
#	the line of a large answer may come after its client has it: a GET of
#	/v2/_settle/<random>/tags/list is sent and awaited in the log (at most
#	SERVERS_TIMEOUT); leave those lines out of what is counted.
#	docker-registry reads REGISTRY_<SECTION>_<FIELD> variables as settings
#	(REGISTRY_LOG, REGISTRY_AUTH...): one run by hand with these exported
#	must be run as `env -u REGISTRY_LOG ... docker-registry`, as here.
#
#   start_blackhole
#	a listener that accepts connections and never answers (tests/unit/
#	blackhole.c: $CJC_BLACKHOLE under ctest, else compiled here with cc).
#	Sets BLACKHOLE_PORT, BLACKHOLE_PID.
#
#   start_partial DIR FILE
#	a server that dies mid-reply (blackhole PORTFILE PORT --reply FILE):
#	each connection, one at a time, is read (an HTTP head, or what a Redis
#	client sends), answered with FILE's bytes, and closed.  Make FILE
#	promise more than it holds: "$100000\r\n" and 10 bytes for Redis (GET
#	fails, "Server closed the connection"), an HTTP head with
#	"Content-Length: 100000" and 10 bytes of body (curl: exit 18, partial
#	file).  Sets PARTIAL_PORT, PARTIAL_PID.  kill_server partial and
#	restart_server partial (same port, same FILE) work as for the others.
#
#   start_fake DIR MODE [ROOT]
#	tests/fake_remote.py, a hostile store (its head lists the modes: an
#	8 GB artifact or Redis reply, a reply dripped a byte a second, each
#	request answered just before the timeout).  Ready when it has written
#	its port file; it exits by itself after FAKE_LIFETIME seconds (120).
#	Each connection's bytes sent are lines of DIR/port.sent.  Sets
#	FAKE_PORT, FAKE_PID.  kill_server fake, as for the others.
#
#   kill_server NAME      SIGKILL one (redis, nginx, s3, blackhole), and wait
#	until it is gone.
#   restart_server NAME   start it again as before, on the same port(s) and
#	directory, and wait until it is ready (Redis comes back empty; the files
#	of nginx and s3rver are kept).
#   wait_for_server NAME PID LOG CHECK...   a server a case started
#	itself, awaited as these are: 0 once CHECK succeeds, else 1 (killed).
#   servers_stop_all      kill every server this shell started.  Call it from
#	oneTimeTearDown: shunit2 takes the EXIT trap that this file sets.  A
#	watchdog (tail --pid) kills them anyway when the shell that started them
#	dies, even by SIGKILL, so none outlives a suite.
#
# Ports: a random one in 10000-31999 (below Linux's ephemeral range, so no
# client's port takes it), and another when the server says it is in use.
# Readiness is a real request that only this instance can answer (its own
# Redis password, nginx's own token at /__ready, s3rver's own bucket), so a
# server of a suite running beside this one is never taken for ours.  Each
# wait is bounded by SERVERS_TIMEOUT seconds (30), then fails with the log.
# Every server's output goes to a log in its directory, never to the
# suite's stdout or stderr (ctest would wait for them).

SERVERS_TIMEOUT=${SERVERS_TIMEOUT:-30}
TEST_NODE_PREFIX=${TEST_NODE_PREFIX:-/usr/local/lib/cudajitcache-test}
S3RVER=${S3RVER:-$TEST_NODE_PREFIX/node_modules/.bin/s3rver}
SERVERS_SOURCE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
declare -gA _SRV_PID=() _SRV_DIR=() _SRV_PORT=() _SRV_ARGS=()
SERVERS_STATE=

_servers_say() { echo "servers.sh: $*" >&2; }

_servers_random_hex() { od -An -tx1 -N"${1:-16}" /dev/urandom | tr -d ' \n'; }

_servers_random_port() {
	echo $((10000 + (RANDOM * 32768 + RANDOM) % 22000))
}

# The start time of a process (field 22 of /proc/PID/stat), to tell it from
# a later one that got the same pid.
_servers_starttime() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	# shellcheck disable=SC2086 # the fields, split on purpose
	set -- $stat
	echo "${20}"
}

# The shell's state directory, and a watchdog that kills what is listed in
# it when this shell ($$) dies.
_servers_init() {
	[ -n "$SERVERS_STATE" ] && [ -d "$SERVERS_STATE" ] && return 0
	SERVERS_STATE=$(mktemp -d "${TMPDIR:-/tmp}/cjc-servers.XXXXXX") || return 1
	mkdir -p "$SERVERS_STATE/pids"
	(
		tail --pid=$$ -f /dev/null
		_servers_kill_listed "$SERVERS_STATE/pids"
		rm -rf "$SERVERS_STATE"
	) </dev/null >/dev/null 2>&1 &
	trap servers_stop_all EXIT
}

# Kills the processes listed in DIR (files NAME holding "PID STARTTIME").
_servers_kill_listed() {
	local f pid start
	for f in "$1"/*; do
		[ -f "$f" ] || continue
		read -r pid start <"$f"
		[ "$(_servers_starttime "$pid")" = "$start" ] && kill -9 "$pid"
		rm -f "$f"
	done
}

# _servers_mark LOG: where this start's part of LOG begins.
_servers_mark() {
	_SRV_LOGFROM=$(stat -c %s "$1" 2>/dev/null || echo 0)
}

_servers_register() {
	local name=$1 pid=$2
	_SRV_PID[$name]=$pid
	echo "$pid $(_servers_starttime "$pid")" >"$SERVERS_STATE/pids/$name"
}

# _servers_wait NAME PID LOG CHECK...: 0 once CHECK succeeds; 2 if the
# server died because its port was in use; 1 if it died otherwise or
# SERVERS_TIMEOUT passed (then it is killed).
_servers_wait() {
	local name=$1 pid=$2 log=$3 end=$((SECONDS + SERVERS_TIMEOUT))
	shift 3
	# Only what this start wrote to the log (_servers_mark) counts.
	while :; do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid" 2>/dev/null
			if tail -c +$((_SRV_LOGFROM + 1)) "$log" 2>/dev/null |
				grep -q -e 'Address already in use' -e EADDRINUSE; then
				return 2
			fi
			_servers_say "$name exited before it was ready; $log says:"
			tail -n 20 "$log" >&2
			return 1
		fi
		if [ "$SECONDS" -ge "$end" ]; then
			_servers_say "$name was not ready in ${SERVERS_TIMEOUT}s; $log says:"
			tail -n 20 "$log" >&2
			kill -9 "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			return 1
		fi
		sleep 0.05
	done
}

# wait_for_server NAME PID LOG CHECK...: a server a case started itself,
# writing to a new LOG, awaited as this file's own are (_servers_wait): 0
# once CHECK succeeds; 1 once it died or SERVERS_TIMEOUT passed (its log
# shown, the server killed).
wait_for_server() {
	_SRV_LOGFROM=0
	_servers_wait "$@" && return 0
	kill -9 "$2" 2>/dev/null
	return 1
}

# _servers_start NAME DIR ARG...: runs _start_NAME_on DIR PORT ARG... on
# random ports until one is free (or it fails otherwise).
_servers_start() {
	local name=$1 dir=$2 rc a b
	shift 2
	_servers_init || return 1
	if [ -n "${_SRV_PID[$name]:-}" ]; then
		_servers_say "$name is already running (pid ${_SRV_PID[$name]})"
		return 1
	fi
	mkdir -p "$dir" || return 1
	dir=$(cd "$dir" && pwd)
	_SRV_DIR[$name]=$dir
	_SRV_ARGS[$name]=
	[ $# = 0 ] || _SRV_ARGS[$name]=$(printf '%q ' "$@")
	for _ in $(seq 20); do
		a=$(_servers_random_port)
		b=$(_servers_random_port)
		[ "$a" != "$b" ] || continue
		"_start_${name}_on" "$dir" "$a $b" "$@"
		rc=$?
		[ $rc = 2 ] || return $rc
	done
	_servers_say "$name: no free port after 20 tries"
	return 1
}

restart_server() {
	local name=$1
	if [ -z "${_SRV_DIR[$name]:-}" ]; then
		_servers_say "restart_server: $name was never started"
		return 1
	fi
	[ -z "${_SRV_PID[$name]:-}" ] || kill_server "$name"
	eval "set -- ${_SRV_ARGS[$name]}"
	"_start_${name}_on" "${_SRV_DIR[$name]}" "${_SRV_PORT[$name]}" "$@" && return 0
	_servers_say "restart_server: $name could not start again on port(s) ${_SRV_PORT[$name]}"
	return 1
}

kill_server() {
	local name=$1 pid=${_SRV_PID[$1]:-}
	if [ -z "$pid" ]; then
		_servers_say "kill_server: $name is not running"
		return 1
	fi
	kill -9 "$pid" 2>/dev/null
	# Our own child: wait reaps it, and its sockets are closed by then.
	# Started from another shell: poll until it is gone.
	if ! wait "$pid" 2>/dev/null; then
		local end=$((SECONDS + SERVERS_TIMEOUT))
		while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$end" ]; do sleep 0.05; done
	fi
	rm -f "$SERVERS_STATE/pids/$name"
	_SRV_PID[$name]=
	return 0
}

servers_stop_all() {
	local name
	for name in "${!_SRV_PID[@]}"; do
		[ -z "${_SRV_PID[$name]}" ] || kill_server "$name"
	done
	return 0
}

# --- Redis ---------------------------------------------------------------

redis_cli() {
	redis-cli -h 127.0.0.1 -p "$REDIS_PORT" --no-auth-warning -a "$REDIS_PASSWORD" "$@"
}

redis_limit_memory() {
	redis_cli config set maxmemory "${1:-1mb}" >/dev/null &&
		redis_cli config set maxmemory-policy noeviction >/dev/null
}

_redis_ready() {
	[ "$(timeout 5 redis-cli -h 127.0.0.1 -p "$1" --no-auth-warning -a "$2" ping)" = PONG ] &&
		[ "$(timeout 5 redis-cli -s "$3" --no-auth-warning -a "$2" ping)" = PONG ]
}

_start_redis_on() {
	local dir=$1 port=${2%% *} pid rc
	shift 2
	local password sock=$dir/redis.sock
	# Kept in DIR: a restart keeps the password the clients were given.
	[ -s "$dir/password" ] || _servers_random_hex >"$dir/password"
	password=$(cat "$dir/password")
	rm -f "$sock"
	_servers_mark "$dir/redis.log"
	redis-server --bind 127.0.0.1 --port "$port" --unixsocket "$sock" --unixsocketperm 700 \
		--requirepass "$password" --save '' --appendonly no --dir "$dir" \
		--daemonize no --logfile '' "$@" \
		</dev/null >>"$dir/redis.log" 2>&1 &
	pid=$!
	_servers_wait redis "$pid" "$dir/redis.log" _redis_ready "$port" "$password" "$sock"
	rc=$?
	[ $rc = 0 ] || return $rc
	_servers_register redis "$pid"
	_SRV_PORT[redis]=$port
	export REDIS_PORT=$port REDIS_PASSWORD=$password REDIS_SOCKET=$sock REDIS_PID=$pid
	export REDIS_URL="redis://:$password@127.0.0.1:$port"
}

start_redis() {
	local dir=$1
	shift
	_servers_start redis "$dir" "$@"
}

# --- nginx (WebDAV) ------------------------------------------------------

_nginx_ready() {
	[ "$(curl -s --max-time 5 "http://127.0.0.1:$1/__ready")" = "$3" ] &&
		[ "$(curl -s --max-time 5 --cacert "$4" "https://127.0.0.1:$2/__ready")" = "$3" ]
}

# The certificate, htpasswd and token of DIR, made once (a restart keeps them).
_nginx_secrets() {
	local dir=$1
	mkdir -p "$dir/tls" "$dir/logs" "$dir/tmp" "$dir/dav/cache" "$dir/dav/auth" "$dir/dav/bearer" || return 1
	if [ ! -s "$dir/tls/cert.pem" ]; then
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-keyout "$dir/tls/key.pem" -out "$dir/tls/cert.pem" -days 30 \
			-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
			>"$dir/logs/openssl.log" 2>&1 || {
			_servers_say "openssl could not make a certificate:"
			cat "$dir/logs/openssl.log" >&2
			return 1
		}
	fi
	if [ ! -s "$dir/htpasswd" ]; then
		echo "cjc:$(_servers_random_hex 8)" >"$dir/user"
		local user pass
		IFS=: read -r user pass <"$dir/user"
		printf '%s:%s\n' "$user" "$(openssl passwd -apr1 "$pass")" >"$dir/htpasswd" || return 1
	fi
	[ -s "$dir/token" ] || _servers_random_hex >"$dir/token"
	[ -s "$dir/ready-token" ] || _servers_random_hex >"$dir/ready-token"
}

_start_nginx_on() {
	local dir=$1 port=${2%% *} tls=${2##* } pid rc token ready user pass
	_nginx_secrets "$dir" || return 1
	token=$(cat "$dir/token")
	ready=$(cat "$dir/ready-token")
	IFS=: read -r user pass <"$dir/user"
	local dav="dav_methods PUT DELETE; create_full_put_path on; dav_access user:rw group:rw all:r;"
	{
		# As root: nginx would switch its workers to nobody, who cannot
		# read DIR; with master_process off there are no workers and it
		# stays who it is, and "user root" says so (only root may say it).
		[ "$(id -u)" != 0 ] || echo "user root;"
		cat <<CONF
daemon off;
master_process off;
pid $dir/nginx.pid;
error_log $dir/logs/error.log notice;
events { worker_connections 256; }
http {
	access_log $dir/logs/access.log;
	client_body_temp_path $dir/tmp/body;
	proxy_temp_path $dir/tmp/proxy;
	fastcgi_temp_path $dir/tmp/fastcgi;
	uwsgi_temp_path $dir/tmp/uwsgi;
	scgi_temp_path $dir/tmp/scgi;
	client_max_body_size 0;
	default_type application/octet-stream;
	server {
		listen 127.0.0.1:$port;
		listen 127.0.0.1:$tls ssl;
		ssl_certificate $dir/tls/cert.pem;
		ssl_certificate_key $dir/tls/key.pem;
		root $dir/dav;
		location = /__ready { return 200 "$ready"; }
		location /cache/ { $dav }
		location /auth/ {
			auth_basic "cjc";
			auth_basic_user_file $dir/htpasswd;
			$dav
		}
		location /bearer/ {
			if (\$http_authorization != "Bearer $token") { return 401; }
			$dav
		}
	}
}
CONF
	} >"$dir/nginx.conf"
	_servers_mark "$dir/logs/error.log"
	nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/logs/error.log" \
		</dev/null >>"$dir/logs/nginx.log" 2>&1 &
	pid=$!
	_servers_wait nginx "$pid" "$dir/logs/error.log" _nginx_ready "$port" "$tls" "$ready" "$dir/tls/cert.pem"
	rc=$?
	if [ $rc != 0 ]; then
		# nginx's own stderr (a bad configuration) is in nginx.log.
		[ $rc = 2 ] || tail -n 5 "$dir/logs/nginx.log" >&2
		return $rc
	fi
	_servers_register nginx "$pid"
	_SRV_PORT[nginx]="$port $tls"
	export NGINX_PORT=$port NGINX_TLS_PORT=$tls NGINX_PID=$pid NGINX_ROOT=$dir/dav
	export NGINX_URL=http://127.0.0.1:$port/cache
	export NGINX_AUTH_URL=http://127.0.0.1:$port/auth
	export NGINX_BEARER_URL=http://127.0.0.1:$port/bearer
	export NGINX_HTTPS_URL=https://127.0.0.1:$tls/cache
	export NGINX_HTTPS_AUTH_URL=https://127.0.0.1:$tls/auth
	export NGINX_USER=$user NGINX_PASSWORD=$pass NGINX_CA=$dir/tls/cert.pem
	export NGINX_TOKEN=$token NGINX_TOKEN_FILE=$dir/token
}

start_nginx() {
	[ $# = 1 ] || { _servers_say "usage: start_nginx DIR"; return 1; }
	_servers_start nginx "$1"
}

# --- S3 (s3rver) ---------------------------------------------------------

_s3_ready() {
	[ "$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' -I "http://127.0.0.1:$1/$2")" = 200 ]
}

_start_s3_on() {
	local dir=$1 port=${2%% *} pid rc bucket
	[ -s "$dir/bucket" ] || echo "cjc-$(_servers_random_hex 6)" >"$dir/bucket"
	bucket=$(cat "$dir/bucket")
	mkdir -p "$dir/data"
	_servers_mark "$dir/s3rver.log"
	"$S3RVER" -d "$dir/data" -a 127.0.0.1 -p "$port" --no-vhost-buckets \
		--configure-bucket "$bucket" \
		</dev/null >>"$dir/s3rver.log" 2>&1 &
	pid=$!
	_servers_wait s3 "$pid" "$dir/s3rver.log" _s3_ready "$port" "$bucket"
	rc=$?
	[ $rc = 0 ] || return $rc
	_servers_register s3 "$pid"
	_SRV_PORT[s3]=$port
	export S3_PORT=$port S3_ENDPOINT=http://127.0.0.1:$port S3_BUCKET=$bucket S3_PID=$pid
	export S3_REGION=us-east-1 AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
	export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER S3_ROOT=$dir/data/$bucket
}

start_s3() {
	[ $# = 1 ] || { _servers_say "usage: start_s3 DIR"; return 1; }
	if [ ! -x "$S3RVER" ]; then
		_servers_say "s3rver not found at $S3RVER: run scripts/install-deps --tests"
		return 1
	fi
	_servers_start s3 "$1"
}

# --- Black hole ----------------------------------------------------------

# The blackhole program: $CJC_BLACKHOLE under ctest, else compiled here.
_servers_blackhole_bin() {
	BLACKHOLE=${CJC_BLACKHOLE:-}
	[ -z "$BLACKHOLE" ] || return 0
	BLACKHOLE=$SERVERS_STATE/blackhole
	[ -x "$BLACKHOLE" ] || cc -O1 -o "$BLACKHOLE" "$SERVERS_SOURCE_DIR/unit/blackhole.c"
}

# _start_listener_on NAME DIR PORT PROGRAM [ARG...]: blackhole, partial or
# fake, each run as PROGRAM PORTFILE PORT ARG...  The first start lets the
# kernel pick the port (0); a restart asks for the one it had.
_start_listener_on() {
	local name=$1 dir=$2 port=${3%% *} program=$4 pid rc
	shift 4
	[ -n "${_SRV_PORT[$name]:-}" ] || port=0
	rm -f "$dir/port" "$dir/port.sent"
	_servers_mark "$dir/$name.log"
	"$program" "$dir/port" "$port" "$@" </dev/null >>"$dir/$name.log" 2>&1 &
	pid=$!
	_servers_wait "$name" "$pid" "$dir/$name.log" test -s "$dir/port"
	rc=$?
	[ $rc = 0 ] || return $rc
	_servers_register "$name" "$pid"
	_SRV_PORT[$name]=$(cat "$dir/port")
}

_start_blackhole_on() {
	_start_listener_on blackhole "$1" "$2" "$BLACKHOLE" || return
	export BLACKHOLE_PORT=${_SRV_PORT[blackhole]} BLACKHOLE_PID=${_SRV_PID[blackhole]:-}
}

start_blackhole() {
	_servers_init || return 1
	_servers_blackhole_bin || return 1
	_SRV_PORT[blackhole]=
	_servers_start blackhole "${1:-$SERVERS_STATE/blackhole.d}"
}

# --- Partial replies ------------------------------------------------------

_start_partial_on() {
	_start_listener_on partial "$1" "$2" "$BLACKHOLE" --reply "$3" || return
	export PARTIAL_PORT=${_SRV_PORT[partial]} PARTIAL_PID=${_SRV_PID[partial]:-}
}

start_partial() {
	[ $# = 2 ] || { _servers_say "usage: start_partial DIR FILE"; return 1; }
	local file
	if [ ! -f "$2" ]; then
		_servers_say "start_partial: no file $2"
		return 1
	fi
	# Absolute: a restart may come from another directory.
	file=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
	_servers_init || return 1
	_servers_blackhole_bin || return 1
	_SRV_PORT[partial]=
	_servers_start partial "$1" "$file"
}

# --- docker-registry (OCI distribution) -------------------------------------

# _registry_ready PORT TPORT USER PASSWORD (TPORT unused: htpasswd)
_registry_ready() {
	[ "$(curl -s -o /dev/null -w '%{http_code}' -u "$3:$4" "http://127.0.0.1:$1/v2/")" = 200 ]
}

# _registry_token_ready PORT TPORT USER PASSWORD: a token from our token
# server opens the registry's /v2/.
_registry_token_ready() {
	local token
	token=$(curl -s --max-time 5 -u "$3:$4" "http://127.0.0.1:$2/token?service=cjc-registry" |
		jq -r .token) &&
		[ "$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' \
			-H "Authorization: Bearer $token" "http://127.0.0.1:$1/v2/")" = 200 ]
}

# _registry_token_on DIR PASSWORD TOKEN-SERVER-ARG...: the token server (its
# key and certificate made once: a restart keeps them); _REGISTRY_AUTH gets
# the registry's auth block for it.
_registry_token_on() {
	local dir=$1/token password=$2
	shift 2
	mkdir -p "$dir" || return 1
	if [ ! -s "$dir/cert.pem" ]; then
		openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/key.pem" -out "$dir/cert.pem" \
			-days 30 -subj /CN=cjc-token >"$dir/openssl.log" 2>&1 || return 1
	fi
	echo "cjc:$password" >"$dir/user" && echo cjc-token >"$dir/issuer" &&
		echo cjc-registry >"$dir/service" || return 1
	[ -z "${_SRV_PID[registry_token]:-}" ] || kill_server registry_token
	_start_listener_on registry_token "$dir" "${_SRV_PORT[registry_token]:-0}" \
		"$SERVERS_SOURCE_DIR/oci_token_server.py" "$dir" "$@" >&2 || return 1
	export REGISTRY_TOKEN_PORT=${_SRV_PORT[registry_token]} REGISTRY_TOKEN_LOG=$dir/port.requests
	export REGISTRY_TOKEN_PID=${_SRV_PID[registry_token]}
	_REGISTRY_AUTH="auth:
  token:
    realm: http://127.0.0.1:$REGISTRY_TOKEN_PORT/token
    service: cjc-registry
    issuer: cjc-token
    rootcertbundle: $dir/cert.pem"
}

_start_registry_on() {
	local dir=$1 port=${2%% *} pid rc mode=${3:-htpasswd}
	shift 2
	[ $# = 0 ] || shift
	local password ready=_registry_ready
	[ -s "$dir/password" ] || _servers_random_hex >"$dir/password"
	password=$(cat "$dir/password")
	htpasswd -Bbc "$dir/htpasswd" cjc "$password" 2>/dev/null || return 1
	mkdir -p "$dir/data"
	_REGISTRY_AUTH="auth:
  htpasswd:
    realm: cjc-test
    path: $dir/htpasswd"
	if [ "$mode" = token ]; then
		_registry_token_on "$dir" "$password" "$@" || return 1
		ready=_registry_token_ready
	fi
	cat >"$dir/config.yml" <<-EOF
		version: 0.1
		log:
		  level: info
		  formatter: text
		  accesslog:
		    disabled: false
		storage:
		  filesystem:
		    rootdirectory: $dir/data
		  delete:
		    enabled: true
		  cache:
		    blobdescriptor: ""
		http:
		  addr: 127.0.0.1:$port
		$_REGISTRY_AUTH
	EOF
	_servers_mark "$dir/registry.log"
	# docker-registry takes REGISTRY_<SECTION>_... from the environment
	# over its configuration (REGISTRY_LOG, a path, would be its log: section)
	(unset "${!REGISTRY_@}" && exec docker-registry serve "$dir/config.yml") \
		</dev/null >>"$dir/registry.log" 2>&1 &
	pid=$!
	_servers_wait registry "$pid" "$dir/registry.log" $ready "$port" "${REGISTRY_TOKEN_PORT:-}" \
		cjc "$password"
	rc=$?
	[ $rc = 0 ] || return $rc
	_servers_register registry "$pid"
	_SRV_PORT[registry]=$port
	export REGISTRY_PORT=$port REGISTRY_HOST=127.0.0.1:$port REGISTRY_PID=$pid
	export REGISTRY_USER=cjc REGISTRY_PASSWORD=$password REGISTRY_ROOT=$dir/data
	export REGISTRY_LOG=$dir/registry.log
	export REGISTRY_URL="oci+http://cjc:$password@127.0.0.1:$port/cjc/store"
	export REGISTRY_ANON_URL="oci+http://127.0.0.1:$port/cjc/store"
}

registry_log_settled() {
	local mark end=$((SECONDS + SERVERS_TIMEOUT))
	mark=_settle/$(_servers_random_hex 8)
	curl -s -o /dev/null --max-time 5 "http://$REGISTRY_HOST/v2/$mark/tags/list"
	until grep -q "/v2/$mark/" "$REGISTRY_LOG"; do
		if [ $SECONDS -ge $end ]; then
			_servers_say "the registry's log has no line for /v2/$mark/"
			return 1
		fi
		sleep 0.05
	done
}

start_registry() {
	local dir=$1
	shift
	_servers_start registry "$dir" "$@"
}

# --- A network between (tests/latency_proxy.py) ----------------------------

start_latency_proxy() {
	local name=$1 dir=$2
	_servers_init && mkdir -p "$dir" || return 1
	_SRV_DIR[$name]=$(cd "$dir" && pwd)
	_start_listener_on "$name" "${_SRV_DIR[$name]}" 0 "$SERVERS_SOURCE_DIR/latency_proxy.py" "$3" "$4" ${5:+"$5"} ||
		return 1
	export LATENCY_PORT=${_SRV_PORT[$name]}
}

# --- Hostile stores (tests/fake_remote.py) ---------------------------------

_start_fake_on() {
	local dir=$1 port=$2
	shift 2
	_start_listener_on fake "$dir" "$port" "$SERVERS_SOURCE_DIR/fake_remote.py" "$@" || return
	export FAKE_PORT=${_SRV_PORT[fake]} FAKE_PID=${_SRV_PID[fake]:-}
}

start_fake() {
	[ $# -ge 2 ] || { _servers_say "usage: start_fake DIR MODE [ROOT]"; return 1; }
	_servers_init || return 1
	_SRV_PORT[fake]=
	_servers_start fake "$@"
}

# Tests whose shell dies without shunit2 still clean up.
_servers_init
