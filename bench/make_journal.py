#!/usr/bin/env python3
"""bench/make_journal.py - journal lines (src/lib/compile/why.h) made up, for
`cjc report`'s benchmark (bench/report_bench) and for tests/report_test.sh.

    make_journal.py LINES [DAYS] > FILE

LINES records, their times spread over the DAYS (default 14) that end now,
oldest first, shaped like the launcher's: hits with saved_ms, misses with
duration_ms, facts and the changes `cjc why` names, a few uncacheable and
failed compiles; the hit rate rises from about 30 % to 95 % over the span.
Deterministic for given arguments (a fixed seed).
"""
import json
import random
import sys
import time

TARGETS = ["app", "core", "kernels", "solver", "tests", "bench", "io", "render"]
NVCC = {"path": "/usr/local/cuda-13.0/bin/nvcc",
        "version": "Build cuda_13.0.r13.0/compiler.36424714_0", "digest": "a" * 64}
HOST = {"path": "/usr/bin/x86_64-linux-gnu-gcc-12",
        "version": "warranty; not even for MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.",
        "digest": "b" * 64}
RULE = "relative paths are keyed by where they resolve; the working directory is not in the key"


def changes_for(rng, src):
    """A miss's changes, and compared_with: as compile/why.c records them."""
    kind = rng.choices(["dependency", "argument", "environment", "compiler", "new", "evicted"],
                       [40, 20, 8, 4, 20, 8])[0]
    earlier = "%064x" % rng.getrandbits(256)
    if kind == "dependency":
        header = src.rsplit("/", 1)[0] + "/include/common_%d.h" % rng.randrange(12)
        return [{"path": header, "old": "c" * 64, "new": "d" * 64, "kind": "dependency"}], earlier
    if kind == "argument":
        return [{"argument": "-DTILE=%d" % (16 << rng.randrange(4)), "kind": "argument_added"},
                {"argument": "-DTILE=8", "kind": "argument_removed"}], earlier
    if kind == "environment":
        return [{"name": "NVCC_APPEND_FLAGS", "old": None, "new": {"sha256": "e" * 64},
                 "kind": "environment"}], earlier
    if kind == "compiler":
        return [{"which": "nvcc", "old": NVCC, "new": dict(NVCC, digest="f" * 64),
                 "kind": "compiler"}], earlier
    return [], (None if kind == "new" else earlier)


def record(rng, t, hit_rate):
    target = rng.choice(TARGETS)
    src = "/home/ci/builds/project/src/%s/kernel_%03d.cu" % (target, rng.randrange(400))
    r = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))}
    roll = rng.random()
    result = "hit" if roll < hit_rate else "uncacheable" if roll > 0.985 else \
        "failed" if roll > 0.98 else "miss"
    r["result"] = result
    if result == "uncacheable":
        r.update(source=None, output="/home/ci/builds/project/build/app", target=target,
                 cwd="/home/ci/builds/project/build",
                 reason="linking (no -c, -dc, --cubin, --fatbin or --ptx)")
        return r
    r.update(source=src, output=src.replace("/src/", "/build/") + ".o", target=target,
             cwd="/home/ci/builds/project/build")
    ms = int(rng.lognormvariate(8.3, 0.8))
    facts = {"args": ["-c", src, "-O3", "-std=c++17", "-gencode=arch=compute_90,code=sm_90"],
             "env": {}, "nvcc": NVCC, "host": HOST, "cwd": None, "cwd_keyed_by": None,
             "resolved": {}, "base_dir": None, "rule": RULE}
    entry = "%064x" % rng.getrandbits(256)
    if result == "hit":
        r.update(entry=entry, saved_ms=ms, facts=facts)
    elif result == "failed":
        r.update(facts=facts)
    else:
        changes, earlier = changes_for(rng, src)
        lookup = "nothing was cached with these arguments, source, compiler and environment"
        r.update(reason=lookup, entry=entry, published=True, duration_ms=ms, facts=facts,
                 compared_with=earlier, changes=changes)
        if earlier and not changes:
            r["note"] = ("entry %.12s was made before but the store no longer had it "
                         "(cleaned or evicted)" % earlier)
    return r


def main():
    lines = int(sys.argv[1])
    days = float(sys.argv[2]) if len(sys.argv) > 2 else 14.0
    rng = random.Random(1)
    end = int(time.time())
    span = int(days * 86400)
    out = sys.stdout
    for i in range(lines):
        frac = i / max(lines - 1, 1)
        t = end - span + int(span * frac)
        out.write(json.dumps(record(rng, t, 0.3 + 0.65 * frac), separators=(",", ":")))
        out.write("\n")


if __name__ == "__main__":
    main()
