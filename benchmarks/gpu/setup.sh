#!/usr/bin/env bash
# Source this on the GPU machine (no network, no registry), from the repository root:
#     source benchmarks/gpu/setup.sh .whl
# It installs the pure-Python packages the project needs that the machine's image lacks, from wheels
# carried along (benchmarks/gpu/README.md says which and how to fetch them), into /tmp/site, builds
# DeepSpeed from its source distribution there (no compiled ops: DS_BUILD_OPS=0), and exports
# PYTHONPATH, PODS_CACHE and the thread settings. The image's own torch (CUDA) is used as it is.
WHEELS=${1:-.whl}
set -u
export PIP_DISABLE_PIP_VERSION_CHECK=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$WHEELS"/*.whl || return 1
for z in "$WHEELS"/*.zip; do  # a wheel cut down to what this machine loads (bitsandbytes: CUDA 13 only)
    [ -e "$z" ] && python3 -m zipfile -e "$z" /tmp/site
done
if ls "$WHEELS"/deepspeed-*.tar.gz >/dev/null 2>&1; then
    PYTHONPATH=/tmp/site DS_BUILD_OPS=0 python3 -m pip install -q --no-index --no-deps --no-build-isolation \
        --no-cache-dir --target /tmp/site "$WHEELS"/deepspeed-*.tar.gz || echo "[setup] deepspeed did not install"
fi
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
export PODS_CACHE=${PODS_CACHE:-$PWD/resources/models} PODS_NO_PROGRESS=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
set +u
