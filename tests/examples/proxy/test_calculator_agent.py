from calculator_agent import ask


def test_the_agent_answers(harness_proxy):  # the proxy's base URL: records once, then replays
    assert "42" in ask("What is 7 times 6?", base_url=harness_proxy)
