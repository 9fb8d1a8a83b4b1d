"""The run record: the append-only journal of nodes and the content-addressed blob store (`journal`), and
summary.json's schema with its one reader and one writer (`summary`).
The engine writes it; scoring, reports and agents read it, so it sits below all of them.

May import: `researchbench.benchmark.tasks` and `researchbench.benchmark.common`, never the engine or scoring.
"""
from researchbench.benchmark.records.journal import BlobStore, Journal, Node, NodeStore
from researchbench.benchmark.records.summary import RunSummary, SummaryError, read_summary, write_summary

__all__ = ["BlobStore", "Journal", "Node", "NodeStore", "RunSummary", "SummaryError", "read_summary", "write_summary"]
