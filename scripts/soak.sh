#!/usr/bin/env bash
# A soak under attack (issue 19; not in CI): a scheduler and workers on loopback, clients computing
# an example program, and the attacks of the issue repeated for a bounded time: idle connections
# up to the connection cap, oversized length preambles (before and after the handshake), garbage
# bytes, wrong-token handshakes, a worker stopped (SIGSTOP) then continued, a worker killed (its
# nanny restarts it). Prints JSON lines: the scheduler's and each worker's RSS and open fds, and
# the clients' results, before and after; the last line says whether every result was right.
#
#   bash scripts/soak.sh [minutes, default 2]
#
# Environment: TESSERA_BUILD_DIR (default build: bin/tessera-scheduler, bin/tessera-worker,
# examples/seed_workload), TESSERA_SOAK_WORKERS (2), TESSERA_SOAK_FDS (the scheduler's and
# workers' RLIMIT_NOFILE, default 256: the cap is three quarters of it), TESSERA_SOAK_DIR (its
# logs and scheduler file; default a new temporary folder).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

MINUTES="${1:-2}"
BUILD="${TESSERA_BUILD_DIR:-build}"
WORKERS="${TESSERA_SOAK_WORKERS:-2}"
FDS="${TESSERA_SOAK_FDS:-256}"
DIR="${TESSERA_SOAK_DIR:-$(mktemp -d /tmp/tessera-soak.XXXXXX)}"
mkdir -p "$DIR"
for bin in bin/tessera-scheduler bin/tessera-worker examples/seed_workload; do
  [[ -x "$BUILD/$bin" ]] || { echo "soak: $BUILD/$bin missing (bash scripts/build.sh)" >&2; exit 1; }
done

# The protocol version the binaries speak (hellos and preambles of the attacks must carry it, or
# every attack is refused for its version and tests nothing).
VERSION="$(sed -n 's/.*kProtocolVersion = \([0-9]*\);.*/\1/p' src/comm/wire.hpp)"
TOKEN="soak-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
export TESSERA_TOKEN="$TOKEN"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill -TERM "$p" 2>/dev/null || true; done
  sleep 1
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# The scheduler and workers with a lowered fd limit, so the connection cap (3/4 of it) is reached.
(ulimit -n "$FDS"; exec "$BUILD/bin/tessera-scheduler" --port 0 --scheduler-file "$DIR/scheduler.json" \
  --no-dashboard --log-level warning) >"$DIR/scheduler.log" 2>&1 &
PIDS+=($!)
SCHED_PID=$!
for _ in $(seq 100); do [[ -s "$DIR/scheduler.json" ]] && break; sleep 0.1; done
ADDRESS="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["address"])' "$DIR/scheduler.json")"
for i in $(seq "$WORKERS"); do
  (ulimit -n "$FDS"; exec "$BUILD/bin/tessera-worker" --scheduler-file "$DIR/scheduler.json" --nthreads 2 \
    --name "soak-$i" --heartbeat-interval 0.5s --log-level warning) >"$DIR/worker-$i.log" 2>&1 &
  PIDS+=($!)
done

rc=0
(SOAK_VERSION="$VERSION" python3 - "$MINUTES" "$ADDRESS" "$SCHED_PID" "$BUILD/examples/seed_workload" "$DIR" "$FDS" "${PIDS[@]:1}" <<'PY'
import hashlib, hmac, json, os, random, signal, socket, struct, subprocess, sys, threading, time

minutes, address, sched_pid, example, folder, fds = float(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6])
nannies = [int(p) for p in sys.argv[7:]]
token = os.environ["TESSERA_TOKEN"].encode()
version = int(os.environ["SOAK_VERSION"])
host, port = address.split("://")[1].rsplit(":", 1)
port = int(port)
cap = fds * 3 // 4

def emit(**kv):
    print(json.dumps(kv), flush=True)

def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []

def proc_stats(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
        return {"pid": pid, "rss_mb": round(rss / 1024, 1), "fds": len(os.listdir(f"/proc/{pid}/fd"))}
    except (OSError, StopIteration):
        return {"pid": pid, "gone": True}

def snapshot(when):
    emit(at=when, process="scheduler", **proc_stats(sched_pid))
    for i, n in enumerate(nannies, 1):
        emit(at=when, process=f"nanny-{i}", **proc_stats(n))
        for c in children(n):
            emit(at=when, process=f"worker-{i}", **proc_stats(c))

# ---- the handshake as a Tessera peer speaks it (docs/protocol.md, src/comm/wire.cpp) ----------
def s(b):
    return struct.pack("<I", len(b)) + b

def hello(nonce, name=b"soak", flags=1):
    body = s(nonce) + s(name) + s(b"") + s(b"tcp") + struct.pack("<I", flags)
    return struct.pack("<III", 0x48525354, version, len(body)) + body

def proof(key, role, connector_hello, listener_hello):
    label = b"tessera handshake v2 " + role + b"\0"
    return hmac.new(key, label + struct.pack("<Q", len(connector_hello)) + connector_hello + listener_hello, hashlib.sha256).digest()

def read_exact(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out

def handshake(key):
    """Connects and proves `key`; the socket, or None when the scheduler refused."""
    sock = socket.create_connection((host, port), timeout=5)
    ours = hello(os.urandom(32))
    sock.sendall(ours)
    fixed = read_exact(sock, 12)
    theirs = fixed + read_exact(sock, struct.unpack("<I", fixed[8:12])[0])
    sock.sendall(proof(key, b"connector", ours, theirs))
    try:
        if read_exact(sock, 32) != proof(token, b"listener", ours, theirs):
            sock.close()
            return None
        sock.settimeout(1)
        if sock.recv(1) == b"":  # refused after our proof: closed
            sock.close()
            return None
    except socket.timeout:
        return sock  # accepted: the scheduler waits for a message
    except (ConnectionError, OSError):
        return None
    return sock

def preamble(header_bytes, frames=()):
    return struct.pack("<IHHIIQ", 0x4D525354, version, 0, len(frames), 0, header_bytes) + b"".join(struct.pack("<Q", f) for f in frames)

def closed_by_peer(x, timeout=5):
    """Whether the scheduler closes x (end of stream or reset) within timeout, reading what it sends."""
    x.settimeout(timeout)
    try:
        while x.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except OSError:
        return False

counts = {}
def count(kind, ok=True):
    counts.setdefault(kind, [0, 0])[0 if ok else 1] += 1

def attack_once(kind):
    try:
        if kind == "idle_connections":
            # Up to the cap (less room for the clients and workers), held past the handshake timeout
            # (5 s): the scheduler closes each.
            socks = []
            for _ in range(cap - 24):
                try:
                    socks.append(socket.create_connection((host, port), timeout=2))
                except OSError:
                    break
            time.sleep(6)
            closed = sum(closed_by_peer(x, 0.5) for x in socks)
            for x in socks:
                x.close()
            count(kind, closed == len(socks))
        elif kind == "oversized_hello":
            with socket.create_connection((host, port), timeout=5) as x:
                x.sendall(struct.pack("<III", 0x48525354, version, 1 << 30))  # a 1 GiB hello body
                count(kind, closed_by_peer(x))
        elif kind == "garbage_bytes":
            with socket.create_connection((host, port), timeout=5) as x:
                x.sendall(os.urandom(random.randint(12, 4096)))  # at least a hello's fixed part
                count(kind, closed_by_peer(x))
        elif kind == "wrong_token":
            count(kind, handshake(b"not-the-token") is None)
        elif kind == "oversized_preamble":
            # With the token: a 24-byte preamble claiming a 60 MiB header (under the 64 MiB limit), then
            # silence; then one claiming 1 GiB (refused); then a 46-byte message whose string claims 1.5 GiB.
            x = handshake(token)
            if x is None:
                return count(kind, False)
            x.sendall(preamble(60 << 20) + b"\0" * 4096)
            time.sleep(0.5)
            x.close()
            x = handshake(token)
            x.sendall(preamble(1 << 30))
            refused = closed_by_peer(x)
            x.close()
            x = handshake(token)
            header = struct.pack("<Q", 1536 << 20) + b"x" * 14
            x.sendall(preamble(len(header)) + header)
            refused = closed_by_peer(x) and refused
            x.close()
            count(kind, refused)
    except (OSError, ConnectionError) as e:
        count(kind, False)

def client_once(results):
    t0 = time.time()
    p = subprocess.run([example, "--n", "3000", "--chunk", "500", "--scheduler", address],
                       capture_output=True, text=True, timeout=120)
    value = next((l.split()[1] for l in p.stdout.splitlines() if l.startswith("value")), None)
    results.append({"rc": p.returncode, "value": value, "seconds": round(time.time() - t0, 2)})

def clients(n):
    results = []
    ts = [threading.Thread(target=client_once, args=(results,)) for _ in range(n)]
    for t in ts: t.start()
    for t in ts: t.join()
    return results

time.sleep(2)
baseline = clients(2)
emit(at="before", clients=baseline)
snapshot("before")
reference = baseline[0]["value"]

deadline = time.time() + minutes * 60
stop = threading.Event()
def attacker(kinds):
    while not stop.is_set():
        for k in kinds:
            if stop.is_set():
                break
            attack_once(k)
attackers = [threading.Thread(target=attacker, args=(["idle_connections"],)),
             threading.Thread(target=attacker, args=(["oversized_hello", "garbage_bytes", "wrong_token", "oversized_preamble"],))]
for t in attackers: t.start()

during, round_no = [], 0
while time.time() < deadline:
    round_no += 1
    # Every third round a worker is stopped for 8 s (its tasks go elsewhere), every fifth one killed.
    victim = None
    if round_no % 3 == 0 or round_no % 5 == 0:
        kids = children(nannies[round_no % len(nannies)])
        victim = kids[0] if kids else None
    if victim and round_no % 5 == 0:
        os.kill(victim, signal.SIGKILL)
        emit(at="during", event="worker killed", pid=victim)
    elif victim:
        os.kill(victim, signal.SIGSTOP)
        def resume(v=victim):
            try:
                os.kill(v, signal.SIGCONT)
            except ProcessLookupError:
                pass  # killed meanwhile (a later round) and restarted by its nanny
        threading.Timer(8, resume).start()
        emit(at="during", event="worker stopped for 8 s", pid=victim)
    during += clients(2)
    snapshot(f"round {round_no}")
stop.set()
for t in attackers: t.join()
time.sleep(8)  # stopped workers continued, idle connections timed out
after = clients(2)
emit(at="after", clients=after)
snapshot("after")
allr = baseline + during + after
wrong = [r for r in allr if r["rc"] != 0 or r["value"] != reference]
emit(summary=True, minutes=minutes, client_runs=len(allr), wrong_or_failed=len(wrong), attacks={k: {"ok": v[0], "not_ok": v[1]} for k, v in counts.items()},
     scheduler_alive=not proc_stats(sched_pid).get("gone", False), examples_of_wrong=wrong[:3])
sys.exit(1 if wrong else 0)
PY
) || rc=$?
echo "soak: logs in $DIR" >&2
exit "$rc"
