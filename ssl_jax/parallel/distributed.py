"""Process start: the arguments of `jax.distributed.initialize` from the launcher's environment.

`SSL_JAX_COORDINATOR` picks the source (the launch scripts set it; nothing else changes between a laptop
and a pod):

- unset / empty: one process, no `jax.distributed`;
- `HOST:PORT`: process 0's coordinator, with `SSL_JAX_NUM_PROCESSES` and `SSL_JAX_PROCESS_ID`
  (`launch/local_2proc.sh`);
- `slurm` (`launch/slurm_gpu.sbatch`): the first node of `SLURM_STEP_NODELIST` (else
  `SLURM_JOB_NODELIST` / `SLURM_NODELIST`; expanded here, `scontrol show hostnames` as the fallback),
  `SLURM_NTASKS` processes, this one `SLURM_PROCID`; one task per node sees all the node's GPUs, several
  tasks per node one GPU each (`SLURM_LOCALID`). jax's own SLURM detection would give a single task per
  node only GPU 0, hence resolved here and passed with the detection off;
- `tpu` (`launch/tpu_pod.sh`): `TPU_WORKER_HOSTNAMES` (or `TPU_PROCESS_ADDRESSES`) and `TPU_WORKER_ID`
  when set, else jax's detection (the TPU VM's metadata server);
- `auto`: jax's detection of whatever cluster it finds.

The port: `SSL_JAX_COORDINATOR_PORT`, else jax's default for the cluster (SLURM: 61440 + job id mod
4096; TPU: 8482). `SSL_JAX_HEARTBEAT_S`: seconds without a heartbeat after which jax's coordination
service declares a process dead and aborts the others (fate sharing; default `DEFAULT_HEARTBEAT_S`).
`SSL_JAX_DISTRIBUTED_DRY_RUN=1` prints the call and exits (checks a launcher).
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from collections.abc import Mapping

AUTO = "auto"  # resolve(): leave the arguments to jax's cluster detection
TPU_PORT = 8482  # jax's clusters/cloud_tpu_cluster.py
SLURM_NODELISTS = ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")
# jax's own default. Heartbeats come from a C++ thread of jax's client, so a long compile or a busy
# Python thread does not stop them, but a host whose cores are all taken (compiling, decoding) or a
# network hiccup may delay them by seconds: a false alarm would kill a healthy multi-day run, while
# a process that exits is seen at once by the launchers (local_2proc.sh, srun --kill-on-bad-exit).
# The heartbeat is only for a host that vanishes without an exit anyone sees.
DEFAULT_HEARTBEAT_S = 100


@dataclasses.dataclass(frozen=True)
class DistributedArgs:
    """Keyword arguments of `jax.distributed.initialize`, and where they came from."""

    coordinator_address: str
    num_processes: int
    process_id: int
    local_device_ids: tuple[int, ...] | None = None
    source: str = "host:port"
    heartbeat_timeout_seconds: int = DEFAULT_HEARTBEAT_S

    def call(self) -> str:
        """The call as one log line."""
        ids = None if self.local_device_ids is None else list(self.local_device_ids)
        return (
            f"jax.distributed.initialize(coordinator_address={self.coordinator_address!r}, "
            f"num_processes={self.num_processes}, process_id={self.process_id}, "
            f"local_device_ids={ids}, heartbeat_timeout_seconds={self.heartbeat_timeout_seconds})"
            f"  # from {self.source}"
        )


def heartbeat_seconds(environ: Mapping[str, str]) -> int:
    """`SSL_JAX_HEARTBEAT_S` (whole seconds ≥ 1), else `DEFAULT_HEARTBEAT_S`."""
    value = environ.get("SSL_JAX_HEARTBEAT_S", "").strip()
    if not value:
        return DEFAULT_HEARTBEAT_S
    if not value.isdigit() or int(value) < 1:
        raise SystemExit(
            f"error: SSL_JAX_HEARTBEAT_S={value!r}: allowed a whole number of seconds ≥ 1 "
            f"(default {DEFAULT_HEARTBEAT_S})"
        )
    return int(value)


def expand_hostlist(nodelist: str) -> list[str]:
    """SLURM's hostlist syntax → host names: 'gpu[01-03,07],login1' → gpu01 gpu02 gpu03 gpu07 login1
    (zero padding kept; several bracket groups in one name are expanded left to right)."""
    hosts: list[str] = []
    for item in re.findall(r"(?:[^,\[]|\[[^\]]*\])+", nodelist):
        names = [""]
        for literal, ranges in re.findall(r"([^\[]*)(?:\[([^\]]*)\])?", item):
            expanded = [literal]
            if ranges:
                expanded = []
                for part in ranges.split(","):
                    lo, _, hi = part.partition("-")
                    if not lo.isdigit() or (hi and not hi.isdigit()):
                        raise ValueError(f"not a SLURM hostlist: {nodelist!r}")
                    width = len(lo)
                    expanded += [
                        f"{literal}{i:0{width}d}" for i in range(int(lo), int(hi or lo) + 1)
                    ]
            names = [n + e for n in names for e in expanded]
        hosts += [n for n in names if n]
    if not hosts:
        raise ValueError(f"not a SLURM hostlist: {nodelist!r}")
    return hosts


def _scontrol_hostnames(nodelist: str) -> list[str]:
    if shutil.which("scontrol") is None:
        raise SystemExit(f"error: cannot expand the SLURM node list {nodelist!r} (no scontrol)")
    out = subprocess.run(
        ["scontrol", "show", "hostnames", nodelist], check=True, capture_output=True, text=True
    )
    return out.stdout.split()


def slurm_hosts(nodelist: str) -> list[str]:
    """The nodes of a SLURM node list: parsed here, `scontrol show hostnames` where that fails."""
    try:
        return expand_hostlist(nodelist)
    except ValueError:
        return _scontrol_hostnames(nodelist)


def _require(environ: Mapping[str, str], keys, why: str) -> None:
    missing = [k for k in keys if k not in environ]
    if missing:
        raise SystemExit(f"error: {why} needs {' and '.join(missing)} in the environment")


def _slurm(environ: Mapping[str, str]) -> DistributedArgs:
    why = "SSL_JAX_COORDINATOR=slurm (run under srun)"
    _require(environ, ("SLURM_NTASKS", "SLURM_PROCID"), why)
    nodelist = next((environ[k] for k in SLURM_NODELISTS if environ.get(k)), None)
    if nodelist is None:
        _require(environ, SLURM_NODELISTS[:1], why)
    hosts = slurm_hosts(nodelist)
    port = environ.get("SSL_JAX_COORDINATOR_PORT") or str(
        61440 + int(environ.get("SLURM_JOB_ID", "0")) % 4096
    )
    num = int(environ["SLURM_NTASKS"])
    nodes = int(
        environ.get("SLURM_STEP_NUM_NODES")
        or environ.get("SLURM_JOB_NUM_NODES")
        or environ.get("SLURM_NNODES")
        or len(hosts)
    )
    local = None
    if num > nodes:  # several tasks per node: one device each
        local = (int(environ.get("SLURM_LOCALID", "0")),)
    return DistributedArgs(f"{hosts[0]}:{port}", num, int(environ["SLURM_PROCID"]), local, "slurm")


def _tpu(environ: Mapping[str, str]) -> DistributedArgs | str:
    hostnames = environ.get("TPU_PROCESS_ADDRESSES") or environ.get("TPU_WORKER_HOSTNAMES")
    if not hostnames or "TPU_WORKER_ID" not in environ or environ.get("MEGASCALE_NUM_SLICES"):
        return AUTO  # a TPU VM: jax reads the pod from the metadata server (and multi-slice)
    hosts = [h.strip() for h in hostnames.split(",") if h.strip()]
    host = hosts[0].rsplit(":", 1)[0] if hosts[0].count(":") == 1 else hosts[0]
    port = environ.get("SSL_JAX_COORDINATOR_PORT") or str(TPU_PORT)
    return DistributedArgs(
        f"{host}:{port}", len(hosts), int(environ["TPU_WORKER_ID"]), None, "tpu env"
    )


def resolve(environ: Mapping[str, str]) -> DistributedArgs | str | None:
    """`jax.distributed.initialize`'s arguments per `SSL_JAX_COORDINATOR` (module docstring): None for
    one process, `AUTO` for jax's own detection."""
    args = _resolve_cluster(environ)
    if isinstance(args, DistributedArgs):
        return dataclasses.replace(args, heartbeat_timeout_seconds=heartbeat_seconds(environ))
    return args


def _resolve_cluster(environ: Mapping[str, str]) -> DistributedArgs | str | None:
    coordinator = environ.get("SSL_JAX_COORDINATOR", "")
    if not coordinator:
        return None
    if coordinator == "slurm":
        return _slurm(environ)
    if coordinator == "tpu":
        return _tpu(environ)
    if coordinator == AUTO:
        return AUTO
    if ":" not in coordinator:
        raise SystemExit(
            f"error: SSL_JAX_COORDINATOR={coordinator!r}: allowed 'slurm', 'tpu', 'auto' or HOST:PORT"
        )
    why = f"SSL_JAX_COORDINATOR={coordinator} (host:port)"
    _require(environ, ("SSL_JAX_NUM_PROCESSES", "SSL_JAX_PROCESS_ID"), why)
    return DistributedArgs(
        coordinator, int(environ["SSL_JAX_NUM_PROCESSES"]), int(environ["SSL_JAX_PROCESS_ID"])
    )


def initialize(environ: Mapping[str, str]) -> None:
    """Print and make the `jax.distributed.initialize` call of `resolve(environ)` (nothing for one
    process); on CPU the cross-process collectives use gloo."""
    args = resolve(environ)
    if args is None:
        return
    heartbeat = heartbeat_seconds(environ)
    line = (
        f"jax.distributed.initialize(heartbeat_timeout_seconds={heartbeat})  # jax's cluster detection"
        if args == AUTO
        else args.call()
    )
    print(line, flush=True)
    if environ.get("SSL_JAX_DISTRIBUTED_DRY_RUN", "") not in ("", "0"):
        raise SystemExit(0)
    import jax

    if "cpu" in environ.get("JAX_PLATFORMS", ""):
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    if args == AUTO:
        jax.distributed.initialize(heartbeat_timeout_seconds=heartbeat)
        return
    jax.distributed.initialize(
        coordinator_address=args.coordinator_address,
        num_processes=args.num_processes,
        process_id=args.process_id,
        local_device_ids=None if args.local_device_ids is None else list(args.local_device_ids),
        cluster_detection_method="deactivate",
        heartbeat_timeout_seconds=args.heartbeat_timeout_seconds,
    )
