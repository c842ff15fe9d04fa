import pytest

from agent import run_agent


@pytest.mark.tracereplay(scenario="weather")
def test_paris(tracereplay):
    assert "sunny" in run_agent("What is the weather in Paris?")
