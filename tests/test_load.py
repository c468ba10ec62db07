"""The short forms of the load test (tests/load.py): 3 browser sessions for 10 s against the shared server, and
4 sessions against the suite's 2 replicas behind nginx (conftest.py's ``replicas``)."""

from load import run


def test_three_sessions_each_see_their_own_sentence(server, bundled):
    report = run(sessions=3, seconds=10, server=server, bundled=bundled)
    summary = report.summary()
    assert not report.failures, summary
    assert report.checks == 3 * report.rounds and report.rounds >= 5, summary
    assert report.health_ok > 0 and report.health_failed == 0, summary
    assert report.rss_growth <= 0.10, summary


def test_two_replicas_behind_nginx_keep_each_session_on_its_own(replicas, bundled):
    """deploy/: 2 app replicas behind nginx; each browser stays on one replica (its WebSocket and every
    request after the first page), sessions are spread over both, and each sees its own sentence."""
    report = run(sessions=4, seconds=8, replicas=2, server=replicas, bundled=bundled)
    summary = report.summary()
    assert not report.failures, summary
    assert report.checks == 4 * report.rounds and report.rounds >= 5, summary
    assert report.health_ok > 0 and report.health_failed == 0, summary
    assert sum(report.sessions_per_replica.values()) >= 4, summary
    assert len(report.sessions_per_replica) == 2, summary  # both replicas served sessions
