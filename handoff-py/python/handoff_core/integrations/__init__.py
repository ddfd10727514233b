"""Adapters that make a framework's handoff durable and exactly-once (docs/design.md §13).

- :mod:`handoff_core.integrations.openai_agents`: the OpenAI Agents SDK (``openai-agents``).
- :mod:`handoff_core.integrations.langgraph`: LangGraph swarm / supervisor graphs.

Each imports its framework only when imported itself.
"""
