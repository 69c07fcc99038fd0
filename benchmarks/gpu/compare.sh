#!/usr/bin/env bash
# Second GPU command: the tiny (a) and (e) comparisons on the GPU, SEEDS per arm, with the
# tiny scale's budgets and evaluations (config/config.yaml scales.tiny: (a) 600 steps, grid 25; (e) 150
# steps, grid 10; 400-problem evaluations; float32; the model of config.yaml's tiny (a)/(e), the tag-token
# tiny:llama-arith_warm_tt, or $PODS_GPU_TINY_MODEL: an earlier table used tiny:llama-arith_warm), then the
# workflow's analysis (pods_repro.analysis collect, time-to-peak with the released logs' s/step, levels,
# plateau). All the runs share the GPU at once (16 CPU cores; each run is one process), so their
# seconds per step are measured under that sharing: checks.sh measures each arm alone.
# From the repository root, after `source benchmarks/gpu/setup.sh .whl`:
#     bash benchmarks/gpu/compare.sh [SEEDS] [SETTINGS]   (defaults "0 1 2" and "a e")
set -u
SEEDS=${1:-0 1 2}
SETTINGS=${2:-a e}
R=results/gpu
DEADLINE=${PODS_GPU_DEADLINE_S:-480}   # stop waiting for runs after this many seconds
mkdir -p $R/logs
pack() { [ -n "${OUT:-}" ] && tar czf "$OUT/gpu_compare_${SETTINGS// /}.tgz" --exclude='*/checkpoints' --exclude='*/final' $R/runs $R/tables $R/logs 2>/dev/null; true; }
TINY=${PODS_GPU_TINY_MODEL:-tiny:llama-arith_warm_tt}
COMMON="budget.max_time_s=null eval.every_s=null policy.model=$TINY eval.max_examples=400 hardware.device=cuda"
A="experiments/tiny_a.yaml rollout.rule=max_variance budget.max_steps=600 eval.every_steps=25 eval.others_every=4 $COMMON"
E="experiments/tiny_e.yaml rollout.rule=max_variance budget.max_steps=150 eval.every_steps=10 $COMMON"
pids=()
t0=$(date +%s)
for s in $SEEDS; do
    for run in "a sel~max_variance_n~16_m~16 $A rollout.n=16 rollout.m=16" \
               "a sel~max_variance_n~64_m~16 $A rollout.n=64 rollout.m=16" \
               "e sel~max_variance_n~8_m~8_ga~8 $E rollout.n=8 rollout.m=8 optim.grad_accum=8" \
               "e sel~max_variance_n~32_m~8 $E rollout.n=32 rollout.m=8"; do
        set -- $run
        letter=$1 name=$2; shift 2
        case " $SETTINGS " in *" $letter "*) ;; *) continue ;; esac
        mkdir -p $R/logs/train/$letter/$name
        python3 -m pods_repro train "$@" seed=$s out_dir=$R/runs/$letter/$name/seed~$s \
            > $R/logs/train/$letter/$name/seed~$s.log 2>&1 &
        pids+=($!)
    done
done
echo "started ${#pids[@]} runs on $TINY"
while :; do
    alive=0; for p in "${pids[@]}"; do kill -0 $p 2>/dev/null && alive=$((alive + 1)); done
    el=$(( $(date +%s) - t0 ))
    done_n=$(ls $R/runs/*/*/*/summary.json 2>/dev/null | wc -l)
    echo "$(date -u +%H:%M:%S) ${el}s: $alive running, $done_n finished"
    [ $alive -eq 0 ] && break
    if [ $el -ge $DEADLINE ]; then echo "deadline: stopping the $alive unfinished runs"; kill "${pids[@]}" 2>/dev/null; sleep 3; break; fi
    sleep 20
done
for f in $R/runs/*/*/*/metrics.jsonl; do echo "$f $(wc -l < $f) steps"; done
pack
mkdir -p $R/tables
python3 -m pods_repro.analysis collect --runs $R/runs --out-dir $R/tables --sheet config/runs_tiny.tsv 2>&1 | tail -3
PAPER=""; [ -f results/released/steps.csv ] && PAPER="--paper-steps results/released/steps.csv"
python3 -m pods_repro.analysis time-to-peak --curves $R/tables/curves.csv --steps $R/tables/steps.csv $PAPER \
    --out-dir $R/tables 2>&1 | tail -3
python3 -m pods_repro.analysis levels --curves $R/tables/curves.csv --out-dir $R/tables 2>&1 | tail -2
python3 -m pods_repro.analysis plateau --curves $R/tables/curves.csv --out-dir $R/tables 2>&1 | tail -2
cat $R/tables/time_to_peak.md $R/tables/levels.md 2>/dev/null
pack
echo "done in $(( $(date +%s) - t0 )) s"
