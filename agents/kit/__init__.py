"""What the built-in agents share, and what a plugin's agent may reuse: the LLM operators (`operators`), the
prompt sections (`prompts`), text shaping under a character budget (`text`), tree queries (`tree`), how much
exploration a budget affords (`budget_rules`) and the task runtime's API as prompt text (`runtime_api`).

An agent is a module beside this package (agents/aide.py, ...); nothing here names one.
"""
