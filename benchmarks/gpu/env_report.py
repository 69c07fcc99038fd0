"""Print the GPU machine's facts that a result needs beside it: GPU, driver, CUDA, library versions.

Run it from the repository root as a module (``python3 -m benchmarks.gpu.env_report``), so that it
reads the versions with pods_repro.runlog's helper, the one behind every run's config.json meta."""

import json
import platform
import subprocess

import torch

from pods_repro.runlog import package_versions

PACKAGES = ["torch", "transformers", "trl", "peft", "accelerate", "datasets", "deepspeed", "bitsandbytes",
            "math-verify", "numpy", "pandas"]  # fmt: skip


def report() -> dict:
    out = {"python": platform.python_version(), "platform": platform.platform()}
    out["cuda_available"] = torch.cuda.is_available()
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        out.update(gpu=p.name, gpu_mem_gib=round(p.total_memory / 2**30, 1), sms=p.multi_processor_count)
        out["torch_cuda"] = torch.version.cuda
        try:
            smi = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True
            )
            out["driver"] = smi.stdout.strip()
        except OSError:
            out["driver"] = None
    out["packages"] = package_versions(PACKAGES)
    return out


if __name__ == "__main__":
    print(json.dumps(report(), indent=1))
