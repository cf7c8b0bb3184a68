"""Ray as cleanroom uses it: joining a cluster, finding the nodes that declare a
resource, running work on them with a lost node said as lost (`session`, `tasks`), and
a cluster of nodes on this machine for trying it (`local`).

Everything that runs on Ray goes through here: the audit's jobs, verifications
(`cleanroom verify --ray`) and the desktop pools of a run across nodes.
"""
