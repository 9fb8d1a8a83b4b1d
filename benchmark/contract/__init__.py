"""The agent contract: what the engine and an agent say to each other (`agent_api`: Agent, AgentSpec, Policy,
Action, Proposal, OpContext, Operator, Analyzer, CommandResult, AGENT_API_VERSION). Plain types, no machinery:
the plugin manager that finds agents lives in `researchbench.benchmark.plugins`, the edit formats in `researchbench.benchmark.edits`.

May import: `researchbench.benchmark.executors` (base), `researchbench.benchmark.records`, `researchbench.benchmark.llm`, `researchbench.benchmark.tasks`, `researchbench.benchmark.common`
(only `executors.base` at run time; the rest for types).
"""
from researchbench.benchmark.contract.agent_api import (AGENT_API_VERSION, Action, Agent, AgentSpec, Analysis, Analyzer,
                                                        CommandResult, OpContext, Operator, Policy, Proposal,
                                                        StatelessPolicy)

__all__ = ["AGENT_API_VERSION", "Action", "Agent", "AgentSpec", "Analysis", "Analyzer", "CommandResult", "OpContext",
           "Operator", "Policy", "Proposal", "StatelessPolicy"]
