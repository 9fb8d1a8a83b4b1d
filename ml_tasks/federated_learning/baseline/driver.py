"""Harness-owned driver of the federated_learning task: the simulation of rounds, clients and messages.

    python driver.py --phase val  --data <public> --out <output> [--seed N]
    python driver.py --phase test --data <public> --test-inputs <dir> --out <output> [--seed N]

The harness restores this file before every run. It owns the federation:

- ROUNDS communication rounds (one: communication is the bottleneck); in each, CLIENTS_PER_ROUND of
  the N_CLIENTS clients, drawn by the driver from the run's seed, train on their own shard;
- every agent call (`init_model`, `client_update`, `server_aggregate`, `predict` from the editable
  fedlearn.py) runs in a fresh child process (`run_isolated`, from the harness's read-only
  `task_runtime.isolation`) that holds only what that party may see: a client its own shard, the
  broadcast model and its own private state; the server the updates, the shard sizes and its own state. No process can read the data folders once agent code runs;
- every message and state is a dict of numeric arrays under a budget of numbers, checked here;
- `predict` is called on the inputs in chunks of 32 images, twice, in two orders
  (`task_runtime.rowwise.predict_per_row`), and the run fails unless both passes give every image the same
  label: a prediction depends on its own image alone (the inputs to predict are not training data).

It writes `<out>/predictions.csv` (id, label): the final global model's class for every input.
Nothing printed here is parsed as a metric.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime import (DriverArgs, DriverError, IsolationError, as_arrays, as_labels, driver_main, load_arrays,
                          load_labels, pick_device, read_npz, read_params, run_isolated, seed_everything,
                          warm_up_torch, write_predictions)
from task_runtime.rowwise import predict_per_row

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

N_CLIENTS = 10
ROUNDS = 1  # one-shot: each client sends one message, the server answers with the final model
CLIENTS_PER_ROUND = 10  # full participation: every client in every round
MESSAGE_BUDGET = 5_000  # numbers in the broadcast model and in each client's update
CLIENT_STATE_BUDGET = 5_000  # numbers a client keeps between its rounds (private to it)
SERVER_STATE_BUDGET = 10_000  # numbers the server keeps between rounds


def save(path: Path, arrays: dict[str, np.ndarray]) -> Path:
    np.savez(path, **arrays)
    return path


def agent_module():
    """The agent-editable module, imported only inside a locked child."""
    import fedlearn

    for name in ("init_model", "client_update", "server_aggregate", "predict"):
        if not callable(getattr(fedlearn, name, None)):
            raise DriverError(f"fedlearn.py must define {name} (see the description)")
    return fedlearn


def pair(raw: object, where: str) -> tuple[object, object]:
    if not isinstance(raw, tuple) or len(raw) != 2:
        raise DriverError(f"{where} must return a pair (message, state)")
    return raw


class Federation:
    """The parent process: it never imports agent code and never holds a client's data."""

    def __init__(self, data: Path, blocked: list[Path], params: dict, seed: int):
        self.data, self.params, self.seed = data, params, seed
        self.scratch = Path(tempfile.mkdtemp(prefix="fl-driver-"))
        self.blocked = [*blocked, self.scratch]
        self.calls = 0
        self.sizes = [self.shard_size(k) for k in range(N_CLIENTS)]

    def shard_size(self, client: int) -> int:
        """The shard's length from the .npy header alone: the parent never loads a client's data, so
        no forked child inherits it, not even in freed memory."""
        path = self.data / f"client{client}.npz"
        if not path.is_file():
            raise DriverError(f"expected data file {path} does not exist")
        with zipfile.ZipFile(path) as archive, archive.open("y.npy") as member:
            version = np.lib.format.read_magic(member)
            shape, _, _ = (np.lib.format.read_array_header_1_0(member) if version == (1, 0)
                           else np.lib.format.read_array_header_2_0(member))
        return int(shape[0])

    def call(self, label: str, load, work) -> Path:
        """Run one agent call in a locked child; returns the folder it wrote its results to."""
        self.calls += 1
        out = self.scratch / f"call{self.calls}"
        out.mkdir()
        run_isolated(label, load, lambda inputs: work(inputs, out), self.blocked, allowed_writes=[out])
        return out

    def init(self) -> dict:
        def load() -> dict:
            seed_everything(self.seed * 100_003)
            return {"device": pick_device()}

        def work(inputs: dict, out: Path) -> None:
            model = agent_module().init_model(dict(self.params), inputs["device"])
            save(out / "model.npz", as_arrays(model, MESSAGE_BUDGET, "init_model"))

        return load_arrays(self.call("init_model", load, work) / "model.npz", MESSAGE_BUDGET, "init_model")

    def client(self, rnd: int, client: int, model: Path, state: Path | None) -> tuple[dict, dict | None]:
        def load() -> dict:
            shard = read_npz(self.data / f"client{client}.npz", ("x", "y"))
            seed_everything(self.seed * 100_003 + rnd * 101 + client + 1)
            return {"shard": shard, "device": pick_device(),
                    "model": load_arrays(model, MESSAGE_BUDGET, "the broadcast model"),
                    "state": load_arrays(state, CLIENT_STATE_BUDGET, "client_update") if state else None}

        def work(inputs: dict, out: Path) -> None:
            shard = inputs["shard"]
            update, new_state = pair(agent_module().client_update(
                inputs["model"], inputs["state"], shard["x"].copy(), shard["y"].copy(), dict(self.params),
                inputs["device"]), "client_update")
            save(out / "update.npz", as_arrays(update, MESSAGE_BUDGET, "client_update (update)"))
            if new_state is not None:
                save(out / "state.npz", as_arrays(new_state, CLIENT_STATE_BUDGET, "client_update (state)"))

        out = self.call(f"round {rnd} client {client}", load, work)
        update = load_arrays(out / "update.npz", MESSAGE_BUDGET, "client_update (update)")
        new_state = (load_arrays(out / "state.npz", CLIENT_STATE_BUDGET, "client_update (state)")
                     if (out / "state.npz").exists() else None)
        return update, new_state

    def server(self, rnd: int, model: Path, updates: list[Path], sizes: list[int],
               state: Path | None) -> tuple[dict, dict | None]:
        def load() -> dict:
            seed_everything(self.seed * 100_003 + rnd * 101)
            return {"device": pick_device(), "model": load_arrays(model, MESSAGE_BUDGET, "the broadcast model"),
                    "updates": [load_arrays(u, MESSAGE_BUDGET, "client_update") for u in updates],
                    "state": load_arrays(state, SERVER_STATE_BUDGET, "server_aggregate") if state else None}

        def work(inputs: dict, out: Path) -> None:
            model, new_state = pair(agent_module().server_aggregate(
                inputs["model"], inputs["updates"], list(sizes), inputs["state"], dict(self.params), inputs["device"]),
                "server_aggregate")
            save(out / "model.npz", as_arrays(model, MESSAGE_BUDGET, "server_aggregate (model)"))
            if new_state is not None:
                save(out / "state.npz", as_arrays(new_state, SERVER_STATE_BUDGET, "server_aggregate (state)"))

        out = self.call(f"round {rnd} server", load, work)
        new_model = load_arrays(out / "model.npz", MESSAGE_BUDGET, "server_aggregate (model)")
        new_state = (load_arrays(out / "state.npz", SERVER_STATE_BUDGET, "server_aggregate (state)")
                     if (out / "state.npz").exists() else None)
        return new_model, new_state

    def predict(self, model: Path, x: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """The global model's labels, each from its own image alone: `predict` is called on chunks of the
        inputs, twice, in two orders that must agree (`predict_per_row`)."""
        def load() -> dict:
            seed_everything(self.seed * 100_003 + 99)
            return {"device": pick_device(), "model": load_arrays(model, MESSAGE_BUDGET, "the global model")}

        def work(inputs: dict, out: Path) -> None:
            module = agent_module()
            labels = predict_per_row(
                lambda batch: as_labels(module.predict(inputs["model"], batch, dict(self.params), inputs["device"]),
                                        len(batch), "predict"),
                x, ids, self.seed, "predict", unit="image", n_labels=10)
            np.save(out / "labels.npy", labels)

        return load_labels(self.call("predict", load, work) / "labels.npy", len(x), "predict")

    def keep(self, name: str, arrays: dict | None) -> Path | None:
        """A clean copy the parent wrote itself, so nothing a child left behind is passed on."""
        return save(self.scratch / f"{name}.npz", arrays) if arrays is not None else None

    def run(self, x_eval: np.ndarray, ids: np.ndarray, phase: str) -> np.ndarray:
        rng = np.random.default_rng(self.seed)
        model = self.keep("model", self.init())
        client_states: dict[int, Path | None] = {}
        server_state: Path | None = None
        for rnd in range(ROUNDS):
            t0 = time.perf_counter()
            chosen = sorted(rng.choice(N_CLIENTS, size=CLIENTS_PER_ROUND, replace=False).tolist())
            updates = []
            for client in chosen:
                update, state = self.client(rnd, client, model, client_states.get(client))
                updates.append(self.keep(f"update{client}", update))
                client_states[client] = self.keep(f"client_state{client}", state)
            new_model, new_state = self.server(rnd, model, updates, [self.sizes[c] for c in chosen], server_state)
            model = self.keep("model", new_model)
            server_state = self.keep("server_state", new_state)
            print(f"[{phase}] round {rnd}: clients {chosen}, {time.perf_counter() - t0:.2f} s", flush=True)
        return self.predict(model, x_eval, ids)


def run(args: DriverArgs) -> None:
    phase, data, inputs_path, seed = args.phase, args.data, args.inputs, args.seed
    warm_up_torch()  # once here, so every child starts with torch loaded (CUDA is left untouched)
    params = read_params(HERE / "params.json")
    eval_inputs = read_npz(inputs_path, ("id", "x"))
    started = time.perf_counter()
    federation = Federation(data, [data, inputs_path.parent], params, seed)
    try:
        labels = federation.run(eval_inputs["x"], eval_inputs["id"], phase)
    except IsolationError as exc:
        raise DriverError(str(exc)) from None
    finally:
        shutil.rmtree(federation.scratch, ignore_errors=True)
    write_predictions(args.out, pd.DataFrame({"id": eval_inputs["id"], "label": labels}))
    print(f"[{phase}] wrote predictions after {ROUNDS} round(s) ({federation.calls} isolated calls) in "
          f"{time.perf_counter() - started:.1f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    return driver_main(run, "Simulate federated training of fedlearn.py over the clients.",
                       inputs="{phase}_inputs.npz", seed_help="seeds client sampling and the agent's randomness",
                       argv=argv)


if __name__ == "__main__":
    sys.exit(main())
