#!/usr/bin/env bash
# Issue 10: which extra pin makes a second CPU kind reproduce this project's pinned bits? After
# notebook/scripts/cross_cpu.sh found the GPU machine's Intel Xeon (AVX512, AMX) parting from the AMD EPYC
# CI host under pods_repro.kernels' pin, this runs, on that machine's CPU, (1) kernel_fingerprint under each
# candidate pin (kernel_combos.sh) and (2) for each candidate that keeps the AMD host's bits, the
# tiny:llama-arith_warm build from scratch and (e)'s PODS arm on seed 0 (the main job's arguments), all at
# once, one thread each. From the repository root, after `source benchmarks/gpu/setup.sh .whl`:
#     bash notebook/scripts/cross_cpu_pins.sh        (about 4 minutes)
set -u
R=results/cross_cpu_pins
mkdir -p $R/logs
export OMP_NUM_THREADS=1 PODS_NO_PROGRESS=1
echo "=== $(date -u +%H:%M:%S) fingerprints"
bash notebook/scripts/kernel_combos.sh $R/fingerprints.jsonl
E="experiments/tiny_e.yaml rollout.rule=max_variance budget.max_steps=150 eval.every_steps=10 budget.max_time_s=null"
E="$E eval.every_s=null policy.model=tiny:llama-arith_warm eval.max_examples=400 rollout.n=32 rollout.m=8 seed=0"
pids=()
for name in pin onednn strict mklinstr all3; do  # the sets of kernel_combos.txt that keep the AMD host's bits
    vars=$(awk -v n=$name '$1 == n { $1 = ""; print }' notebook/scripts/kernel_combos.txt)
    mkdir -p $R/$name/cache
    env $vars PODS_CACHE=$PWD/$R/$name/cache timeout 400 python3 -m pods_repro.models build tiny:llama-arith_warm \
        > $R/logs/build_$name.log 2>&1 &
    pids+=($!)
    env $vars timeout 400 python3 -m pods_repro train $E out_dir=$R/$name/runs/e/sel~max_variance_n~32_m~8/seed~0 \
        > $R/logs/e_$name.log 2>&1 &
    pids+=($!)
done
echo "=== $(date -u +%H:%M:%S) started ${#pids[@]} processes"
wait
for f in $R/*/cache/tiny/llama-arith_warm/pods_tiny.json; do
    python3 -c "import json; c=json.load(open('$f')); print('$f'.split('/')[2], c['weights_sha256'][:12], c['sft_steps_done'])"
done
[ -n "${OUT:-}" ] && tar czf "$OUT/cross_cpu_pins.tgz" --exclude='*/checkpoints' --exclude='*/final' \
    --exclude='*.safetensors' $R
echo "=== $(date -u +%H:%M:%S) done"
