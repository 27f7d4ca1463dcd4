#!/usr/bin/env python3
# A stand-in for siemctl in the playbook tests: it keeps a coordination record in FAKE_STATE (a
# JSON file) the way siemctl keeps it in the indexer, and logs every call to FAKE_LOG. The host it
# runs "on" is FAKE_HOST (each inventory host's env file sets it).
#   FAKE_REORDER=1    after indexer/i2 is done the elected cluster manager moves to i3 (the order
#                     of the pending indexer entries is recomputed: i3 last)
#   FAKE_BUSY=m1      the first `upgrade node` of that host finds the turn's lease still held (exit 7)
#   FAKE_FAIL=m1      `upgrade node` on that host fails with a no-go rolled back (exit 10)
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

def current(rec):
    for e in rec["order"]:
        if e["state"] != "done":
            return e["name"]
    return ""

if args[:3] == ["upgrade", "apply", "--cluster"]:
    say("apply %s %s" % (host, target))
    if not os.path.exists(state):
        names = ["indexer/i2", "indexer/i3", "indexer/i1", "manager/m1", "manager/m2", "dashboard/d1"]
        save({"target": target, "phase": "rolling", "order": [{"name": n, "state": "pending"} for n in names]})
    sys.exit(0)
if args[:3] == ["upgrade", "status", "--cluster"]:
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
    busy = host + ".busy"
    if os.environ.get("FAKE_BUSY") == host and not os.path.exists(os.path.join(os.path.dirname(state), busy)):
        open(os.path.join(os.path.dirname(state), busy), "w").close()
        say("busy %s %s" % (host, cur))
        sys.exit(7)
    if os.environ.get("FAKE_FAIL") == host:
        say("fail %s %s" % (host, cur))
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
if args[:3] == ["upgrade", "finish", "--cluster"]:
    say("finish %s %s" % (host, target))
    rec = load()
    rec["phase"] = "done"
    save(rec)
    sys.exit(0)
print("fake siemctl: unexpected call %s" % args, file=sys.stderr)
sys.exit(2)
