"""The causal_discovery task's own checks: the graphs are DAGs whose numbering hides the SEM, the reference's
diagnosis of each dataset's SEM, the floor is the empty graph, the evaluator's graph metrics and rules, and a search of the val
sandbox for the true graphs. The checks every task gets: tests/ml_tasks/test_tasks.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from task_kit import (assert_search_found_nothing, code_copy, data_digest, evaluate_ok, overlay_run, phase_args,
                      prepared, rejects_inprocess, run_driver, run_sandboxed, searcher, task_module)

TASK = "causal_discovery"
cd_prepare = task_module(TASK, "prepare")  # the task's own prepare module, for its constants


D = cd_prepare.N_NODES
K = len(cd_prepare.SEMS)  # datasets per split


def _true_adjacency(prepared, phase: str, dataset: str) -> np.ndarray:
    edges = pd.read_csv(prepared.labels_dir / f"{phase}_edges.csv")
    edges = edges[edges["dataset"] == dataset]
    matrix = np.zeros((D, D), dtype=int)
    matrix[edges["source"], edges["target"]] = 1
    return matrix


def test_prepare_is_deterministic_and_graphs_are_dags(prepared, tmp_path):
    cd_prepare.main(["--out", str(tmp_path / "again")])
    assert data_digest(tmp_path / "again") == data_digest(prepared.root)
    for phase, prefix in (("val", "v"), ("test", "t")):
        for k in range(K):
            adjacency = _true_adjacency(prepared, phase, f"{prefix}{k}")
            power = np.eye(D, dtype=int)
            for _ in range(D):  # a DAG's adjacency matrix is nilpotent
                power = power @ adjacency
            assert not power.any() and 25 <= adjacency.sum() <= 55
    x = pd.read_csv(prepared.public_dir / "val" / "v0.csv").to_numpy()
    assert x.shape == (500, 20) and np.allclose(x.mean(0), 0, atol=1e-4) and np.allclose(x.std(0), 1, atol=1e-3)
    assert sorted(p.name for p in prepared.public_dir.rglob("*") if p.is_file()) == sorted(f"v{k}.csv" for k in range(K))


def test_dataset_numbers_do_not_reveal_the_sem_type(prepared):
    """Each split numbers its datasets in its own seeded order: neither the number nor the driver's call
    order (which follows it) tells a dataset's SEM, and knowing val's order says nothing about test's."""
    tables = {phase: pd.read_csv(prepared.labels_dir / f"{phase}_datasets.csv") for phase in ("val", "test")}
    orders = {phase: (table.sort_values("dataset")["sem"] + "/" + table.sort_values("dataset")["graph"]).tolist()
              for phase, table in tables.items()}
    generation_order = [f"{method}-{sem}" for method, sem in cd_prepare.SEMS]
    for phase, table in tables.items():
        assert sorted(table["sem"]) == sorted(generation_order)
        assert sorted(table["graph"]) == sorted(cd_prepare.GRAPHS)
        assert table.sort_values("dataset")["sem"].tolist() != generation_order
    assert orders["val"] != orders["test"]


def test_reference_diagnosis_names_every_datasets_sem(prepared):
    """The reference scores each dataset as its SEM needs: residuals of a flexible fit skewed exactly where the
    SEM is linear with non-Gaussian noise, flexible fits better by BIC exactly where it is nonlinear."""
    reference = task_module(TASK, "reference/model")
    for phase, folder in (("val", prepared.public_dir / "val"), ("test", prepared.test_inputs_dir / "test")):
        datasets = pd.read_csv(prepared.labels_dir / f"{phase}_datasets.csv")
        for name, sem in zip(datasets["dataset"], datasets["sem"]):
            kind = reference.diagnose(pd.read_csv(folder / f"{name}.csv").to_numpy())
            expected = ("linear-nongaussian" if sem == "linear-mixed"
                        else "linear-gaussian" if sem == "linear-gauss" else "nonlinear")
            assert kind == expected, (phase, name, sem)


def test_floor_is_the_empty_graph_and_the_trivial_overlay_scores_it(prepared):
    """The manifest floor equals the empty graph's test SHD; the trivial overlay, run for real, gets it."""
    spec = prepared.spec
    edges = pd.read_csv(prepared.labels_dir / "test_edges.csv")
    assert spec.metric.floor == pytest.approx(edges.groupby("dataset").size().mean())
    outcome = overlay_run(TASK, "checks/empty_graph", "test").outcome
    assert outcome.ok, outcome.bug_reason
    assert outcome.primary == pytest.approx(spec.metric.floor) and outcome.metrics["f1"] == 0.0


@pytest.mark.parametrize("graph", ["full", "random"])
def test_other_constant_graphs_do_not_beat_the_floor(prepared, tmp_path, graph):
    """A data-independent graph (complete, or a fixed random DAG) scores worse than the empty graph."""
    rng = np.random.default_rng(0)
    rows = []
    for k in range(K):
        if graph == "full":
            matrix = np.triu(np.ones((D, D), dtype=int), 1)
        else:
            matrix = np.triu((rng.random((D, D)) < 0.2).astype(int), 1)
        rows += [(f"t{k}", s, t) for s, t in zip(*np.nonzero(matrix))]
    preds = tmp_path / "preds"
    preds.mkdir()
    pd.DataFrame(rows, columns=["dataset", "source", "target"]).to_csv(preds / "predictions.csv", index=False)
    shd = evaluate_ok(prepared.spec, "test", preds, prepared.labels_dir, tmp_path)["shd"]
    assert not prepared.spec.metric.better(shd, prepared.spec.metric.floor)


def test_evaluator_scores_known_graphs(prepared, tmp_path):
    """The truth scores 0; reversing one edge and leaving another undirected cost 1 each."""
    rows = []
    for k in range(K):
        adjacency = _true_adjacency(prepared, "val", f"v{k}")
        if k == 0:
            (s1, t1), (s2, t2) = list(zip(*np.nonzero(adjacency)))[:2]
            adjacency[s1, t1], adjacency[t1, s1] = 0, 1  # reversed
            adjacency[t2, s2] = 1  # undirected
        rows += [(f"v{k}", s, t) for s, t in zip(*np.nonzero(adjacency))]
    preds = tmp_path / "preds"
    preds.mkdir()
    pd.DataFrame(rows, columns=["dataset", "source", "target"]).to_csv(preds / "predictions.csv", index=False)
    metrics = evaluate_ok(prepared.spec, "val", preds, prepared.labels_dir, tmp_path)
    assert metrics["shd"] == pytest.approx(2 / K) and metrics["skeleton_f1"] == pytest.approx(1.0)
    assert 0.9 < metrics["f1"] < 1.0


def test_an_undirected_edge_costs_a_reversed_ones_shd_and_beats_it_only_on_f1():
    """Issue 27 (aide's answerer): the baseline's docstring says an undirected edge "scores better than a wrong
    direction"; the task text now says that holds on f1 only, which is what the evaluator does."""
    scores = task_module(TASK, "evaluate").graph_scores
    truth = np.zeros((3, 3), dtype=int)
    truth[0, 1] = truth[1, 2] = 1
    reversed_, undirected = truth.copy(), truth.copy()
    reversed_[0, 1], reversed_[1, 0] = 0, 1
    undirected[1, 0] = 1
    worse, unsure = scores(reversed_, truth), scores(undirected, truth)
    assert worse["shd"] == unsure["shd"] == 1
    assert unsure["f1"] > worse["f1"] and unsure["skeleton_f1"] == worse["skeleton_f1"] == 1.0


@pytest.mark.parametrize("content, reason", [
    ("dataset,source,target\nv0,3,3\n", "self-loop"),
    ("dataset,source,target\nv0,0,20\n", "out of range"),
    ("dataset,source,target\nv0,-1,2\n", "out of range"),
    ("dataset,source,target\nt0,0,1\n", "unknown datasets"),
    ("dataset,source,target\nv0,0.5,1\n", "integer"),
    ("dataset,source,target\nv0,abc,1\n", "integer"),
    ("dataset,src,dst\nv0,0,1\n", "lacks columns"),
], ids=["self-loop", "too-big", "negative", "test-dataset-in-val", "float-id", "text", "bad-columns"])
def test_evaluator_rejects_graphs_that_are_not_dags_of_the_datasets(prepared, tmp_path, content, reason, capsys):
    preds = tmp_path / "preds"
    preds.mkdir()
    (preds / "predictions.csv").write_text(content)
    line = rejects_inprocess(task_module(TASK), "val", preds, prepared.labels_dir, tmp_path, capsys)
    assert reason in line, line


def test_val_phase_cannot_reach_the_true_graphs(prepared, tmp_path):
    """A hostile model.py searches the sandbox for the label files, the evaluator and the simulation
    entropy, in the val phase; in the bwrap sandbox it finds nothing, and it still returns a graph."""
    entropy = f"{cd_prepare.GRAPH_ENTROPY:X}"
    probe = searcher(needles=["dataset,source,target", "GRAPH_ENTROPY", entropy[:12], str(cd_prepare.GRAPH_ENTROPY),
                              "against the hidden true DAGs"],
                     names=["val_edges.csv", "test_edges.csv", "val_datasets.csv", "test_datasets.csv"])
    model = probe + "\nimport numpy as np\ndef discover(x, params):\n    return np.zeros((x.shape[1],) * 2, dtype=int)\n"
    assert_search_found_nothing(run_sandboxed(prepared, {"model.py": model}, "val", tmp_path))


def test_evaluator_rejects_a_nan_dataset_name_in_one_line(prepared, tmp_path, capsys):
    preds = tmp_path / "preds"
    preds.mkdir()
    (preds / "predictions.csv").write_text("dataset,source,target\nnan,0,1\n")
    assert "unknown datasets" in rejects_inprocess(task_module(TASK), "val", preds, prepared.labels_dir, tmp_path,
                                                   capsys)


@pytest.mark.parametrize("body, reason", [
    ("return np.full((20, 20), 0.5)", "only 0 and 1"),
])
def test_driver_rejects_bad_graphs(prepared, tmp_path, body, reason):
    code = code_copy(prepared, tmp_path / "code",
                     {"model.py": f"import numpy as np\ndef discover(x, params):\n    {body}\n"})
    result = run_driver(code, *phase_args(prepared, "val", tmp_path / "out"))
    assert result.returncode == 1 and reason in result.stderr, result.stderr
    assert not (tmp_path / "out" / "predictions.csv").exists()
