"""The Modal backend: each job in its own container on Modal's cloud (`backend`: ModalExecutor), the image a task's
jobs run in and Modal's credentials (`image`), and the small programs it runs inside a container (`scripts`).

Named `modal` inside `researchbench.benchmark.executors`; `import modal` in these modules is absolute and still gets the Modal
SDK, imported where used so that loading this package needs no SDK. May import: `researchbench.benchmark.executors` (base,
output, remote_files, and `local` for the jobs that must run on this machine), `researchbench.benchmark.tasks`, `researchbench.benchmark.common`.
"""
from researchbench.benchmark.executors.modal.backend import ModalExecutor, ModalExecutorConfig

__all__ = ["ModalExecutor", "ModalExecutorConfig"]
