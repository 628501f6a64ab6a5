"""Local stand-ins for external services, speaking their real protocols on 127.0.0.1.

``slack_server``: the fake Slack Web API that ``clausegate up`` starts by default (so the gates' Slack path works with
no Slack workspace). ``model_server`` (+ ``model_wire``, ``responders``): the fake Claude / OpenAI-compatible
server of ``clausegate fake-model``, and of the tests and benchmarks' fault injection.
"""
