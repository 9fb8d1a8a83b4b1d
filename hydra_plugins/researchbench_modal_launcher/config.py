"""The launcher's settings, selectable as `hydra/launcher=modal` and set as `hydra.launcher.<field>=...`."""

from dataclasses import dataclass, field
from typing import List, Optional

from hydra.core.config_store import ConfigStore


@dataclass
class ModalLauncherConf:
    _target_: str = "hydra_plugins.researchbench_modal_launcher.modal_launcher.ModalLauncher"
    app_name: str = "researchbench"
    max_parallel: int = 8  # runs (sandboxes) at once
    cpu: float = 2.0  # per run: the agent loop, and the experiments when executor=local
    memory_gb: float = 8.0
    gpu: Optional[str] = None  # per run, for executor=local experiments on the run's own GPU ("A100")
    timeout_s: int = 86400  # a run's longest life (Modal's sandbox maximum is 24 h)
    python_version: Optional[str] = None  # default: this machine's major.minor
    remote_python: str = "python"
    extra_env: List[str] = field(default_factory=list)  # more variables to pass on (LLM keys are by default)
    agent_code_in_run: bool = False  # allow executor=local: agent code beside the run's LLM keys and labels
    client: Optional[str] = None  # "module:function" returning a modal-compatible client; tests only


ConfigStore.instance().store(group="hydra/launcher", name="modal", node=ModalLauncherConf,
                             provider="researchbench")
