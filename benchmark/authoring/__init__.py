"""Writing a new task: `setup.py --new` copies a template (`task_template`, `templates/`) and
`setup.py --check` runs the baseline, the floors and the leak probe through the harness (`task_check`,
`leak_probe`, which is copied into a job as a script); `setup.py --measure-noise` measures the val/test sizes
and the baseline's noise for the manifest's `noise` block (`noise_measure`, `half_sample`, `noise_block`).

May import: `researchbench.benchmark.run` (the code path real runs use) and everything below it.
"""
