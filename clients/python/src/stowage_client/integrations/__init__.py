"""Framework integrations: ``openai_agents`` (OpenAI Agents SDK sessions) and ``langchain`` (chat message history)."""
