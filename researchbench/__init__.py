"""The public API for plugin authors: everything docs/plugins.md documents, importable from one place.

`from researchbench import hookimpl, AgentSpec, Agent, Action, Proposal` and friends stay put across
minor releases; the modules behind them may move. A name removed from here first answers for one
release with a DeprecationWarning (`_REMOVED` below, through benchmark.common.moved).
`__version__` is the package's semantic version; `AGENT_API_VERSION` is the plugin API's ("MAJOR.MINOR";
a plugin declares the one it was written for as RESEARCHBENCH_AGENT_API in its entry-point module).

May import: every `benchmark` layer it re-exports (rank 5 in docs/architecture.md); nothing in the
harness imports it.
"""
from benchmark.common.domains import domain
from benchmark.common.errors import UserError
from benchmark.common.moved import deprecated_names
from benchmark.common.version import package_version
from benchmark.contract.agent_api import (AGENT_API_VERSION, Action, Agent, AgentSpec, Analysis, Analyzer, CommandResult,
                                         OpContext, Operator, Policy, Proposal, StatelessPolicy)
from benchmark.edits import apply_edits, format_instructions
from benchmark.executors.base import Executor, Job, JobResult, Limits
from benchmark.llm import LLMCall
from benchmark.plugins.manager import API_ATTRIBUTE, ExecutorSpec, hookimpl
from benchmark.records.journal import AGENT_FAILED, BASELINE_ID, BUGGY, EDIT_FAILED, NO_OP, OK, Node, NodeStore
from benchmark.tasks.manifest import TaskSpec, load_task

__version__ = package_version()

__all__ = ["AGENT_API_VERSION", "AGENT_FAILED", "API_ATTRIBUTE", "BASELINE_ID", "BUGGY", "EDIT_FAILED", "NO_OP", "OK",
           "Action", "Agent", "AgentSpec", "Analysis", "Analyzer", "CommandResult", "Executor", "ExecutorSpec", "Job",
           "JobResult", "LLMCall", "Limits", "Node", "NodeStore", "OpContext", "Operator", "Policy", "Proposal",
           "StatelessPolicy", "TaskSpec", "UserError", "__version__", "apply_edits", "domain", "format_instructions",
           "hookimpl", "load_task"]

# name -> (what it now is, what to use instead): answered with a DeprecationWarning for one release
_REMOVED: dict[str, tuple[object, str]] = {}
__getattr__ = deprecated_names(__name__, _REMOVED)
