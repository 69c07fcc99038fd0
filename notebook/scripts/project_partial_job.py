"""Project the full main job from a partial one: measured per-job seconds where a job finished, the mean of
its group (same run folder, else same setting) where it did not; then pods_repro.analysis.jobtime.project."""
import re, subprocess, sys, statistics
from pathlib import Path
from pods_repro.analysis import jobtime

root = Path(sys.argv[1])  # the clone (its results/ is the workflow root)
done = {r["name"]: r for r in jobtime.job_table(root / "results")}
dry = subprocess.run([str(root / ".venv/bin/snakemake"), "-n", "--nolock", "--config",
                      "released_logs=../shared/reference/pods-released-results"],
                     cwd=root, capture_output=True, text=True).stdout
todo = sorted(set(re.findall(r"benchmark: results/logs/(\S+)\.benchmark\.tsv", dry)) - set(done))
def group(name):  # train/a/sel~.../seed~3 -> train/a/sel~...
    return name.rsplit("/", 1)[0]
by_group, by_setting = {}, {}
for n, r in done.items():
    by_group.setdefault(group(n), []).append(r["seconds"])
    by_setting.setdefault("/".join(n.split("/")[:2]), []).append(r["seconds"])
rows, est = list(done.values()), 0
model_of = {}
for n, r in done.items():
    if r["kind"] == "run": model_of[group(n)] = r["model"]
for n in todo:
    kind = "build" if n.startswith("models/") else "run" if n.startswith("train/") else "other"
    g = group(n); s = by_group.get(g) or by_setting.get("/".join(n.split("/")[:2]))
    if not s:
        s = [r["seconds"] for r in done.values() if r["kind"] == "run" and not r["name"].startswith("train/a/")]
        print("estimated from the (e)/(f) run mean:", n)
    est += 1
    rows.append({"kind": kind, "name": n, "model": model_of.get(g, ""), "seconds": statistics.mean(s)})
runs_done = sum(1 for r in done.values() if r["kind"] == "run")
print(f"jobs measured {len(done)} (runs {runs_done}), estimated {est}; one-core total {sum(r['seconds'] for r in rows)/3600:.2f} h")
for k in (2, 8, 16):
    print(f"  replay on {k:2d} cores: {jobtime.project(rows, k)/60:.0f} min")
half = [r for r in rows if not (r["name"].startswith("train/a/sel~max_variance_n~16_m~16/") or r["name"].startswith("train/a/sel~max_variance_n~64_m~16/")) or int(r["name"].rsplit("~", 1)[1]) < 32]
print(f"with (a) on 32 seeds per arm: {len(half)} jobs; replay on 2 cores {jobtime.project(half, 2)/60:.0f} min, 8 cores {jobtime.project(half, 8)/60:.0f} min")
print(f"measured replay check: the finished jobs alone on 2 cores {jobtime.project(list(done.values()), 2)/60:.0f} min")
for g, s in sorted(by_group.items()):
    print(f"  {g:55s} n={len(s):3d} mean {statistics.mean(s):6.1f} s")
