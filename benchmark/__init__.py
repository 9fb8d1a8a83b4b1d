"""The researchbench harness; docs/architecture.md maps its folders."""
from benchmark.common import moved

moved.install()  # old import paths (benchmark.agent_api, benchmark.task, ...) for one more release
