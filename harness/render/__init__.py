"""Renderers only read: a transcript and what the run said about itself (its metadata).

    tagged    the save format itself (harness.transcript.dumps)
    terminal  records coloured by author, with a legend, cut text and the stop reason
    json      one object for programs
"""
