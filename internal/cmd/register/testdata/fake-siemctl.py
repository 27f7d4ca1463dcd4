#!/usr/bin/env python3
# A stand-in for siemctl in the playbook tests: it keeps a coordination record in FAKE_STATE (a
# JSON file) the way siemctl keeps it in the indexer, and logs every call to FAKE_LOG. The host it
# runs "on" is FAKE_HOST (each inventory host's env file sets it).
#   FAKE_REORDER=1    after indexer/i2 is done the elected cluster manager moves to i3 (the order
#                     of the pending indexer entries is recomputed: i3 last)
#   FAKE_BUSY=m1      the first `upgrade node` of that host finds the turn's lease still held (exit 7)
#   FAKE_TAKE_REORDER=i3  the first `upgrade node` of that host, in its turn, finds the election moved
#                     to its node: the take re-orders (that node last of the pending indexers) and
#                     exits 7 naming the entry whose turn it is now
#   FAKE_BUSY_ALWAYS=m1  every `upgrade node` of that host finds the lease held (exit 7)
#   FAKE_FAIL=m1      `upgrade node` on that host fails (exit 1: the roll stops there, resumable)
#   FAKE_NOGO=i3      `upgrade node` on that host ends in a no-go past the indexer's start: the
#                     entry failed, the run rolling-back, exit 10 (the deployment rolls back)
#   FAKE_RB_FAIL=i2:indexer-up  `rollback --cluster --phase indexer-up` fails once on that host
#   FAKE_NO_TARGET=m2 `upgrade plan --cluster` on that host: its packages do not offer the target
#                     (its preflight/versions gate NO-GO, exit 3)
# The rollback (`rollback --cluster --phase P`) keeps the record as siemctl does: prepare moves it to
# rolling-back and keeps a copy per host; once an indexer node is down the cluster (and the record)
# does not answer until restore writes the copy back with the indexer entries done and the
# manager/dashboard turns open; node takes those turns (exit 7 when not this host's); finish ends
# the run rolled-back. A phase a host has done is not done twice (siemctl's journal).
import json, os, sys

state, log, host = os.environ["FAKE_STATE"], os.environ["FAKE_LOG"], os.environ["FAKE_HOST"]
args = [a for a in sys.argv[1:] if a not in ("--yes",)]
target = ""
if "--to" in args:
    i = args.index("--to")
    target = args[i + 1]
    del args[i:i + 2]
MINE = {"i1": ["indexer/i1"], "i2": ["indexer/i2"], "i3": ["indexer/i3"],
        "m1": ["manager/m1"], "m2": ["manager/m2"], "d1": ["dashboard/d1"]}

def say(line):
    with open(log, "a") as f:
        f.write(line + "\n")

def load():
    with open(state) as f:
        return json.load(f)

def save(rec):
    with open(state, "w") as f:
        json.dump(rec, f)

def here(name):
    return os.path.join(os.path.dirname(state), name)

def cluster_down():
    return os.path.exists(here("cluster.down"))

def current(rec):
    for e in rec["order"]:
        if e["state"] != "done":
            return e["name"]
    return ""

if args[:3] == ["upgrade", "plan", "--cluster"]:
    # The plan from this host: its preflight/versions gate judges this host's own packages.
    open(here(host + ".planned"), "w").close()
    gate = {"step": "preflight/versions", "kind": "gate.versions", "verdict": "GO", "detail": "candidates of %s installable" % target, "ignorable": False}
    if os.environ.get("FAKE_NO_TARGET") == host:
        gate.update(verdict="NO-GO", detail="wazuh-manager %s-1 is not installable (available: 4.9.0-1)" % target)
    print(json.dumps({"target": target, "verdict": gate["verdict"], "preflight": [
        {"step": "preflight/cluster-green", "kind": "gate.cluster_health", "verdict": "GO", "detail": "green", "ignorable": False}, gate]}))
    sys.exit(0 if gate["verdict"] == "GO" else 3)
if args[:3] == ["upgrade", "apply", "--cluster"]:
    say("apply %s %s" % (host, target))
    if not os.path.exists(state):
        names = ["indexer/i2", "indexer/i3", "indexer/i1", "manager/m1", "manager/m2", "dashboard/d1"]
        save({"target": target, "phase": "rolling", "order": [{"name": n, "state": "pending"} for n in names]})
    sys.exit(0)
if args[:3] == ["upgrade", "status", "--cluster"]:
    if cluster_down():
        print("error: the indexer does not answer (connection refused)", file=sys.stderr)
        sys.exit(5)
    if not os.path.exists(state):
        print("error: no rolling upgrade run in the cluster", file=sys.stderr)
        sys.exit(1)
    rec = load()
    print(json.dumps({"record": rec, "current": current(rec), "this_host": {"host": host, "mine": MINE[host]}}))
    sys.exit(0)
if args[:2] == ["upgrade", "node"]:
    rec = load()
    if target != rec["target"]:
        print("error: upgrade node --to %s: the run is to %s" % (target, rec["target"]), file=sys.stderr)
        sys.exit(2)
    cur = current(rec)
    if cur not in MINE[host]:
        print("error: not this host's turn: %s's" % cur, file=sys.stderr)
        sys.exit(7)
    if os.environ.get("FAKE_BUSY_ALWAYS") == host:
        say("busy %s %s" % (host, cur))
        print("error: not this host's turn: it is %s's, held by host x until later" % cur, file=sys.stderr)
        sys.exit(7)
    busy = host + ".busy"
    if os.environ.get("FAKE_BUSY") == host and not os.path.exists(os.path.join(os.path.dirname(state), busy)):
        open(os.path.join(os.path.dirname(state), busy), "w").close()
        say("busy %s %s" % (host, cur))
        sys.exit(7)
    moved = here(host + ".moved")
    if os.environ.get("FAKE_TAKE_REORDER") == host and cur.startswith("indexer/") and not os.path.exists(moved):
        open(moved, "w").close()
        o = rec["order"]
        pending = [e for e in o if e["name"].startswith("indexer/") and e["state"] == "pending"]
        idx = [i for i, e in enumerate(o) if e["name"].startswith("indexer/") and e["state"] == "pending"]
        pending = [e for e in pending if e["name"] != cur] + [e for e in pending if e["name"] == cur]
        for i, e in zip(idx, pending):
            o[i] = e
        save(rec)
        say("moved %s %s" % (host, cur))
        print("error: not this host's turn: it is %s's, not held" % current(rec), file=sys.stderr)
        sys.exit(7)
    if os.environ.get("FAKE_FAIL") == host:
        say("fail %s %s" % (host, cur))
        sys.exit(1)
    if os.environ.get("FAKE_NOGO") == host:
        say("nogo %s %s" % (host, cur))
        for e in rec["order"]:
            if e["name"] == cur:
                e["state"] = "failed"
        rec["phase"] = "rolling-back"
        rec["rollback"] = {"entry": cur, "cause": "indexer/rejoined: not back in the cluster"}
        save(rec)
        print("%s: no-go: indexer/rejoined: not back in the cluster\n  the node's log: master not discovered yet" % cur, file=sys.stderr)
        sys.exit(10)
    say("node %s %s" % (host, cur))
    for e in rec["order"]:
        if e["name"] == cur:
            e["state"] = "done"
    if os.environ.get("FAKE_REORDER") and cur == "indexer/i2":
        o = rec["order"]
        o[1], o[2] = o[2], o[1]  # i3 elected now: it goes last of the indexers
    save(rec)
    sys.exit(0)
if args[:2] == ["rollback", "--cluster"]:
    phase = args[args.index("--phase") + 1]
    done = here("%s.%s.done" % (host, phase))
    if os.path.exists(done):
        sys.exit(0)  # done on this host for this roll: nothing to do
    fail = os.environ.get("FAKE_RB_FAIL", "")
    if fail == "%s:%s" % (host, phase) and not os.path.exists(here(fail + ".failed")):
        open(here(fail + ".failed"), "w").close()
        say("rb-fail %s %s" % (host, phase))
        sys.exit(1)
    if phase == "prepare":
        if cluster_down():
            if not os.path.exists(here(host + ".kept")):
                print("error: the cluster does not answer and this host kept no record", file=sys.stderr)
                sys.exit(5)
        else:
            rec = load()
            if rec["phase"] == "rolled-back":
                sys.exit(0)
            if rec["phase"] != "rolling-back":
                if host != "i1":
                    print("error: the snapshot is recorded on i1: prepare there first", file=sys.stderr)
                    sys.exit(1)
                rec["phase"] = "rolling-back"
                rec["rollback"] = {"entry": "", "cause": "siemctl rollback --cluster"}
                save(rec)
            open(here(host + ".kept"), "w").close()
    elif phase in ("indexer-down", "indexer-up"):
        if not host.startswith("i"):
            sys.exit(2)
        if not os.path.exists(here(host + ".kept")):
            print("error: no copy of the record kept on this host: prepare first", file=sys.stderr)
            sys.exit(1)
        if phase == "indexer-down":
            open(here("cluster.down"), "w").close()
        else:
            open(here(host + ".up"), "w").close()
    elif phase == "restore":
        if host != "i1":
            print("error: restore runs where upgrade apply --cluster ran (i1)", file=sys.stderr)
            sys.exit(1)
        missing = [h for h in ("i1", "i2", "i3") if not os.path.exists(here(h + ".up"))]
        if missing:
            print("error: the cluster cannot form: %s not started" % ", ".join(missing), file=sys.stderr)
            sys.exit(1)
        rec = load()
        rec["phase"] = "rolling-back"
        for e in rec["order"]:
            e["state"] = "done" if e["name"].startswith("indexer/") else "pending"
        rec.setdefault("rollback", {})["turns"] = True
        save(rec)
        os.remove(here("cluster.down"))
    elif phase == "node":
        rec = load()
        cur = current(rec)
        if rec["phase"] != "rolling-back" or not rec.get("rollback", {}).get("turns") or cur not in MINE[host]:
            print("error: not this host's turn: %s's" % cur, file=sys.stderr)
            sys.exit(7)
        for e in rec["order"]:
            if e["name"] == cur:
                e["state"] = "done"
        save(rec)
        phase = "node " + cur
    elif phase == "finish":
        rec = load()
        if current(rec):
            print("error: entries not rolled back yet", file=sys.stderr)
            sys.exit(3)
        rec["phase"] = "rolled-back"
        save(rec)
    if not phase.startswith("node "):
        open(done, "w").close()
    say("rb-%s %s" % (phase, host))
    sys.exit(0)
if args[:3] == ["upgrade", "finish", "--cluster"]:
    say("finish %s %s" % (host, target))
    rec = load()
    rec["phase"] = "done"
    save(rec)
    sys.exit(0)
print("fake siemctl: unexpected call %s" % args, file=sys.stderr)
sys.exit(2)
