"""Bottom-layer helpers every other part of the harness uses: user-facing errors (`errors`), link-safe
file operations (`safefs`), neutralising untrusted text before it is shown (`inert_text`), where the
checkout is (`paths`), the aliases that keep moved modules and removed names importable (`moved`) and the
package version (`version`).

May import: the standard library and third-party packages only, never another `benchmark` package.
"""
