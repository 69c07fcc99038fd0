#!/usr/bin/env bash
# Issue 10: kernel_fingerprint under candidate pins (one JSON line per combination) to find the variables that
# make two CPU kinds agree (the sets: kernel_combos.txt, a name and its variables per line; PODS_X=0 is none).
# From the repository root:  bash notebook/scripts/kernel_combos.sh OUT.jsonl [MODEL_DIR]
# The combinations run at once (one thread each): on the GPU machine one such process took ~35 s, mostly
# importing torch and transformers, and nine in a row ran out a 330 s limit (session 22).
OUTF=${1:?output .jsonl}
MODEL=${2:-resources/models/tiny/llama-arith_warm}
names=()
while read -r name vars; do
    names+=("$name")
    env $vars OMP_NUM_THREADS=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" python3 notebook/scripts/kernel_fingerprint.py --model "$MODEL" 2>/dev/null \
        | python3 -c "import json,sys; d=json.load(sys.stdin); d['combo']='$name'; print(json.dumps(d))" \
        > "$OUTF.$name.part" &
done < notebook/scripts/kernel_combos.txt
wait
: > "$OUTF"
for name in "${names[@]}"; do cat "$OUTF.$name.part" >> "$OUTF" && rm -f "$OUTF.$name.part"; done
wc -l "$OUTF"
