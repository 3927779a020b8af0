#!/usr/bin/env bash
# The local stack: one Apache Kafka KRaft node, FerretDB (SQLite backend) and Apicurio Registry
# (a Confluent-compatible schema registry), all on loopback.
# Installs (Kafka jars, the FerretDB binary, the registry) are cached in $STACK_CACHE (default
# ~/.cache/course-access-groups/stack), so a fresh clone on the same machine starts fast;
# data, logs and pid files live under $STACK_DIR (default .stack/, git-ignored).
#
#   install  fetch Kafka jars (Maven Central), build FerretDB (Go module proxy) with the
#            patches in scripts/ferretdb/, after their own SQLite backend tests pass, and build
#            Apicurio Registry from its released jars (Maven Central, scripts/registry/); cached
#   test-ferretdb   run FerretDB's SQLite backend tests on the patched source again
#   start    start the three in the background and wait until each answers
#   stop     stop exactly the processes `start` started (pid files)
#   status   say what runs
#   stop-db / start-db / stop-kafka / start-kafka / stop-registry / start-registry   one server
#   tls      make the private CA and the certificates (done by start when a TLS listener is on)
#
# Secured listeners, each off unless its port is set (docs/local-stack.md):
#   STACK_KAFKA_SASL_SSL_PORT   Kafka SASL_SSL: PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 users, and
#                               OAUTHBEARER with Kafka's unsecured validator (an unsigned JWT's
#                               `sub` is the principal: for tests of the token provider only)
#   STACK_KAFKA_SSL_PORT        Kafka SSL with a client certificate required (mutual TLS)
#   STACK_MONGO_TLS_PORT        FerretDB over TLS (it then requires a client certificate too)
#   STACK_KAFKA_ACLS=on         Kafka authorizes with ACLs (KRaft's StandardAuthorizer): a user
#                               without an ACL is refused; the PLAINTEXT and controller
#                               listeners' principal (User:ANONYMOUS) is a super user
# Their CA, server and client certificates are made once in $STACK_TLS_DIR (default
# $STACK_DIR/tls) with openssl: ca.pem, client.pem + client.key (and client-bundle.pem, both in
# one file as the MongoDB driver's tlsCertificateKeyFile wants).
#
# When MONGO_URL and KAFKA_BROKERS are both set, start/stop do nothing: those servers are used.
# When SCHEMA_REGISTRY_URL is set, that registry is used and none is started.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STACK_DIR="${STACK_DIR:-$ROOT/.stack}"
KAFKA_VERSION=3.9.1
FERRETDB_VERSION=v1.24.2
MONGO_PORT="${STACK_MONGO_PORT:-27017}"
KAFKA_PORT="${STACK_KAFKA_PORT:-9092}"
CONTROLLER_PORT="${STACK_KAFKA_CONTROLLER_PORT:-9093}"
KAFKA_HEAP="${STACK_KAFKA_HEAP:-512m}"
REGISTRY_PORT="${STACK_REGISTRY_PORT:-8081}"
SASL_SSL_PORT="${STACK_KAFKA_SASL_SSL_PORT:-}"
SSL_PORT="${STACK_KAFKA_SSL_PORT:-}"
MONGO_TLS_PORT="${STACK_MONGO_TLS_PORT:-}"
KAFKA_ACLS="${STACK_KAFKA_ACLS:-off}"

STACK_CACHE="${STACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/course-access-groups/stack}"
KAFKA_HOME="$STACK_CACHE/kafka-$KAFKA_VERSION"
# The build is named after the patches' content, so a binary built without them (or with an
# older version of them) is never reused.
FERRET_PATCHES=("$ROOT"/scripts/ferretdb/*.patch)
FERRET_BUILD="ferretdb-$FERRETDB_VERSION-$(cat "${FERRET_PATCHES[@]}" | sha256sum | cut -c1-12)"
FERRET_BIN="$STACK_CACHE/bin/$FERRET_BUILD"
FERRET_SRC="$STACK_CACHE/src/$FERRET_BUILD"
# Named after the content of scripts/registry/ (its pom pins every version), so a changed pom
# means a new build, never an old one.
REGISTRY_BUILD="apicurio-registry-$(cd "$ROOT/scripts/registry" && find . -type f | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-12)"
REGISTRY_HOME="$STACK_CACHE/$REGISTRY_BUILD"
REGISTRY_URL="http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7"
RUN_DIR="$STACK_DIR/run"
TLS_DIR="${STACK_TLS_DIR:-$STACK_DIR/tls}"
# The local users of the SASL_SSL listener (user:password). Test credentials for a loopback
# broker, never for anything else.
SASL_PLAIN_USERS=("cagplain:cagplain-secret" "openedx:openedx-secret")
SASL_SCRAM_USERS=("cagscram:cagscram-secret" "cagrotated:cagrotated-secret")
# The PKCS#12 keystore's password (Kafka requires one); the files stay in the git-ignored stack dir.
KEYSTORE_PASSWORD=stack-keystore
LOG_DIR="$STACK_DIR/logs"

say() { echo "[stack] $*" >&2; }

external() { [[ -n "${MONGO_URL:-}" && -n "${KAFKA_BROKERS:-}" ]]; }

install_kafka() {
  if [[ -f "$KAFKA_HOME/.installed" ]]; then return; fi
  say "fetching Apache Kafka $KAFKA_VERSION jars from Maven Central"
  mkdir -p "$KAFKA_HOME"
  mvn -q -B -Dstyle.color=never -f "$ROOT/scripts/kafka/pom.xml" -Dkafka.version="$KAFKA_VERSION" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$KAFKA_HOME/libs"
  touch "$KAFKA_HOME/.installed"
}

# Copies the module source to $1 with the generated build/version/version.txt and our patches.
ferretdb_source() {
  local mod
  mod="$(go mod download -json "github.com/FerretDB/FerretDB@$FERRETDB_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$mod" ]] || { say "go mod download gave no source directory"; exit 1; }
  # `go install …@version` cannot be used: the proxy refuses the version list it reads for
  # deprecation notices, and a binary built from the bare module panics for want of the
  # generated build/version/version.txt. So build a copy of the same source with that file.
  rm -rf "$1"; mkdir -p "$(dirname "$1")"
  cp -r "$mod" "$1"; chmod -R u+w "$1"
  echo "$FERRETDB_VERSION" > "$1/build/version/version.txt"
  local p
  for p in "${FERRET_PATCHES[@]}"; do patch -p1 --fuzz=0 --batch --silent -d "$1" <"$p"; done
}

# FerretDB's own tests of the backend the patches change, on the patched source.
test_ferretdb() {
  say "go test ./internal/backends/sqlite/... on the patched FerretDB source"
  mkdir -p "$FERRET_SRC/.git" # FerretDB's testutil finds the module root by its .git
  (cd "$FERRET_SRC" && GOFLAGS=-buildvcs=false go test -count=1 ./internal/backends/sqlite/... >&2)
}

install_ferretdb() {
  if [[ -x "$FERRET_BIN" ]]; then return; fi
  say "building FerretDB $FERRETDB_VERSION from the Go module proxy, patched ($FERRET_BUILD)"
  ferretdb_source "$FERRET_SRC"
  mkdir -p "$STACK_CACHE/bin"
  (cd "$FERRET_SRC" && GOFLAGS=-buildvcs=false go build -o "$FERRET_BIN.tmp" ./cmd/ferretdb)
  # The binary is cached only once the tests pass, so every cached binary has passed them.
  test_ferretdb
  mv "$FERRET_BIN.tmp" "$FERRET_BIN"
}

install_registry() {
  if [[ -f "$REGISTRY_HOME/quarkus-run.jar" ]]; then return; fi
  say "building Apicurio Registry from its jars on Maven Central ($REGISTRY_BUILD)"
  local work; work="$(mktemp -d)"
  cp -r "$ROOT/scripts/registry/." "$work/"
  mvn -q -B -Dstyle.color=never -f "$work/pom.xml" package -DskipTests >&2
  # Moved into place whole (another clone may be building the same one): never half an install.
  mkdir -p "$STACK_CACHE"
  mv -T "$work/target/quarkus-app" "$REGISTRY_HOME" 2>/dev/null || [[ -f "$REGISTRY_HOME/quarkus-run.jar" ]]
  rm -rf "$work"
}

# A private CA, one server certificate (127.0.0.1 and localhost) for Kafka and FerretDB, and one
# client certificate. Made once, in a temporary folder moved into place whole: two starts at once
# (test files) never see half of it.
make_tls() {
  if [[ -f "$TLS_DIR/.made" ]]; then return; fi
  say "making a private CA and certificates in $TLS_DIR"
  local work; work="$(mktemp -d)"
  (
    cd "$work"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=course-access-groups local CA" \
      -keyout ca.key -out ca.pem -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
    local name
    for name in server client; do
      openssl req -newkey rsa:2048 -nodes -subj "/CN=course-access-groups-$name" -keyout "$name.key" -out "$name.csr" 2>/dev/null
      printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' >"$name.ext"
      openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 -extfile "$name.ext" -out "$name.pem" 2>/dev/null
    done
    cat client.pem client.key >client-bundle.pem
    cat server.pem server.key >server-bundle.pem
    openssl pkcs12 -export -in server.pem -inkey server.key -certfile ca.pem -name broker \
      -passout "pass:$KEYSTORE_PASSWORD" -out server.p12
    rm -f ./*.csr ./*.ext ./*.srl
    chmod 600 ./*.key ./*-bundle.pem server.p12
    touch .made
  )
  mkdir -p "$(dirname "$TLS_DIR")"
  mv -T "$work" "$TLS_DIR" 2>/dev/null || [[ -f "$TLS_DIR/.made" ]] || { say "could not make $TLS_DIR"; exit 1; }
  rm -rf "$work"
}

pid_alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Waits until the command succeeds. A server whose process has exited will not come up: that
# fails at once, and either failure shows the end of its log (a test's private server removes
# its folder afterwards, so the log would be lost).
wait_for() { # name seconds pidfile "logfiles" command...
  local name="$1" secs="$2" pidf="$3" logs="$4"; shift 4
  local deadline=$((SECONDS + secs)) why=""
  until "$@" >/dev/null 2>&1; do
    if ! pid_alive "$pidf"; then why="exited"; elif ((SECONDS > deadline)); then why="did not come up in ${secs}s"; fi
    if [[ -n $why ]]; then
      say "$name $why; the end of its logs:"
      # The first errors (an exception's own line, not its stack) and then the last lines.
      local f; for f in $logs; do
        [[ -f $f ]] || continue
        grep -E 'ERROR|FATAL|Exception|Error:' "$f" | grep -v $'^\tat ' | head -n 10 >&2 || true
        tail -n 15 "$f" >&2
      done
      say "(all of them in $LOG_DIR)"
      return 1
    fi
    sleep 0.5
  done
}

start_ferretdb() {
  if pid_alive "$RUN_DIR/ferretdb.pid"; then say "FerretDB already running"; return; fi
  if port_open "$MONGO_PORT"; then
    # Another clone's stack (or a real server) may already be there: use it if it answers.
    if node "$ROOT/scripts/ping-mongo.cjs" "mongodb://127.0.0.1:$MONGO_PORT/"; then say "a MongoDB-protocol server already answers on $MONGO_PORT; using it"; return; fi
    say "port $MONGO_PORT is taken by another process"; exit 1
  fi
  mkdir -p "$STACK_DIR/data/ferretdb" "$STACK_DIR/state/ferretdb" "$RUN_DIR" "$LOG_DIR"
  local tls=()
  if [[ -n $MONGO_TLS_PORT ]]; then
    make_tls
    tls=(--listen-tls="127.0.0.1:$MONGO_TLS_PORT" --listen-tls-cert-file="$TLS_DIR/server.pem"
      --listen-tls-key-file="$TLS_DIR/server.key" --listen-tls-ca-file="$TLS_DIR/ca.pem")
  fi
  nohup "$FERRET_BIN" --handler=sqlite --sqlite-url="file:$STACK_DIR/data/ferretdb/" \
    --listen-addr="127.0.0.1:$MONGO_PORT" "${tls[@]}" --state-dir="$STACK_DIR/state/ferretdb" \
    --debug-addr=- --telemetry=disable --log-level=warn \
    >>"$LOG_DIR/ferretdb.log" 2>&1 &
  echo $! >"$RUN_DIR/ferretdb.pid"
  wait_for FerretDB 30 "$RUN_DIR/ferretdb.pid" "$LOG_DIR/ferretdb.log" node "$ROOT/scripts/ping-mongo.cjs" "mongodb://127.0.0.1:$MONGO_PORT/"
  say "FerretDB on 127.0.0.1:$MONGO_PORT${MONGO_TLS_PORT:+, TLS on 127.0.0.1:$MONGO_TLS_PORT}"
}

start_kafka() {
  if pid_alive "$RUN_DIR/kafka.pid"; then say "Kafka already running"; return; fi
  if port_open "$KAFKA_PORT"; then
    if node "$ROOT/scripts/ping-kafka.cjs" "127.0.0.1:$KAFKA_PORT"; then say "a Kafka broker already answers on $KAFKA_PORT; using it"; return; fi
    say "port $KAFKA_PORT is taken by another process"; exit 1
  fi
  local data="$STACK_DIR/data/kafka" conf="$STACK_DIR/run/kafka.properties"
  # The log cleaner allocates its dedupe buffer (128 MB by default) in one piece at start-up; in
  # the small heaps of a local or test broker (256 MB) that allocation failed now and then with an
  # OutOfMemoryError and the broker exited. 16 MB is plenty for the compacted topics here.
  mkdir -p "$data" "$RUN_DIR" "$LOG_DIR"
  # Every test makes topics of its own, and the broker holds at least one open file per partition:
  # past the open-files limit it takes its log directory for failed and shuts down (seen at 19,896
  # partitions under a limit of 20,000). Said before it comes to that; the data is the tests' own.
  local partitions limit
  partitions=$(find "$data" -mindepth 1 -maxdepth 1 -type d -name '*-[0-9]*' | wc -l)
  limit=$(ulimit -n)
  if [[ $limit =~ ^[0-9]+$ ]] && ((partitions > limit / 2)); then
    say "Kafka's data holds $partitions partitions, and this shell may open $limit files: past that the broker stops." \
      "To start it empty: npm run stack:stop && rm -rf .stack/data/kafka && npm run stack:start"
  fi
  # The secured listeners beside PLAINTEXT (which the broker itself, `npm run dev` and most
  # tests keep using), each only when its port is set.
  local listeners="PLAINTEXT://127.0.0.1:$KAFKA_PORT" advertised="PLAINTEXT://127.0.0.1:$KAFKA_PORT"
  local secured=""
  if [[ -n $SASL_SSL_PORT ]]; then
    listeners+=",SASL_SSL://127.0.0.1:$SASL_SSL_PORT"; advertised+=",SASL_SSL://127.0.0.1:$SASL_SSL_PORT"
  fi
  if [[ -n $SSL_PORT ]]; then
    listeners+=",SSL://127.0.0.1:$SSL_PORT"; advertised+=",SSL://127.0.0.1:$SSL_PORT"
  fi
  if [[ -n $SASL_SSL_PORT || -n $SSL_PORT ]]; then
    make_tls
    local plain_users="" u
    for u in "${SASL_PLAIN_USERS[@]}"; do plain_users+=" user_${u%%:*}=\"${u#*:}\""; done
    secured="ssl.keystore.type=PKCS12
ssl.keystore.location=$TLS_DIR/server.p12
ssl.keystore.password=$KEYSTORE_PASSWORD
ssl.key.password=$KEYSTORE_PASSWORD
ssl.truststore.type=PEM
ssl.truststore.location=$TLS_DIR/ca.pem
listener.name.ssl.ssl.client.auth=required
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER
listener.name.sasl_ssl.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required$plain_users;
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
  fi
  # ACLs as a production cluster has them: nothing allowed without one, except to the broker
  # itself and to the PLAINTEXT listener's clients (tests grant and revoke through it).
  if [[ $KAFKA_ACLS == on ]]; then
    secured+="
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
super.users=User:ANONYMOUS"
  fi
  cat >"$conf" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CONTROLLER_PORT
listeners=$listeners,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=$advertised
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL
inter.broker.listener.name=PLAINTEXT
$secured
log.dirs=$data
num.partitions=3
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
log.cleaner.dedupe.buffer.size=16777216
PROPS
  cat >"$RUN_DIR/log4j.properties" <<PROPS
log4j.rootLogger=WARN, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=$LOG_DIR/kafka-server.log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
PROPS
  local java_opts=(-Xms128m "-Xmx$KAFKA_HEAP" -XX:+UseG1GC -Djava.awt.headless=true
    "-Dlog4j.configuration=file:$RUN_DIR/log4j.properties" -cp "$KAFKA_HOME/libs/*")
  if [[ ! -f "$data/meta.properties" ]]; then
    # SCRAM users go into the new cluster's metadata at format time (KRaft), costing no extra JVM.
    local scram=() u
    for u in "${SASL_SCRAM_USERS[@]}"; do
      scram+=(--add-scram "SCRAM-SHA-256=[name=${u%%:*},password=${u#*:}]" --add-scram "SCRAM-SHA-512=[name=${u%%:*},password=${u#*:}]")
    done
    java "${java_opts[@]}" kafka.tools.StorageTool format -t "$(cat /proc/sys/kernel/random/uuid | tr -d - | head -c 22)" \
      -c "$conf" "${scram[@]}" >>"$LOG_DIR/kafka.log" 2>&1
    touch "$data/.scram-users"
  fi
  nohup java "${java_opts[@]}" kafka.Kafka "$conf" >>"$LOG_DIR/kafka.log" 2>&1 &
  echo $! >"$RUN_DIR/kafka.pid"
  wait_for Kafka 90 "$RUN_DIR/kafka.pid" "$LOG_DIR/kafka.log $LOG_DIR/kafka-server.log" node "$ROOT/scripts/ping-kafka.cjs" "127.0.0.1:$KAFKA_PORT"
  # A cluster formatted before the SCRAM users existed gets them once, through the broker, when
  # its SASL_SSL listener is asked for (a JVM per user and mechanism: not on every plain start).
  if [[ -n $SASL_SSL_PORT && ! -f "$data/.scram-users" ]]; then
    for u in "${SASL_SCRAM_USERS[@]}"; do scram_user "${u%%:*}" "${u#*:}"; done
    touch "$data/.scram-users"
  fi
  say "Kafka on 127.0.0.1:$KAFKA_PORT${SASL_SSL_PORT:+, SASL_SSL on 127.0.0.1:$SASL_SSL_PORT}${SSL_PORT:+, SSL (mutual TLS) on 127.0.0.1:$SSL_PORT}"
}

# Sets a user's SCRAM password on the running broker (Kafka's own kafka-configs, through the
# PLAINTEXT listener): for SCRAM-SHA-256 and SCRAM-SHA-512, or only the mechanism named. One
# mechanism per call: KRaft refuses two changes of one user in one request.
scram_user() { # name password [mechanism]
  local mechanism
  for mechanism in ${3:-SCRAM-SHA-256 SCRAM-SHA-512}; do
    java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "-Dlog4j.configuration=file:$RUN_DIR/log4j.properties" -cp "$KAFKA_HOME/libs/*" \
      kafka.admin.ConfigCommand --bootstrap-server "127.0.0.1:$KAFKA_PORT" --alter --entity-type users --entity-name "$1" \
      --add-config "$mechanism=[password=$2]" >>"$LOG_DIR/kafka.log" 2>&1 ||
      { say "kafka-configs could not set the $mechanism password of $1 (see $LOG_DIR/kafka.log)"; return 1; }
  done
}

start_registry() {
  if [[ -n "${SCHEMA_REGISTRY_URL:-}" ]]; then say "SCHEMA_REGISTRY_URL is set: using it, starting no registry"; return; fi
  if pid_alive "$RUN_DIR/registry.pid"; then say "schema registry already running"; return; fi
  if port_open "$REGISTRY_PORT"; then
    if node "$ROOT/scripts/ping-registry.cjs" "$REGISTRY_URL"; then say "a schema registry already answers on $REGISTRY_PORT; using it"; return; fi
    say "port $REGISTRY_PORT is taken by another process"; exit 1
  fi
  mkdir -p "$STACK_DIR/data/registry" "$RUN_DIR" "$LOG_DIR"
  # Its H2 database in a file beside Kafka's data (the default is in memory): the schema ids
  # that messages kept in Kafka name must survive a restart of the stack. Loopback only.
  # One request at a time (max-threads=1): Apicurio 2.4's SQL storage takes ids from its sequences
  # table without serializing, so concurrent registrations answered 500 (lock timeouts, duplicate
  # ids) or 409 "already exists" for a subject nobody else registered (its own retry after a half
  # commit): two Open edX producers starting together met it. One connection instead deadlocks
  # (a nested storage call takes a second one). Test: events-avro.test.ts, "many subjects at once".
  nohup java -Xms64m -Xmx256m -XX:+UseSerialGC -Djava.awt.headless=true \
    -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$REGISTRY_PORT" \
    -Dquarkus.datasource.jdbc.url="jdbc:h2:file:$STACK_DIR/data/registry/registry" -Dquarkus.thread-pool.max-threads=1 \
    -Dquarkus.log.level=WARN -Dquarkus.log.category.\"io.apicurio\".level=WARN \
    -jar "$REGISTRY_HOME/quarkus-run.jar" >>"$LOG_DIR/registry.log" 2>&1 &
  echo $! >"$RUN_DIR/registry.pid"
  wait_for "schema registry" 60 "$RUN_DIR/registry.pid" "$LOG_DIR/registry.log" node "$ROOT/scripts/ping-registry.cjs" "$REGISTRY_URL"
  say "schema registry on $REGISTRY_URL"
}

stop_one() { # name
  local pidf="$RUN_DIR/$1.pid"
  if pid_alive "$pidf"; then
    local pid; pid="$(cat "$pidf")"
    kill "$pid" 2>/dev/null || true
    # A broker's orderly shutdown can take a while on a busy machine; past 30 s it is killed.
    for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null || true
    # Gone before we return: a start right after must not find its ports still held.
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    say "$1 stopped"
  fi
  rm -f "$pidf"
}

case "${1:-}" in
  install) install_kafka; install_ferretdb; install_registry ;;
  test-ferretdb) ferretdb_source "$FERRET_SRC"; test_ferretdb ;;
  start)
    if external; then say "MONGO_URL and KAFKA_BROKERS are set: using them, starting nothing"; exit 0; fi
    # The waits ping with the project's own drivers: without them every server "did not come up".
    if ! (cd "$ROOT" && node -e "require('mongodb'); require('kafkajs')" 2>/dev/null); then
      say "the project's packages are not installed: run \`npm ci\` first (the stack's readiness checks use its MongoDB and Kafka drivers)"
      exit 1
    fi
    install_kafka; install_ferretdb; install_registry; start_ferretdb; start_kafka; start_registry ;;
  stop)
    # A test run against servers of its own (test.sh stops the stack when done) must not stop a
    # stack someone else started here; a person who sourced those variables is told.
    if external; then say "MONGO_URL and KAFKA_BROKERS are set: stopping nothing (unset them to stop the stack in $STACK_DIR)"; exit 0; fi
    stop_one registry; stop_one kafka; stop_one ferretdb ;;
  stop-db) stop_one ferretdb ;;
  start-db) start_ferretdb ;;
  stop-kafka) stop_one kafka ;;
  start-kafka) start_kafka ;;
  stop-registry) stop_one registry ;;
  start-registry) install_registry; start_registry ;;
  tls) make_tls; echo "$TLS_DIR" ;;
  scram-user) # name password [mechanism]: create a SCRAM user, or change its password, on the running broker
    [[ $# == 3 || $# == 4 ]] || { echo "usage: $0 scram-user NAME PASSWORD [SCRAM-SHA-256|SCRAM-SHA-512]" >&2; exit 2; }
    scram_user "$2" "$3" "${4:-}" ;;
  status)
    for p in ferretdb kafka registry; do
      if pid_alive "$RUN_DIR/$p.pid"; then echo "$p running (pid $(cat "$RUN_DIR/$p.pid"))"; else echo "$p stopped"; fi
    done ;;
  *) echo "usage: $0 install|test-ferretdb|start|stop|status|stop-db|start-db|stop-kafka|start-kafka|stop-registry|start-registry|tls|scram-user" >&2; exit 2 ;;
esac
