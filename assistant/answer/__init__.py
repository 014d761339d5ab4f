"""From retrieved papers to a cited answer: the numbered sources, the provider that writes
the answer (offline extractive or an LLM), citation checks and renumbering, chat history.
"""
