"""The public API for plugin authors: everything docs/plugins.md documents, importable from one place.

`from researchbench import hookimpl, AgentSpec, Agent, Action, Proposal` and friends stay put across
minor releases; the modules behind them may move. A name removed from here first answers for one
release with a DeprecationWarning (`_REMOVED` below, through researchbench.benchmark.common.moved).
`__version__` is the package's semantic version; `AGENT_API_VERSION` is the plugin API's ("MAJOR.MINOR";
a plugin declares the one it was written for as RESEARCHBENCH_AGENT_API in its entry-point module).

The one namespace: the repository's `benchmark/`, `agents/` and `task_runtime/` folders are
`researchbench.benchmark`, `researchbench.agents` and `researchbench.task_runtime` (in a source checkout,
through the symbolic links in this folder; the wheel holds the folders themselves). 0.1.0's top-level names
answer for one release with a DeprecationWarning (`researchbench.benchmark.common.moved`).

May import: every `benchmark` layer it re-exports (rank 5 in docs/architecture.md); nothing in the
harness imports it.
"""
from researchbench.benchmark.common import moved

moved.install()  # 0.1.0's `benchmark.*` and `agents.*` paths, for one more release

from researchbench.benchmark.common.domains import domain  # noqa: E402
from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.moved import deprecated_names
from researchbench.benchmark.common.version import package_version
from researchbench.benchmark.contract.agent_api import (AGENT_API_VERSION, Action, Agent, AgentSpec, Analysis, Analyzer,
                                                        CommandResult, OpContext, Operator, Policy, Proposal,
                                                        StatelessPolicy)
from researchbench.benchmark.edits import apply_edits, format_instructions
from researchbench.benchmark.executors.base import Executor, Job, JobResult, Limits
from researchbench.benchmark.llm import LLMCall
from researchbench.benchmark.plugins.manager import API_ATTRIBUTE, ExecutorSpec, hookimpl
from researchbench.benchmark.records.journal import (AGENT_FAILED, BASELINE_ID, BUGGY, EDIT_FAILED, NO_OP, OK, Node,
                                                     NodeStore)
from researchbench.benchmark.tasks.manifest import TaskSpec, load_task

__version__ = package_version()

__all__ = ["AGENT_API_VERSION", "AGENT_FAILED", "API_ATTRIBUTE", "BASELINE_ID", "BUGGY", "EDIT_FAILED", "NO_OP", "OK",
           "Action", "Agent", "AgentSpec", "Analysis", "Analyzer", "CommandResult", "Executor", "ExecutorSpec", "Job",
           "JobResult", "LLMCall", "Limits", "Node", "NodeStore", "OpContext", "Operator", "Policy", "Proposal",
           "StatelessPolicy", "TaskSpec", "UserError", "__version__", "apply_edits", "domain", "format_instructions",
           "hookimpl", "load_task"]

# name -> (what it now is, what to use instead): answered with a DeprecationWarning for one release
_REMOVED: dict[str, tuple[object, str]] = {}
__getattr__ = deprecated_names(__name__, _REMOVED)
