"""Answers from chat models through LangChain: prompts in, replies read as real model
families write them (reasoning, fences, citation styles, refusals), one deadline per answer.
"""
