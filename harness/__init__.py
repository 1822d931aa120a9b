"""harness: a ReAct loop you can see through.

The agent is one growing text buffer (harness.transcript). The loop (harness.loop) sends
the whole buffer to the model (harness.model), appends the completion verbatim, parses an
Action with the dialect's regexes (harness.dialects), runs the tool (harness.tools) and
splices in the observation. Every byte is tagged developer, model or code.
"""

__version__ = "0.1.0"
