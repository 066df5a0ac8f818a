import subprocess
import sys


def test_the_agent_loads_without_pytorch() -> None:
    """An agent supervises sites; it never trains, and its image may start without torch."""
    code = "import sys, atoll.edge.agent; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
