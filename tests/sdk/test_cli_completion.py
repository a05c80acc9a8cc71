"""``seedcam completion SHELL``: a completion script made from the CLI's own parser (shtab)."""

from __future__ import annotations

import io
import shutil
import subprocess

import pytest

from seedcam.cli import COMPLETION_SHELLS, EXIT_OK, main


def _script(shell: str) -> str:
    out = io.StringIO()
    assert main(["completion", shell], out=out) == EXIT_OK
    return out.getvalue()


@pytest.mark.parametrize("shell", COMPLETION_SHELLS)
def test_the_script_knows_the_commands_and_their_sub_commands(shell: str) -> None:
    script = _script(shell)
    options = ("--baud", "--port") if shell != "tcsh" else ()  # shtab's tcsh script completes words, not options
    for word in ("monitor", "config", "models", "slots", "reboot", *options):
        assert word in script, (shell, word)


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_the_bash_script_completes_a_command_in_bash() -> None:
    script = _script("bash")
    probe = script + '\nCOMP_WORDS=(seedcam mon); COMP_CWORD=1; _shtab_seedcam; printf "%s\\n" "${COMPREPLY[@]}"\n'
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["monitor"]


def test_without_shtab_it_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import builtins

    real_import = builtins.__import__

    def no_shtab(name: str, *args: object, **kwargs: object) -> object:
        if name == "shtab":
            raise ImportError("No module named 'shtab'")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_shtab)
    assert main(["completion", "bash"], out=io.StringIO()) == 1
    assert "pip install 'seedcam[completion]'" in capsys.readouterr().err
