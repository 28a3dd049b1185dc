#!/bin/bash
# servers_selftest.sh - not a ctest suite: starts every server of servers.sh,
# talks to each with curl and redis-cli, kills and restarts them, and stops
# them.  Run it by hand (two copies at once show that ports do not collide):
#   bash tests/servers_selftest.sh
# CJC_BLACKHOLE may name a built tests/unit/blackhole.c; else it is compiled.

. "$(dirname "$0")/servers.sh"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/cjc-servers-selftest.XXXXXX")
trap 'servers_stop_all; rm -rf "$WORK"' EXIT
passed=0 failed=0

# check NAME EXPECTED ACTUAL
check() {
	if [ "$2" = "$3" ]; then
		passed=$((passed + 1))
		echo "ok   $1"
	else
		failed=$((failed + 1))
		echo "FAIL $1: expected [$2], got [$3]"
	fi
}

code() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@"; }

echo payload-$$ >"$WORK/blob"
echo other-$$ >"$WORK/blob2"

start_redis "$WORK/redis" || exit 1
start_nginx "$WORK/nginx" || exit 1
start_s3 "$WORK/s3" || exit 1
start_blackhole || exit 1
echo "redis 127.0.0.1:$REDIS_PORT ($REDIS_SOCKET), nginx :$NGINX_PORT https :$NGINX_TLS_PORT," \
	"s3 $S3_ENDPOINT/$S3_BUCKET, blackhole :$BLACKHOLE_PORT"

# Redis: AUTH, SET NX, GETRANGE, the unix socket, a full server.
check "redis without password" "NOAUTH" \
	"$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" set k v 2>&1 | cut -d' ' -f1)"
check "redis wrong password" 1 \
	"$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" --no-auth-warning -a nope ping 2>&1 | grep -c WRONGPASS)"
check "redis SET NX (new)" OK "$(redis_cli set key hello-world NX)"
check "redis SET NX (exists)" "" "$(redis_cli set key other NX)"
check "redis GETRANGE" world "$(redis_cli getrange key 6 -1)"
check "redis unix socket" hello-world \
	"$(redis-cli -s "$REDIS_SOCKET" --no-auth-warning -a "$REDIS_PASSWORD" get key)"
redis_limit_memory 1mb
check "redis full (maxmemory 1mb, noeviction)" "OOM" \
	"$(redis_cli set big "$(head -c 100000 /dev/zero | tr '\0' x)" 2>&1 | cut -d' ' -f1)"
kill_server redis
check "redis killed" 000 "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1 && echo up || echo 000)"
restart_server redis || exit 1
check "redis restarted, same port and password, empty" "" "$(redis_cli get key)"

# nginx: plain, basic auth, bearer, https.
check "nginx PUT new" 201 "$(code -T "$WORK/blob" "$NGINX_URL/a/b/c/key")"
check "nginx GET" "payload-$$" "$(curl -s "$NGINX_URL/a/b/c/key")"
check "nginx HEAD" 200 "$(code -I "$NGINX_URL/a/b/c/key")"
check "nginx HEAD missing" 404 "$(code -I "$NGINX_URL/nope")"
check "nginx file on disk" "payload-$$" "$(cat "$NGINX_ROOT/cache/a/b/c/key")"
# If-None-Match: * is not honoured by nginx's dav module: 204, and replaced.
check "nginx PUT If-None-Match:* over a file" 204 \
	"$(code -T "$WORK/blob2" -H 'If-None-Match: *' "$NGINX_URL/a/b/c/key")"
check "nginx ... it replaced the file" "other-$$" "$(curl -s "$NGINX_URL/a/b/c/key")"
check "nginx DELETE" 204 "$(code -X DELETE "$NGINX_URL/a/b/c/key")"
check "nginx auth: none" 401 "$(code -T "$WORK/blob" "$NGINX_AUTH_URL/k")"
check "nginx auth: wrong" 401 "$(code -u "$NGINX_USER:wrong" -T "$WORK/blob" "$NGINX_AUTH_URL/k")"
check "nginx auth: PUT" 201 "$(code -u "$NGINX_USER:$NGINX_PASSWORD" -T "$WORK/blob" "$NGINX_AUTH_URL/k")"
check "nginx auth: GET" "payload-$$" "$(curl -s -u "$NGINX_USER:$NGINX_PASSWORD" "$NGINX_AUTH_URL/k")"
check "nginx bearer: none" 401 "$(code -T "$WORK/blob" "$NGINX_BEARER_URL/k")"
check "nginx bearer: wrong" 401 "$(code -H "Authorization: Bearer x" -T "$WORK/blob" "$NGINX_BEARER_URL/k")"
check "nginx bearer: PUT" 201 \
	"$(code -H "Authorization: Bearer $(cat "$NGINX_TOKEN_FILE")" -T "$WORK/blob" "$NGINX_BEARER_URL/k")"
check "nginx bearer: GET" "payload-$$" \
	"$(curl -s -H "Authorization: Bearer $NGINX_TOKEN" "$NGINX_BEARER_URL/k")"
check "nginx https: no CA" 60 "$(curl -s -o /dev/null "$NGINX_HTTPS_URL/k"; echo $?)"
check "nginx https: PUT" 201 "$(code --cacert "$NGINX_CA" -T "$WORK/blob" "$NGINX_HTTPS_URL/t/k")"
check "nginx https: GET" "payload-$$" "$(curl -s --cacert "$NGINX_CA" "$NGINX_HTTPS_URL/t/k")"
check "nginx https: HEAD" 200 "$(code --cacert "$NGINX_CA" -I "$NGINX_HTTPS_URL/t/k")"
check "nginx https auth: PUT" 201 \
	"$(code --cacert "$NGINX_CA" -u "$NGINX_USER:$NGINX_PASSWORD" -T "$WORK/blob" "$NGINX_HTTPS_AUTH_URL/t/k")"
kill_server nginx
check "nginx killed" 7 "$(curl -s -o /dev/null "$NGINX_URL/t/k"; echo $?)"
restart_server nginx || exit 1
check "nginx restarted, files kept" "payload-$$" "$(curl -s --cacert "$NGINX_CA" "$NGINX_HTTPS_URL/t/k")"

# S3: SigV4 (curl), with the x-amz-content-sha256 that s3rver requires.
sig=(--aws-sigv4 "aws:amz:$S3_REGION:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY"
	-H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
obj=$S3_ENDPOINT/$S3_BUCKET/x/key
check "s3 PUT signed" 200 "$(code "${sig[@]}" -T "$WORK/blob" "$obj")"
check "s3 GET signed" "payload-$$" "$(curl -s "${sig[@]}" "$obj")"
check "s3 HEAD signed" 200 "$(code "${sig[@]}" -I "$obj")"
check "s3 HEAD missing" 404 "$(code "${sig[@]}" -I "$obj-nope")"
check "s3 PUT hashed payload" 200 \
	"$(code --aws-sigv4 "aws:amz:$S3_REGION:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
		-H "x-amz-content-sha256: $(sha256sum <"$WORK/blob2" | cut -d' ' -f1)" -T "$WORK/blob2" "$obj-2")"
check "s3 SigV4 without x-amz-content-sha256" 400 \
	"$(code --aws-sigv4 "aws:amz:$S3_REGION:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" "$obj")"
check "s3 unknown access key" 403 \
	"$(code --aws-sigv4 "aws:amz:$S3_REGION:s3" --user "NOPE:$AWS_SECRET_ACCESS_KEY" \
		-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$obj")"
# s3rver does not verify SigV4 signatures: a wrong secret is accepted.
check "s3 wrong secret (accepted: no SigV4 check)" 200 \
	"$(code --aws-sigv4 "aws:amz:$S3_REGION:s3" --user "$AWS_ACCESS_KEY_ID:wrong" \
		-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$obj")"
check "s3 object on disk" 1 "$(ls "$S3_ROOT"/x/key._S3rver_object 2>/dev/null | wc -l)"
kill_server s3
check "s3 killed" 7 "$(curl -s -o /dev/null "$obj"; echo $?)"
restart_server s3 || exit 1
check "s3 restarted, objects kept" "payload-$$" "$(curl -s "${sig[@]}" "$obj")"

# Black hole: connects, never answers.
check "blackhole times out" 28 \
	"$(curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$BLACKHOLE_PORT/"; echo $?)"
kill_server blackhole
check "blackhole killed" 7 "$(curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$BLACKHOLE_PORT/"; echo $?)"
restart_server blackhole || exit 1
check "blackhole restarted" 28 \
	"$(curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$BLACKHOLE_PORT/"; echo $?)"

pids="$REDIS_PID $NGINX_PID $S3_PID $BLACKHOLE_PID"
servers_stop_all
alive=0
for p in $pids; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
check "all stopped" 0 "$alive"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
