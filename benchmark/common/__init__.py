"""Bottom-layer helpers every other part of the harness uses: user-facing errors (`errors`), link-safe
file operations (`safefs`) and neutralising untrusted text before it is shown (`inert_text`).

May import: the standard library and third-party packages only, never another `benchmark` package.
"""
