"""What a plugin author imports: the agent API (`agent_api`: Agent, AgentSpec, Policy, Action, Proposal,
OpContext), the plugin manager and its hook marker (`manager`: hookimpl, get_registry), the edit formats
an operator turns an LLM reply into files with (`edits`), and the built-in executors' registration
(`builtin`).

May import: `benchmark.executors`, `benchmark.records`, `benchmark.llm`, `benchmark.tasks`,
`benchmark.common`. Agents are loaded by module name, never imported here.
"""
from benchmark.plugins.agent_api import Action, Agent, AgentSpec, Analysis, OpContext, Policy, Proposal, StatelessPolicy
from benchmark.plugins.manager import ExecutorSpec, Registry, get_registry, hookimpl, hookspec

__all__ = ["Action", "Agent", "AgentSpec", "Analysis", "ExecutorSpec", "OpContext", "Policy", "Proposal", "Registry",
           "StatelessPolicy", "get_registry", "hookimpl", "hookspec"]

from benchmark.common.moved import Lazy, deprecated_names  # noqa: E402  (after the names that stay)

# Names `benchmark.plugins` had in 0.1.0, when it was one module (now benchmark.plugins.manager).
__getattr__ = deprecated_names(__name__, {
    name: (Lazy("benchmark.plugins.manager", name), "import it from benchmark.plugins.manager")
    for name in ("BUILTIN_PLUGINS", "HookSpecs", "PROJECT")})
