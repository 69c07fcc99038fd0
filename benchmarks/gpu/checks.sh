#!/usr/bin/env bash
# First GPU command: the gpu-marked tests, the Fig. 1 asymmetry and update-memory benchmarks
# on a project-built 85M-parameter model, and the seconds per step of the four tiny (a)/(e) arms, each
# arm alone on the GPU. From the repository root, after `source benchmarks/gpu/setup.sh .whl`:
#     bash benchmarks/gpu/checks.sh            (about 8 minutes on one H100)
# Writes results/gpu/ (CSV, logs, the env report); with $OUT set (the device tool), packs it there.
set -u
R=results/gpu
mkdir -p $R/logs
pack() { [ -n "${OUT:-}" ] && tar czf "$OUT/gpu_checks.tgz" --exclude='*/checkpoints' --exclude='*/final' $R 2>/dev/null; true; }
stage() { echo "=== $(date -u +%H:%M:%S) $*"; }

stage env
python3 -m benchmarks.gpu.env_report | tee $R/env.json
nvidia-smi | tee $R/logs/nvidia-smi.txt | head -15

stage "build tiny:llama-arith_85m on cuda (background)"
timeout 240 python3 -m pods_repro.models build tiny:llama-arith_85m --device cuda > $R/logs/build_85m.log 2>&1 &
BUILD=$!

stage "pytest -m gpu"
timeout 300 python3 -m pytest -m gpu -p no:cacheprovider -n 4 -q -rA tests/trainer/test_gpu.py \
    tests/config/test_fidelity.py::test_load_in_4bit_trains_lora_on_a_4bit_base > $R/logs/pytest_gpu.log 2>&1
echo "pytest rc=$?"; tail -25 $R/logs/pytest_gpu.log; pack

wait $BUILD; echo "build rc=$?"; tail -5 $R/logs/build_85m.log
M85=tiny:llama-arith_85m
stage "asymmetry, 85M, bf16, full parameters"
timeout 150 python3 -m pods_repro bench asymmetry --model $M85 --device cuda --dtype bfloat16 --repeats 3 \
    --rollouts 8 16 32 64 128 256 512 --prompt-len 64 --completion-len 256 --out $R/asymmetry_85m.csv 2>&1 | grep -v Loading
stage "cost model, 85M"
python3 -m pods_repro bench cost_model $R/asymmetry_85m.csv --m 16 --out $R/cost_model_85m.csv 2>&1 | tail -30
pack
stage "update memory, 85M, n=64 m=16"
timeout 120 python3 -m pods_repro bench memory --model $M85 --device cuda --dtype bfloat16 --n 64 --m 16 \
    --prompt-len 64 --completion-len 256 --out $R/memory_85m.csv 2>&1 | grep -v Loading
TINY=${PODS_GPU_TINY_MODEL:-tiny:llama-arith_warm_tt}  # the tiny (a)/(e) model (carried; earlier tables used tiny:llama-arith and _warm)
stage "asymmetry, $TINY (the CPU table's lengths), float32"
timeout 90 python3 -m pods_repro bench asymmetry --model $TINY --device cuda --dtype float32 --repeats 3 \
    --rollouts 8 16 32 64 128 256 512 --prompt-len 64 --completion-len 128 --out $R/asymmetry_tiny.csv 2>&1 | grep -v Loading
python3 -m pods_repro bench cost_model $R/asymmetry_tiny.csv --m 16 --out $R/cost_model_tiny.csv 2>&1 | tail -12
pack

stage "seconds per step of the tiny (a)/(e) arms, each alone on the GPU (40 steps)"
T="budget.max_time_s=null budget.max_steps=40 eval.every_s=null eval.every_steps=1000 eval.max_examples=8"
T="$T checkpoint.every_steps=1000 policy.model=$TINY hardware.device=cuda"
for arm in "a grpo experiments/tiny_a.yaml rollout.n=16 rollout.m=16" \
           "a pods experiments/tiny_a.yaml rollout.n=64 rollout.m=16" \
           "e grpo_ga experiments/tiny_e.yaml rollout.n=8 rollout.m=8 optim.grad_accum=8" \
           "e pods experiments/tiny_e.yaml rollout.n=32 rollout.m=8"; do
    set -- $arm
    timeout 120 python3 -m pods_repro train $3 seed=0 out_dir=$R/timing/$1_$2 $4 $5 ${6:-} $T > $R/logs/timing_$1_$2.log 2>&1
    python3 -c "import json,sys; s=json.load(open('$R/timing/$1_$2/summary.json')); print('$1 $2', {k: s[k] for k in ('steps','s_per_step','gen_s_per_step','update_s_per_step','peak_mem_mb')})" \
        || tail -20 $R/logs/timing_$1_$2.log
done
pack
stage done
