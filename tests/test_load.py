"""The short form of the load test (tests/load.py): 3 browser sessions for 10 s against the shared server."""

from load import run


def test_three_sessions_each_see_their_own_sentence(server, bundled):
    report = run(sessions=3, seconds=10, server=server, bundled=bundled)
    summary = report.summary()
    assert not report.failures, summary
    assert report.checks == 3 * report.rounds and report.rounds >= 5, summary
    assert report.health_ok > 0 and report.health_failed == 0, summary
    assert report.rss_growth <= 0.10, summary
