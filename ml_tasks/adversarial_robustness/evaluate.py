"""Attack the agent's network and score its robust accuracy (adversarial_robustness task).

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

Runs in its own sandbox on the harness side. It reads `<predictions-dir>/model.safetensors` (weights
only: a safetensors file cannot carry code, so nothing the agent wrote runs here), rebuilds the
network from the harness-owned `baseline/family.py`, and attacks it on the validation or hidden
test images with a fixed, harness-owned threat model:

    L-inf ball of radius EPS = 0.15 around each image (its 100 values scaled to [0, 1]), clipped to [0, 1].

The attack is a reduced AutoAttack (Croce & Hein, 2020), run as a cascade over the images still
classified correctly, with ART's implementations:
  1. APGD with cross-entropy loss (100 iterations, 2 random starts);
  2. APGD with the difference-of-logits-ratio loss (100 iterations): scale-invariant, so inflating
     the logits to saturate the softmax (zero cross-entropy gradients) does not hide anything;
  3. Square Attack (1000 queries): gradient-free, so a network that is flat almost everywhere
     (a steep-ramp "quantizer" built from ReLUs) cannot mask its gradients.
An image counts as robust only if the clean prediction and the prediction on every returned
adversarial image are correct with finite logits. The attacks see the network through a
log-softmax head: cross-entropy, DLR and Square's margin are unchanged by it (they depend on logit
differences only), and ART's "this estimator seems to output probabilities" refusal can never be
triggered by a network whose logits happen to sum to one. An attack stage that raises counts the
images it was attacking as not robust (`attack_errors` says how many stages did).

Metrics: `robust_accuracy` (primary; 0 when clean accuracy is below CLEAN_ACCURACY_FLOOR, so
robustness cannot be bought by giving up accuracy), `clean_accuracy`,
`robust_accuracy_unconstrained`, and the fraction still robust after each stage.
Invalid models (missing, unreadable, outside the family) print one line to stderr and exit 1 (the
command line and that contract come from the harness's `task_runtime` package).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime import InvalidPredictions, evaluator_main
from task_runtime.digits import scaled_pixels

HERE = Path(__file__).resolve().parent
LABEL_FILES = {"val": "val.csv", "test": "test.csv"}
MODEL_FILE = "model.safetensors"

# The threat model and the attack: harness-owned, identical for val and test.
EPS = 0.15
CLEAN_ACCURACY_FLOOR = 0.70  # version 3: 0.90 (plain digits, where standard training reached 0.95)
APGD_ITERATIONS = 100
APGD_CE_RESTARTS = 2
SQUARE_QUERIES = 1000
ATTACK_SEED = 0
MAX_MODEL_BYTES = 8 * 1024**2  # a 4 x 512 MLP is ~3.4 MB
SHAPE = (1, 10, 10)  # how the attacks see one image's 100 values (an MLP reads them flat)


def load_model(path: Path):
    sys.path.insert(0, str(HERE / "baseline"))
    import family  # the pristine harness copy next to this file, never the agent's

    if not path.is_file():
        raise InvalidPredictions(f"{path.name} was not written")
    size = path.stat().st_size
    if size > MAX_MODEL_BYTES:
        raise InvalidPredictions(f"{path.name} is {size} bytes; at most {MAX_MODEL_BYTES} are accepted")
    from safetensors.numpy import load

    try:
        tensors = load(path.read_bytes())
    except Exception as exc:  # noqa: BLE001 - any parse failure of hostile bytes is the same verdict
        reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise InvalidPredictions(f"{path.name} is not a readable safetensors file ({reason})") from None
    try:
        return family.from_tensors(tensors)
    except family.FamilyError as exc:
        raise InvalidPredictions(f"{path.name}: {exc}") from None


def load_images(labels_dir: Path, phase: str) -> tuple[np.ndarray, np.ndarray]:
    sys.path.insert(0, str(HERE / "baseline"))
    import family

    frame = pd.read_csv(labels_dir / LABEL_FILES[phase])
    x = scaled_pixels(frame, family.FEATURES).reshape(-1, *SHAPE)
    return x, frame["label"].to_numpy(dtype=np.int64)


def correct(net, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per image: finite logits whose argmax is the label."""
    import torch

    with torch.no_grad():
        logits = net(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))).numpy()
    return np.isfinite(logits).all(axis=1) & (logits.argmax(axis=1) == y)


def project(x_adv: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Keep an attack's output inside the threat model (it already is; this makes it a guarantee)."""
    x_adv = np.where(np.isfinite(x_adv), x_adv, x)
    return np.clip(np.clip(x_adv, x - EPS, x + EPS), 0.0, 1.0).astype(np.float32)


def log_softmax_head(net):
    """The network with log-softmax on top: same argmax, same losses, never probability-like output."""
    import torch

    class LogSoftmaxHead(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module):
            super().__init__()
            self.inner = inner

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.log_softmax(self.inner(x), dim=1)

    return LogSoftmaxHead(net).eval()


def attack_settings() -> list[tuple[str, str, dict]]:
    """(stage, ART class, keyword arguments): the whole attack, one constant for val and test."""
    common = dict(norm=np.inf, eps=EPS, batch_size=512, verbose=False)
    return [
        ("apgd_ce", "AutoProjectedGradientDescent",
         dict(eps_step=2 * EPS, max_iter=APGD_ITERATIONS, nb_random_init=APGD_CE_RESTARTS,
              loss_type="cross_entropy", **common)),
        ("apgd_dlr", "AutoProjectedGradientDescent",
         dict(eps_step=2 * EPS, max_iter=APGD_ITERATIONS, nb_random_init=1, loss_type="difference_logits_ratio",
              **common)),
        ("square", "SquareAttack", dict(max_iter=SQUARE_QUERIES, nb_restarts=1, p_init=0.8, **common)),
    ]


def stages(classifier) -> list[tuple[str, object]]:
    """(stage, builder): attacks are built lazily, so one that refuses a network fails inside its stage."""
    from art.attacks import evasion

    return [(name, lambda cls=cls, kw=kw: getattr(evasion, cls)(classifier, **kw))
            for name, cls, kw in attack_settings()]


def robustness(net, x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    import torch
    from art.estimators.classification import PyTorchClassifier

    classifier = PyTorchClassifier(log_softmax_head(net), loss=torch.nn.CrossEntropyLoss(), input_shape=SHAPE,
                                   nb_classes=10, clip_values=(0.0, 1.0), device_type="cpu")
    alive = correct(net, x, y)
    metrics = {"clean_accuracy": float(alive.mean())}
    errors = 0
    for name, build in stages(classifier):
        idx = np.flatnonzero(alive)
        if len(idx):
            np.random.seed(ATTACK_SEED)
            torch.manual_seed(ATTACK_SEED)
            try:
                x_adv = project(np.asarray(build().generate(x[idx], y=y[idx]), dtype=np.float32), x[idx])
                alive[idx] = correct(net, x_adv, y[idx])
            except Exception:  # noqa: BLE001 - a stage that cannot attack this network certifies nothing
                errors += 1
                alive[idx] = False
        metrics[f"robust_after_{name}"] = float(alive.mean())
    metrics["attack_errors"] = float(errors)
    metrics["robust_accuracy_unconstrained"] = float(alive.mean())
    meets_floor = metrics["clean_accuracy"] >= CLEAN_ACCURACY_FLOOR
    metrics["clean_floor_met"] = float(meets_floor)
    metrics["robust_accuracy"] = float(alive.mean()) if meets_floor else 0.0
    return metrics


def evaluate(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    import logging

    logging.getLogger("art").setLevel(logging.ERROR)
    net = load_model(predictions_dir / MODEL_FILE)
    x, y = load_images(labels_dir, phase)
    return robustness(net, x, y)


def main(argv: list[str] | None = None) -> int:
    return evaluator_main(evaluate, "Attack a digits MLP and score its robust accuracy.", argv)


if __name__ == "__main__":
    sys.exit(main())
