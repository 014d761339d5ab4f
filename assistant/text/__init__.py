"""Text as it arrives and as it is shown: normalising abstracts, LaTeX and Markdown as plain
text, neutralising chat-template tokens, tiktoken counts and the terms lexical search uses.
"""
