"""The plugin machinery: the plugin manager, its hooks and hook marker (`manager`: hookimpl, get_registry, Registry,
ExecutorSpec) and the built-in tasks' and executors' registration (`builtin`). The agent contract it loads agents
against lives in `researchbench.benchmark.contract` (re-exported here, as before: Agent, AgentSpec, Policy, Action, ...).

May import: `researchbench.benchmark.contract`, `researchbench.benchmark.executors`, `researchbench.benchmark.records`, `researchbench.benchmark.llm`, `researchbench.benchmark.tasks`,
`researchbench.benchmark.common`. Agents are loaded by module name, never imported here.
"""
from researchbench.benchmark.contract.agent_api import (Action, Agent, AgentSpec, Analysis, OpContext, Policy, Proposal,
                                                        StatelessPolicy)
from researchbench.benchmark.plugins.manager import ExecutorSpec, Registry, get_registry, hookimpl, hookspec

__all__ = ["Action", "Agent", "AgentSpec", "Analysis", "ExecutorSpec", "OpContext", "Policy", "Proposal", "Registry",
           "StatelessPolicy", "get_registry", "hookimpl", "hookspec"]

from researchbench.benchmark.common.moved import Lazy, deprecated_names  # noqa: E402  (after the names that stay)

# Names `researchbench.benchmark.plugins` had in 0.1.0, when it was one module (now benchmark.plugins.manager).
__getattr__ = deprecated_names(__name__, {
    name: (Lazy("researchbench.benchmark.plugins.manager", name), "import it from benchmark.plugins.manager")
    for name in ("BUILTIN_PLUGINS", "HookSpecs", "PROJECT")})
