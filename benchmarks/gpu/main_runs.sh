#!/usr/bin/env bash
# Do the tiny results stay the same bits on a second machine with every core busy? The main job's tiny model
# builds and training runs, on the GPU machine's CPU, all at once (one thread each, as the workflow runs them).
# The commands are the main job's own, as `snakemake -n -p --forceall` prints them here; make the list
# with benchmarks/gpu/main_runs_list.py (longest first, from an earlier job's run times). The builds
# write into a fresh cache (results/fresh_cache), so the runs start from the carried models
# (resources/models/tiny/*, the ones this host built) and the builds check that the machine rebuilds
# them bit for bit. From the repository root, after `source benchmarks/gpu/setup.sh .whl`:
#     bash benchmarks/gpu/main_runs.sh .xhost/cmds.txt [PROCESSES]
# What comes back is $OUT/main_runs.tgz (runs without checkpoints and weights, logs, the builds' records,
# each job's exit status and seconds). Compare here:
#     python scripts/compare_runs.py [--outcomes] OLD_JOB/results/runs xhost/results/runs
# (--outcomes on a CPU of another vendor: the sampled rewards and evaluations, not the bits).
# PODS_MAIN_RUNS_DEADLINE_S (default 500, counted from the jobs' start) stops what still runs then and
# packs what finished; a job not started by then is listed in results/xhost_skipped.txt.
set -u
CMDS=${1:?give the file of commands made by main_runs_list.py}
P=${2:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}  # nproc obeys OMP_NUM_THREADS, which setup.sh sets to 1
DEADLINE=${PODS_MAIN_RUNS_DEADLINE_S:-500}
export OMP_NUM_THREADS=1 PODS_NO_PROGRESS=1 PODS_CACHE=${PODS_CACHE:-$PWD/resources/models}
T0=$(date +%s)
mkdir -p results/fresh_cache /tmp/pods_bin
rm -f results/xhost_jobs.txt results/xhost_skipped.txt  # this call's records only
# The workflow's rules call `python`; the machine's image names its interpreter python3.
command -v python >/dev/null || ln -sf "$(command -v python3)" /tmp/pods_bin/python
export PATH=/tmp/pods_bin:$PATH
stage() { echo "=== $(date -u +%H:%M:%S) +$(($(date +%s) - T0))s $*"; }

stage env
python -c "import platform, torch, transformers, trl; from pods_repro.kernels import cpuinfo_field, pin_cpu_kernels; \
k = pin_cpu_kernels(); print(cpuinfo_field('model name'), '|', platform.machine(), '| torch', torch.__version__, \
'| transformers', transformers.__version__, '| trl', trl.__version__, '| pin', k, torch.backends.cpu.get_cpu_capability())" \
    | tee results/xhost_env.txt
echo "cores: $(env -u OMP_NUM_THREADS nproc), processes: $P, deadline: ${DEADLINE}s, jobs: $(grep -c . "$CMDS")" | tee -a results/xhost_env.txt

job() {
    local cmd=$1 rem start rc log
    rem=$((T_END - $(date +%s)))
    if [ "$rem" -le 5 ]; then echo "$cmd" >> results/xhost_skipped.txt; return 0; fi
    log=$(grep -o '> *[^ ]*\.log' <<< "$cmd" | head -1 | tr -d '> ')
    [ -n "$log" ] && mkdir -p "$(dirname "$log")"
    case $cmd in *"pods_repro.models build"*) cmd="PODS_CACHE=$PWD/results/fresh_cache $cmd" ;; esac
    start=$(date +%s)
    timeout "$rem" bash -c "$cmd"
    rc=$?
    echo "$rc $(($(date +%s) - start)) $cmd" >> results/xhost_jobs.txt
}
export -f job

export T_END=$(($(date +%s) + DEADLINE))  # the deadline counts from the jobs' start
stage "started"
rm -f results/.xhost_stop
(i=0; while [ ! -e results/.xhost_stop ]; do  # a progress line every 30 s; ends within 1 s of the jobs
    sleep 1; i=$((i + 1))
    [ $((i % 30)) -eq 0 ] && echo "$(date -u +%H:%M:%S) +$(($(date +%s) - T0))s:" \
        "$(grep -c . results/xhost_jobs.txt 2>/dev/null || echo 0) jobs done"
done) &
mon=$!
grep . "$CMDS" | xargs -d '\n' -P "$P" -n 1 bash -c 'job "$1"' _
touch results/.xhost_stop && wait $mon && rm -f results/.xhost_stop
stage "all jobs ended or skipped"
awk '$1 != 0 { bad++ } END { print NR " jobs ran, " bad + 0 " with a nonzero exit" }' results/xhost_jobs.txt
[ -f results/xhost_skipped.txt ] && echo "$(wc -l < results/xhost_skipped.txt) jobs not started (deadline)"

python - <<'EOF' | tee results/xhost_builds.txt
import glob, json, os
for fresh in sorted(glob.glob("results/fresh_cache/tiny/*/pods_tiny.json")):
    name = fresh.split("/")[-2]
    carried = f"resources/models/tiny/{name}/pods_tiny.json"
    f = json.load(open(fresh))
    c = json.load(open(carried)) if os.path.exists(carried) else {}
    same = f.get("weights_sha256") == c.get("weights_sha256")
    print(f"{name}: fresh {f.get('weights_sha256', '')[:12]} ({f.get('sft_steps_done')} SFT steps) | "
          f"carried {c.get('weights_sha256', '')[:12]} ({c.get('sft_steps_done')}) | same weights: {same}")
EOF
if [ -n "${OUT:-}" ]; then
    tar czf "$OUT/main_runs.tgz" --exclude='*/checkpoints' --exclude='*/final' --exclude='*.safetensors' \
        results/runs results/logs results/xhost_*.txt results/fresh_cache 2>/dev/null
    ls -la "$OUT"
fi
stage done
