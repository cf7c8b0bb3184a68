"""Scripted smoke rollouts: three policies that act only through the policy interface.

Each types only strings that contain its rollout's token, and each is verified by a
verifier from outside the environment: the OSWorld checker through the ``env:`` guest
(rename), the saved Writer document read from the host (writer), and the verify server
(form). `run_rollout` is the one place that turns a run into a stored outcome.
"""
