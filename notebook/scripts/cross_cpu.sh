#!/usr/bin/env bash
# Issue 10, criterion 1 on a second kind of CPU: do the tiny scale's bits depend on the machine? On the GPU
# machine's own CPU (16 cores, another x86-64 model than the CI host's), with its own torch, this
#   1. builds tiny:llama-arith_warm from scratch under the AVX2 pin (pods_repro.kernels) into a fresh cache and
#      prints its weights_sha256 beside the carried (pinned) build's;
#   2. trains tiny runs on the CPU, one thread each as the workflow runs them, with the main job's exact
#      arguments and the carried pinned model: (e)'s two main arms on seeds 0..E-1 (150 steps) and (a)'s
#      two main arms on seed 0 (600 steps), then packs them (no checkpoints) for scripts/compare_runs.py.
# From the repository root, after `source benchmarks/gpu/setup.sh .whl` (carry the pinned
# resources/models/tiny/llama-arith_warm):
#     bash notebook/scripts/cross_cpu.sh [E]          (E = 5 seeds: 14 processes, about 6 minutes)
set -u
E=${1:-5}
R=results/cross_cpu
DEADLINE=${PODS_CROSS_DEADLINE_S:-420}
mkdir -p $R/logs
stage() { echo "=== $(date -u +%H:%M:%S) $*"; }
pack() { [ -n "${OUT:-}" ] && tar czf "$OUT/cross_cpu.tgz" --exclude='*/checkpoints' --exclude='*/final' $R 2>/dev/null; true; }
export OMP_NUM_THREADS=1 PODS_NO_PROGRESS=1
stage env
python3 -c "import platform, torch; from pods_repro.kernels import cpuinfo_field, pin_cpu_kernels; k = pin_cpu_kernels(); \
print(cpuinfo_field('model name'), '|', platform.machine(), '| torch', torch.__version__, '| pin', k, \
torch.backends.cpu.get_cpu_capability())" | tee $R/env.txt
grep -o -w 'avx512f\|avx2\|amx_tile' /proc/cpuinfo | sort | uniq -c | tee -a $R/env.txt

stage "build tiny:llama-arith_warm from scratch on the CPU (background)"
mkdir -p $R/fresh_cache
PODS_CACHE=$PWD/$R/fresh_cache timeout $DEADLINE python3 -m pods_repro.models build tiny:llama-arith_warm \
    > $R/logs/build_warm.log 2>&1 &
pids=($!)

COMMON="budget.max_time_s=null eval.every_s=null policy.model=tiny:llama-arith_warm eval.max_examples=400"
A="experiments/tiny_a.yaml rollout.rule=max_variance budget.max_steps=600 eval.every_steps=25 $COMMON"
A="$A eval.others_every=4"
E_="experiments/tiny_e.yaml rollout.rule=max_variance budget.max_steps=150 eval.every_steps=10 $COMMON"
launch() {  # letter name seed args...
    local letter=$1 name=$2 s=$3; shift 3
    mkdir -p $R/logs/train/$letter/$name
    timeout $DEADLINE python3 -m pods_repro train "$@" seed=$s out_dir=$R/runs/$letter/$name/seed~$s \
        > $R/logs/train/$letter/$name/seed~$s.log 2>&1 &
    pids+=($!)
}
t0=$(date +%s)
launch a "sel~max_variance_n~16_m~16" 0 $A rollout.n=16 rollout.m=16
launch a "sel~max_variance_n~64_m~16" 0 $A rollout.n=64 rollout.m=16
for s in $(seq 0 $((E - 1))); do
    launch e "sel~max_variance_n~8_m~8_ga~8" $s $E_ rollout.n=8 rollout.m=8 optim.grad_accum=8
    launch e "sel~max_variance_n~32_m~8" $s $E_ rollout.n=32 rollout.m=8
done
stage "started ${#pids[@]} processes"
while :; do
    alive=0; for p in "${pids[@]}"; do kill -0 $p 2>/dev/null && alive=$((alive + 1)); done
    done_n=$(ls $R/runs/*/*/*/summary.json 2>/dev/null | wc -l)
    echo "$(date -u +%H:%M:%S) $(( $(date +%s) - t0 ))s: $alive running, $done_n runs finished"
    [ $alive -eq 0 ] && break
    sleep 20
done
stage "the fresh build"
tail -3 $R/logs/build_warm.log
python3 - <<'EOF' | tee $R/build_sha.txt
import json
fresh = json.load(open("results/cross_cpu/fresh_cache/tiny/llama-arith_warm/pods_tiny.json"))
carried = json.load(open("resources/models/tiny/llama-arith_warm/pods_tiny.json"))
for k in ("weights_sha256", "sft_steps_done", "stop_reason", "cpu"):
    print(f"{k}: fresh {fresh.get(k)} | carried {carried.get(k)}")
print("same weights:", fresh["weights_sha256"] == carried["weights_sha256"])
EOF
for f in $R/runs/*/*/*/summary.json; do python3 -c "import json,sys; s=json.load(open('$f')); \
print('$f'.split('/runs/')[1], s['status'], s['steps'], round(s['s_per_step'], 3))"; done
pack
stage done
